/**
 * MCP in the mock (issue 34): `POST {base}/mcp` answers MCP over Streamable HTTP as the reference server's `/mcp`
 * does, with JSON answers and no session: the same 16 tools (`@sdgw/engine/mcp`), each call answered by the mock's
 * own route (so keys, validation, credits, 202 runs, idempotency and forced scenarios are the mock's HTTP ones), the
 * same results (`structuredContent` and its text copy, `isError` with the error structure, the running answer with a
 * note), `handle` reads, and answers over the size bound cut with `more`. A missing or refused key answers 401 as
 * the server does (D142). Tasks are offered as the server offers them (D145): a charging tool called with `task`
 * answers a task whose id is the run's handle, and `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`
 * follow it, a task moving as the mock's runs move (each read of it is one poll). Progress notifications are not
 * sent: a 202 answers the running answer.
 */
import { DAY_MS, KEY_REFUSALS, presentedKey, REFUSALS } from "@sdgw/engine";
import {
  fitAnswer,
  MCP_ANSWER_BYTES,
  MCP_TOOL_DEFINITIONS,
  MCP_WWW_AUTHENTICATE,
  rowCount,
  unauthorizedBody,
  type McpToolDefinition,
} from "@sdgw/engine/mcp";
import type { OperationId } from "@sdgw/types";
import { errorAnswer, normalizeHeaders, toCsv, toNdjson } from "@sdgw/validators";
import { http, HttpResponse, type HttpHandler } from "msw";
import { newHandle, newRequestId, type MockContext } from "./context.ts";
import { corsAnswerHeaders, originOf } from "./cors.ts";
import { ROUTES } from "./generated/routes.ts";
import { answer } from "./pipeline.ts";
import type { Reply } from "./state.ts";

type Json = Record<string, unknown>;

/** The protocol versions the mock speaks; an initialize asking for another gets the newest. */
const PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const HANDLE_ARG = /^([A-Za-z0-9_-]{1,128})(?:\.([0-9]{1,9}))?$/;
const BY_NAME = new Map(MCP_TOOL_DEFINITIONS.map((t) => [t.name, t]));
const BY_OPERATION = new Map(MCP_TOOL_DEFINITIONS.map((t) => [t.operationId, t.name]));
const byteLength = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).length;

/** A tool result as MCP's `CallToolResult`. */
interface ToolResult {
  content: Json[];
  structuredContent?: Json;
  isError?: boolean;
}

/** A JSON-RPC error thrown by a method (an unknown tool, an unknown method). */
class RpcError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** @internal What the mock's MCP keeps: answers that finished at once and were cut, under their handles. */
export type McpKept = Map<string, { tool: string; key: string; answer: Json }>;

/** @internal The handlers of `{base}/mcp`: POST serves MCP; GET and DELETE answer 405 (no stream, no session). */
export function mcpHandlers(ctx: MockContext & { mcpKept: McpKept }): HttpHandler[] {
  const url = `${ctx.base}/mcp`;
  const json = (request: Request, status: number, body: unknown, headers: Record<string, string> = {}) =>
    HttpResponse.json(body as never, {
      status,
      headers: { ...headers, ...corsAnswerHeaders(ctx.cors, originOf(request)) },
    });
  const notServed = ({ request }: { request: Request }) => {
    const a = errorAnswer(
      "not_found",
      newRequestId(),
      {
        reason: "no_such_route",
        message:
          `${request.method} /mcp is not served: this MCP endpoint is stateless, so it opens ` +
          `no SSE stream and has no session to end. Send MCP messages with POST /mcp.`,
        fix: { allowed: ["POST /mcp"], example_call: { method: "POST", path: "/mcp" } },
      } as never,
      { urls: ctx.urls, now: new Date(ctx.clock()) },
    );
    return json(request, 405, a.body, { ...a.headers, Allow: "POST" });
  };
  return [
    http.get(url, notServed),
    http.delete(url, notServed),
    http.post(url, async ({ request }) => {
      const text = await request.text();
      const headers = normalizeHeaders(request.headers);
      const presented = presentedKey(headers);
      const key = presented.ok && ctx.keys[presented.key] ? presented.key : null;
      if (!key) {
        const why = REFUSALS.unauthorized(presented.ok ? KEY_REFUSALS.unknown : presented, ctx.urls);
        const a = errorAnswer("unauthorized", newRequestId(), why as never, {
          urls: ctx.urls,
          now: new Date(ctx.clock()),
        });
        return json(request, 401, unauthorizedBody(a.body as unknown as Json, text), {
          ...a.headers,
          "WWW-Authenticate": MCP_WWW_AUTHENTICATE,
        });
      }
      let message: { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: Json };
      try {
        message = JSON.parse(text) as typeof message;
      } catch {
        return json(request, 400, {
          jsonrpc: "2.0",
          id: null,
          error: { code: -32700, message: "Parse error: the body is not JSON." },
        });
      }
      if (!message || typeof message !== "object" || Array.isArray(message) || typeof message.method !== "string")
        return json(request, 400, {
          jsonrpc: "2.0",
          id: null,
          error: { code: -32600, message: "Invalid request: send one JSON-RPC message (batches are not taken)." },
        });
      const id = message.id;
      if (id === undefined) return new HttpResponse(null, { status: 202 }); // a notification: nothing to answer
      try {
        const result = await serve(ctx, key, message.method, message.params ?? {});
        return json(request, 200, { jsonrpc: "2.0", id, result });
      } catch (error) {
        if (!(error instanceof RpcError)) throw error;
        return json(request, 200, { jsonrpc: "2.0", id, error: { code: error.code, message: error.message } });
      }
    }),
  ];
}

