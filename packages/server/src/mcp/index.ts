/**
 * The gateway's MCP server: the 13 charging tools of D29 (`search`, `trending`, `detail`, `comments`,
 * `user_profile`, `user_posts` and the seven tools), each taking `handle`, and the free `find`, `capabilities` and
 * `account`. Tools forward to the HTTP routes in-process, so an MCP call is exactly an HTTP call; answers over
 * about 60 KB carry their first rows and `more` (D30).
 *
 * ```ts
 * import { createServer } from "@sdgw/server";
 * import { mcpRoutes } from "@sdgw/server/src/mcp/index.ts";
 * const server = createServer();
 * await server.app.register(mcpRoutes); // MCP over Streamable HTTP at /mcp
 * ```
 *
 * @packageDocumentation
 */
export { createMcpServer, MCP_INSTRUCTIONS, MCP_MAX_WAIT_MS, MCP_TOOLS, RESULTS_URI_PREFIX } from "./server.ts";
export type { CreateMcpServerOptions } from "./server.ts";
export {
  allowedOriginsFromEnv,
  MCP_ALLOWED_ORIGINS_ENV,
  MCP_UNAUTHORIZED_CODE,
  MCP_WWW_AUTHENTICATE,
  mcpRoutes,
  originAllowed,
  unauthorizedBody,
} from "./http.ts";
export type { McpRoutesOptions } from "./http.ts";
export { fitAnswer, MCP_ANSWER_BYTES, MORE_NOTE, rowCount } from "@sdgw/engine/mcp";
export type { FitOptions, Fitted } from "@sdgw/engine/mcp";
export {
  MCP_READ_ONLY_ENV,
  MCP_TOOLSETS,
  MCP_TOOLSETS_ENV,
  McpToolsetError,
  parseReadOnly,
  parseToolsets,
  selectTools,
  toolFilterFromArgs,
  toolFilterFromEnv,
} from "./toolsets.ts";
export type { McpToolDefinition, McpToolFilter, McpToolsetName } from "./toolsets.ts";
