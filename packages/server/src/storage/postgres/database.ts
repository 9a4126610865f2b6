/**
 * PostgreSQL for the server's shared mode (several instances on one database, D108): a pool per instance,
 * transactions that run again on a serialization failure or a deadlock, and one error for "the database did not
 * answer", which the HTTP layer answers as 503 `temporarily_unavailable` with nothing charged.
 *
 * The driver is `pg` (node-postgres): the most used PostgreSQL client for Node, pure JavaScript (no build step),
 * with a pool, explicit transactions on a checked-out connection and parameterized queries; its types come from
 * DefinitelyTyped. `int8` and `numeric` columns come back as numbers here (credits and counts stay far below 2^53),
 * set on this pool only, so a host application's own `pg` keeps its parsers.
 */
import pg from "pg";

import { DatabaseUnavailable } from "./unavailable.ts";

export { DatabaseUnavailable };

/** Queries, on the pool or inside one transaction. */
export interface Sql {
  /** The rows of one statement (`$1`, `$2`… are `params`). */
  query<T extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** The first row of one statement, or undefined. */
  one<T extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T | undefined>;
}

/** Options of {@link Postgres}. */
export interface PostgresOptions {
  /** Connections of this instance's pool (default 10). */
  max?: number;
  /** How long to wait for a connection, in ms (default 5 000). */
  connectTimeoutMs?: number;
  /**
   * The longest a statement may run, in ms (default 10 000): PostgreSQL cancels it then (`statement_timeout`), and
   * the client gives up on its answer 1 s later whatever the network does (a database behind a blackhole never sees
   * the statement, so only the client's own timer can end the wait).
   */
  statementTimeoutMs?: number;
  /** `application_name` of the connections (default `sdgw`): `pg_stat_activity` shows it. */
  applicationName?: string;
  /** How long one probe of a database that stopped answering may take, in ms (default 2 000). */
  probeTimeoutMs?: number;
  /** The pause between two probes of a database that does not answer, in ms (default 500). */
  probeIntervalMs?: number;
  /** Told of each change of the database's state (for logs and metrics). */
  onEvent?: (event: PostgresEvent) => void;
}

/**
 * What {@link Postgres} tells of the database's state:
 * - `lost`: a connection broke (terminated by the server, reset, or an error while idle); the pool makes another;
 * - `down`: the database does not answer (a connection or a statement past its time, refused, unreachable): every
 *   statement fails at once with `DatabaseUnavailable` until a probe gets an answer;
 * - `restored`: a probe got an answer after `lost` or `down`; what failed meanwhile can be cleaned up now.
 */
export type PostgresEvent =
  | { kind: "lost"; error: unknown }
  | { kind: "down"; error: unknown }
  | { kind: "restored"; downMs: number };

/** SQLSTATEs after which a transaction is run again: serialization_failure, deadlock_detected. */
const RETRY_STATES = new Set(["40001", "40P01"]);
/** SQLSTATE classes of a database that is not there: connection exceptions, operator intervention (shutdown). */
const GONE_CLASSES = ["08", "57"];
/** Node's errors of a socket that did not connect or broke. */
const GONE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
]);
/** Node's errors of a database that cannot be reached at all (as opposed to one connection that broke). */
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
/** SQLSTATEs of a server that refuses connections for now: cannot_connect_now (starting or stopping). */
const UNREACHABLE_STATES = new Set(["57P03"]);
/** pg's words for a connection that broke or never came, and for its own timers (connect, statement). */
const GONE_MESSAGE =
  /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED|Client has encountered a connection error|Query read timeout|not queryable/i;
const TIMED_OUT_MESSAGE =
  /timeout exceeded when trying to connect|Connection terminated due to connection timeout|Query read timeout/i;
/** Times a transaction is run again after a serialization failure or deadlock. */
const RETRIES = 8;

const INT8 = 20;
const NUMERIC = 1700;

export { isPostgresUrl } from "../../config.ts";

const codeOf = (e: unknown) => {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
};

/** Whether an error means the database is not answering (rather than refusing this statement). */
export function isUnavailable(e: unknown): boolean {
  if (e instanceof DatabaseUnavailable) return true;
  const code = codeOf(e);
  if (code !== undefined && (GONE_CODES.has(code) || GONE_CLASSES.some((c) => code.startsWith(c)))) return true;
  return GONE_MESSAGE.test(e instanceof Error ? e.message : "");
}

/**
 * Whether an error means the database cannot be reached at all (refused, unreachable, a connection or a statement
 * past its time), not merely that one connection broke: the pool then stops trying until a probe gets an answer.
 */
function isUnreachable(e: unknown): boolean {
  const code = codeOf(e);
  if (code !== undefined && (UNREACHABLE_CODES.has(code) || UNREACHABLE_STATES.has(code))) return true;
  return TIMED_OUT_MESSAGE.test(e instanceof Error ? e.message : "");
}

