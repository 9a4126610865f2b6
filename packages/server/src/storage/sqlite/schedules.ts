/**
 * Schedules (D11, D52): standing `account_watch` calls of a workspace, stored durably, so that a restart keeps
 * them and runs what fell due while the server was down. This system keeps the rows and answers what is due;
 * running a schedule (hold, run, capture: the rules of a call) is the scheduler's job (`scheduler.ts`).
 *
 * Also the follower readings that scheduled runs leave behind: `account_watch` draws an account's follower series
 * from them.
 */
import type { Schedule } from "@sdgw/types";
import { newId } from "../../ids.ts";
import { EVERY_MS, type FollowerReading } from "@sdgw/engine";
import { isoSeconds, type Store } from "./store.ts";
import {
  NEW_SCHEDULE_COLUMNS,
  type NewSchedule,
  newScheduleValues,
  type ScheduledStart,
  type ScheduleRecord,
  scheduleResource,
} from "../schedules.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS schedules (
  id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, account_id TEXT NOT NULL, key_id TEXT NOT NULL,
  body TEXT NOT NULL, params TEXT NOT NULL, every TEXT NOT NULL CHECK (every IN ('1h','6h','1d')),
  status TEXT NOT NULL CHECK (status IN ('active','paused')), paused_reason TEXT,
  created_at TEXT NOT NULL, next_run_at TEXT NOT NULL, last_run TEXT, last_run_id TEXT
);
CREATE INDEX IF NOT EXISTS schedules_by_workspace ON schedules(workspace_id);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules(next_run_at);
CREATE TABLE IF NOT EXISTS follower_readings (
  platform TEXT NOT NULL, account_id TEXT NOT NULL, t INTEGER NOT NULL, value INTEGER NOT NULL,
  PRIMARY KEY (platform, account_id, t)
);
`;

/** Dependencies of the schedules system. */
export interface SchedulesDeps {
  /** The database (the schedules and follower readings tables are created in it). */
  store: Store;
  /** The clock, in ms since the epoch. */
  now: () => number;
}

/** Creates, lists, removes and updates schedules; keeps follower readings. */
export class Schedules {
  private readonly deps: SchedulesDeps;

  constructor(deps: SchedulesDeps) {
    this.deps = deps;
    deps.store.db.exec(SCHEMA);
  }

  /** Schedules of a workspace. */
  count(workspaceId: string): number {
    return this.deps.store.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM schedules WHERE workspace_id = ?",
      workspaceId,
    )!.n;
  }

  /** Creates a schedule whose first run is `every` from now (the creating call is its run of now). */
  create(input: NewSchedule): Schedule {
    const now = this.deps.now();
    const id = newId("sch");
    const [, ...rest] = newScheduleValues(id, input, now);
    this.deps.store.run(
      `INSERT INTO schedules (${NEW_SCHEDULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?)`,
      id,
      ...rest,
    );
    return this.resource(this.get(id)!);
  }

  /** One schedule by id. */
  get(id: string): ScheduleRecord | undefined {
    return this.deps.store.get<ScheduleRecord>("SELECT * FROM schedules WHERE id = ?", id);
  }

  /** The workspace's schedules, oldest first, as the API shows them. */
  list(workspaceId: string): Schedule[] {
    return this.deps.store
      .all<ScheduleRecord>("SELECT * FROM schedules WHERE workspace_id = ? ORDER BY created_at, id", workspaceId)
      .map((r) => this.resource(r));
  }

  /** Removes a schedule of the workspace; false when it has none of that id. */
  remove(workspaceId: string, id: string): boolean {
    return this.deps.store.run("DELETE FROM schedules WHERE id = ? AND workspace_id = ?", id, workspaceId) > 0;
  }

  /** Schedules whose `next_run_at` has come (active and paused: a paused one is tried again, D11), oldest due first. */
  due(): ScheduleRecord[] {
    return this.deps.store.all<ScheduleRecord>(
      "SELECT * FROM schedules WHERE next_run_at <= ? ORDER BY next_run_at, id",
      isoSeconds(this.deps.now()),
    );
  }

  /** A run started: `last_run` shows it running, `next_run_at` moves past now by whole periods, the schedule is active. */
  started({ id, runId, handle, every, nextRunAt }: ScheduledStart): void {
    const now = this.deps.now();
    let next = Date.parse(nextRunAt);
    while (next <= now) next += EVERY_MS[every];
    const lastRun: NonNullable<Schedule["last_run"]> = {
      handle,
      started_at: isoSeconds(now),
      status: "running",
      charged_credits: 0,
    };
    this.deps.store.run(
      "UPDATE schedules SET status = 'active', paused_reason = NULL, next_run_at = ?, last_run = ?, last_run_id = ? WHERE id = ?",
      isoSeconds(next),
      JSON.stringify(lastRun),
      runId,
      id,
    );
  }

  /** A run ended: its status and charge in `last_run` (if it is still the schedule's last run). */
  ended(id: string, runId: string, status: NonNullable<Schedule["last_run"]>["status"], charged: number): void {
    const row = this.get(id);
    if (!row || row.last_run_id !== runId || !row.last_run) return;
    const lastRun = {
      ...(JSON.parse(row.last_run) as NonNullable<Schedule["last_run"]>),
      status,
      charged_credits: charged,
    };
    this.deps.store.run("UPDATE schedules SET last_run = ? WHERE id = ?", JSON.stringify(lastRun), id);
  }

  /** A run was refused (balance, daily limit, the key): the schedule pauses; `next_run_at` stays, so it is tried again. */
  pause(id: string, reason: string): void {
    this.deps.store.run("UPDATE schedules SET status = 'paused', paused_reason = ? WHERE id = ?", reason, id);
  }

  /**
   * After a restart: a schedule whose last run was still running broke with the old process (the run itself is
   * recovered as broken, uncharged). Its `last_run` says `error` and it runs again at once. Returns how many.
   */
  recover(brokenRunIds: ReadonlySet<string>): number {
    let n = 0;
    for (const row of this.deps.store.all<ScheduleRecord>("SELECT * FROM schedules WHERE last_run_id IS NOT NULL")) {
      if (!brokenRunIds.has(row.last_run_id!) || !row.last_run) continue;
      const lastRun = {
        ...(JSON.parse(row.last_run) as NonNullable<Schedule["last_run"]>),
        status: "error" as const,
        charged_credits: 0,
      };
      this.deps.store.run(
        "UPDATE schedules SET last_run = ?, next_run_at = ? WHERE id = ?",
        JSON.stringify(lastRun),
        isoSeconds(this.deps.now()),
        row.id,
      );
      n++;
    }
    return n;
  }

  /** The API's view of a stored schedule. */
  resource(r: ScheduleRecord): Schedule {
    return scheduleResource(r);
  }

  /** Records follower counts an `account_watch` run read (one reading per account and moment). */
  recordFollowers(readings: ReadonlyArray<{ platform: string; accountId: string; t: number; value: number }>): void {
    for (const r of readings)
      this.deps.store.run(
        "INSERT OR REPLACE INTO follower_readings (platform, account_id, t, value) VALUES (?, ?, ?, ?)",
        r.platform,
        r.accountId,
        r.t,
        r.value,
      );
  }

  /** Earlier follower readings of an account (the last 400, oldest first). */
  followerHistory(platform: string, accountId: string): FollowerReading[] {
    return this.deps.store
      .all<{ t: number; value: number }>(
        "SELECT t, value FROM (SELECT t, value FROM follower_readings WHERE platform = ? AND account_id = ? ORDER BY t DESC LIMIT 400) ORDER BY t",
        platform,
        accountId,
      )
      .map((r) => ({ t: r.t, value: r.value }));
  }
}
