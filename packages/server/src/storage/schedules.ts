/**
 * Schedules (D11, D52) as every store keeps them: the stored record, a started run, the bound per workspace and the
 * API's view of a record. The embedded `Schedules` and PostgreSQL's `PgSchedules` share them.
 */
import { EVERY_MS, isoSeconds } from "@sdgw/engine";
import type { AppliedParams, Schedule } from "@sdgw/types";

/** The API's view of a stored schedule (the same on every store). */
export function scheduleResource(r: ScheduleRecord): Schedule {
  return {
    id: r.id,
    tool: "account_watch",
    params: JSON.parse(r.params) as AppliedParams,
    every: r.every,
    status: r.status,
    created_at: r.created_at,
    next_run_at: r.next_run_at,
    last_run: r.last_run ? (JSON.parse(r.last_run) as Schedule["last_run"]) : null,
  };
}

/** Schedules a workspace may hold (seed: 20). */
export const SCHEDULES_PER_WORKSPACE = 20;

/** A schedule as stored: the resource, and what the scheduler needs to run it. */
export interface ScheduleRecord {
  id: string;
  workspace_id: string;
  account_id: string;
  key_id: string;
  /** The request body each run sends (`accounts`, `range`; no `schedule`, `confirm` or `max_cost_credits`). */
  body: string;
  params: string;
  every: Schedule["every"];
  status: Schedule["status"];
  paused_reason: string | null;
  created_at: string;
  next_run_at: string;
  last_run: string | null;
  /** The run behind `last_run` (to mend it after a restart). */
  last_run_id: string | null;
}

/** A scheduled run that started (see `Schedules.started`). */
export interface ScheduledStart {
  /** The schedule's id. */
  id: string;
  runId: string;
  handle: string;
  /** The schedule's period and the `next_run_at` it had (the next one moves past now by whole periods). */
  every: Schedule["every"];
  nextRunAt: string;
}

/** What makes a schedule (`create`): its workspace, account and key, the body each run sends, and its period. */
export interface NewSchedule {
  workspaceId: string;
  accountId: string;
  keyId: string;
  body: Record<string, unknown>;
  params: AppliedParams;
  every: Schedule["every"];
}

/** The columns a new schedule is inserted with, in the order of {@link newScheduleValues}. */
export const NEW_SCHEDULE_COLUMNS =
  "id, workspace_id, account_id, key_id, body, params, every, status, created_at, next_run_at";

/**
 * The values of a new schedule's row for {@link NEW_SCHEDULE_COLUMNS} but `status` (always `'active'`): made `now`,
 * first due one period later (the creating call is its run of now).
 */
export function newScheduleValues(id: string, input: NewSchedule, now: number): [string, ...(string | number)[]] {
  return [
    id,
    input.workspaceId,
    input.accountId,
    input.keyId,
    JSON.stringify(input.body),
    JSON.stringify(input.params),
    input.every,
    isoSeconds(now),
    isoSeconds(now + EVERY_MS[input.every]),
  ];
}
