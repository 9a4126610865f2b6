import type { ErrorCode, ErrorStructure, More } from "@sdgw/types";
import type { RetryInfo } from "./client.ts";
import { SdgwError, SdgwTransportError } from "./errors.ts";

/** The part of an MCP client (`@modelcontextprotocol/client`'s `Client`) that `more` continuation uses. @category MCP */
export interface McpToolCaller {
  /** Calls one MCP tool with its arguments. */
  callTool(
    params: { name: string; arguments?: Record<string, unknown> | undefined },
    ...rest: never[]
  ): Promise<{
    structuredContent?: unknown;
    isError?: boolean | undefined;
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
  return fanout
    ? Object.entries(fanout).flatMap(([platform, e]) => (e.items ?? []).map((i) => ({ platform, ...(i as object) })))
    : [];
}

/** Options of {@link moreRows} and {@link collectMore}. @category MCP */
export interface MoreOptions {
  /**
   * Waits before a running result is read again (an answer with `status: "running"` and a `handle`, the 202 of a
   * background run) and before each retry; gets the wait in seconds (`retry_after_seconds` of a running answer).
   * Default: waits that many seconds.
   */
  sleep?: ((seconds: number) => Promise<void>) | undefined;
  /** Reads of a running result before giving up with an error (default 720: one hour at 5 s). */
  maxPolls?: number | undefined;
  /**
   * Retries of one tool call after a transient failure (default 3): an `isError` result whose code is
   * `rate_limited`, `idempotency_in_progress`, `temporarily_unavailable` or `internal_error`, or a thrown error
   * that is not a JSON-RPC error answer (the connection failed, or the request timed out). The arguments are sent
   * again as they were, with the same `idempotency_key`.
   */
  maxRetries?: number | undefined;
  /** First backoff delay of a retry, in ms (default 500), doubled at each retry; a longer `retry_after` answered wins. */
  retryBaseMs?: number | undefined;
  /**
   * The `idempotency_key` of the first call. Default: the one in `args`, else a fresh UUID for a charged tool
   * (`find`, `capabilities` and `account` are free and get none). Reads by `handle` are free and get none.
   */
  idempotencyKey?: string | undefined;
  /** Called before each retry. */
  onRetry?: ((retry: RetryInfo) => void) | undefined;
}

const wait = (seconds: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, seconds) * 1000));
const FREE_TOOLS = ["find", "capabilities", "account"];
const TRANSIENT = ["rate_limited", "idempotency_in_progress", "temporarily_unavailable", "internal_error"];
/** An error of callOnce's own: final, never retried. */
class Final extends Error {}

/** One tool call, retried after transient failures with the same arguments (so the same idempotency_key). */
async function callOnce(
  mcp: McpToolCaller,
  name: string,
  args: Record<string, unknown>,
  options: MoreOptions,
): Promise<McpAnswer> {
  const requestId = args["idempotency_key"] as string | undefined;
  for (let attempt = 1; ; attempt++) {
    let error: Error;
    let reason: string;
    let after = 0;
    try {
      const result = await mcp.callTool({ name, arguments: args });
      const content = result.structuredContent as McpAnswer | undefined;
      if (!result.isError) {
        if (!content || typeof content !== "object") throw new Final(`MCP tool ${name} answered no structuredContent`);
        return content;
      }
      const body = content as unknown as (ErrorStructure & { retry_after?: number }) | undefined;
      if (!body || typeof body.code !== "string")
        throw new Final(`MCP tool ${name} failed: ${JSON.stringify(result.content)}`);
      error = new SdgwError(0, body as Extract<ErrorStructure, { code: ErrorCode }>);
      if (!TRANSIENT.includes(body.code)) throw error;
      reason = body.code;
      after = body.retry_after ?? 0;
    } catch (cause) {
      // A JSON-RPC error (numeric `code`: the server answered, e.g. invalid arguments) is final, but for a request
      // timeout (-32001); so are our own errors.
      const code = (cause as { code?: unknown } | undefined)?.code;
      if (cause instanceof SdgwError || cause instanceof Final || (typeof code === "number" && code !== -32001))
        throw cause;
      error = new SdgwTransportError(`no answer from MCP tool ${name}`, undefined, {
        cause,
        requestId,
        attempts: attempt,
      });
      reason = code === -32001 ? "timeout" : "network";
    }
    if (attempt > (options.maxRetries ?? 3)) throw error;
    const delayMs = Math.max((options.retryBaseMs ?? 500) * 2 ** (attempt - 1), 1000 * after);
    options.onRetry?.({ attempt: attempt + 1, delayMs, reason, requestId, error });
    await (options.sleep ?? wait)(delayMs / 1000);
  }
}

/**
 * Calls an MCP tool of the gateway and yields every row of its result, passing `more.handle` back to the same
 * tool until an answer has no `more`. A running answer (a background run's handle) is read again with its
 * `handle` after `retry_after_seconds` until it has ended. Reading on is free and never re-runs the tool. A charged
 * call is sent with an `idempotency_key` (yours or a fresh UUID), and every call is retried after a transient
 * failure as the HTTP client retries (see {@link MoreOptions.maxRetries}), so a retry is never charged twice.
 *
 * ```ts
 * for await (const row of moreRows(mcpClient, "search", { platform: "weibo", query: "双十一" })) console.log(row);
 * ```
 * @category MCP
 */
export async function* moreRows(
  mcp: McpToolCaller,
  name: string,
  args: Record<string, unknown>,
  options: MoreOptions = {},
): AsyncGenerator<unknown> {
  const sleep = options.sleep ?? wait;
  const maxPolls = options.maxPolls ?? 720;
  const key =
    options.idempotencyKey ??
    (args["idempotency_key"] !== undefined || args["handle"] !== undefined || FREE_TOOLS.includes(name)
      ? undefined
      : crypto.randomUUID());
  let answer = await callOnce(mcp, name, key ? { ...args, idempotency_key: key } : args, options);
  for (let polls = 0; answer["status"] === "running" && typeof answer["handle"] === "string"; polls++) {
    if (polls >= maxPolls) throw new Error(`MCP tool ${name}: ${answer["handle"]} still runs after ${maxPolls} reads`);
    await sleep(typeof answer["retry_after_seconds"] === "number" ? answer["retry_after_seconds"] : 5);
    answer = await callOnce(mcp, name, { handle: answer["handle"] }, options);
  }
  for (;;) {
    yield* rowsOf(answer);
    if (!answer.more) return;
    answer = await callOnce(mcp, name, { handle: answer.more.handle }, options);
  }
}

/** Calls an MCP tool and collects every row across `more` continuations (see {@link moreRows}). @category MCP */
export async function collectMore(
  mcp: McpToolCaller,
  name: string,
  args: Record<string, unknown>,
  options: MoreOptions = {},
): Promise<unknown[]> {
  const rows: unknown[] = [];
  for await (const row of moreRows(mcp, name, args, options)) rows.push(row);
  return rows;
}
