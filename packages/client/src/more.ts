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

/** Options of {@link moreRows} and {@link collectMore}. */
export interface MoreOptions {
  /**
   * Waits before a running result is read again (an answer with `status: "running"` and a `handle`, the 202 of a
   * background run); gets the answer's `retry_after_seconds`. Default: waits that many seconds.
   */
  sleep?: (seconds: number) => Promise<void>;
  /** Reads of a running result before giving up with an error (default 720: one hour at 5 s). */
  maxPolls?: number;
}

const wait = (seconds: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, seconds) * 1000));

/**
 * Calls an MCP tool of the gateway and yields every row of its result, passing `more.handle` back to the same
 * tool until an answer has no `more`. A running answer (a background run's handle) is read again with its
 * `handle` after `retry_after_seconds` until it has ended. Reading on is free and never re-runs the tool.
 *
 * ```ts
 * for await (const row of moreRows(mcpClient, "search", { platform: "weibo", query: "双十一" })) console.log(row);
 * ```
 */
export async function* moreRows(mcp: McpToolCaller, name: string, args: Record<string, unknown>, options: MoreOptions = {}): AsyncGenerator<unknown> {
  const sleep = options.sleep ?? wait;
  const maxPolls = options.maxPolls ?? 720;
  let answer = await callOnce(mcp, name, args);
  for (let polls = 0; answer["status"] === "running" && typeof answer["handle"] === "string"; polls++) {
    if (polls >= maxPolls) throw new Error(`MCP tool ${name}: ${answer["handle"]} still runs after ${maxPolls} reads`);
    await sleep(typeof answer["retry_after_seconds"] === "number" ? answer["retry_after_seconds"] : 5);
    answer = await callOnce(mcp, name, { handle: answer["handle"] });
  }
  for (;;) {
    yield* rowsOf(answer);
    if (!answer.more) return;
    answer = await callOnce(mcp, name, { handle: answer.more.handle });
  }
}

/** Calls an MCP tool and collects every row across `more` continuations (see {@link moreRows}). */
export async function collectMore(mcp: McpToolCaller, name: string, args: Record<string, unknown>, options: MoreOptions = {}): Promise<unknown[]> {
  const rows: unknown[] = [];
  for await (const row of moreRows(mcp, name, args, options)) rows.push(row);
  return rows;
}
