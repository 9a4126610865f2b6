import type { ErrorCode, ErrorStructure, More } from "@sdgw/types";
import { SdgwError } from "./errors.ts";

/** The part of an MCP client (`@modelcontextprotocol/client`'s `Client`) that `more` continuation uses. */
export interface McpToolCaller {
  /** Calls one MCP tool with its arguments. */
  callTool(params: { name: string; arguments?: Record<string, unknown> }, ...rest: never[]): Promise<{
    structuredContent?: unknown;
    isError?: boolean;
    content?: unknown;
  }>;
}

/** An MCP tool answer: the HTTP answer with its rows cut to what fits in about 60 KB, and `more` (D30). */
type McpAnswer = Record<string, unknown> & { more?: More };

/** The rows of one MCP answer: its items, the cells of a targets answer, or every fanout entry's items. */
function rowsOf(answer: McpAnswer): unknown[] {
  if (Array.isArray(answer["items"])) return answer["items"];
  if (Array.isArray(answer["targets"])) return answer["targets"];
  const fanout = answer["fanout"] as Record<string, { items?: unknown[] }> | undefined;
  return fanout ? Object.entries(fanout).flatMap(([platform, e]) => (e.items ?? []).map((i) => ({ platform, ...(i as object) }))) : [];
}

async function callOnce(mcp: McpToolCaller, name: string, args: Record<string, unknown>): Promise<McpAnswer> {
  const result = await mcp.callTool({ name, arguments: args });
  const content = result.structuredContent as McpAnswer | undefined;
  if (result.isError) {
    const body = content as unknown as ErrorStructure | undefined;
    if (body && typeof body.code === "string") throw new SdgwError(0, body as Extract<ErrorStructure, { code: ErrorCode }>);
    throw new Error(`MCP tool ${name} failed: ${JSON.stringify(result.content)}`);
  }
  if (!content || typeof content !== "object") throw new TypeError(`MCP tool ${name} answered no structuredContent`);
  return content;
}

/**
 * Calls an MCP tool of the gateway and yields every row of its result, passing `more.handle` back to the same
 * tool until an answer has no `more`. Reading on is free and never re-runs the tool.
 *
 * ```ts
 * for await (const row of moreRows(mcpClient, "search", { platform: "weibo", query: "双十一" })) console.log(row);
 * ```
 */
export async function* moreRows(mcp: McpToolCaller, name: string, args: Record<string, unknown>): AsyncGenerator<unknown> {
  let answer = await callOnce(mcp, name, args);
  for (;;) {
    yield* rowsOf(answer);
    if (!answer.more) return;
    answer = await callOnce(mcp, name, { handle: answer.more.handle });
  }
}

/** Calls an MCP tool and collects every row across `more` continuations (see {@link moreRows}). */
export async function collectMore(mcp: McpToolCaller, name: string, args: Record<string, unknown>): Promise<unknown[]> {
  const rows: unknown[] = [];
  for await (const row of moreRows(mcp, name, args)) rows.push(row);
  return rows;
}
