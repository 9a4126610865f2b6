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
import type { SessionConfig } from "../../config.ts";
import type { Store } from "./store.ts";
import {
  type ConsoleSession,
  consoleSession,
  DUMMY_HASH,
  type JoinedUser,
  joinedUser,
  SESSION_WITH_USER_SQL,
  LAST_SEEN_EVERY_MS,
  type NewSession,
  newSessionOf,
  newUserRecord,
  normalizeEmail,
  type SessionRecord,
  type SignInResult,
  sessionIdOf,
  TOKEN_SHAPE,
  type UserRecord,
  verifyPassword,
} from "../sessions.ts";

// ------------------------------------------------------------------------------------------ the system

/** Dependencies of the sessions system. */
export interface SessionsDeps {
  store: Store;
  now: () => number;
  config: SessionConfig;
}

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
    const user = newUserRecord(input, this.deps.now());
    const { store } = this.deps;
    return store.tx(() => {
      if (store.get("SELECT 1 FROM users WHERE email = ?", user.email))
        throw new Error(`a user with the email ${user.email} exists`);
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
    const row = store.get<SessionRecord & JoinedUser<string, number>>(`${SESSION_WITH_USER_SQL}?`, id);
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
    return consoleSession(session, joinedUser(row), config.idleMs);
  }

  /** Ends a session (sign-out); true when it was there. */
  end(sessionId: string): boolean {
    const { store } = this.deps;
    return store.tx(() => store.run("DELETE FROM sessions WHERE id = ?", sessionId)) > 0;
  }
}
