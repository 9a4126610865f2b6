/**
 * Durable storage on Node's built-in SQLite (`node:sqlite`, DatabaseSync): accounts, workspaces, keys, the credit
 * ledger and its holds, daily spend, idempotency records, runs and their results. One file (WAL) by default, or
 * `:memory:` for unit tests. Everything is synchronous: inside one process a transaction cannot interleave with
 * another request, which is what makes "hold then capture exactly once" simple to see.
 *
 * Group commit: writes join one open transaction per turn of the event loop (each `tx` a savepoint inside it, so
 * a throw undoes only its own writes), committed on `setImmediate`. An answer waits for `durable()` before it is
 * sent, so nothing a caller has seen can be lost; a crash before the commit loses only work no caller saw. One
 * commit then serves every request of that turn instead of two commits per request.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS accounts (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, plan TEXT NOT NULL CHECK (plan IN ('free','paid')),
  status TEXT NOT NULL CHECK (status IN ('active','suspended')),
  balance INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0), held INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
  daily_limit INTEGER, free_calls_used INTEGER NOT NULL DEFAULT 0, free_calls_held INTEGER NOT NULL DEFAULT 0,
  spend_day TEXT NOT NULL DEFAULT '', spend_today INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS workspaces (
  id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id), name TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS keys (
  id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id), workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  hash TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL, name TEXT NOT NULL, permissions TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active','suspended','revoked')),
  daily_limit INTEGER, created_at TEXT NOT NULL, expires_at TEXT, revoked_at TEXT, exposed_at TEXT,
  spend_day TEXT NOT NULL DEFAULT '', spend_today INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS ledger (
  id INTEGER PRIMARY KEY AUTOINCREMENT, account_id TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('grant','charge')),
  amount INTEGER NOT NULL CHECK (amount > 0), key_id TEXT, run_id TEXT, note TEXT, day TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ledger_one_charge_per_run ON ledger(run_id) WHERE kind = 'charge';
CREATE TABLE IF NOT EXISTS holds (
  run_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, key_id TEXT NOT NULL, amount INTEGER NOT NULL CHECK (amount >= 0),
  calls INTEGER NOT NULL, free_plan INTEGER NOT NULL, day TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('held','captured','released')), captured INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL, ended_at TEXT
);
CREATE INDEX IF NOT EXISTS holds_held_by_key ON holds(key_id) WHERE state = 'held';
CREATE INDEX IF NOT EXISTS holds_held_by_account ON holds(account_id) WHERE state = 'held';
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY, handle TEXT UNIQUE, key_id TEXT NOT NULL, account_id TEXT NOT NULL, workspace_id TEXT NOT NULL,
  operation TEXT NOT NULL, request_id TEXT NOT NULL, shape TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running','finished','broken')),
  quote INTEGER NOT NULL, charged INTEGER NOT NULL DEFAULT 0, http_status INTEGER, headers TEXT, answer TEXT,
  started_at TEXT NOT NULL, ended_at TEXT, expires_at TEXT
);
CREATE INDEX IF NOT EXISTS runs_running ON runs(state) WHERE state = 'running';
CREATE TABLE IF NOT EXISTS idempotency (
  id INTEGER PRIMARY KEY, key_id TEXT NOT NULL, idem_key TEXT NOT NULL, fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running','done')), run_id TEXT, http_status INTEGER, headers TEXT, answer TEXT,
  created_at TEXT NOT NULL, expires_at TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS idempotency_key ON idempotency(key_id, idem_key);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** A row as SQLite gives it. */
export type Row = Record<string, SQLInputValue>;

/** The database and a cache of prepared statements. */
export class Store {
  readonly db: DatabaseSync;
  readonly path: string;
  private readonly statements = new Map<string, StatementSync>();
  private depth = 0;
  private batch: { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } | null = null;

  constructor(path: string) {
    this.path = path;
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new DatabaseSync(path);
    this.db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384;");
    this.db.exec(SCHEMA);
  }

  /** A prepared statement, compiled once. */
  sql(text: string): StatementSync {
    let s = this.statements.get(text);
    if (!s) {
      s = this.db.prepare(text);
      this.statements.set(text, s);
    }
    return s;
  }

  /** The first row of a read (`undefined` when there is none), through the cached prepared statement. */
  get<T = Row>(text: string, ...params: SQLInputValue[]): T | undefined {
    return this.sql(text).get(...params) as T | undefined;
  }

  /** Every row of a read, through the cached prepared statement. */
  all<T = Row>(text: string, ...params: SQLInputValue[]): T[] {
    return this.sql(text).all(...params) as T[];
  }

  /** Runs a write inside the turn's transaction (opening it if needed); returns how many rows it changed. */
  run(text: string, ...params: SQLInputValue[]): number {
    this.open();
    return Number(this.sql(text).run(...params).changes);
  }

  /** Opens the turn's transaction if none is open; it commits on `setImmediate`. */
  private open(): void {
    if (this.batch) return;
    this.db.exec("BEGIN IMMEDIATE");
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => undefined);
    this.batch = { promise, resolve, reject };
    setImmediate(() => this.commit());
  }

  /** Commits the open transaction now (also done by itself on the next turn). */
  commit(): void {
    const b = this.batch;
    if (!b) return;
    this.batch = null;
    try {
      this.db.exec("COMMIT");
      b.resolve();
    } catch (e) {
      try {
        this.db.exec("ROLLBACK");
      } catch {
        // nothing left to undo
      }
      b.reject(e);
    }
  }

  /** Resolves when every write made so far is committed. */
  durable(): Promise<void> {
    return this.batch ? this.batch.promise : Promise.resolve();
  }

  /**
   * Runs `fn` atomically: a savepoint in the turn's transaction, rolled back alone if `fn` throws. A `tx` inside a
   * `tx` joins the outer one (a throw goes through it and undoes both).
   */
  tx<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    this.open();
    const name = `sp${this.depth}`;
    this.db.exec(`SAVEPOINT ${name}`);
    this.depth++;
    try {
      const out = fn();
      this.depth--;
      this.db.exec(`RELEASE ${name}`);
      return out;
    } catch (e) {
      this.depth--;
      this.db.exec(`ROLLBACK TO ${name}`);
      this.db.exec(`RELEASE ${name}`);
      throw e;
    }
  }

  /** Commits what is pending, drops the prepared statements and closes the database. */
  close(): void {
    if (this.db.isOpen) this.commit();
    this.statements.clear();
    if (this.db.isOpen) this.db.close();
  }
}

/** Timestamps as the contract writes them: RFC 3339, UTC, whole seconds. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The UTC day of a time, `YYYY-MM-DD`: the unit of daily limits. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
