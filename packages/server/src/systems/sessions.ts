/**
 * Console users and their sign-in sessions (D82–D85): the backend of the console, beside the API keys.
 *
 * - A user belongs to an account and signs in with an email (unique, compared in lower case) and a password, stored
 *   only as a scrypt hash (`scrypt$N$r$p$salt$hash`, base64url, a random 16-byte salt) and compared with
 *   `timingSafeEqual`. Users are made and disabled by the admin CLI.
 * - A session is a random 32-byte token, given once in the `sdgw_session` cookie and stored only as its SHA-256: a
 *   copy of the table signs nobody in. It carries a CSRF token (the synchronizer token state-changing console
 *   requests send in `X-CSRF-Token`), ends after `idleMs` unused or `lifetimeMs` after sign-in, and when its user
 *   is disabled or signs out. `last_seen_at` is written at most once a minute, not on every request.
 * - Failed sign-ins are counted in the database (every process on the file sees them; a restart does not forget
 *   them): too many for one email or from one address within the window and sign-in is refused before the password
 *   is checked.
 *
 * Nothing is cached in memory: every lookup reads the database, so a session ended by another process (the admin
 * CLI disabling its user) stops working from that process's next commit on (D54).
 */
import { createHash, randomBytes, scrypt, scryptSync, timingSafeEqual, type ScryptOptions } from "node:crypto";
import type { SessionConfig } from "../config.ts";
import type { GatewayPorts } from "./ports.ts";
import { newId } from "../ids.ts";
import { isoSeconds, type Store } from "./store.ts";

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
const DUMMY_HASH = `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${"A".repeat(22)}$${"A".repeat(43)}`;

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
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

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
  // eslint-disable-next-line no-control-regex
  return (
    email.length <= 254 &&
    /^[^\s@\u0000-\u001f\u007f]+@[^\s@\u0000-\u001f\u007f]+\.[^\s@\u0000-\u001f\u007f]+$/.test(email)
  );
}

// ------------------------------------------------------------------------------------------ the system

/** Dependencies of the sessions system. */
export interface SessionsDeps {
  store: Store;
  now: () => number;
  config: SessionConfig;
}

/** How often, at most, a session's `last_seen_at` is written (D83). */
export const LAST_SEEN_EVERY_MS = 60_000;

/** Console users, sign-in, sessions and sign-in throttling. */
export class Sessions {
  private readonly deps: SessionsDeps;

  constructor(deps: SessionsDeps) {
    this.deps = deps;
  }

  /** The user of an email (any case), or undefined. */
  userByEmail(email: string): UserRecord | undefined {
    return this.deps.store.get<UserRecord>("SELECT * FROM users WHERE email = ?", normalizeEmail(email));
  }

  /** Every user, of one account or all. */
  users(accountId?: string): UserRecord[] {
    return accountId === undefined
      ? this.deps.store.all<UserRecord>("SELECT * FROM users ORDER BY created_at, id")
      : this.deps.store.all<UserRecord>("SELECT * FROM users WHERE account_id = ? ORDER BY created_at, id", accountId);
  }

  /**
   * Makes a user of an account with a password hash (`hashPasswordSync`).
   *
   * @throws when the email is not an email, or another user has it (in any case).
   */
  createUser(input: { accountId: string; email: string; passwordHash: string }): UserRecord {
    const email = normalizeEmail(input.email);
    if (!isEmail(email)) throw new Error(`${JSON.stringify(input.email)} is not an email address`);
    const { store } = this.deps;
    return store.tx(() => {
      if (store.get("SELECT 1 FROM users WHERE email = ?", email))
        throw new Error(`a user with the email ${email} exists`);
      const user: UserRecord = {
        id: newId("usr"),
        account_id: input.accountId,
        email,
        password_hash: input.passwordHash,
        created_at: isoSeconds(this.deps.now()),
        disabled: 0,
      };
      store.run(
        "INSERT INTO users (id, account_id, email, password_hash, created_at, disabled) VALUES (?, ?, ?, ?, ?, 0)",
        user.id,
        user.account_id,
        user.email,
        user.password_hash,
        user.created_at,
      );
      return user;
    });
  }

  /** Disables a user and ends its sessions; returns how many sessions ended, or null when no user has the email. */
  disableUser(email: string): { user: UserRecord; sessionsEnded: number } | null {
    const { store } = this.deps;
    return store.tx(() => {
      const user = this.userByEmail(email);
      if (!user) return null;
      store.run("UPDATE users SET disabled = 1 WHERE id = ?", user.id);
      const sessionsEnded = store.run("DELETE FROM sessions WHERE user_id = ?", user.id);
      return { user: { ...user, disabled: 1 }, sessionsEnded };
    });
  }

  /**
   * Signs in: refused at once when the email or the address has too many recent failures (the password is not
   * checked); otherwise the attempt is counted as a failure before the password is checked (so that attempts sent
   * together cannot pass the limit while their hashes run), the password is checked (a dummy hash when no user has
   * the email, so that both take as long), and on success the email's count starts over and a new session is made.
   */
  async signIn(emailRaw: string, password: string, address: string): Promise<SignInResult> {
    const email = normalizeEmail(emailRaw);
    const throttled = this.throttle(email, address);
    if (throttled) return { ok: false, ...throttled };
    const { store } = this.deps;
    const at = this.deps.now();
    store.tx(() => {
      store.write("DELETE FROM sign_in_failures WHERE at <= ?", at - this.deps.config.failureWindowMs);
      store.write("INSERT INTO sign_in_failures (email, address, at) VALUES (?, ?, ?)", email, address, at);
    });
    const user = this.userByEmail(email);
    let matches: boolean;
    if (user) matches = await verifyPassword(password, user.password_hash);
    else {
      await verifyPassword(password, DUMMY_HASH);
      matches = false;
    }
    if (!user || !matches) return { ok: false, refusal: "invalid" };
    // The password was right: the count of this email starts over (the address's count stays).
    store.tx(() => store.write("DELETE FROM sign_in_failures WHERE email = ?", email));
    if (user.disabled) return { ok: false, refusal: "disabled" };
    return { ok: true, created: this.create(user) };
  }

