/**
 * Schedules (D11, D52) on PostgreSQL, for several instances on one database (D108): the counterpart of the embedded
 * store's `Schedules` (`../sqlite/schedules.ts`), method for method, with the same records (instants as
 * `YYYY-MM-DDTHH:MM:SSZ` text, `last_run` as JSON text), plus what several instances need:
 *
 * - **Each due schedule fires once.** {@link PgSchedules.claimDue} takes the due schedules `FOR UPDATE SKIP LOCKED`
 *   and moves their `next_run_at` past now in the same transaction, so of instances polling together exactly one
 *   gets each schedule, and the next run is set before this one starts.
 * - **At most {@link SCHEDULES_PER_WORKSPACE} a workspace.** {@link PgSchedules.create} counts and inserts under a
 *   transaction-scoped advisory lock of the workspace: concurrent creates on any instances are decided one at a
 *   time, and the one over the bound throws {@link ScheduleLimitReached}.
 * - **Follower readings** are upserted per (platform, account, moment), as `INSERT OR REPLACE` does there.
 */
import { EVERY_MS, type FollowerReading, isoSeconds } from "@sdgw/engine";
import type { Schedule } from "@sdgw/types";
import { newId } from "../../ids.ts";
import {
  NEW_SCHEDULE_COLUMNS,
  type NewSchedule,
  newScheduleValues,
  SCHEDULES_PER_WORKSPACE,
  type ScheduledStart,
  type ScheduleRecord,
  scheduleResource,
} from "../schedules.ts";
import type { Postgres } from "./database.ts";
import { storable } from "./text.ts";

/** Options of {@link PgSchedules}. */
export interface PgSchedulesDeps {
  /** This instance's pool (the schema is migrated: `migrate`). */
  db: Postgres;
  /** The clock, in ms since the epoch. */
  now: () => number;
}

/** A workspace already holds {@link SCHEDULES_PER_WORKSPACE} schedules: {@link PgSchedules.create} made none. */
export class ScheduleLimitReached extends Error {
  override readonly name = "ScheduleLimitReached";
  /** The workspace that is full. */
  readonly workspaceId: string;
  /** Schedules a workspace may hold. */
  readonly limit: number;

  constructor(workspaceId: string, limit: number) {
    super(`workspace ${workspaceId} already holds ${limit} schedules, the most it may`);
    this.workspaceId = workspaceId;
    this.limit = limit;
  }
}

/** Schedules claimed by one {@link PgSchedules.claimDue} at most, unless told otherwise. */
export const CLAIM_LIMIT = 100;

/**
 * The class key of the advisory locks that serialize a workspace's creates (`pg_advisory_xact_lock(class,
 * hashtext(workspace))`; "schd"). Two workspaces whose ids hash alike only wait for each other.
 */
const WORKSPACE_LOCK_CLASS = 0x73636864;

/** The columns of a {@link ScheduleRecord}, as stored (instants as `timestamptz`). */
const COLUMNS =
  "id, workspace_id, account_id, key_id, body, params, every, status, paused_reason, created_at, next_run_at, last_run, last_run_id";

/** A row as `pg` reads it: the record with its instants as `Date`s. */
type Row = Omit<ScheduleRecord, "created_at" | "next_run_at"> & { created_at: Date; next_run_at: Date };

/** The record of a row, its instants in whole seconds as the embedded store writes them. */
function record(r: Row): ScheduleRecord {
  return {
    id: r.id,
    workspace_id: r.workspace_id,
    account_id: r.account_id,
    key_id: r.key_id,
    body: r.body,
    params: r.params,
    every: r.every,
    status: r.status,
    paused_reason: r.paused_reason,
    created_at: isoSeconds(r.created_at.getTime()),
    next_run_at: isoSeconds(r.next_run_at.getTime()),
    last_run: r.last_run,
    last_run_id: r.last_run_id,
  };
}

/**
 * The next run of a schedule whose run due at `nextRunAt` starts at `now`: `nextRunAt` moved past `now` by whole
 * periods (a run missed while nothing ran is not made up). The arithmetic of `Schedules.started`.
 */
export function nextRunAfter(nextRunAt: string, every: Schedule["every"], now: number): number {
  let next = Date.parse(nextRunAt);
  while (next <= now) next += EVERY_MS[every];
  return next;
}

