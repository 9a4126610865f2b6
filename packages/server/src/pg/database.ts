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
  /** The longest a statement may run, in ms (default 10 000). */
  statementTimeoutMs?: number;
  /** `application_name` of the connections (default `sdgw`): `pg_stat_activity` shows it. */
  applicationName?: string;
  /** D113: called with each error of an idle connection of the pool (the gateway counts them in `/metrics`). */
  onError?: (error: Error) => void;
}

/** SQLSTATEs after which a transaction is run again: serialization_failure, deadlock_detected. */
const RETRY_STATES = new Set(["40001", "40P01"]);
/** SQLSTATE classes of a database that is not there: connection exceptions, operator intervention (shutdown). */
const GONE_CLASSES = ["08", "57"];
/** Node's errors of a socket that did not connect or broke. */
const GONE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "EPIPE"]);
/** Times a transaction is run again after a serialization failure or deadlock. */
const RETRIES = 8;

const INT8 = 20;
const NUMERIC = 1700;

export { isPostgresUrl } from "../config.ts";

/** Whether an error means the database is not answering (rather than refusing this statement). */
export function isUnavailable(e: unknown): boolean {
  if (e instanceof DatabaseUnavailable) return true;
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === "string" && (GONE_CODES.has(code) || GONE_CLASSES.some((c) => code.startsWith(c)))) return true;
  const message = e instanceof Error ? e.message : "";
  return /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED|Client has encountered a connection error/i.test(
    message,
  );
}

function unavailable(e: unknown): never {
  if (e instanceof DatabaseUnavailable) throw e;
  const why = e instanceof Error ? e.message : String(e);
  throw new DatabaseUnavailable(`PostgreSQL does not answer: ${why}`, { cause: e });
}

/** Runs `fn`; a database that is not answering becomes {@link DatabaseUnavailable}, any other error stays. */
async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isUnavailable(e)) unavailable(e);
    throw e;
  }
}

/** Statements on one connection or the pool. */
function sqlOn(q: pg.Pool | pg.PoolClient): Sql {
  const query = async <T extends object>(text: string, params: readonly unknown[] = []) =>
    (await guarded(() => q.query<T>(text, params as unknown[]))).rows;
  return { query, one: async (text, params) => (await query(text, params))[0] as never };
}

/** One instance's pool on a PostgreSQL database. */
export class Postgres implements Sql {
  private readonly pool: pg.Pool;
  private readonly onPool: Sql;

  constructor(url: string, options: PostgresOptions = {}) {
    const types = {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === INT8 || oid === NUMERIC ? Number : pg.types.getTypeParser(oid, format as never)) as never,
    };
    this.pool = new pg.Pool({
      connectionString: url,
      max: options.max ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
      statement_timeout: options.statementTimeoutMs ?? 10_000,
      application_name: options.applicationName ?? "sdgw",
      types,
    });
    // An idle connection that breaks (the server restarts) is dropped by the pool; the next query opens another.
    this.pool.on("error", (e) => options.onError?.(e));
    this.onPool = sqlOn(this.pool);
  }

  query<T extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]> {
    return this.onPool.query<T>(text, params);
  }

  one<T extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T | undefined> {
    return this.onPool.one<T>(text, params);
  }

  /**
   * Runs `fn` in one transaction (READ COMMITTED; `fn` locks the rows it decides on) and commits; rolls back if it
   * throws. A serialization failure or a deadlock runs it again, up to 8 times, so `fn` must do nothing but
   * statements on the `Sql` it is given.
   */
  async tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const client = await guarded(() => this.pool.connect());
      let broken = false;
      try {
        await client.query("BEGIN");
        const result = await fn(sqlOn(client));
        await client.query("COMMIT");
        return result;
      } catch (e) {
        broken = isUnavailable(e);
        if (!broken) await client.query("ROLLBACK").catch(() => undefined);
        const state = (e as { code?: unknown }).code;
        if (attempt < RETRIES && typeof state === "string" && RETRY_STATES.has(state)) continue;
        if (broken) unavailable(e);
        throw e;
      } finally {
        client.release(broken);
      }
    }
  }

  /** D113: the pool's clients now: open, idle, and queries waiting for one (read by `/metrics`). */
  get stats(): { total: number; idle: number; waiting: number } {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  /** Closes the pool: waits for the connections in use, then ends them all. */
  close(): Promise<void> {
    return this.pool.end();
  }
}
