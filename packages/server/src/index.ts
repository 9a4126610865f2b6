/**
 * {@include ../README.md}
 *
 * @packageDocumentation
 * @module @sdgw/server
 */
// The public surface, on purpose: start a server or a gateway, configure it, plug in providers, serve MCP. The
// systems behind it (ledger, runs, store, sessions, …) are `@sdgw/server/internal`, for this repository's tests,
// benches and tools; they change without a major version.
export { createServer } from "./storage/sqlite/server.ts";
export type { SdgwServer } from "./storage/sqlite/server.ts";
export { createGateway } from "./storage/sqlite/gateway.ts";
export type { Gateway } from "./storage/sqlite/gateway.ts";
export { createPgServer, seedPgDemo, seedPgDemoUser } from "./storage/postgres/server.ts";
export type { PgServer } from "./storage/postgres/server.ts";
export { createPgGateway } from "./storage/postgres/gateway.ts";
export type { PgGateway, PgGatewayOptions } from "./storage/postgres/gateway.ts";
export { DatabaseUnavailable } from "./storage/postgres/unavailable.ts";
export { MIGRATIONS, SchemaError, migrate } from "./storage/postgres/migrations.ts";
export type { Migration, MigrationReport } from "./storage/postgres/migrations.ts";
export type { GatewayPorts } from "./storage/port.ts";
export type { LivePlatform, Upstream } from "./connectors/index.ts";
export type { ConsoleResult, HandleRead } from "./runs/types.ts";
export { buildApp, ROUTE_LIST } from "./http/server.ts";
export {
  ConfigError,
  configFromEnv,
  defaultConfig,
  DEFAULT_HTTP,
  DEFAULT_LIMITS,
  DEFAULT_SESSIONS,
  listenFromEnv,
} from "./config.ts";
export type {
  GatewayOptions,
  HttpConfig,
  LimitsConfig,
  ServerConfig,
  ServerOptions,
  SessionConfig,
  TrustProxy,
  UpstreamConfig,
  CorsOrigins,
} from "./config.ts";
// D113: what an operator sees: health and readiness, metrics, log lines, the stop.
export { Lifecycle, OPERATOR_ROUTES, readiness } from "./ops/http.ts";
export type { Readiness } from "./ops/http.ts";
export { CHECK_BOUND_MS } from "./ops/health.ts";
export type { HealthCheck } from "./ops/health.ts";
export { Metrics, METRICS_ACCESS } from "./ops/metrics.ts";
export type { MetricsAccess, MetricsOptions, MetricsSources, PoolStats } from "./ops/metrics.ts";
export { createLogger, currentRequestId, LOG_FORMATS, redact, withRequestId } from "./ops/log.ts";
export type { LogFn, LogFormat, LoggerOptions } from "./ops/log.ts";
export { opsFromEnv } from "./ops/env.ts";
export type { OpsSettings } from "./ops/env.ts";
export { DEFAULT_SHUTDOWN_GRACE_MS } from "./ops/stop.ts";
export { seedDemo } from "./demo.ts";
export type { DemoAccount } from "./demo.ts";
export { runAdmin } from "./admin.ts";
export { Simulator, PLATFORM_MODULES, ROUTE_OPERATIONS } from "@sdgw/engine";
export type {
  FakeContext,
  OperationSpec,
  OpParam,
  PlatformModule,
  PlatformProvider,
  ProviderFailure,
  ProviderOutcome,
  ProviderRequest,
  RouteOperation,
  SimulatorKnobs,
  SimulatorOptions,
} from "@sdgw/engine";
export {
  createMcpServer,
  mcpRoutes,
  MCP_TOOLS,
  MCP_TOOLSETS,
  McpToolsetError,
  MCP_ANSWER_BYTES,
  MORE_NOTE,
  fitAnswer,
} from "./mcp/index.ts";
export type { CreateMcpServerOptions, McpRoutesOptions, McpToolFilter, McpToolsetName, Fitted } from "./mcp/index.ts";
