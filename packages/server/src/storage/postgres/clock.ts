/**
 * One clock for money in the shared mode (D110): the gateway's `now` on PostgreSQL is the database's clock, read at
 * start and at every heartbeat, and carried forward between readings by this process's monotonic clock. So the UTC
 * day of a daily limit and of today's spend, `resets_at`, the 24 h of a kept answer (410) and of an
 * Idempotency-Key are the same on every instance, however far their own clocks drift or jump: an instance whose
 * wall clock is minutes (or a day) off agrees with the others to within half a round trip to the database.
 */
import type { Sql } from "./database.ts";

/** A reading of the database's clock, and the round trip it took. */
export interface ClockReading {
  /** The database's `clock_timestamp()` in ms since the epoch. */
  dbMs: number;
  /** `performance.now()` when the statement was sent and when its answer came. */
  sentAt: number;
  receivedAt: number;
}

/** The statement's column that reads the database's clock in ms (a float8, exact to the microsecond). */
export const DB_NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::float8";

/** A reading older than this is replaced by any new one, however slow its round trip. */
const STALE_MS = 60_000;

/** The database's clock, as this process best knows it. */
export class DbClock {
  /** The database's time at `perfBase` (ms since the epoch). */
  private base = 0;
  private perfBase = 0;
  /** Half the round trip of the reading in use: how far off `now()` may be. */
  private error = Number.POSITIVE_INFINITY;
  /** The last value `now()` gave: it never goes backwards. */
  private last = 0;

  /** Reads the database's clock now (one statement). */
  async sync(sql: Sql): Promise<void> {
    const sentAt = performance.now();
    const row = await sql.one<{ ms: number }>(`SELECT ${DB_NOW_MS} AS ms`);
    this.reading({ dbMs: row!.ms, sentAt, receivedAt: performance.now() });
  }

  /**
   * Takes a reading made by another statement (the heartbeat's). A reading is used unless its round trip was
   * slower than twice the one in use and that one is still fresh: its midpoint is the best estimate of when the
   * database read its clock.
   */
  reading(r: ClockReading): void {
    const half = Math.max(0, r.receivedAt - r.sentAt) / 2;
    const stale = r.receivedAt - this.perfBase > STALE_MS;
    if (!stale && half > 2 * this.error + 1) return;
    this.base = r.dbMs + half;
    this.perfBase = r.receivedAt;
    this.error = half;
  }

  /** Whether a reading was taken. */
  get synced(): boolean {
    return Number.isFinite(this.error);
  }

  /** The database's time now, in ms since the epoch (never less than a value it gave before). */
  readonly now = (): number => {
    if (!this.synced) throw new Error("DbClock.now() before the first reading (call sync first)");
    const t = this.base + (performance.now() - this.perfBase);
    this.last = Math.max(this.last, t);
    return Math.floor(this.last);
  };
}