/** The result of one MCP method. */
async function serve(
  ctx: MockContext & { mcpKept: McpKept },
  key: string,
  method: string,
  params: Json,
): Promise<Json> {
  switch (method) {
    case "initialize": {
      const asked = String(params["protocolVersion"] ?? "");
      return {
        protocolVersion: PROTOCOL_VERSIONS.includes(asked) ? asked : PROTOCOL_VERSIONS[0],
        capabilities: { tools: {}, tasks: { list: {}, requests: { tools: { call: {} } } } },
        serverInfo: { name: "sdgw-mock", version: "1.0.0" },
        instructions:
          "Social Data Gateway (mock): the gateway's 16 tools answered by @sdgw/mock. Pass a " +
          "result's handle or more.handle as handle to the same tool to read on (free).",
      };
    }
    case "ping":
      return {};
    case "tools/list":
      if (params["cursor"] !== undefined)
        throw new RpcError(
          -32602,
          "Invalid cursor: tools/list answers every tool in one page and gives no nextCursor.",
        );
      return {
        tools: MCP_TOOL_DEFINITIONS.map((t) => ({
          name: t.name,
          title: t.title,
          description: t.description,
          inputSchema: t.inputSchema,
          outputSchema: t.outputSchema,
          annotations: t.annotations,
          ...(t.charging ? { execution: { taskSupport: "optional" } } : {}),
        })),
      };
    case "tools/call": {
      const name = String(params["name"] ?? "");
      const tool = BY_NAME.get(name);
      if (!tool)
        throw new RpcError(
          -32602,
          `Unknown tool ${name}. Tools: ${MCP_TOOL_DEFINITIONS.map((t) => t.name).join(", ")}.`,
        );
      if (params["task"] === undefined)
        return (await call(ctx, key, tool, (params["arguments"] ?? {}) as Json)) as unknown as Json;
      if (!tool.charging)
        throw new RpcError(
          -32601,
          `${name} does not run as a task (its execution.taskSupport is forbidden): call it without task.`,
        );
      return callAsTask(ctx, key, tool, (params["arguments"] ?? {}) as Json);
    }
    case "tasks/get":
      return (await taskOf(ctx, key, taskIdOf(params))).task;
    case "tasks/result": {
      const taskId = taskIdOf(params);
      const { tool } = await taskOf(ctx, key, taskId);
      // The mock's run moves when it is read: read it until it ends (a few polls; a forced `running` one more each).
      for (let i = 0; i < 1000 && (await readResult(ctx, key, taskId)).status === 202; i++);
      const r = await read(ctx, key, tool, taskId);
      return { ...r, _meta: { [RELATED_TASK]: { taskId } } } as unknown as Json;
    }
    case "tasks/list": {
      const cursor = params["cursor"];
      let from = 0;
      if (cursor !== undefined) {
        const m = typeof cursor === "string" ? /^t([0-9]{1,4})$/.exec(cursor) : null;
        if (!m)
          throw new RpcError(
            -32602,
            "Invalid cursor: pass nextCursor of the previous tasks/list answer exactly as given.",
          );
        from = Number(m[1]);
      }
      const all = tasksOf(ctx, key);
      return {
        tasks: all.slice(from, from + TASKS_PAGE),
        ...(from + TASKS_PAGE < all.length ? { nextCursor: `t${from + TASKS_PAGE}` } : {}),
      };
    }
    case "tasks/cancel": {
      const taskId = taskIdOf(params);
      const { task } = await taskOf(ctx, key, taskId);
      throw new RpcError(
        -32602,
        task["status"] === "working"
          ? `Task ${taskId} cannot be cancelled: a run of the gateway cannot be stopped once ` +
              `started. It ends on its own; nothing is charged for a run that fails.`
          : `Task ${taskId} cannot be cancelled: it is already ${String(task["status"])}.`,
      );
    }
    default:
      throw new RpcError(
        -32601,
        `Method not found: ${method}. The mock serves initialize, ping, tools/list, tools/call and tasks/get, result, list and cancel.`,
      );
  }
}

