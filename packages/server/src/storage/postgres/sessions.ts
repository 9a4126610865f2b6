/**
 * Console users, sign-in, sessions and sign-in throttling on PostgreSQL (D82–D85 over D108): the shared mode's
 * counterpart of `Sessions` (`../sqlite/sessions.ts`), method for method, with the same records and results, so
 * that several instances on one database act as one.
 *
 * - **Users.** An email is unique by the table's constraint: of two instances creating a user with one email at the
 *   same moment, one inserts it and the other is refused with the embedded store's words (`a user with the email …
 *   exists`). Records come back as the embedded store keeps them: `created_at` an RFC 3339 text in whole seconds,
 *   `disabled` 0 or 1.
 * - **Throttling.** Failures are rows, counted from every instance. The check of an attempt and the row that counts
 *   it are one transaction holding advisory locks on its email and its address, so attempts sent together to any
 *   instances cannot all pass the check before any of them is counted (the embedded store has this from running the
 *   two in one turn of its event loop).
 * - **Sessions.** Nothing is cached: every lookup reads the row, so a session ended on one instance (sign-out, its
 *   user disabled) is refused by every other from then on. Times are `timestamptz` in the table and milliseconds
 *   since the epoch in the records, as in the embedded store.
 *
 * Times come from the injected clock (`now`), as in the embedded store: they are the instance's clock, not the
 * database's.
 */
import { isoSeconds } from "@sdgw/engine";
import type { SessionConfig } from "../../config.ts";
import {
  type ConsoleSession,
  consoleSession,
  DUMMY_HASH,
  type JoinedUser,
  joinedUser,
  LAST_SEEN_EVERY_MS,
  SESSION_WITH_USER_SQL,
  TOKEN_SHAPE,
  type NewSession,
  newSessionOf,
  newUserRecord,
  normalizeEmail,
  type SessionRecord,
  type SignInResult,
  sessionIdOf,
  type UserRecord,
  verifyPassword,
} from "../sessions.ts";
import type { Postgres, Sql } from "./database.ts";
import { storable } from "./text.ts";

/** Dependencies of {@link PgSessions}: as `SessionsDeps`, with the database in place of the embedded store. */
export interface PgSessionsDeps {
  /** This instance's pool. */
  db: Postgres;
  /** The clock (ms since the epoch). */
  now: () => number;
  /** Lifetimes and sign-in throttling (`config.sessions`). */
  config: SessionConfig;
}

/** A user's row as PostgreSQL gives it. */
interface UserRow {
  id: string;
  account_id: string;
  email: string;
  password_hash: string;
  created_at: Date;
  disabled: boolean;
}

/** A session's row joined with its user's, as `lookup` reads it. */
interface SessionUserRow extends JoinedUser<Date, boolean> {
  id: string;
  user_id: string;
  csrf_token: string;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
}

/** SQLSTATE of a foreign key violation (a user of an account that does not exist). */
const FOREIGN_KEY_VIOLATION = "23503";
/** What the embedded store says of a user of an account that does not exist (SQLite's own words). */
const FOREIGN_KEY_MESSAGE = "FOREIGN KEY constraint failed";

/** The last instant a JavaScript `Date` holds (year 275760); PostgreSQL's `timestamptz` goes further. */
const LAST_INSTANT = 8.64e15;
/** 0001-01-01T00:00:00Z: the first instant written as is (an earlier one has a negative year in ISO 8601). */
const FIRST_INSTANT = -62_135_596_800_000;

/**
 * A `timestamptz` parameter from ms since the epoch. Past the year 9999 `toISOString` writes `+010000-…`, which
 * PostgreSQL does not read, so the sign and the leading zeros go. Outside the years 1 to 275760 the nearest of
 * those is written: only bounds go there (a lifetime configured near `Number.MAX_SAFE_INTEGER`, an idle time of
 * millennia subtracted from now), and every stored instant lies between them.
 */
const at = (ms: number) =>
  new Date(Math.min(Math.max(ms, FIRST_INSTANT), LAST_INSTANT)).toISOString().replace(/^\+0*/, "");

/** A user as the embedded store returns it. */
function userOf(row: UserRow): UserRecord {
  return {
    id: row.id,
    account_id: row.account_id,
    email: row.email,
    password_hash: row.password_hash,
    created_at: isoSeconds(row.created_at.getTime()),
    disabled: row.disabled ? 1 : 0,
  };
}

/** Console users, sign-in, sessions and sign-in throttling on PostgreSQL: `Sessions`' methods, as Promises. */
export class PgSessions {
  private readonly deps: PgSessionsDeps;

  /** A system over this instance's pool; it keeps nothing of its own between calls. */
  constructor(deps: PgSessionsDeps) {
    this.deps = deps;
  }

