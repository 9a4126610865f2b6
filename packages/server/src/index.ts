/**
 * {@include ../README.md}
 *
 * @packageDocumentation
 * @module @sdgw/server
 */
// The public surface, on purpose: start a server or a gateway, configure it, plug in providers, serve MCP. The
// systems behind it (ledger, runs, store, sessions, …) are `@sdgw/server/internal`, for this repository's tests,
// benches and tools; they change without a major version.
export { createServer } from "./server.ts";
export type { SdgwServer } from "./server.ts";
export { createGateway } from "./gateway.ts";
export type { Gateway, GatewayOptions } from "./gateway.ts";
export { createPgServer, seedPgDemo, seedPgDemoUser } from "./pg/server.ts";
export type { PgServer } from "./pg/server.ts";
export { createPgGateway } from "./pg/gateway.ts";
export type { PgGateway, PgGatewayOptions } from "./pg/gateway.ts";
export { DatabaseUnavailable } from "./pg/unavailable.ts";
export { MIGRATIONS, SchemaError, migrate } from "./pg/migrations.ts";
export type { Migration, MigrationReport } from "./pg/migrations.ts";
export type { GatewayPorts } from "./systems/ports.ts";
export type { LivePlatform, Upstream, UpstreamConfig } from "./connectors.ts";
export type { ConsoleResult, HandleRead } from "./systems/runs.ts";
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
  HttpConfig,
  LimitsConfig,
  ServerConfig,
  ServerOptions,
  SessionConfig,
  TrustProxy,
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