/** The `_meta` key that ties a message to its task (MCP 2025-11-25). */
const RELATED_TASK = "io.modelcontextprotocol/related-task";
/** Tasks per page of `tasks/list`. */
const TASKS_PAGE = 50;

/** The `taskId` of tasks/get, result and cancel. */
function taskIdOf(params: Json): string {
  const id = params["taskId"];
  if (typeof id !== "string") throw new RpcError(-32602, "taskId is required: the task's id (a results handle).");
  return id;
}

function noSuchTask(taskId: string): never {
  throw new RpcError(
    -32602,
    `Failed to retrieve task: no task ${taskId.slice(0, 140)} of this key. A task id is the handle ` +
      `of a run of one of the charging tools, readable by the key that started it for 24 hours.`,
  );
}

/** `GET /v1/results/{handle}` of the mock, as the key (one poll of a running run). */
function readResult(ctx: MockContext, key: string, handle: string): Promise<Reply> {
  return route(ctx, key, "getResult", `/v1/results/${encodeURIComponent(handle)}?format=json`, { handle }, null, null);
}

/** The tool that made a handle of this key (a run, or an answer kept for `more`); null when none. */
function madeBy(ctx: MockContext & { mcpKept: McpKept }, key: string, handle: string): McpToolDefinition | null {
  const kept = ctx.mcpKept.get(handle);
  if (kept) return kept.key === key ? (BY_NAME.get(kept.tool) ?? null) : null;
  const run = ctx.store.runMap.get(handle);
  if (!run || run.key !== key) return null;
  const name = BY_OPERATION.get(run.operationId);
  return name ? (BY_NAME.get(name) ?? null) : null;
}

/**
 * The task of a handle (D145): its status from a read of it (one poll of the mock's run), or from the call's own
 * answer when given: 202 working, 200 completed, else failed.
 */
async function taskOf(
  ctx: MockContext & { mcpKept: McpKept },
  key: string,
  taskId: string,
  answered?: Reply,
): Promise<{ tool: McpToolDefinition; task: Json }> {
  const tool = madeBy(ctx, key, taskId);
  if (!tool?.charging) noSuchTask(taskId);
  const now = new Date(ctx.clock()).toISOString();
  const kept = ctx.mcpKept.get(taskId);
  // The call's own answer when it was just made (a read would be a poll, moving the run).
  const r: Reply =
    answered ?? (kept ? { status: 200, headers: {}, json: kept.answer } : await readResult(ctx, key, taskId));
  if (r.status === 404 || r.status === 410) noSuchTask(taskId);
  const status = r.status === 202 ? "working" : r.status === 200 ? "completed" : "failed";
  const body = r.json as Json | undefined;
  return {
    tool,
    task: {
      taskId,
      status,
      ttl: DAY_MS,
      createdAt: now,
      lastUpdatedAt: now,
      ...(status === "working" ? { pollInterval: Math.max(1, Number(body?.["retry_after_seconds"] ?? 1)) * 1000 } : {}),
      ...(status === "failed"
        ? { statusMessage: `${tool.name} failed: ${String(body?.["message"] ?? `HTTP ${r.status}`)}` }
        : {}),
    },
  };
}

/** The key's tasks, newest first, their status as they stand (no run is read: listing moves nothing). */
function tasksOf(ctx: MockContext & { mcpKept: McpKept }, key: string): Json[] {
  const now = new Date(ctx.clock()).toISOString();
  const out: Json[] = [];
  for (const run of ctx.store.runMap.values()) {
    const name = BY_OPERATION.get(run.operationId);
    if (run.key !== key || !name || !BY_NAME.get(name)?.charging || run.status === "expired") continue;
    const status = run.status === "running" ? "working" : run.status === "finished" ? "completed" : "failed";
    out.push({
      taskId: run.handle,
      status,
      ttl: DAY_MS,
      createdAt: now,
      lastUpdatedAt: run.endedAt !== undefined ? new Date(run.endedAt).toISOString() : now,
      ...(status === "working" ? { pollInterval: ctx.retryAfter * 1000 } : {}),
    });
  }
  for (const [handle, kept] of ctx.mcpKept)
    if (kept.key === key)
      out.push({ taskId: handle, status: "completed", ttl: DAY_MS, createdAt: now, lastUpdatedAt: now });
  return out.reverse();
}

