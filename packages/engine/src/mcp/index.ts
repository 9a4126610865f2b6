/**
 * The gateway's MCP tools as data, shared by the reference server's MCP server and the mock's (`@sdgw/engine/mcp`):
 * the 16 tool definitions generated from the contract (name, toolset, title, description, route, annotations,
 * `inputSchema`, compact `outputSchema`), and the cutting of an answer to the MCP size bound with `more`. Pure: no
 * I/O, no Node APIs.
 *
 * @packageDocumentation
 */
export { MCP_TOOL_DEFINITIONS, MCP_TOOLSETS } from "../generated/mcp-tools.ts";
export type { McpToolDefinition, McpToolsetName } from "../generated/mcp-tools.ts";
export { fitAnswer, MCP_ANSWER_BYTES, MORE_NOTE, rowCount } from "./answers.ts";
export type { FitOptions, Fitted } from "./answers.ts";
export { MCP_UNAUTHORIZED_CODE, MCP_WWW_AUTHENTICATE, unauthorizedBody } from "./auth.ts";