  /** The user of an email (any case), or undefined. */
  async userByEmail(email: string): Promise<UserRecord | undefined> {
    if (!storable(email)) return undefined;
    const row = await this.deps.db.one<UserRow>("SELECT * FROM users WHERE email = $1", [normalizeEmail(email)]);
    return row && userOf(row);
  }

  /** Every user, of one account or all, in the embedded store's order (creation second, then id byte by byte). */
  async users(accountId?: string): Promise<UserRecord[]> {
    const rows =
      accountId === undefined
        ? await this.deps.db.query<UserRow>('SELECT * FROM users ORDER BY created_at, id COLLATE "C"')
        : await this.deps.db.query<UserRow>(
            'SELECT * FROM users WHERE account_id = $1 ORDER BY created_at, id COLLATE "C"',
            [accountId],
          );
    return rows.map(userOf);
  }

  /**
   * Makes a user of an account with a password hash (`hashPasswordSync`). Of users with one email made at once on
   * any instances, exactly one is made (the table's unique constraint decides).
   *
   * @throws when the email is not an email, or another user has it (in any case), in `Sessions`' words; when the
   * account does not exist, in SQLite's (`FOREIGN KEY constraint failed`).
   */
  async createUser(input: { accountId: string; email: string; passwordHash: string }): Promise<UserRecord> {
    const user = newUserRecord(input, this.deps.now());
    const { email } = user;
    let inserted: unknown[];
    try {
      inserted = await this.deps.db.query(
        "INSERT INTO users (id, account_id, email, password_hash, created_at, disabled) VALUES ($1, " +
          "$2, $3, $4, $5, false) ON CONFLICT (email) DO NOTHING RETURNING id",
        [user.id, user.account_id, user.email, user.password_hash, user.created_at],
      );
    } catch (e) {
      if ((e as { code?: unknown }).code === FOREIGN_KEY_VIOLATION) throw new Error(FOREIGN_KEY_MESSAGE, { cause: e });
      throw e;
    }
    if (inserted.length === 0) throw new Error(`a user with the email ${email} exists`);
    return user;
  }

  /** Disables a user and ends its sessions; returns how many sessions ended, or null when no user has the email. */
  async disableUser(email: string): Promise<{ user: UserRecord; sessionsEnded: number } | null> {
    return this.deps.db.tx(async (sql) => {
      const row = await sql.one<UserRow>("UPDATE users SET disabled = true WHERE email = $1 RETURNING *", [
        normalizeEmail(email),
      ]);
      if (!row) return null;
      const ended = await sql.query("DELETE FROM sessions WHERE user_id = $1 RETURNING 1", [row.id]);
      return { user: userOf(row), sessionsEnded: ended.length };
    });
  }

  /**
   * Signs in, as `Sessions.signIn`: refused at once when the email or the address has too many recent failures
   * (counted on every instance; the password is not checked); otherwise the attempt is counted as a failure before
   * the password is checked, in the same transaction as the check, so that attempts sent together to any instances
   * cannot pass the limit while their hashes run; then the password is checked (a dummy hash when no user has the
   * email, so that both take as long), and on success the email's count starts over and a new session is made. A
   * user disabled on another instance while its password was checked gets no session (`disabled`).
   */
  async signIn(emailRaw: string, password: string, address: string): Promise<SignInResult> {
    const email = normalizeEmail(emailRaw);
    if (!storable(email, address)) {
      // No user has such an email, and no failure can be counted under it: wrong, in the time a check takes.
      await verifyPassword(password, DUMMY_HASH);
      return { ok: false, refusal: "invalid" };
    }
    const now = this.deps.now();
    const throttled = await this.deps.db.tx((sql) => this.countAttempt(sql, email, address, now));
    if (throttled) return { ok: false, ...throttled };
    const user = await this.userByEmail(email);
    let matches: boolean;
    if (user) matches = await verifyPassword(password, user.password_hash);
    else {
      await verifyPassword(password, DUMMY_HASH);
      matches = false;
    }
    if (!user || !matches) return { ok: false, refusal: "invalid" };
    // The password was right: the count of this email starts over (the address's count stays).
    await this.deps.db.query("DELETE FROM sign_in_failures WHERE email = $1", [email]);
    if (user.disabled) return { ok: false, refusal: "disabled" };
    const created = await this.create(user);
    return created ? { ok: true, created } : { ok: false, refusal: "disabled" };
  }