/** A task-augmented call of a charging tool (D145): a task whose id is the run's handle, or the refusal as is. */
async function callAsTask(
  ctx: MockContext & { mcpKept: McpKept },
  key: string,
  tool: McpToolDefinition,
  args: Json,
): Promise<Json> {
  if (args["handle"] !== undefined) {
    const m = typeof args["handle"] === "string" ? HANDLE_ARG.exec(args["handle"]) : null;
    if (!m) return (await read(ctx, key, tool, args["handle"])) as unknown as Json;
    return { task: (await taskOf(ctx, key, m[1]!)).task };
  }
  let answered: Reply | null = null;
  // The run starts and the task answers at once (D174): working until reads of it move the run to its end.
  const r = await call(ctx, key, tool, args, (reply) => (answered = reply), true);
  const reply = answered as Reply | null;
  const body = reply?.json as Json | undefined;
  if (!reply || !body || (reply.status !== 200 && reply.status !== 202)) return r as unknown as Json;
  let taskId = typeof body["handle"] === "string" ? body["handle"] : null;
  if (!taskId && reply.status === 200) {
    // An answer that finished at once is kept under a handle, which is its task's id.
    taskId = newHandle();
    ctx.mcpKept.set(taskId, { tool: tool.name, key, answer: body });
  }
  if (!taskId) return r as unknown as Json;
  return { task: (await taskOf(ctx, key, taskId, reply)).task };
}

