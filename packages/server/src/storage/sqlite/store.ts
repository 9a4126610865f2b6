/**
 * Durable storage on Node's built-in SQLite (`node:sqlite`, DatabaseSync): accounts, workspaces, keys, the credit
 * ledger and its holds, daily spend, idempotency records, runs and their results. One file (WAL) by default, with
 * the first answers of idempotency records in an answer log next to it (`<file>-answers/`, see answer-log.ts), or
 * `:memory:` for unit tests (answers in their rows). Everything is synchronous: inside one process a transaction cannot interleave with
 * another request, which is what makes "hold then capture exactly once" simple to see.
 *
 * Group commit: writes join one open transaction per turn of the event loop (each `tx` a savepoint inside it, so
 * a throw undoes only its own writes), committed on `setImmediate`. An answer waits for `durable()` before it is
 * sent, so nothing a caller has seen can be lost; a crash before the commit loses only work no caller saw. One
 * commit then serves every request of that turn instead of two commits per request.
 *
 * Deferred writes: a `tx` made only of blind writes (`write`: the capture of a call that ends within its request and
 * its idempotency record, the hot path) runs no statement when it is made: its writes are queued and run together
 * at the end of the turn, just before the commit (or as soon as anything reads or writes through the connection in
 * between: `run`, `sql`, `get`, `all`). The turn's SQLite work then happens in one burst, with SQLite's code and
 * pages still in the processor's caches, instead of a few statements between every request's other work. Whatever
 * the process reads of those writes meanwhile it reads from memory: the caches (accounts, keys) are moved by the
 * writes' own code, and an idempotency record waits in memory until `whenWritten`.
 *
 * Caches: the systems keep what the hot path reads (keys by hash, accounts) in memory and refresh it from what their
 * own writes return or do. `onReset` tells them when that may be wrong: a savepoint or a commit rolled back, or
 * another connection (the admin CLI on the same file) committed, which `sync` notices by `PRAGMA data_version` once
 * per turn.
 *
 * Several processes on one file (the HTTP server, `sdgw-mcp`, `sdgw-admin`): WAL lets readers and one writer go
 * on together, and every connection waits up to `busy_timeout` (5 s) for the write lock instead of failing with
 * SQLITE_BUSY. A turn holds the write lock only from its first write to its commit on `setImmediate` (a few
 * milliseconds), and a read transaction that must write commits and starts `BEGIN IMMEDIATE` instead of upgrading
 * its snapshot (which could fail with SQLITE_BUSY_SNAPSHOT whatever the timeout). What each process keeps in memory
 * (holds of calls within their request, Idempotency-Key claims of such calls) is its own; runs that answered 202
 * carry their owner (owners.ts), and only the runs of a process that is gone are ever recovered.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { isoSeconds as isoText } from "@sdgw/engine";
import { AnswerLog, type AnswerLogOptions } from "./answer-log.ts";
import { CHECKPOINTER_SOURCE, type CheckpointerData, type CheckpointerReport } from "./checkpointer.ts";

/** Values of named parameters (`:name` in the SQL), keyed by the name without its prefix. */
export type Named = Record<string, SQLInputValue>;

/** A statement's parameters: the values of its `?` in order, or one object of the values of its `:name`s. */
export type Params = SQLInputValue[] | [named: Named];

/** Whether `params` is one object of named parameters (a typed array is a value, a BLOB). */
function isNamed(params: Params): params is [Named] {
  const first = params[0];
  return params.length === 1 && typeof first === "object" && first !== null && !ArrayBuffer.isView(first);
}

/** A blind write queued for the end of the turn: the statement and its parameters. */
type Op = [text: string, params: Params];

