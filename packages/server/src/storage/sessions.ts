/**
 * Console users and sessions (D82–D85) as every store keeps them: the records, the session cookie and tokens, and
 * the password rules (scrypt hashes compared in constant time, a dummy hash for unknown emails). The embedded
 * `Sessions` and PostgreSQL's `PgSessions` share them, so a hash or a token made by one is read by the other.
 */
import { isoSeconds } from "@sdgw/engine";
import { newId } from "../ids.ts";
import { randomBytes, type ScryptOptions, scrypt, scryptSync, timingSafeEqual, createHash } from "node:crypto";

/** The cookie that carries a session token. */
export const SESSION_COOKIE = "sdgw_session";

/** A console user as stored (the password only as its hash). */
export interface UserRecord {
  id: string;
  account_id: string;
  /** In lower case. */
  email: string;
  password_hash: string;
  created_at: string;
  /** 1 when disabled by the admin CLI: it cannot sign in and its sessions stop working. */
  disabled: number;
}

/** A session as stored: its id is the SHA-256 (hex) of the token; times in ms since the epoch. */
export interface SessionRecord {
  id: string;
  user_id: string;
  csrf_token: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

/** A valid session and its user: what a console route acts for. */
export interface ConsoleSession {
  session: SessionRecord;
  user: UserRecord;
  /** When the session ends if unused from now on (ms): the earlier of the idle end and `expires_at`. */
  idleExpiresAt: number;
}

/** A session just made: the only moment its token is known. */
export interface NewSession {
  token: string;
  session: SessionRecord;
  user: UserRecord;
}

/** The outcome of a sign-in. */
export type SignInResult =
  | { ok: true; created: NewSession }
  | { ok: false; refusal: "throttled"; by: "email" | "address"; retryAfterMs: number }
  | { ok: false; refusal: "invalid" }
  | { ok: false; refusal: "disabled" };
// ------------------------------------------------------------------------------------------ passwords
/** scrypt's cost: N = 2^15, r = 8, p = 1 (OWASP's minimum for scrypt), 32 MiB of memory per hash. */
const SCRYPT = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;

/** Node refuses more than 32 MiB by default; 128·N·r is exactly that, plus its own overhead. */
const maxmemOf = (N: number, r: number) => 128 * N * r * 2;

/** The longest password taken (bytes of UTF-8 hashed are bounded; a longer one is refused, not cut). */
export const PASSWORD_MAX = 1024;

/** The shortest password `create-user` takes. */
export const PASSWORD_MIN = 12;
const b64 = (b: Buffer) => b.toString("base64url");

/** A new session of a user at `now`: its token (given once, stored only as its hash, the session's id) and row. */
export function newSessionOf(
  userId: string,
  now: number,
  lifetimeMs: number,
): { token: string; session: SessionRecord } {
  const token = b64(randomBytes(32));
  const session: SessionRecord = {
    id: sessionIdOf(token),
    user_id: userId,
    csrf_token: b64(randomBytes(32)),
    created_at: now,
    last_seen_at: now,
    expires_at: now + lifetimeMs,
  };
  return { token, session };
}
function scryptAsync(password: string, salt: Buffer, length: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize("NFC"), salt, length, options, (e, key) => (e ? reject(e) : resolve(key))),
  );
}

/**
 * Hashes a password with scrypt and a random 16-byte salt: `scrypt$N$r$p$salt$hash` (salt and hash base64url).
 * Synchronous (about 0.1 s): for the admin CLI, never on the server's event loop.
 */
export function hashPasswordSync(password: string): string {
  const salt = randomBytes(16);
  const { N, r, p } = SCRYPT;
  const key = scryptSync(password.normalize("NFC"), salt, KEY_LENGTH, { N, r, p, maxmem: maxmemOf(N, r) });
  return `scrypt$${N}$${r}$${p}$${b64(salt)}$${b64(key)}`;
}