/** A connection that broke (terminated, reset), the database itself still reachable as far as this error tells. */
function isLost(e: unknown): boolean {
  const cause = e instanceof DatabaseUnavailable ? e.cause : e;
  return isUnavailable(cause) && !isUnreachable(cause) && codeOf(cause) !== "57014";
}

/** A statement that only reads. */
const READ = /^\s*SELECT\b/i;

function unavailable(e: unknown): never {
  if (e instanceof DatabaseUnavailable) throw e;
  const why = e instanceof Error ? e.message : String(e);
  throw new DatabaseUnavailable(`PostgreSQL does not answer: ${why}`, { cause: e });
}

/**
 * D129: the name of a statement's prepared form, by its text. A statement with parameters is prepared once on each
 * connection and then only bound and executed (PostgreSQL parsed and planned every one of them again: on a charged
 * call, parse and bind took longer in the backend than the execution). Names are given to the first
 * {@link MAX_PREPARED} texts of the process — the gateway's statements are fixed texts; one built with a varying
 * list would otherwise prepare without end — and the rest run unnamed as before.
 */
const PREPARED = new Map<string, string>();
const MAX_PREPARED = 256;
function prepared(text: string): string | undefined {
  let name = PREPARED.get(text);
  if (name === undefined && PREPARED.size < MAX_PREPARED) {
    name = `sdgw_${PREPARED.size + 1}`;
    PREPARED.set(text, name);
  }
  return name;
}

