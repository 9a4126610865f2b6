/**
 * `@sdgw/server/internal`: the systems behind the gateway, for this repository's tests, benches and tools. Not a
 * stable API: these change without a major version. Start a server with `createServer` from `@sdgw/server`.
 *
 * @packageDocumentation
 * @module @sdgw/server/internal
 * @internal
 */
export { Accounts } from "./systems/accounts.ts";
export type { AccountRecord, CreatedKey, KeyRecord, WorkspaceRecord } from "./systems/accounts.ts";
export { Ledger } from "./systems/ledger.ts";
export type { CreditView, HoldRefusal, HoldRequest } from "./systems/ledger.ts";
export { Idempotency, canonicalJson, fingerprint } from "./systems/idempotency.ts";
export type { Claim } from "./systems/idempotency.ts";
export { Limits } from "./systems/limits.ts";
export type { LimitRefusal } from "./systems/limits.ts";
export { Runs } from "./systems/runs.ts";
export type { HttpAnswer, RunContext, ToolRunRequest } from "./systems/runs.ts";
export { Store } from "./systems/store.ts";
export { AnswerLog } from "./systems/answer-log.ts";
export type { AnswerLogOptions, AnswerRef } from "./systems/answer-log.ts";
export { Scheduler } from "./scheduler.ts";
export type { SkipReason, TickReport } from "./scheduler.ts";
export { Schedules, SCHEDULES_PER_WORKSPACE } from "./systems/schedules.ts";
export { EVERY_MS } from "@sdgw/engine";
export type { ScheduleRecord, SchedulesDeps } from "./systems/schedules.ts";
export { planTool, startToolRun, toolContext } from "./tool-runs.ts";
export type { StartToolRun } from "./tool-runs.ts";
export {
  Sessions,
  sessionOf,
  sessionsOf,
  SESSION_COOKIE,
  hashPasswordSync,
  verifyPassword,
} from "./systems/sessions.ts";
export type { ConsoleSession, SessionRecord, UserRecord, SignInResult } from "./systems/sessions.ts";
export { consoleSessionRoutes, csrfRefusal, originRefusal, sessionRequired } from "./http/console-session.ts";
