/**
 * Idempotency, exactly as the seed's table: the same key and the same parameters while the call runs answer 409;
 * after it ended, the first answer again (with `Idempotent-Replayed: true`, nothing charged again, D35); other
 * parameters answer 422. Records are kept `idempotencyTtlMs` (24 h) after the call ended. Parameters are compared
 * by a fingerprint: the operation and the validated request as canonical JSON (keys sorted).
 */
import type { LogFull } from "./answer-log.ts";
import { isoSeconds, type Store } from "./store.ts";

/** What a claim found. */
export type Claim =
  | { kind: "claimed" }
  | { kind: "in_progress" }
  | { kind: "conflict" }
  | { kind: "replay"; status: number; headers: Record<string, string>; body: string }
  /** The call ended and was charged, but its answer's bytes are gone (the answer log after a power loss). */
  | { kind: "lost" };

/** An idempotency record as read back. */
interface Stored {
  state: "running" | "done";
  fingerprint: string;
  http_status: number | null;
  headers: string | null;
  answer: string | null;
  expires_at: string | null;
  answer_file: number | null;
  answer_at: number | null;
  answer_len: number | null;
  answer_crc: number | null;
  answer_form: number | null;
}

/** Bits of the filter of stored records (2^25: 4 MiB). */
const SEEN_BITS = 1 << 25;
/** Records the filter takes before it is switched off (every claim then reads), about 0.5 % false "maybe" then. */
const SEEN_MAX = 2_000_000;
/** Claims between two moves of the filter's last row over this process's own records. */
const SEEN_ADVANCE_EVERY = 4096;

/**
 * A Bloom filter of `key_id\nidem_key` of the records in the table: "no" is certain (the pair was never stored),
 * "yes" may be wrong. Three bits per pair, from two 32-bit FNV-1a hashes of the text (double hashing).
 */
class SeenFilter {
  private readonly words = new Int32Array(SEEN_BITS >>> 5);
  /** Pairs added (repeats included). */
  count = 0;

  add(id: string): void {
    this.count++;
    const [a, b] = hashes(id);
    for (let i = 0; i < 3; i++) {
      const bit = (a + i * b) & (SEEN_BITS - 1);
      this.words[bit >>> 5]! |= 1 << (bit & 31);
    }
  }