  /** Whether sign-ins for this email or from this address are held back now, and for how long. */
  private throttle(
    email: string,
    address: string,
  ): { refusal: "throttled"; by: "email" | "address"; retryAfterMs: number } | null {
    const { failuresPerEmail, failuresPerAddress, failureWindowMs } = this.deps.config;
    const now = this.deps.now();
    const since = now - failureWindowMs;
    // The failure whose leaving the window brings the count under the limit: the limit-th newest.
    const check = (column: "email" | "address", value: string, limit: number) => {
      const row = this.deps.store.get<{ at: number }>(
        `SELECT at FROM sign_in_failures WHERE ${column} = ? AND at > ? ORDER BY at DESC LIMIT 1 OFFSET ?`,
        value,
        since,
        limit - 1,
      );
      return row ? row.at + failureWindowMs - now : null;
    };
    const byEmail = check("email", email, failuresPerEmail);
    if (byEmail !== null) return { refusal: "throttled", by: "email", retryAfterMs: byEmail };
    const byAddress = check("address", address, failuresPerAddress);
    if (byAddress !== null) return { refusal: "throttled", by: "address", retryAfterMs: byAddress };
    return null;
  }

  /** Makes a session of a user: its token (given once), its CSRF token. Ended sessions are swept meanwhile. */
  private create(user: UserRecord): NewSession {
    const { store, config } = this.deps;
    const now = this.deps.now();
    const { token, session } = newSessionOf(user.id, now, config.lifetimeMs);
    store.tx(() => {
      store.write("DELETE FROM sessions WHERE expires_at <= ? OR last_seen_at <= ?", now, now - config.idleMs);
      store.write(
        "INSERT INTO sessions (id, user_id, csrf_token, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        session.id,
        session.user_id,
        session.csrf_token,
        session.created_at,
        session.last_seen_at,
        session.expires_at,
      );
    });
    return { token, session, user };
  }

  /**
   * The valid session of a token, or null: unknown, signed out, past its idle end or its lifetime, or its user
   * disabled. A session found ended is deleted; a valid one has its `last_seen_at` moved when a minute passed.
   */
  lookup(token: string): ConsoleSession | null {
    if (!TOKEN_SHAPE.test(token)) return null;
    const { store, config } = this.deps;
    const id = sessionIdOf(token);
    const row = store.get<
      SessionRecord & {
        u_id: string;
        account_id: string;
        email: string;
        password_hash: string;
        u_created_at: string;
        disabled: number;
      }
    >(
      "SELECT s.*, u.id AS u_id, u.account_id, u.email, u.password_hash, u.created_at AS u_created_at, u.disabled FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?",
      id,
    );
    if (!row) return null;
    const now = this.deps.now();
    if (row.disabled || row.expires_at <= now || row.last_seen_at + config.idleMs <= now) {
      store.tx(() => store.write("DELETE FROM sessions WHERE id = ?", id));
      return null;
    }
    const session: SessionRecord = {
      id: row.id,
      user_id: row.user_id,
      csrf_token: row.csrf_token,
      created_at: row.created_at,
      last_seen_at: row.last_seen_at,
      expires_at: row.expires_at,
    };
    if (now - row.last_seen_at >= LAST_SEEN_EVERY_MS) {
      session.last_seen_at = now;
      store.tx(() =>
        store.write("UPDATE sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?", now, id, now),
      );
    }
    const user: UserRecord = {
      id: row.u_id,
      account_id: row.account_id,
      email: row.email,
      password_hash: row.password_hash,
      created_at: row.u_created_at,
      disabled: row.disabled,
    };
    return { session, user, idleExpiresAt: Math.min(session.expires_at, session.last_seen_at + config.idleMs) };
  }

  /** Ends a session (sign-out); true when it was there. */
  end(sessionId: string): boolean {
    const { store } = this.deps;
    return store.tx(() => store.run("DELETE FROM sessions WHERE id = ?", sessionId)) > 0;
  }
}

/** The sessions system of a gateway. */
export function sessionsOf<G extends Pick<GatewayPorts, "sessions">>(gw: G): G["sessions"] {
  return gw.sessions;
}

/**
 * Authenticates a request by its session cookie: the session and its user, or null (no cookie, a cookie that is
 * not a session token, or a session unknown, signed out, expired or of a disabled user). `headers` are the request's
 * headers with lower-case names (`cookie` is read). State-changing routes must also check the CSRF token
 * (`csrfRefusal` in http/console-session.ts).
 *
 * @example
 * const s = sessionOf(gw, normalizeHeaders(req.headers));
 * if (!s) return sessionRequired(gw, requestId);
 */
export async function sessionOf(
  gw: Pick<GatewayPorts, "sessions">,
  headers: Readonly<Record<string, string | undefined>>,
): Promise<ConsoleSession | null> {
  const tokens = sessionTokensOf(headers["cookie"]);
  if (tokens.length === 0) return null;
  for (const token of tokens) {
    const found = await gw.sessions.lookup(token);
    if (found) return found;
  }
  return null;
}
