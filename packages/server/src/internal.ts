/**
 * `@sdgw/server/internal`: the systems behind the gateway, for this repository's tests, benches and tools. Not a
 * stable API: these change without a major version. Start a server with `createServer` from `@sdgw/server`.
 *
 * @packageDocumentation
 * @module @sdgw/server/internal
 * @internal
 */
export { Accounts } from "./storage/sqlite/accounts.ts";
export type { AccountRecord, CreatedKey, KeyRecord, WorkspaceRecord } from "./storage/accounts.ts";
export { Ledger } from "./storage/sqlite/ledger.ts";
export type { CreditView, HoldRefusal, HoldRequest } from "./storage/sqlite/ledger.ts";
export { Idempotency } from "./storage/sqlite/idempotency.ts";
export { canonicalJson, fingerprint } from "./storage/idempotency.ts";
export type { Claim } from "./storage/sqlite/idempotency.ts";
export { Limits } from "./limits/limits.ts";
export type { LimitRefusal } from "./limits/limits.ts";
export { Runs } from "./storage/sqlite/runs.ts";
export type { HttpAnswer, RunContext, ToolRunRequest } from "./runs/types.ts";
export { Store } from "./storage/sqlite/store.ts";
export { AnswerLog } from "./storage/sqlite/answer-log.ts";
export type { AnswerLogOptions, AnswerRef } from "./storage/sqlite/answer-log.ts";
export { Scheduler } from "./scheduler.ts";
export type { SkipReason, TickReport } from "./scheduler.ts";
export { Schedules } from "./storage/sqlite/schedules.ts";
export { SCHEDULES_PER_WORKSPACE } from "./storage/schedules.ts";
export { EVERY_MS } from "@sdgw/engine";
export type { ScheduleRecord } from "./storage/schedules.ts";
export type { SchedulesDeps } from "./storage/sqlite/schedules.ts";
export { planTool, startToolRun, toolContext } from "./runs/tool-runs.ts";
export type { StartToolRun } from "./runs/tool-runs.ts";
export { Sessions } from "./storage/sqlite/sessions.ts";
export { SESSION_COOKIE, hashPasswordSync, verifyPassword } from "./storage/sessions.ts";
export type { ConsoleSession, SessionRecord, UserRecord, SignInResult } from "./storage/sessions.ts";
export {
  consoleSessionRoutes,
  csrfRefusal,
  originRefusal,
  sessionOf,
  sessionRequired,
  sessionsOf,
} from "./http/console-session.ts";