/** Calls a route of the mock in-process, as a client of its HTTP API would, with the key of the MCP request. */
function route(
  ctx: MockContext,
  key: string,
  operationId: string,
  path: string,
  pathParams: Record<string, string>,
  body: Json | null,
  idempotencyKey: string | null,
  respondNow = false,
): Promise<Reply> {
  const r = ROUTES[operationId as OperationId];
  const headers: Record<string, string> = { "x-api-key": key };
  if (body) headers["content-type"] = "application/json";
  if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
  const request = new Request(`http://mock.invalid${path}`, {
    method: r.method,
    headers,
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return answer(ctx, r, request, pathParams, respondNow ? { respondNow } : {});
}

/** An error structure as an `isError` tool result. */
function errorResult(tool: string, status: number, body: Json): ToolResult {
  const fix = body["fix"] as Json | undefined;
  const hint = typeof fix?.["note"] === "string" ? ` Fix: ${String(fix["note"])}` : "";
  return {
    isError: true,
    structuredContent: body,
    content: [
      {
        type: "text",
        text:
          `${tool} failed ` +
          `(HTTP ${status}) ${String(body["code"])}: ${String(body["message"] ?? "")}${hint} ` +
          `(request_id ${String(body["request_id"] ?? "")})`,
      },
    ],
  };
}

/** A refusal of the arguments made here (nothing was called): `invalid_params` naming `param`. */
function refused(ctx: MockContext, tool: string, message: string, param: string, note: string): ToolResult {
  const a = errorAnswer("invalid_params", newRequestId(), { message, fix: { param, note } } as never, {
    urls: ctx.urls,
    now: new Date(ctx.clock()),
  });
  return errorResult(tool, a.status, a.body as unknown as Json);
}

/**
 * One tool call: a read of `handle`, or the tool's route; with `asTask` (D174) the route runs it in the background
 * (202 with a handle at once), as the server's run answers a task-augmented call.
 */
async function call(
  ctx: MockContext & { mcpKept: McpKept },
  key: string,
  tool: McpToolDefinition,
  args: Json,
  onAnswer?: (reply: Reply) => void,
  asTask = false,
): Promise<ToolResult> {
  if (tool.charging && args["handle"] !== undefined) return read(ctx, key, tool, args["handle"]);
  const { handle: _h, idempotency_key: idem, ...body } = args;
  if (idem !== undefined && (typeof idem !== "string" || !/^[!-~]{1,255}$/.test(idem)))
    return refused(
      ctx,
      tool.name,
      "`idempotency_key` must be 1 to 255 printable ASCII characters.",
      "idempotency_key",
      "Use a string of 1 to 255 printable ASCII characters, the same one for a retry of the same call.",
    );
  if (!tool.bodySchema && Object.keys(body).length)
    return refused(
      ctx,
      tool.name,
      `${tool.name} takes no arguments; got ${Object.keys(body).join(", ")}.`,
      Object.keys(body)[0]!,
      `Call ${tool.name} with no arguments.`,
    );
  // batch_stats as csv or ndjson: asked as json, its rows written as the file asked (as the server does, D55). A
  // task's run answers 202, so it keeps the format asked; its handle is read as json and written the same way.
  const file =
    !asTask && tool.name === "batch_stats" && (body["format"] === "csv" || body["format"] === "ndjson")
      ? body["format"]
      : null;
  const sent = file ? { ...body, format: "json" } : body;
  const r = await route(
    ctx,
    key,
    tool.operationId,
    tool.path,
    {},
    tool.method === "POST" ? sent : null,
    typeof idem === "string" ? idem : null,
    asTask,
  );
  const answered = r.json as Json | undefined;
  if (answered && file && r.status === 200 && answered["tool"] === "batch_stats")
    answered["applied_params"] = { ...(answered["applied_params"] as Json), format: file };
  onAnswer?.(r);
  return result(ctx, key, tool, r, 0, typeof answered?.["handle"] === "string" ? (answered["handle"] as string) : null);
}

/** The MCP result of a route's answer, from row `position`, cut to the size bound with `more` when it needs a cut. */
function result(
  ctx: MockContext & { mcpKept: McpKept },
  key: string,
  tool: McpToolDefinition,
  r: Reply,
  position: number,
  handle: string | null,
): ToolResult {
  const body = r.json as Json | undefined;
  if (!body) return { content: [{ type: "text", text: r.file?.text ?? "" }] };
  if (r.status >= 400) return errorResult(tool.name, r.status, body);
  if (r.status === 202) {
    const note =
      `${tool.name} is still running. Nothing is charged until it ends. ` +
      `Call ${tool.name} with { "handle": "${String(body["handle"])}" } ` +
      `after ${String(body["retry_after_seconds"] ?? 1)} s to read it (free).`;
    return {
      structuredContent: body,
      content: [
        { type: "text", text: note },
        { type: "text", text: JSON.stringify(body) },
      ],
    };
  }
  const format = tool.name === "batch_stats" ? (body["applied_params"] as Json | undefined)?.["format"] : null;
  const render = format === "csv" ? toCsv : format === "ndjson" ? toNdjson : null;
  const build = (page: Json): ToolResult => ({
    structuredContent: page,
    content: [
      ...(render ? [{ type: "text", text: render(page as never) }] : []),
      { type: "text", text: JSON.stringify(page) },
    ],
  });
  let kept = handle;
  const fitted = fitAnswer(body, {
    handle:
      handle ??
      (() => {
        kept = newHandle();
        ctx.mcpKept.set(kept, { tool: tool.name, key, answer: body });
        return kept;
      }),
    position,
    maxBytes: MCP_ANSWER_BYTES,
    measure: (page) => byteLength(build(page)),
  });
  return build(fitted.answer);
}

/** `handle` only: reads the stored result (free) from the position after the dot, refusing another tool's handle. */
async function read(
  ctx: MockContext & { mcpKept: McpKept },
  key: string,
  tool: McpToolDefinition,
  arg: unknown,
): Promise<ToolResult> {
  const m = typeof arg === "string" ? HANDLE_ARG.exec(arg) : null;
  if (!m)
    return refused(
      ctx,
      tool.name,
      "`handle` must be a results handle, optionally followed by .position (more.handle).",
      "handle",
      "Pass handle or more.handle of an earlier answer exactly as given.",
    );
  const handle = m[1]!;
  const position = Number(m[2] ?? 0);
  const kept = ctx.mcpKept.get(handle);
  const made = kept && kept.key === key ? kept.tool : BY_OPERATION.get(ctx.store.runMap.get(handle)?.operationId ?? "");
  if (made && made !== tool.name)
    return refused(
      ctx,
      tool.name,
      `The handle ${handle} holds a result of ${made}, not of ${tool.name}: a handle is read by the tool that made it.`,
      "handle",
      `Pass it as handle to the ${made} tool.`,
    );
  const r: Reply =
    kept && kept.key === key
      ? { status: 200, headers: {}, json: kept.answer }
      : await route(
          ctx,
          key,
          "getResult",
          `/v1/results/${encodeURIComponent(handle)}?format=json`,
          { handle },
          null,
          null,
        );
  const body = r.json as Json | undefined;
  if (r.status === 200 && body && position > 0) {
    const total = rowCount(body);
    if (total === null || position >= total)
      return refused(
        ctx,
        tool.name,
        `Position ${position} of ${handle} is past the end of its result${total ? `: it has ${total} rows` : ""}.`,
        "handle",
        "Pass more.handle of the previous answer exactly as given; an answer without more was the last.",
      );
  }
  return result(ctx, key, tool, r, position, handle);
}