  has(id: string): boolean {
    const [a, b] = hashes(id);
    for (let i = 0; i < 3; i++) {
      const bit = (a + i * b) & (SEEN_BITS - 1);
      if ((this.words[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}
const HASHES: [number, number] = [0, 0];
function hashes(text: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  HASHES[0] = a >>> 0;
  HASHES[1] = ((b ^ (b >>> 15)) | 1) >>> 0;
  return HASHES;
}

/** The first answer of an ended call, to keep under its Idempotency-Key (see `Idempotency.complete`). */
export interface Completion {
  keyId: string;
  idemKey: string;
  /** Its status, headers and body (text, or its UTF-8 bytes). */
  answer: { status: number; headers: Record<string, string>; body: string | Uint8Array };
}

/** Dependencies of the idempotency system. */
export interface IdempotencyDeps {
  store: Store;
  now: () => number;
  ttlMs: number;
}

/**
 * Claims, completions and replays of Idempotency-Keys, scoped to the API key that sent them. A claim of a call
 * that still runs within its request lives in memory only: if the process dies the call was never answered and its
 * key is free anyway, so the first answer of an ended call is what is written (once, with the answer, in the
 * transaction of its capture). A call that answers 202 outlives its request: its claim is written too (`persist`,
 * a `running` row with its run id, in the transaction that stores the run), so another process sharing the
 * database answers 409 for it as this one does, and it is removed when the run breaks or is recovered.
 * A claim is taken as soon as the key is found free (one read) and given back if the call is refused before it
 * runs: an identical request arriving meanwhile answers 409, and no later step needs to read the key again.
 */
export class Idempotency {
  private readonly deps: IdempotencyDeps;
  private readonly running = new Map<string, { fingerprint: string; runId: string | null }>();
  /** First answers written but not yet committed (deferred writes, see the store): replayed from here meanwhile. */
  private readonly completing = new Map<
    string,
    { fingerprint: string; status: number; headers: Record<string, string>; body: string | Uint8Array }
  >();

  /**
   * Which pairs (API key, Idempotency-Key) may have a record (D100): a claim of a pair the filter has never seen skips
   * its read. `null`: off (too many records), every claim reads. The table stays the source of truth: the filter
   * holds every record up to `seenLast` (the highest row it read, by id and pair) as of `PRAGMA data_version`
   * `seenVersion`, plus every record this process wrote since. When the version moved (another connection
   * committed), it reads the rows after `seenLast` first; if that row is gone or holds another pair (the highest
   * rows were deleted, so their ids may be given again), it reads the whole table again.
   */
  private seen: SeenFilter | null = null;
  private seenVersion = -1;
  private seenLast: { id: number; pair: string } | null = null;
  private claimsSinceAdvance = 0;

  constructor(deps: IdempotencyDeps) {
    this.deps = deps;
    this.rebuildSeen();
  }

  /** The data version of the turn's transaction (the snapshot its reads see), read once per transaction. */
  private version(): number {
    const snapshot = this.deps.store.snapshot();
    if (snapshot !== this.versionOf) {
      this.versionRead = this.deps.store.readNow<{ data_version: number }>("PRAGMA data_version")!.data_version;
      this.versionOf = snapshot;
    }
    return this.versionRead;
  }
  private versionOf = -1;
  private versionRead = -1;

  /** Reads every record into a new filter (off when there are more than `SEEN_MAX`). */
  private rebuildSeen(): void {
    this.seen = new SeenFilter();
    this.seenLast = null;
    this.scanSeen(this.version());
  }

  /** Adds the records after `seenLast` to the filter, as of data version `version`. */
  private scanSeen(version: number): void {
    const seen = this.seen!;
    for (const r of this.deps.store.iterateNow<{ id: number; key_id: string; idem_key: string }>(
      "SELECT id, key_id, idem_key FROM idempotency WHERE id > ? ORDER BY id",
      this.seenLast?.id ?? 0,
    )) {
      const pair = `${r.key_id}\n${r.idem_key}`;
      seen.add(pair);
      this.seenLast = { id: r.id, pair };
    }
    this.seenVersion = version;
    if (seen.count > SEEN_MAX) this.seen = null;
  }

  /** Whether a record of `pair` may be in the table (see `seen`); false is certain. */
  private mayBeStored(pair: string): boolean {
    if (!this.seen) return true;
    const version = this.version();
    if (version !== this.seenVersion) {
      const last = this.seenLast;
      const still = last
        ? this.deps.store.readNow<{ key_id: string; idem_key: string }>(
            "SELECT key_id, idem_key FROM idempotency WHERE id = ?",
            last.id,
          )
        : undefined;
      if (last && (!still || `${still.key_id}\n${still.idem_key}` !== last.pair)) this.rebuildSeen();
      else this.scanSeen(version);
      if (!this.seen) return true;
    } else if (++this.claimsSinceAdvance >= SEEN_ADVANCE_EVERY) {
      // No other connection committed since the filter's last read: every row is in it (this process's own were
      // added when written), so its last row moves to the highest, and a later catch-up reads only what follows.
      this.claimsSinceAdvance = 0;
      const top = this.deps.store.readNow<{ id: number; key_id: string; idem_key: string }>(
        "SELECT id, key_id, idem_key FROM idempotency ORDER BY id DESC LIMIT 1",
      );
      if (top) this.seenLast = { id: top.id, pair: `${top.key_id}\n${top.idem_key}` };
    }
    return this.seen.has(pair);
  }

  /** What a claim would find now, without claiming: `claimed` means the key is free. */
  peek(keyId: string, idemKey: string, print: string): Claim {
    const id = `${keyId}\n${idemKey}`;
    const live = this.running.get(id);
    if (live) return live.fingerprint === print ? { kind: "in_progress" } : { kind: "conflict" };
    const done = this.completing.get(id);
    if (done) {
      if (done.fingerprint !== print) return { kind: "conflict" };
      return {
        kind: "replay",
        status: done.status,
        headers: done.headers,
        body: typeof done.body === "string" ? done.body : Buffer.from(done.body).toString("utf8"),
      };
    }
    // A pair never stored has no record (D100): no read.
    if (!this.mayBeStored(id)) return { kind: "claimed" };
    // A record still deferred is in `completing`: no need to run the deferred writes for it.
    const row = this.deps.store.readNow<Stored>(
      "SELECT state, fingerprint, http_status, headers, answer, expires_at, answer_file, answer_at, " +
        "answer_len, answer_crc, answer_form FROM idempotency WHERE key_id = ? AND idem_key = ?",
      keyId,
      idemKey,
    );
    if (!row) return { kind: "claimed" };
    // A call that answered 202 in another process sharing the database (its runs are recovered if it is gone).
    if (row.state === "running") return row.fingerprint === print ? { kind: "in_progress" } : { kind: "conflict" };
    if (row.expires_at !== null && Date.parse(row.expires_at) <= this.deps.now()) return { kind: "claimed" };
    if (row.fingerprint !== print) return { kind: "conflict" };
    let body = row.answer ?? "{}";
    if (row.answer_file !== null) {
      const bytes = this.deps.store.answers?.read({
        file: row.answer_file,
        at: row.answer_at ?? 0,
        len: row.answer_len ?? 0,
        crc: row.answer_crc ?? 0,
        chunked: row.answer_form === 1,
      });
      if (!bytes) return { kind: "lost" };
      body = bytes.toString("utf8");
    }
    return {
      kind: "replay",
      status: row.http_status ?? 200,
      headers: JSON.parse(row.headers ?? "{}") as Record<string, string>,
      body,
    };
  }

  /**
   * Claims `idemKey` for a run if it is free (synchronous: no other request can claim in between): what `peek`
   * finds, and the key is this call's from then on when that is `claimed`. Give it back with `release` if the call
   * does not run.
   */
  claim(keyId: string, idemKey: string, print: string, runId: string | null = null): Claim {
    const found = this.peek(keyId, idemKey, print);
    if (found.kind === "claimed") this.running.set(`${keyId}\n${idemKey}`, { fingerprint: print, runId });
    return found;
  }

  /**
   * Stores the first answer of an ended call (text, or its UTF-8 bytes); later claims with the same parameters replay
   * it. On a database file the answer goes to the store's answer log and the record holds where it is.
   */
  complete(done: Completion): void {
    const { keyId, idemKey } = done;
    const { status, headers, body } = done.answer;
    const id = `${keyId}\n${idemKey}`;
    // The claim in memory, or the written claim of a run that answered 202 (its final write is tried again after a
    // rollback dropped the claim from memory, D75): the record keeps the fingerprint it was claimed with.
    const claim =
      this.running.get(id) ??
      this.deps.store.get<{ fingerprint: string; runId: string | null }>(
        "SELECT fingerprint, run_id AS runId FROM idempotency WHERE key_id = ? AND idem_key = ? AND state = 'running'",
        keyId,
        idemKey,
      );
    this.running.delete(id);
    const print = claim?.fingerprint ?? "";
    const { store } = this.deps;
    const now = this.deps.now();
    const common = [
      keyId,
      idemKey,
      print,
      claim?.runId ?? null,
      status,
      JSON.stringify(headers),
      isoSeconds(now),
      isoSeconds(now + this.deps.ttlMs),
    ] as const;
    if (store.answers) {
      const ref = store.answers.append(typeof body === "string" ? Buffer.from(body, "utf8") : body);
      store.write(
        "INSERT OR REPLACE INTO idempotency (key_id, idem_key, fingerprint, state, run_id, " +
          "http_status, headers, created_at, expires_at, answer_file, answer_at, answer_len, answer_crc, " +
          "answer_form) VALUES (?, ?, ?, 'done', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ...common,
        ref.file,
        ref.at,
        ref.len,
        ref.crc,
        ref.chunked ? 1 : null,
      );
    } else {
      store.write(
        "INSERT OR REPLACE INTO idempotency (key_id, idem_key, fingerprint, state, run_id, " +
          "http_status, headers, created_at, expires_at, answer) VALUES (?, ?, ?, 'done', ?, ?, ?, ?, " +
          "?, CAST(? AS TEXT))",
        ...common,
        body,
      );
    }
    // Until the record is committed, the answer is replayed from memory; if it is rolled back, the key is free again.
    this.seen?.add(id);
    const entry = { fingerprint: print, status, headers, body };
    this.completing.set(id, entry);
    this.deps.store.whenWritten(() => {
      if (this.completing.get(id) === entry) this.completing.delete(id);
    });
  }

  /**
   * Writes the claim of a call that answers 202 (inside the transaction that stores its run): a `running` row with
   * its run id, which other processes sharing the database read as "still runs". It replaces only a record that
   * ended (one past its time: the key was found free), never another process's claim.
   */
  persist(keyId: string, idemKey: string, runId: string): void {
    const claim = this.running.get(`${keyId}\n${idemKey}`);
    if (!claim) return;
    this.seen?.add(`${keyId}\n${idemKey}`);
    this.deps.store.run(
      `INSERT INTO idempotency (key_id, idem_key, fingerprint, state, run_id, created_at) VALUES (?, ?, ?, 'running', ?, ?)
       ON CONFLICT(key_id, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, state = ` +
        `'running', run_id = excluded.run_id, http_status = NULL, headers = NULL,
         answer = NULL, created_at = excluded.created_at, expires_at = NULL, answer_file = NULL, ` +
        `answer_at = NULL, answer_len = NULL, answer_crc = NULL, answer_form = NULL
       WHERE idempotency.state = 'done'`,
      keyId,
      idemKey,
      claim.fingerprint,
      runId,
      isoSeconds(this.deps.now()),
    );
  }

  /**
   * Whether a new call that would store its answer must be refused before it starts (D67): the answer log reached
   * its quota, or a write of it found the disk full a moment ago. `null` when calls may start (always on
   * `:memory:`). A replay, a 409 or a 422 needs no new space and is answered whatever this says; a call already
   * running still stores its answer.
   */
  full(): LogFull | null {
    return this.deps.store.answers?.full() ?? null;
  }

  /** Drops a claim: the call was refused before it ran, or its run broke; the same key may be sent again. */
  release(keyId: string, idemKey: string): void {
    this.running.delete(`${keyId}\n${idemKey}`);
  }

  /** Drops the written claim of a run that answered 202 and broke (see `persist`), with the claim in memory. */
  releaseRun(keyId: string, idemKey: string, runId: string): void {
    this.release(keyId, idemKey);
    this.deps.store.run(
      "DELETE FROM idempotency WHERE key_id = ? AND idem_key = ? AND state = 'running' AND run_id = ?",
      keyId,
      idemKey,
      runId,
    );
  }

  /**
   * Removes the written claims whose run no longer runs (recovered as broken: its process is gone; or left by an
   * older version, which wrote claims without a run). Claims of runs still running are another live process's.
   */
  releaseRunning(): number {
    return this.deps.store.run(
      "DELETE FROM idempotency WHERE state = 'running' AND (run_id IS NULL OR run_id NOT IN (SELECT id FROM runs WHERE state = 'running'))",
    );
  }

  /**
   * Deletes records kept past their time, then the answer log's segments that no record points into any more and
   * that no live process appends to. The lowest segment still needed is the lowest any record points into (an
   * index keeps it one lookup away): with several processes on one file, records of one segment are not all older
   * than those of a higher one. The segments other processes append to are in their owner rows (owners.ts), kept
   * while their lease holds.
   */
  sweep(): number {
    const { store } = this.deps;
    const deleted = store.run(
      "DELETE FROM idempotency WHERE state = 'done' AND expires_at <= ?",
      isoSeconds(this.deps.now()),
    );
    // The filter was switched off for too many records: on again once the table holds few enough.
    if (!this.seen && (store.get<{ n: number }>("SELECT COUNT(*) AS n FROM idempotency")?.n ?? 0) <= SEEN_MAX / 2)
      this.rebuildSeen();
    if (store.answers) {
      const oldest =
        store.get<{ f: number | null }>("SELECT MIN(answer_file) AS f FROM idempotency WHERE answer_file IS NOT NULL")
          ?.f ?? null;
      const inUse = store
        .all<{ answer_segment: number }>(
          "SELECT answer_segment FROM owners WHERE answer_segment IS NOT NULL AND lease_until > ?",
          Date.now(),
        )
        .map((r) => r.answer_segment);
      store.answers.sweep(oldest, inUse);
    }
    return deleted;
  }
}