/**
 * Creates, lists, removes and updates schedules, and keeps follower readings, on PostgreSQL: `Schedules` of the
 * embedded store for several instances, each method answering as its namesake there (as a Promise), plus
 * {@link PgSchedules.claimDue} and {@link PgSchedules.release} for a scheduler on every instance.
 *
 * A claim is remembered in the row's `claimed_run_at` (the `next_run_at` it moved forward) until the claimed run
 * starts ({@link PgSchedules.started}), is refused ({@link PgSchedules.pause}: due again at once, as there) or is
 * not tried ({@link PgSchedules.release}).
 */
export class PgSchedules {
  private readonly deps: PgSchedulesDeps;

  constructor(deps: PgSchedulesDeps) {
    this.deps = deps;
  }

  /** Schedules of a workspace. */
  async count(workspaceId: string): Promise<number> {
    const row = await this.deps.db.one<{ n: number }>("SELECT count(*) AS n FROM schedules WHERE workspace_id = $1", [
      workspaceId,
    ]);
    return row!.n;
  }

  /**
   * Creates a schedule whose first run is `every` from now (the creating call is its run of now). The workspace's
   * schedules are counted and the new one inserted under the workspace's advisory lock, in one transaction: of
   * concurrent creates on any instances, those that would make more than {@link SCHEDULES_PER_WORKSPACE} make
   * none.
   *
   * @throws {@link ScheduleLimitReached} when the workspace already holds {@link SCHEDULES_PER_WORKSPACE} schedules
   * (a caller that checked `count` first lost a race to another create).
   */
  async create(input: NewSchedule): Promise<Schedule> {
    const now = this.deps.now();
    const id = newId("sch");
    const row = await this.deps.db.tx(async (sql) => {
      await sql.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [WORKSPACE_LOCK_CLASS, input.workspaceId]);
      const held = await sql.one<{ n: number }>("SELECT count(*) AS n FROM schedules WHERE workspace_id = $1", [
        input.workspaceId,
      ]);
      if (held!.n >= SCHEDULES_PER_WORKSPACE)
        throw new ScheduleLimitReached(input.workspaceId, SCHEDULES_PER_WORKSPACE);
      return sql.one<Row>(
        `INSERT INTO schedules (${NEW_SCHEDULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $9) RETURNING ${COLUMNS}`,
        newScheduleValues(id, input, now),
      );
    });
    return this.resource(record(row!));
  }

  /** One schedule by id. */
  async get(id: string): Promise<ScheduleRecord | undefined> {
    if (!storable(id)) return undefined;
    const row = await this.deps.db.one<Row>(`SELECT ${COLUMNS} FROM schedules WHERE id = $1`, [id]);
    return row && record(row);
  }

  /** The workspace's schedules, oldest first (then by id, in binary order), as the API shows them. */
  async list(workspaceId: string): Promise<Schedule[]> {
    const rows = await this.deps.db.query<Row>(
      `SELECT ${COLUMNS} FROM schedules WHERE workspace_id = $1 ORDER BY created_at, id COLLATE "C"`,
      [workspaceId],
    );
    return rows.map((r) => this.resource(record(r)));
  }

  /** Removes a schedule of the workspace; false when it has none of that id. */
  async remove(workspaceId: string, id: string): Promise<boolean> {
    if (!storable(workspaceId, id)) return false;
    const rows = await this.deps.db.query("DELETE FROM schedules WHERE id = $1 AND workspace_id = $2 RETURNING id", [
      id,
      workspaceId,
    ]);
    return rows.length > 0;
  }

  /**
   * Schedules whose `next_run_at` has come (active and paused: a paused one is tried again, D11), oldest due first.
   * A read only, as on the embedded store: with several instances, a scheduler takes its due schedules with
   * {@link PgSchedules.claimDue} instead, or two instances would run the same one.
   */
  async due(): Promise<ScheduleRecord[]> {
    const rows = await this.deps.db.query<Row>(
      `SELECT ${COLUMNS} FROM schedules WHERE next_run_at <= $1 ORDER BY next_run_at, id COLLATE "C"`,
      [isoSeconds(this.deps.now())],
    );
    return rows.map(record);
  }

  /**
   * Claims up to `limit` schedules due now for this instance to run: the multi-instance form of the embedded
   * store's `due()` followed by `started()`.
   *
   * There, one process's scheduler reads `due()` and moves each schedule's `next_run_at` in `started()`, and
   * nothing else runs schedules in between. Here several instances poll at once, so reading and moving are one
   * transaction: the due schedules (active and paused alike, as `due()` finds them; oldest due first) are selected
   * `FOR UPDATE SKIP LOCKED`, and each one's `next_run_at` moves past now by whole periods (the arithmetic of
   * `started`, {@link nextRunAfter}) before the transaction commits. An instance polling at the same moment skips
   * the rows this one holds and, once it commits, no longer finds them due: each due schedule is claimed once per
   * period, on one instance, and its next run is set before this run starts.
   *
   * The records come back as `due()` gives them (their `next_run_at` is the run claimed, not the next one), so the
   * scheduler runs each as it does a due one and then calls exactly one of:
   * - {@link PgSchedules.started} when its run started (as there; `next_run_at` is already past now);
   * - {@link PgSchedules.pause} when its run was refused: the claim is undone, so the schedule is due again at the
   *   next tick, paused, as there;
   * - {@link PgSchedules.release} when it was not tried now and not paused (the workspace's concurrency, limits that
   *   did not answer): due again at the next tick, as there.
   *
   * An instance that dies between the claim and the start loses that one run: the schedule runs again at its next
   * period, never twice for one.
   *
   * @param limit The most schedules to claim (default {@link CLAIM_LIMIT}); claim again while a claim comes back full.
   */
  async claimDue(limit: number = CLAIM_LIMIT): Promise<ScheduleRecord[]> {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`claimDue: limit must be a positive integer`);
    const now = this.deps.now();
    return this.deps.db.tx(async (sql) => {
      const rows = await sql.query<Row>(
        `SELECT ${COLUMNS} FROM schedules WHERE next_run_at <= $1 ORDER BY next_run_at, id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [isoSeconds(now), limit],
      );
      if (rows.length === 0) return [];
      const claimed = rows.map(record);
      await sql.query(
        "UPDATE schedules s SET claimed_run_at = s.next_run_at, next_run_at = c.next FROM " +
          "unnest($1::text[], $2::timestamptz[]) AS c(id, next) WHERE s.id = c.id",
        [claimed.map((r) => r.id), claimed.map((r) => isoSeconds(nextRunAfter(r.next_run_at, r.every, now)))],
      );
      return claimed;
    });
  }

  /**
   * Undoes a claim whose run was neither started nor refused (not tried now: the workspace's concurrency, or
   * limits that did not answer): `next_run_at` goes back to the run claimed, so the next tick, on any instance,
   * tries it again, as the embedded store's scheduler does by leaving such a schedule due. False when the schedule
   * has no claim outstanding (removed, or its claim already ended).
   */
  async release(id: string): Promise<boolean> {
    const rows = await this.deps.db.query(
      "UPDATE schedules SET next_run_at = claimed_run_at, claimed_run_at = NULL WHERE id = $1 AND claimed_run_at IS NOT NULL RETURNING id",
      [id],
    );
    return rows.length > 0;
  }

  /**
   * A run started: `last_run` shows it running, `next_run_at` moves past now by whole periods, the schedule is
   * active; its claim, if any, ends. `next_run_at` never moves back: after a claim it is already past now, and a
   * start later than that (another instance may have claimed the next period meanwhile) keeps the later one.
   */
  async started({ id, runId, handle, every, nextRunAt }: ScheduledStart): Promise<void> {
    const now = this.deps.now();
    const lastRun: NonNullable<Schedule["last_run"]> = {
      handle,
      started_at: isoSeconds(now),
      status: "running",
      charged_credits: 0,
    };
    await this.deps.db.query(
      "UPDATE schedules SET status = 'active', paused_reason = NULL, next_run_at = " +
        "GREATEST(next_run_at, $1::timestamptz), last_run = $2, last_run_id = $3, claimed_run_at = NULL WHERE id = $4",
      [isoSeconds(nextRunAfter(nextRunAt, every, now)), JSON.stringify(lastRun), runId, id],
    );
  }

  /** A run ended: its status and charge in `last_run` (if it is still the schedule's last run). */
  async ended(
    id: string,
    runId: string,
    status: NonNullable<Schedule["last_run"]>["status"],
    charged: number,
  ): Promise<void> {
    await this.deps.db.tx(async (sql) => {
      const row = await sql.one<{ last_run: string | null; last_run_id: string | null }>(
        "SELECT last_run, last_run_id FROM schedules WHERE id = $1 FOR UPDATE",
        [id],
      );
      if (!row || row.last_run_id !== runId || !row.last_run) return;
      const lastRun = {
        ...(JSON.parse(row.last_run) as NonNullable<Schedule["last_run"]>),
        status,
        charged_credits: charged,
      };
      await sql.query("UPDATE schedules SET last_run = $1 WHERE id = $2", [JSON.stringify(lastRun), id]);
    });
  }

  /**
   * A run was refused (balance, daily limit, the key): the schedule pauses; `next_run_at` stays (a claim's move is
   * undone), so it is tried again at the next tick.
   */
  async pause(id: string, reason: string): Promise<void> {
    await this.deps.db.query(
      "UPDATE schedules SET status = 'paused', paused_reason = $2, next_run_at = COALESCE(claimed_run_at, next_run_at), claimed_run_at = NULL WHERE id = $1",
      [id, reason],
    );
  }

  /**
   * After a restart: a schedule whose last run was still running broke with the old process (the run itself is
   * recovered as broken, uncharged). Its `last_run` says `error` and it runs again at once. Returns how many.
   */
  async recover(brokenRunIds: ReadonlySet<string>): Promise<number> {
    if (brokenRunIds.size === 0) return 0;
    const now = isoSeconds(this.deps.now());
    return this.deps.db.tx(async (sql) => {
      const rows = await sql.query<{ id: string; last_run: string | null }>(
        'SELECT id, last_run FROM schedules WHERE last_run_id = ANY($1::text[]) ORDER BY id COLLATE "C" FOR UPDATE',
        [[...brokenRunIds]],
      );
      let n = 0;
      for (const row of rows) {
        if (!row.last_run) continue;
        const lastRun = {
          ...(JSON.parse(row.last_run) as NonNullable<Schedule["last_run"]>),
          status: "error" as const,
          charged_credits: 0,
        };
        await sql.query("UPDATE schedules SET last_run = $1, next_run_at = $2, claimed_run_at = NULL WHERE id = $3", [
          JSON.stringify(lastRun),
          now,
          row.id,
        ]);
        n++;
      }
      return n;
    });
  }

  /** The API's view of a stored schedule (no database: synchronous, as there). */
  resource(r: ScheduleRecord): Schedule {
    return scheduleResource(r);
  }

  /**
   * Records follower counts an `account_watch` run read (one reading per account and moment: a reading of a moment
   * already recorded replaces it; of several for one moment in `readings`, the last counts), in one statement.
   */
  async recordFollowers(
    readings: ReadonlyArray<{ platform: string; accountId: string; t: number; value: number }>,
  ): Promise<void> {
    const last = new Map<string, { platform: string; accountId: string; t: number; value: number }>();
    for (const r of readings) last.set(JSON.stringify([r.platform, r.accountId, r.t]), r);
    if (last.size === 0) return;
    const rows = [...last.values()];
    await this.deps.db.query(
      "INSERT INTO follower_readings (platform, account_id, t, value) SELECT * FROM " +
        "unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) ON CONFLICT (platform, account_id, t) " +
        "DO UPDATE SET value = EXCLUDED.value",
      [rows.map((r) => r.platform), rows.map((r) => r.accountId), rows.map((r) => r.t), rows.map((r) => r.value)],
    );
  }

  /** Earlier follower readings of an account (the last 400, oldest first). */
  async followerHistory(platform: string, accountId: string): Promise<FollowerReading[]> {
    const rows = await this.deps.db.query<{ t: number; value: number }>(
      "SELECT t, value FROM (SELECT t, value FROM follower_readings WHERE platform = $1 AND account_id = $2 ORDER BY t DESC LIMIT 400) r ORDER BY t",
      [platform, accountId],
    );
    return rows.map((r) => ({ t: r.t, value: r.value }));
  }
}