/** Deferred writes of this turn not yet run, and who waits for them. */
interface Deferred {
  ops: Op[];
  after: Array<(ok: boolean) => void>;
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** The `tx` being collected (its writes deferred), or moved onto the connection (`onMain`) when it did more. */
interface Unit {
  ops: Op[];
  after: Array<(ok: boolean) => void>;
  onMain: boolean;
}

/** A promise with its settle functions, caught (a rejection nobody awaits is not an error of the process). */
function deferredPromise(): { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS accounts (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, plan TEXT NOT NULL CHECK (plan IN ('free','paid')),
  status TEXT NOT NULL CHECK (status IN ('active','suspended')),
  balance INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0), held INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
  daily_limit INTEGER, free_calls_used INTEGER NOT NULL DEFAULT 0, free_calls_held INTEGER NOT NULL DEFAULT 0,
  spend_day TEXT NOT NULL DEFAULT '', spend_today INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  call_cap INTEGER, calls_day TEXT NOT NULL DEFAULT '', calls_today INTEGER NOT NULL DEFAULT 0
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
  id INTEGER PRIMARY KEY, account_id TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('grant','charge')),
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
  started_at TEXT NOT NULL, ended_at TEXT, expires_at TEXT, owner TEXT, waves INTEGER
);
CREATE INDEX IF NOT EXISTS runs_running ON runs(state) WHERE state = 'running';
CREATE TABLE IF NOT EXISTS owners (
  id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, started_at TEXT NOT NULL, lease_until INTEGER NOT NULL,
  answer_segment INTEGER
);
CREATE TABLE IF NOT EXISTS idempotency (
  id INTEGER PRIMARY KEY, key_id TEXT NOT NULL, idem_key TEXT NOT NULL, fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running','done')), run_id TEXT, http_status INTEGER, headers TEXT, answer TEXT,
  created_at TEXT NOT NULL, expires_at TEXT, answer_file INTEGER, answer_at INTEGER, answer_len INTEGER, answer_crc INTEGER,
  answer_form INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS idempotency_key ON idempotency(key_id, idem_key);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (
  id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id), email TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL, created_at TEXT NOT NULL, disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1))
);
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, csrf_token TEXT NOT NULL,
  created_at INTEGER NOT NULL, last_seen_at INTEGER NOT NULL, expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_user ON sessions(user_id);
CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions(expires_at);
CREATE TABLE IF NOT EXISTS sign_in_failures (
  id INTEGER PRIMARY KEY, email TEXT NOT NULL, address TEXT NOT NULL, at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sign_in_failures_email ON sign_in_failures(email, at);
CREATE INDEX IF NOT EXISTS sign_in_failures_address ON sign_in_failures(address, at);
CREATE INDEX IF NOT EXISTS sign_in_failures_at ON sign_in_failures(at);
`;

/** Columns added since a table was first created (`ALTER TABLE … ADD COLUMN` on a database made before them). */
const ADDED_COLUMNS: ReadonlyArray<[table: string, column: string, type: string]> = [
  // where an idempotency record's answer is in the answer log (0.x: the answer was always in `answer`)
  ["idempotency", "answer_file", "INTEGER"],
  ["idempotency", "answer_at", "INTEGER"],
  ["idempotency", "answer_len", "INTEGER"],
  ["idempotency", "answer_crc", "INTEGER"],
  // 1: what is at answer_at is the answer's recipe of chunks (answer-log.ts); NULL: the answer's bytes
  ["idempotency", "answer_form", "INTEGER"],
  // the process that runs a run (see owners.ts; 0.x: one process per file, no owner)
  ["runs", "owner", "TEXT"],
  // the waves a run planned (a 202 read by another process than the run's shows them)
  ["runs", "waves", "INTEGER"],
  // the answer-log segment an owner appends to (a database made by an earlier build of this version)
  ["owners", "answer_segment", "INTEGER"],
  // an account's cap on calls started per UTC day (D74) and its count of the day
  ["accounts", "call_cap", "INTEGER"],
  ["accounts", "calls_day", "TEXT NOT NULL DEFAULT ''"],
  ["accounts", "calls_today", "INTEGER NOT NULL DEFAULT 0"],
];

/** Indexes on added columns (made once the columns are there). */
const ADDED_INDEXES = `
CREATE INDEX IF NOT EXISTS idempotency_answer_file ON idempotency(answer_file) WHERE answer_file IS NOT NULL;
`;

/** How often the checkpointer thread runs a passive checkpoint. */
const CHECKPOINT_EVERY_MS = 20;
/** WAL frames (pages) past which this connection checkpoints after a commit (16 384 pages: 64 MiB at 4 KiB). */
const WAL_LIMIT_FRAMES = 16_384;

/** A row as SQLite gives it. */
export type Row = Record<string, SQLInputValue>;

/** The database and a cache of prepared statements. */
export class Store {
  readonly db: DatabaseSync;
  readonly path: string;
  /**
   * The answer log next to the database file (`<path>-answers`), `null` on `:memory:`: whatever is appended to it
   * during a turn is written just before that turn commits, so a committed row never points to unwritten bytes.
   */
  readonly answers: AnswerLog | null;
  private readonly statements = new Map<string, StatementSync>();
  private depth = 0;
  private batch: {
    promise: Promise<void>;
    resolve: () => void;
    reject: (e: unknown) => void;
    after: Array<(ok: boolean) => void>;
  } | null = null;
  /** This turn's deferred writes not yet run. */
  private deferred: Deferred | null = null;
  /** The `tx` being run. */
  private unit: Unit | null = null;
  /** Whether the turn's transaction is the write transaction (else a read transaction). */
  private batchWrites = false;
  private readonly resetListeners: Array<() => void> = [];
  private dataVersion: number | null = null;
  private synced = false;
  private checkpointer: Worker | null = null;
  private walTooLong = false;
  private caughtUpAt = Number.NEGATIVE_INFINITY;
  /** Transactions begun so far (see `snapshot`). */
  private began = 0;

  /**
   * Opens (or creates) the database at `path` (`:memory:`: in memory, no answer log); `options.answers` tunes the
   * answer log (tests roll its segments over after a few bytes).
   */
  constructor(path: string, options: { answers?: AnswerLogOptions } = {}) {
    this.path = path;
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new DatabaseSync(path);
    // busy_timeout first: another connection (the checkpointer of a store closed just before) may hold a lock.
    this.db.exec(
      "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384;",
    );
    this.db.exec(SCHEMA); // CREATE … IF NOT EXISTS of what exists takes no write lock
    this.migrate();
    this.answers = path === ":memory:" ? null : new AnswerLog(`${path}-answers`, options.answers);
    if (path !== ":memory:") this.startCheckpointer();
  }

  /**
   * Adds the columns (and their indexes) a database made by an older version lacks. Nothing to add (the usual
   * case) takes no write lock; otherwise one write transaction that looks again once it holds the lock: another
   * process opening the same file at the same moment waits (busy_timeout) and then finds the columns there,
   * instead of adding one twice.
   */
  private migrate(): void {
    const missing = () =>
      ADDED_COLUMNS.filter(
        ([table, column]) => !this.db.prepare(`SELECT 1 FROM pragma_table_info('${table}') WHERE name = ?`).get(column),
      );
    if (missing().length > 0) {
      this.db.exec("BEGIN IMMEDIATE");
      try {
        for (const [table, column, type] of missing())
          this.db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
        this.db.exec("COMMIT");
      } catch (e) {
        this.db.exec("ROLLBACK");
        throw e;
      }
    }
    this.db.exec(ADDED_INDEXES);
  }

  /**
   * Checkpoints off the event loop. A checkpoint copies the WAL's pages into the database file and syncs both
   * (synchronous = NORMAL); run by SQLite after a commit once the WAL passed 1000 pages, it stopped every request
   * for that time. Here a worker thread (checkpointer.ts) with its own connection runs a passive checkpoint every
   * `CHECKPOINT_EVERY_MS` (SQLite's own advice for busy writers), and this connection never checkpoints by itself
   * (`wal_autocheckpoint = 0`), except as a backstop: when the worker reports a WAL past `WAL_LIMIT_FRAMES` (it can
   * restart only when a checkpoint ends between two transactions of this connection), the next commit here
   * checkpoints what is left, so the WAL starts over. Without worker threads, SQLite's automatic checkpoints stay.
   */
  private startCheckpointer(): void {
    try {
      const workerData: CheckpointerData = { path: this.path, everyMs: CHECKPOINT_EVERY_MS, limit: WAL_LIMIT_FRAMES };
      const worker = new Worker(CHECKPOINTER_SOURCE, { eval: true, workerData });
      worker.unref();
      worker.on("message", (_report: CheckpointerReport) => {
        // A report older than the last catch-up (the WAL starts over with this connection's next write) is stale.
        if (performance.now() - this.caughtUpAt > CHECKPOINT_EVERY_MS * 5) this.walTooLong = true;
      });
      worker.once("exit", () => {
        if (this.checkpointer !== worker) return; // stopped by close()
        // the worker is gone: SQLite's automatic checkpoints again
        this.checkpointer = null;
        if (this.db.isOpen) this.db.exec("PRAGMA wal_autocheckpoint = 1000");
      });
      worker.on("error", () => undefined); // an "exit" follows
      this.db.exec("PRAGMA wal_autocheckpoint = 0");
      this.checkpointer = worker;
    } catch {
      this.checkpointer = null;
    }
  }

  /** A prepared statement, compiled once (the store's own bookkeeping: runs no deferred write). */
  private prepared(text: string): StatementSync {
    let s = this.statements.get(text);
    if (!s) {
      s = this.db.prepare(text);
      this.statements.set(text, s);
    }
    return s;
  }

  /**
   * A prepared statement, compiled once, to run inside the turn's write transaction (it may write), after the
   * deferred writes made so far (it may read them). Inside a `tx` whose writes are deferred, that `tx` moves onto
   * the connection first.
   */
  sql(text: string): StatementSync {
    this.open();
    return this.prepared(text);
  }

  /** Before a read: the deferred writes run (or the `tx` being collected moves onto the connection). */
  private beforeRead(): void {
    if (this.unit && !this.unit.onMain) this.open();
    else {
      this.begin(false);
      this.flush();
    }
  }

  /** The first row of a read (`undefined` when there is none), after every write made so far. */
  get<T = Row>(text: string, ...params: Params): T | undefined {
    this.beforeRead();
    const s = this.prepared(text);
    return (isNamed(params) ? s.get(params[0]) : s.get(...params)) as T | undefined;
  }

  /** Every row of a read, after every write made so far. */
  all<T = Row>(text: string, ...params: Params): T[] {
    this.beforeRead();
    const s = this.prepared(text);
    return (isNamed(params) ? s.all(params[0]) : s.all(...params)) as T[];
  }

  /**
   * The one row a write with `RETURNING` gives back (run as `run`), typed as the caller's record of that table;
   * throws when the write matched no row.
   */
  returning<T extends object>(text: string, ...params: Params): T {
    this.open();
    const s = this.prepared(text);
    const row = isNamed(params) ? s.get(params[0]) : s.get(...params);
    if (row === undefined) throw new Error(`no row returned by: ${text}`);
    return row as T;
  }

  /**
   * The first row of a read of the connection as it is, without running the deferred writes first: only for rows
   * no deferred write touches, or whose deferred writes the caller keeps in memory (the idempotency records).
   */
  readNow<T = Row>(text: string, ...params: SQLInputValue[]): T | undefined {
    this.begin(false);
    return this.prepared(text).get(...params) as T | undefined;
  }

  /** Every row of a read of the connection as it is (as `readNow`: the deferred writes not run first), one at a time. */
  iterateNow<T = Row>(text: string, ...params: SQLInputValue[]): IterableIterator<T> {
    this.begin(false);
    return this.prepared(text).iterate(...params) as IterableIterator<T>;
  }

  /**
   * Opens the turn's transaction if none is open and numbers it: while the number stays the same, every read sees
   * the same snapshot of the database (e.g. the same `PRAGMA data_version`).
   */
  snapshot(): number {
    this.begin(false);
    return this.began;
  }

  /** Runs a write now, inside the turn's transaction (opening it if needed); returns how many rows it changed. */
  run(text: string, ...params: Params): number {
    this.open();
    return runWith(this.prepared(text), params);
  }

  /**
   * A blind write (its result is not needed): inside a `tx` it is deferred to the end of the turn (see the top of
   * this file); anywhere else, or once its `tx` moved onto the connection, it runs now, as `run`.
   */
  write(text: string, ...params: Params): void {
    const u = this.unit;
    if (u && !u.onMain) u.ops.push([text, params]);
    else this.run(text, ...params);
  }

  /**
   * Calls `fn(true)` once the writes made so far (the current `tx`'s included) are committed, `fn(false)` if they
   * were rolled back instead; at once (`true`) when nothing is waiting to be committed.
   */
  whenWritten(fn: (ok: boolean) => void): void {
    if (this.unit) this.unit.after.push(fn);
    else if (this.deferred) this.deferred.after.push(fn);
    else if (this.batch) this.batch.after.push(fn);
    else fn(true);
  }

  /**
   * Calls `fn` whenever what a cache holds may differ from the database: a savepoint or the turn's transaction
   * rolled back (what the cache took from its writes is undone), or another connection committed (see `sync`).
   */
  onReset(fn: () => void): void {
    this.resetListeners.push(fn);
  }

  private reset(): void {
    for (const fn of this.resetListeners) fn();
  }

  /**
   * Notices writes of other connections: reads `PRAGMA data_version` (which moves only when another connection
   * committed) at most once per turn of the event loop, and resets every cache when it moved. Called by the caches
   * before they answer; a write of another process is therefore seen from the next turn on.
   */
  sync(): void {
    if (this.synced) return;
    this.synced = true;
    setImmediate(() => {
      this.synced = false;
    });
    const version = (this.prepared("PRAGMA data_version").get() as { data_version: number }).data_version;
    if (this.dataVersion !== null && version !== this.dataVersion) this.reset();
    this.dataVersion = version;
  }

  /**
   * Opens the turn's transaction if none is open (it commits on `setImmediate`): a read transaction for reads
   * (`BEGIN`: other processes may still write meanwhile), the write transaction (`BEGIN IMMEDIATE`) for writes; a
   * read transaction that must write ends and the write transaction starts. Every read of a turn shares one
   * transaction: starting one for each read cost far more than the read itself (see bench/server/README.md).
   */
  private begin(write = true): void {
    if (this.batch) {
      if (!write || this.batchWrites) return;
      this.prepared("COMMIT").run(); // a read transaction: nothing to commit, its snapshot ends
      this.began++;
      try {
        this.prepared("BEGIN IMMEDIATE").run();
      } catch (e) {
        this.prepared("BEGIN").run(); // still the turn's (read) transaction, as its commit expects
        throw e;
      }
      this.batchWrites = true;
      return;
    }
    this.prepared(write ? "BEGIN IMMEDIATE" : "BEGIN").run();
    this.began++;
    this.batchWrites = write;
    this.batch = { ...deferredPromise(), after: [] };
    setImmediate(() => this.commit());
  }

  /**
   * Runs the deferred writes of the turn (in the turn's transaction, as one savepoint). If one fails, all of them
   * are undone, the caches reset, and whoever waits for them is told (`durable()` rejects, `whenWritten(false)`):
   * those calls answer 500 and charge nothing; the rest of the turn goes on.
   */
  private flush(): void {
    const d = this.deferred;
    if (!d) return;
    this.deferred = null;
    this.begin();
    const b = this.batch!;
    try {
      this.prepared("SAVEPOINT deferred").run();
      try {
        for (const [text, params] of d.ops) runWith(this.prepared(text), params);
      } catch (e) {
        this.db.exec("ROLLBACK TO deferred");
        throw e;
      } finally {
        this.db.exec("RELEASE deferred");
      }
    } catch (e) {
      this.reset();
      d.reject(e);
      for (const fn of d.after) fn(false);
      return;
    }
    b.promise.then(d.resolve, d.reject);
    for (const fn of d.after) b.after.push(fn);
  }

  /**
   * Opens the turn's transaction if needed and runs the deferred writes (they come before anything done now);
   * a `tx` being collected moves onto the connection: a savepoint, and its writes so far run.
   */
  private open(): void {
    this.begin();
    this.flush();
    const u = this.unit;
    if (u && !u.onMain) {
      u.onMain = true;
      this.prepared("SAVEPOINT sp0").run();
      for (const [text, params] of u.ops) runWith(this.prepared(text), params);
      u.ops = [];
    }
  }

  /** Runs the deferred writes and commits the open transaction now (also done by itself on the next turn). */
  commit(): void {
    this.flush();
    const b = this.batch;
    if (!b) return;
    this.batch = null;
    try {
      this.answers?.flush(); // before the rows that point there are committed
      this.prepared("COMMIT").run();
      b.resolve();
      for (const fn of b.after) fn(true);
      if (this.walTooLong) this.catchUp();
    } catch (e) {
      try {
        this.db.exec("ROLLBACK");
      } catch {
        // nothing left to undo
      }
      this.reset();
      b.reject(e);
      for (const fn of b.after) fn(false);
    }
  }

  /** The checkpointer's backstop: checkpoint here, between two transactions, so the WAL can start over. */
  private catchUp(): void {
    try {
      const r = this.prepared("PRAGMA wal_checkpoint(PASSIVE)").get() as { busy: number };
      if (r.busy === 0) {
        this.walTooLong = false;
        this.caughtUpAt = performance.now();
      }
    } catch {
      // busy: the next commit tries again
    }
  }

  /** Resolves when every write made so far is committed; rejects when they were rolled back. */
  durable(): Promise<void> {
    const b = this.batch;
    const d = this.deferred;
    if (b && d) return Promise.all([b.promise, d.promise]).then(() => undefined);
    return d ? d.promise : b ? b.promise : Promise.resolve();
  }

  /**
   * Runs `fn` atomically: undone alone if it throws. A `tx` inside a `tx` joins the outer one (a throw goes through
   * it and undoes both). Its blind writes (`write`) are deferred to the end of the turn; as soon as it does anything
   * else through the connection (`run`, `sql`, `get`, `all`) it becomes a savepoint in the turn's transaction, its
   * writes so far run, and the rest runs as it comes.
   */
  tx<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    const u: Unit = { ops: [], after: [], onMain: false };
    this.unit = u;
    this.depth++;
    try {
      const out = fn();
      this.unit = null;
      if (u.onMain) {
        this.prepared("RELEASE sp0").run();
        for (const f of u.after) this.batch!.after.push(f);
      } else this.defer(u);
      return out;
    } catch (e) {
      this.unit = null;
      if (u.onMain) {
        this.db.exec("ROLLBACK TO sp0");
        this.db.exec("RELEASE sp0");
      }
      this.reset();
      for (const f of u.after) f(false);
      throw e;
    } finally {
      this.depth--;
    }
  }

  /** Adds a `tx`'s deferred writes to the turn's (run by `flush`, at the latest on `setImmediate`). */
  private defer(u: Unit): void {
    if (u.ops.length === 0) {
      for (const f of u.after) this.whenWritten(f);
      return;
    }
    let d = this.deferred;
    if (!d) {
      d = { ops: [], after: [], ...deferredPromise() };
      this.deferred = d;
      if (!this.batch) setImmediate(() => this.commit());
    }
    for (const op of u.ops) d.ops.push(op);
    for (const f of u.after) d.after.push(f);
  }

  /**
   * Commits what is pending, drops the prepared statements and closes the database; resolves once the
   * checkpointer thread has closed its connection too (the last one to close checkpoints and removes the WAL).
   */
  close(): Promise<void> {
    if (this.db.isOpen) this.commit();
    this.answers?.close();
    this.statements.clear();
    if (this.db.isOpen) this.db.close();
    const worker = this.checkpointer;
    this.checkpointer = null;
    if (!worker) return Promise.resolve();
    const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
    worker.ref(); // until it has closed: an awaited close() must not leave the process with nothing to wait for
    worker.postMessage("close");
    return exited;
  }
}

/** Runs a statement with its parameters bound (by name or in order); returns how many rows it changed. */
function runWith(s: StatementSync, params: Params): number {
  return Number((isNamed(params) ? s.run(params[0]) : s.run(...params)).changes);
}

/** Timestamps as the contract writes them: RFC 3339, UTC, whole seconds. */
export function isoSeconds(ms: number): string {
  const second = Math.floor(ms / 1000);
  let text = ISO_SECONDS.get(second);
  if (text === undefined) {
    if (ISO_SECONDS.size >= 16) ISO_SECONDS.clear();
    text = isoText(second * 1000);
    ISO_SECONDS.set(second, text);
  }
  return text;
}
// The few seconds written lately (now, now + 24 h) and their text: the requests of a second share them.
const ISO_SECONDS = new Map<number, string>();

/** The UTC day of a time, `YYYY-MM-DD`: the unit of daily limits. */
export function utcDay(ms: number): string {
  const day = Math.floor(ms / 86_400_000);
  if (day !== dayNumber) {
    dayText = new Date(day * 86_400_000).toISOString().slice(0, 10);
    dayNumber = day;
  }
  return dayText;
}
let dayNumber = Number.NaN;
let dayText = "";
