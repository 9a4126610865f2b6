/** Identifiers: request ids, handles, record ids and API key secrets. All random parts come from node:crypto. */
import { hash, randomBytes, randomFillSync } from "node:crypto";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// Random bytes come from a pool refilled 4 KiB at a time: one call into the OS per ~250 ids instead of one per id.
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

function random(n: number): Uint8Array {
  if (poolAt + n > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const out = POOL.subarray(poolAt, poolAt + n);
  poolAt += n;
  return out;
}

function encode(bytes: Uint8Array, alphabet: string): string {
  let out = "";
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

function timePart(now: number): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time;
}

/** A ULID-like request id, `req_` + 10 time characters + 16 random ones: sortable by time, quoted in reports. */
export function newRequestId(now = Date.now()): string {
  return `req_${timePart(now)}${encode(random(16), CROCKFORD)}`;
}

/**
 * A run id, ordered by time (`run_` + 10 time characters + 12 random ones): rows keyed by it are appended at the
 * end of their indexes instead of landing on random pages, so one commit writes few pages for many runs.
 */
export function newRunId(now = Date.now()): string {
  return `run_${timePart(now)}${encode(random(12), CROCKFORD)}`;
}

/** A results handle (`h_` + 16 base62 characters), matching the contract's `^[A-Za-z0-9_-]{1,128}$`. */
export function newHandle(): string {
  return `h_${encode(random(16), BASE62)}`;
}

/** A record id with a readable prefix: `acc_…`, `ws_…`, `key_…`, `run_…`. */
export function newId(prefix: string): string {
  return `${prefix}_${encode(random(10), BASE62)}`;
}

/** A new API key secret: `sdgw_` + 32 base62 characters (about 190 bits). Shown once, stored only as a hash. */
export function newKeySecret(): string {
  return `sdgw_${encode(randomBytes(32), BASE62)}`;
}

/** The stored form of a key: SHA-256, hex. */
export function hashKey(secret: string): string {
  return KNOWN_HASHES.get(secret) ?? hash("sha256", secret, "hex");
}

/**
 * Remembers the hash of a key that authenticated, so that its next requests skip the SHA-256. Only a function of
 * the secret is cached: whether the key is still valid (revoked, suspended, also by another process) is decided
 * by the accounts' cache each time, never here. Keys that never authenticated are not kept; at most
 * `KNOWN_HASHES_MAX` keys (then the map starts over).
 */
export function rememberKeyHash(secret: string, keyHash: string): void {
  if (KNOWN_HASHES.has(secret)) return;
  if (KNOWN_HASHES.size >= KNOWN_HASHES_MAX) KNOWN_HASHES.clear();
  KNOWN_HASHES.set(secret, keyHash);
}
const KNOWN_HASHES = new Map<string, string>();
const KNOWN_HASHES_MAX = 4096;
