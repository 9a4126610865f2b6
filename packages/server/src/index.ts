/**
 * {@include ../README.md}
 *
 * @packageDocumentation
 * @module @sdgw/server
 */
export { createServer } from "./server.ts";
export type { SdgwServer } from "./server.ts";
export { createGateway } from "./gateway.ts";
export type { Gateway, GatewayOptions } from "./gateway.ts";
export { buildApp, ROUTE_LIST } from "./http/server.ts";
export { ConfigError, configFromEnv, defaultConfig, DEFAULT_HTTP, DEFAULT_LIMITS, DEFAULT_SESSIONS, listenFromEnv } from "./config.ts";
export type { HttpConfig, LimitsConfig, ServerConfig, ServerOptions, SessionConfig } from "./config.ts";
export { seedDemo } from "./demo.ts";
export type { DemoAccount } from "./demo.ts";
export { runAdmin } from "./admin.ts";
export { Simulator, PLATFORM_MODULES, encodeCursor } from "./providers/simulator/index.ts";
export type { SimulatorKnobs, SimulatorOptions } from "./providers/simulator/index.ts";
export { ROUTE_OPERATIONS } from "./providers/port.ts";
export type { OperationSpec, OpParam, PlatformProvider, ProviderFailure, ProviderOutcome, ProviderRequest, RouteOperation } from "./providers/port.ts";
export type { PlatformModule, FakeContext } from "./providers/simulator/module.ts";
export { Accounts } from "./systems/accounts.ts";
export type { AccountRecord, CreatedKey, KeyRecord, WorkspaceRecord } from "./systems/accounts.ts";
export { Ledger } from "./systems/ledger.ts";
export type { CreditView, HoldRefusal, HoldRequest } from "./systems/ledger.ts";
export { Idempotency, canonicalJson, fingerprint } from "./systems/idempotency.ts";
export type { Claim } from "./systems/idempotency.ts";
export { Limits } from "./systems/limits.ts";
export type { LimitRefusal } from "./systems/limits.ts";
export { Runs } from "./systems/runs.ts";
export type { HttpAnswer, RunContext } from "./systems/runs.ts";
export { Store } from "./systems/store.ts";
export { AnswerLog } from "./systems/answer-log.ts";
export type { AnswerLogOptions, AnswerRef } from "./systems/answer-log.ts";
export { Catalog } from "./catalog.ts";
export { Finder, words } from "./find.ts";
export type { FindMatch } from "./find.ts";
export { deriveStatus } from "./answers.ts";
export { Scheduler } from "./scheduler.ts";
export type { SkipReason, TickReport } from "./scheduler.ts";
export { Schedules, SCHEDULES_PER_WORKSPACE, EVERY_MS } from "./systems/schedules.ts";
export type { ScheduleRecord, SchedulesDeps } from "./systems/schedules.ts";
export type { ToolRunRequest } from "./systems/runs.ts";
export { planTool, startToolRun, toolContext } from "./tool-runs.ts";
export type { StartToolRun } from "./tool-runs.ts";
export { toolAnswer, toolQuoteAnswer } from "./tool-answers.ts";
export type { ToolAnswerParts } from "./tool-answers.ts";
export { createMcpServer, mcpRoutes, MCP_TOOLS, MCP_TOOLSETS, McpToolsetError, MCP_ANSWER_BYTES, MORE_NOTE, fitAnswer } from "./mcp/index.ts";
export type { CreateMcpServerOptions, McpRoutesOptions, McpToolFilter, McpToolsetName, Fitted } from "./mcp/index.ts";
export type { CallPlan, PlannedCall } from "./plan.ts";
export { Sessions, sessionOf, sessionsOf, SESSION_COOKIE, hashPasswordSync, verifyPassword } from "./systems/sessions.ts";
export type { ConsoleSession, SessionRecord, UserRecord, SignInResult } from "./systems/sessions.ts";
export { consoleSessionRoutes, csrfRefusal, originRefusal, sessionRequired } from "./http/console-session.ts";