  /**
   * In one transaction: whether sign-ins for this email or from this address are held back now, and for how long;
   * if not, the attempt counted as a failure (and the failures past the window swept). The email's and the
   * address's advisory locks (taken in that order by every attempt) make concurrent attempts on one of them decide
   * one after the other.
   */
  private async countAttempt(
    sql: Sql,
    email: string,
    address: string,
    now: number,
  ): Promise<{ refusal: "throttled"; by: "email" | "address"; retryAfterMs: number } | null> {
    const { failuresPerEmail, failuresPerAddress, failureWindowMs } = this.deps.config;
    await sql.query("SELECT pg_advisory_xact_lock(hashtextextended('sdgw.sign_in.email:' || $1, 0))", [email]);
    await sql.query("SELECT pg_advisory_xact_lock(hashtextextended('sdgw.sign_in.address:' || $1, 0))", [address]);
    // The failure whose leaving the window brings the count under the limit: the limit-th newest.
    const row = await sql.one<{ by_email: Date | null; by_address: Date | null }>(
      `SELECT
         (SELECT at FROM sign_in_failures WHERE email = $1 AND at > $3 ORDER BY at DESC LIMIT 1 OFFSET $4) AS by_email,
         (SELECT at FROM sign_in_failures WHERE address = $2 AND at > $3 ORDER BY at DESC LIMIT 1 OFFSET $5) AS by_address`,
      [
        email,
        address,
        at(now - failureWindowMs),
        Math.max(0, failuresPerEmail - 1),
        Math.max(0, failuresPerAddress - 1),
      ],
    );
    const retryAfter = (d: Date | null | undefined) => (d ? d.getTime() + failureWindowMs - now : null);
    const byEmail = retryAfter(row?.by_email);
    if (byEmail !== null) return { refusal: "throttled", by: "email", retryAfterMs: byEmail };
    const byAddress = retryAfter(row?.by_address);
    if (byAddress !== null) return { refusal: "throttled", by: "address", retryAfterMs: byAddress };
    await sql.query("DELETE FROM sign_in_failures WHERE at <= $1", [at(now - failureWindowMs)]);
    await sql.query("INSERT INTO sign_in_failures (email, address, at) VALUES ($1, $2, $3)", [email, address, at(now)]);
    return null;
  }

  /**
   * Makes a session of a user: its token (given once), its CSRF token; ended sessions are swept meanwhile. Null when
   * the user was disabled meanwhile (the row is written only for a user not disabled).
   */
  private async create(user: UserRecord): Promise<NewSession | null> {
    const { config } = this.deps;
    const now = this.deps.now();
    const { token, session } = newSessionOf(user.id, now, config.lifetimeMs);
    const written = await this.deps.db.tx(async (sql) => {
      await sql.query("DELETE FROM sessions WHERE expires_at <= $1 OR last_seen_at <= $2", [
        at(now),
        at(now - config.idleMs),
      ]);
      return sql.query(
        "INSERT INTO sessions (id, user_id, csrf_token, created_at, last_seen_at, expires_at) " +
          "SELECT $1, id, $3, $4, $5, $6 FROM users WHERE id = $2 AND NOT disabled RETURNING 1",
        [
          session.id,
          session.user_id,
          session.csrf_token,
          at(session.created_at),
          at(session.last_seen_at),
          at(session.expires_at),
        ],
      );
    });
    return written.length === 1 ? { token, session, user } : null;
  }

  /**
   * The valid session of a token, or null: unknown, signed out (on any instance), past its idle end or its
   * lifetime, or its user disabled. A session found ended is deleted; a valid one has its `last_seen_at` moved
   * when a minute passed.
   */
  async lookup(token: string): Promise<ConsoleSession | null> {
    if (!TOKEN_SHAPE.test(token)) return null;
    const { db, config } = this.deps;
    const id = sessionIdOf(token);
    const row = await db.one<SessionUserRow>(`${SESSION_WITH_USER_SQL}$1`, [id]);
    if (!row) return null;
    const now = this.deps.now();
    const session: SessionRecord = {
      id: row.id,
      user_id: row.user_id,
      csrf_token: row.csrf_token,
      created_at: row.created_at.getTime(),
      last_seen_at: row.last_seen_at.getTime(),
      expires_at: row.expires_at.getTime(),
    };
    if (row.disabled || session.expires_at <= now || session.last_seen_at + config.idleMs <= now) {
      await db.query("DELETE FROM sessions WHERE id = $1", [id]);
      return null;
    }
    if (now - session.last_seen_at >= LAST_SEEN_EVERY_MS) {
      session.last_seen_at = now;
      await db.query("UPDATE sessions SET last_seen_at = $1 WHERE id = $2 AND last_seen_at < $1", [at(now), id]);
    }
    return consoleSession(session, userOf(joinedUser(row)), config.idleMs);
  }

  /** Ends a session (sign-out), for every instance at once; true when it was there. */
  async end(sessionId: string): Promise<boolean> {
    const rows = await this.deps.db.query("DELETE FROM sessions WHERE id = $1 RETURNING 1", [sessionId]);
    return rows.length > 0;
  }
}