/** Statements on one connection or the pool, each through `guard`. */
function sqlOn(q: pg.Pool | pg.PoolClient, guard: <T>(fn: () => Promise<T>) => Promise<T>): Sql {
  const query = async <T extends object>(text: string, params: readonly unknown[] = []) => {
    // Without parameters (BEGIN, COMMIT, a probe) the simple protocol is one round trip: nothing to prepare.
    const name = params.length ? prepared(text) : undefined;
    const config = name ? { name, text, values: params as unknown[] } : { text, values: params as unknown[] };
    return (await guard(() => q.query<T>(config))).rows;
  };
  return { query, one: async (text, params) => (await query(text, params))[0] as never };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * One instance's pool on a PostgreSQL database, that survives the database's faults (D109): no error of a
 * connection ends the process (a connection checked out for a transaction has its own listener, an idle one the
 * pool's); every statement is bounded in time on both sides (PostgreSQL's `statement_timeout`, and the client's own
 * timer a second later, for a network that swallows packets); a database that cannot be reached fails every
 * statement at once with `DatabaseUnavailable` until a probe (a fresh connection and `SELECT 1`, every
 * `probeIntervalMs`) gets an answer, then `restored` is told, so what failed meanwhile can be cleaned up.
 */
export class Postgres implements Sql {
  private readonly pool: pg.Pool;
  private readonly onPool: Sql;
  private readonly o: Required<Omit<PostgresOptions, "onEvent">> & { url: string };
  private readonly listeners: Array<(event: PostgresEvent) => void> = [];
  /** Since when (ms) the database has not been answering: statements fail at once meanwhile. */
  private downSince: number | null = null;
  private downError: unknown = null;
  /** The probe running after a fault, if any. */
  private probing: Promise<void> | null = null;
  private closed = false;

  constructor(url: string, options: PostgresOptions = {}) {
    this.o = {
      url,
      max: options.max ?? 10,
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      statementTimeoutMs: options.statementTimeoutMs ?? 10_000,
      applicationName: options.applicationName ?? "sdgw",
      probeTimeoutMs: options.probeTimeoutMs ?? 2000,
      probeIntervalMs: options.probeIntervalMs ?? 500,
    };
    if (options.onEvent) this.listeners.push(options.onEvent);
    const types = {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === INT8 || oid === NUMERIC ? Number : pg.types.getTypeParser(oid, format as never)) as never,
    };
    this.pool = new pg.Pool({
      connectionString: url,
      max: this.o.max,
      connectionTimeoutMillis: this.o.connectTimeoutMs,
      statement_timeout: this.o.statementTimeoutMs,
      query_timeout: this.o.statementTimeoutMs + 1000,
      application_name: this.o.applicationName,
      // A connection whose peer vanished without a word (a machine lost, a NAT entry dropped) is found by the kernel.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      types,
    });
    // An idle connection that breaks (the server restarts, a backend is terminated) is dropped by the pool; the next
    // query opens another.
    this.pool.on("error", (e) => this.fault(e));
    this.onPool = sqlOn(this.pool, (fn) => this.guarded(fn));
  }

  /** Listens to the database's state changes (see {@link PostgresEvent}). */
  on(listener: (event: PostgresEvent) => void): void {
    this.listeners.push(listener);
  }

  /** Whether the database is answering, as far as this pool knows (false from a fault until a probe's answer). */
  get answering(): boolean {
    return this.downSince === null && this.probing === null;
  }

  /**
   * The rows of one statement on the pool. A read (a statement that begins with SELECT) whose connection broke under
   * it is read once more on another connection: it changed nothing, so nothing can happen twice.
   */
  async query<T extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]> {
    try {
      return await this.onPool.query<T>(text, params);
    } catch (e) {
      if (!(READ.test(text) && this.downSince === null && isLost(e))) throw e;
      return this.onPool.query<T>(text, params);
    }
  }

  async one<T extends object = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
  ): Promise<T | undefined> {
    return (await this.query<T>(text, params))[0];
  }

  /**
   * Runs `fn` in one transaction (READ COMMITTED; `fn` locks the rows it decides on) and commits; rolls back if it
   * throws. A serialization failure or a deadlock runs it again, up to 8 times, so `fn` must do nothing but
   * statements on the `Sql` it is given. A connection that breaks meanwhile is thrown away, never given back.
   */
  async tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    let lostOnce = false;
    for (let attempt = 0; ; attempt++) {
      const { client, onError, lost } = await this.guarded(() => this.checkout());
      let broken = false;
      let committing = false;
      try {
        const sql = sqlOn(client, (f) => this.guarded(f));
        await sql.query("BEGIN");
        const result = await fn(sql);
        committing = true;
        await sql.query("COMMIT");
        return result;
      } catch (e) {
        broken = lost.error !== null || isUnavailable(e);
        if (!broken) await client.query("ROLLBACK").catch(() => undefined);
        const state = codeOf(e);
        if (attempt < RETRIES && state !== undefined && RETRY_STATES.has(state)) continue;
        // A connection lost before COMMIT was sent rolled the transaction back: it runs once more on another. Lost
        // during COMMIT, it may have committed: that is for the caller to find out (D109).
        if (broken && !committing && !lostOnce && this.downSince === null && isLost(e)) {
          lostOnce = true;
          continue;
        }
        if (broken) unavailable(e);
        throw e;
      } finally {
        client.removeListener("error", onError);
        client.release(broken);
      }
    }
  }

  /** D113: the pool's clients now: open, idle, and queries waiting for one (read by `/metrics`). */
  get stats(): { total: number; idle: number; waiting: number } {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  /**
   * A connection of the pool for a transaction, with an `error` listener of its own attached in the pool's callback,
   * before anything else can run: checked out, a connection has no listener of the pool's, and a backend terminated
   * while it is idle between two statements (or in the same read as its first ReadyForQuery, before a promise's
   * continuation could attach one) would be an unhandled `error` event, which ends the process.
   */
  private checkout(): Promise<{ client: pg.PoolClient; onError: (e: unknown) => void; lost: { error: unknown } }> {
    return new Promise((resolve, reject) => {
      this.pool.connect((err, client) => {
        if (err || !client) return reject(err ?? new Error("the pool gave no connection"));
        const lost = { error: null as unknown };
        const onError = (e: unknown) => {
          lost.error ??= e;
          this.fault(e);
        };
        client.on("error", onError);
        resolve({ client, onError, lost });
      });
    });
  }

  /** Closes the pool: waits for the connections in use, then ends them all. */
  async close(): Promise<void> {
    this.closed = true;
    await this.pool.end();
    await this.probing?.catch(() => undefined);
  }

  /** Runs `fn`: at once `DatabaseUnavailable` while the database is down; a fault becomes `DatabaseUnavailable`. */
  private async guarded<T>(fn: () => Promise<T>): Promise<T> {
    if (this.downSince !== null) {
      const why = this.downError instanceof Error ? this.downError.message : String(this.downError);
      throw new DatabaseUnavailable(
        `PostgreSQL does not answer (since ${new Date(this.downSince).toISOString()}): ${why}`,
      );
    }
    try {
      return await fn();
    } catch (e) {
      if (isUnavailable(e)) {
        this.fault(e);
        unavailable(e);
      }
      throw e;
    }
  }

  /** A fault seen: the database is down if it cannot be reached, and a probe finds when it answers again. */
  private fault(e: unknown): void {
    if (this.closed) return;
    if (e instanceof DatabaseUnavailable) return; // told already, when it was thrown
    const down = isUnreachable(e);
    if (down && this.downSince === null) {
      this.downSince = Date.now();
      this.downError = e;
      this.tell({ kind: "down", error: e });
    } else if (!down) this.tell({ kind: "lost", error: e });
    this.probing ??= this.probe().finally(() => {
      this.probing = null;
    });
  }

  /** Probes the database with a fresh connection until it answers, then lifts `down` and tells `restored`. */
  private async probe(): Promise<void> {
    const since = this.downSince ?? Date.now();
    while (!this.closed) {
      const client = new pg.Client({
        connectionString: this.o.url,
        connectionTimeoutMillis: this.o.probeTimeoutMs,
        query_timeout: this.o.probeTimeoutMs,
        application_name: this.o.applicationName,
      });
      client.on("error", () => undefined);
      try {
        await client.connect();
        await client.query("SELECT 1");
        this.downSince = null;
        this.downError = null;
        this.tell({ kind: "restored", downMs: Date.now() - since });
        return;
      } catch {
        await sleep(this.o.probeIntervalMs);
      } finally {
        void client.end().catch(() => undefined);
      }
    }
  }

  private tell(event: PostgresEvent): void {
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // a listener's failure is its own
      }
    }
  }
}