/** Parses a stored hash; null when it is not one this module wrote. */
function parseHash(stored: string): { N: number; r: number; p: number; salt: Buffer; key: Buffer } | null {
  const m = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(stored);
  if (!m) return null;
  const [N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (N < 2 || N > 2 ** 20 || (N & (N - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return null;
  return { N, r, p, salt: Buffer.from(m[4]!, "base64url"), key: Buffer.from(m[5]!, "base64url") };
}

/**
 * Whether `password` is the one `stored` was made from (`hashPasswordSync`'s format). Off the event loop (libuv's
 * thread pool); the comparison takes the same time wherever the bytes differ.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const h = parseHash(stored);
  if (!h) return false;
  const key = await scryptAsync(password, h.salt, h.key.length, { N: h.N, r: h.r, p: h.p, maxmem: maxmemOf(h.N, h.r) });
  return key.length === h.key.length && timingSafeEqual(key, h.key);
}

/**
 * A hash of the same cost that no password matches in practice (a zero key): checked when no user has the email, so
 * that a wrong email takes as long as a wrong password.
 */
export const DUMMY_HASH = `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${"A".repeat(22)}$${"A".repeat(43)}`;

/** A new password for `create-user` without `--password-stdin`: 24 characters of base64url (144 bits). */
export function newPassword(): string {
  return b64(randomBytes(18));
}

// ------------------------------------------------------------------------------------------ tokens and cookies
/** The SHA-256 (hex) of a session token: the session's id. */
export function sessionIdOf(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** A session token as this module makes them: 32 random bytes, base64url (43 characters). */
export const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** The values of the session cookie in a `Cookie` header (a browser may send two of one name: both are tried). */
export function sessionTokensOf(cookieHeader: string | undefined): string[] {
  if (!cookieHeader) return [];
  const out: string[] = [];
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (TOKEN_SHAPE.test(value)) out.push(value);
    if (out.length >= 4) break;
  }
  return out;
}

/** Whether two strings are equal, in a time that does not depend on where they differ. */
export function sameSecret(a: string, b: string): boolean {
  const x = createHash("sha256").update(a).digest();
  const y = createHash("sha256").update(b).digest();
  return timingSafeEqual(x, y);
}

/** The lower-case form of an email, as stored and looked up. */
export function normalizeEmail(email: string): string {
  return email.trim().normalize("NFC").toLowerCase();
}

/** Whether a text is plausibly an email address (one `@`, a dot in the domain, no spaces or controls, at most 254). */
export function isEmail(email: string): boolean {
  return (
    email.length <= 254 &&
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
    /^[^\s@\u0000-\u001f\u007f]+@[^\s@\u0000-\u001f\u007f]+\.[^\s@\u0000-\u001f\u007f]+$/.test(email)
  );
}

/** How often, at most, a session's `last_seen_at` is written (D83). */
export const LAST_SEEN_EVERY_MS = 60000;

/**
 * What `lookup` reads, on either store: a session's row joined with its user's (the user's id and creation as
 * `u_id`, `u_created_at`); the session's id is the statement's one parameter, written after this text in each
 * store's placeholder.
 */
export const SESSION_WITH_USER_SQL =
  "SELECT s.*, u.id AS u_id, u.account_id, u.email, u.password_hash, u.created_at AS u_created_at, " +
  "u.disabled FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ";

/** The user's columns of a row read by {@link SESSION_WITH_USER_SQL}; `At` and `Flag` as each store reads them. */
export interface JoinedUser<At, Flag> {
  u_id: string;
  account_id: string;
  email: string;
  password_hash: string;
  u_created_at: At;
  disabled: Flag;
}

/** The user of a row read by {@link SESSION_WITH_USER_SQL}, under its own column names. */
export function joinedUser<At, Flag>(
  row: JoinedUser<At, Flag>,
): Omit<UserRecord, "created_at" | "disabled"> & { created_at: At; disabled: Flag } {
  return {
    id: row.u_id,
    account_id: row.account_id,
    email: row.email,
    password_hash: row.password_hash,
    created_at: row.u_created_at,
    disabled: row.disabled,
  };
}

/** A valid session and its user, with when it ends unused (`idleMs` after it was last seen, never past its end). */
export function consoleSession(session: SessionRecord, user: UserRecord, idleMs: number): ConsoleSession {
  return { session, user, idleExpiresAt: Math.min(session.expires_at, session.last_seen_at + idleMs) };
}

/**
 * A new user's record, on either store: its email normalized, made `now`, enabled.
 *
 * @throws when the email is not an email address.
 */
export function newUserRecord(
  input: { accountId: string; email: string; passwordHash: string },
  now: number,
): UserRecord {
  const email = normalizeEmail(input.email);
  if (!isEmail(email)) throw new Error(`${JSON.stringify(input.email)} is not an email address`);
  return {
    id: newId("usr"),
    account_id: input.accountId,
    email,
    password_hash: input.passwordHash,
    created_at: isoSeconds(now),
    disabled: 0,
  };
}
