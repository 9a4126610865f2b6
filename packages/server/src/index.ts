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
export type { HttpConfig, LimitsConfig, ServerConfig, ServerOptions, SessionConfig } from "./config.ts";
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
