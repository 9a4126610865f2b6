/**
 * The MCP server of the gateway: 16 tools (13 that charge and take `handle`, D29; `find`, `capabilities` and
 * `account`, free) that forward to the gateway's own HTTP routes in-process (`app.inject`, the caller's key as
 * X-API-Key), so auth, validation, credits, idempotency and runs are exactly the HTTP ones.
 */
import { randomUUID } from "node:crypto";
import { ProtocolError, ProtocolErrorCode, Server } from "@modelcontextprotocol/server";
import type { CallToolResult, StandardSchemaV1 } from "@modelcontextprotocol/server";
import { errorAnswer, requestValidators, toCsv, toNdjson } from "@sdgw/validators";
import type { FastifyInstance } from "fastify";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import type { ConsoleResult } from "../runs/types.ts";
import { newHandle, newRequestId } from "../ids.ts";
import { respondNowHeader } from "../http/respond-now.ts";
import { fitAnswer, MCP_ANSWER_BYTES, MCP_TOOL_DEFINITIONS, type McpToolDefinition, rowCount } from "@sdgw/engine/mcp";
import { selectTools, type McpToolFilter } from "./toolsets.ts";

type Json = Record<string, unknown>;

/**
 * The 16 MCP tools as the contract describes them, in the order `tools/list` gives them (D76): generated from the
 * operations' `x-mcp` in spec/openapi.yaml, each with its title, description, route, toolset, annotations,
 * `inputSchema` and `outputSchema`.
 */
export const MCP_TOOLS: readonly McpToolDefinition[] = MCP_TOOL_DEFINITIONS;

/** Options of {@link createMcpServer}. */
export interface CreateMcpServerOptions extends McpToolFilter {
  /** The gateway's Fastify app (from `buildApp` or `createServer`); tools call its routes with `app.inject`. */
  app: FastifyInstance;
  /** The caller's key, sent as X-API-Key on every forwarded call; null sends none (charging tools then answer 401 as isError). */
  apiKey: string | null;
  /**
   * The size bound of one tool result in bytes: the whole serialized `CallToolResult` (structuredContent, its text
   * copy, a file's text and links, D78). Default {@link MCP_ANSWER_BYTES}; lower it only in tests.
   */
  maxAnswerBytes?: number;
  /**
   * The gateway behind `app`. With it, an answer that finished inline and is over the size bound is kept under a
   * handle (free, readable by this key for 24 hours), so that its `more` can read on, and a `handle` is refused by
   * a tool other than the one that made it (D55). Without it such an answer is given whole, over the bound, with a
   * warning (rows that were paid for are never dropped), and only a tool answer's own `tool` is checked.
   */
  gateway?: Gateway;
  /**
   * Where the key comes from, for the fix of an `unauthorized` answer (D65): `"headers"` (default; Streamable HTTP:
   * send X-API-Key or `Authorization: Bearer`) or `"env"` (stdio, `sdgw-mcp`: set `SDGW_API_KEY`).
   */
  keySource?: "headers" | "env";
  /**
   * How long a call that answered 202 is waited for when the request asked for progress (a `progressToken` in its
   * `_meta`), sending `notifications/progress` (waves done of waves planned) meanwhile (D80). Default
   * `MCP_MAX_WAIT_MS` (5 s); 0 answers the running answer at once.
   */
  maxWaitMs?: number;
  /** How often a running call is read while waiting (default: its `retry_after_seconds`; tests lower it). */
  pollIntervalMs?: number;
}

/** How long a charging call that answered 202 is waited for, with progress, by default (D80): 5 seconds. */
export const MCP_MAX_WAIT_MS = 5_000;

/** The URI scheme of the results resources (D81): `sdgw://results/{handle}`, optionally `?format=csv|ndjson`. */
export const RESULTS_URI_PREFIX = "sdgw://results/";

/**
 * The `instructions` the server gives at initialize (D64): how handles, `more`, quotes and costs work, and how to
 * read on. Hosts may add them to the model's context.
 */
export const MCP_INSTRUCTIONS = [
  "Social Data Gateway: public social-media data (search, trending, posts, comments, profiles) from ten platforms, and seven analysis tools, as MCP tools.",
  "Costs: find, capabilities and account are free. The other 13 tools charge credits (1 per " +
    "platform or per planned provider call); account shows the balance. What a call cost is " +
    "billing.cost in the answers of the six data tools (search, trending, detail, comments, " +
    "user_profile, user_posts) and billing.cost_credits in the answers of the seven analysis tools and account.",
  "Quotes: pass confirm: false to brand_buzz, comment_insights, account_watch, find_creators, " +
    "creator_card, batch_stats or viral_finder to get the plan and its price (quote.quote_credits) " +
    "without running or charging; then call again without confirm, optionally with max_cost_credits " +
    "set to the quote as a ceiling.",
  "Handles: an answer that is still running (status running) or too large for one message (with " +
    "more) carries a handle; an answer that finished whole in the call has none, and is all there is. " +
    "Calling the same tool with only { handle } reads that result again for free; nothing runs. An " +
    "answer with status running is still working: wait retry_after_seconds, then call the tool with its handle.",
  "More: an answer too large for one message carries its first rows and a more object; call the " +
    "same tool with { handle: more.handle } to read the next rows (free), until an answer has no more.",
  "Repeats: pass idempotency_key (any string you choose) to make a retry of the same call answer the first result instead of charging again.",
  "Errors: a failed call is a result with isError and an error structure (code, message, fix naming " +
    "what to change); nothing was charged for it. Not sure which tool fits? Call find with a plain-language need.",
].join("\n");

const HANDLE_ARG = /^([A-Za-z0-9_-]{1,128})(?:\.([0-9]{1,9}))?$/;
/** A results handle, as a task id (D145). */
const HANDLE_ID = /^[A-Za-z0-9_-]{1,128}$/;
/** The `_meta` key that ties a message to its task (MCP 2025-11-25). */
const RELATED_TASK = "io.modelcontextprotocol/related-task";
/** Tasks per page of `tasks/list`. */
const TASKS_PAGE = 50;

/** A Standard Schema of request params (the SDK's form for methods it does not route, `tasks/*`). */
function paramsSchema<T>(check: (v: Record<string, unknown>) => T | string): StandardSchemaV1<unknown, T> {
  return {
    "~standard": {
      version: 1,
      vendor: "sdgw",
      validate: (v) => {
        const out = check(v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
        return typeof out === "string" ? { issues: [{ message: out }] } : { value: out };
      },
    },
  };
}
/** The params of `tasks/get`, `tasks/result` and `tasks/cancel`. */
const TASK_ID_PARAMS = {
  params: paramsSchema((v) =>
    typeof v["taskId"] === "string" ? { taskId: v["taskId"] } : "taskId is required: the task's id (a results handle).",
  ),
};
/** The params of `tasks/list`. */
const CURSOR_PARAMS = { params: paramsSchema((v) => ({ cursor: v["cursor"] })) };

/**
 * The SDK's Server, taking a task-augmented `tools/call` (D145): the SDK 2.4.0 checks every `tools/call` result
 * against CallToolResult, so the CreateTaskResult such a call answers skips that check (its request is still
 * checked against the protocol's schema).
 */
class TaskServer extends Server {
  protected override _wrapHandler(
    method: string,
    handler: Parameters<Server["_wrapHandler"]>[1],
  ): ReturnType<Server["_wrapHandler"]> {
    const wrapped = super._wrapHandler(method, handler);
    if (method !== "tools/call") return wrapped;
    return (request, ctx) =>
      (request.params as { task?: unknown } | undefined)?.task !== undefined
        ? handler(request, ctx)
        : wrapped(request, ctx);
  }
}

/** The file formats `batch_stats` takes besides json (D24). */
type FileFormat = "csv" | "ndjson";

function invalidParams(message: string, data?: unknown): never {
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, message, data);
}

/** The fix of an `unauthorized` answer over stdio (D65): the key is SDGW_API_KEY, not a header. */
function envKeyFix(body: Json, apiKey: string | null): Json {
  const fix = (body["fix"] as Json | undefined) ?? {};
  const note = apiKey
    ? "Set SDGW_API_KEY in the environment of sdgw-mcp (the env of this server in the MCP host's config) to a valid key, then restart the server."
    : "Set SDGW_API_KEY in the environment of sdgw-mcp (the env of this server in the MCP host's config) to your key, then restart the server.";
  return {
    ...body,
    ...(apiKey ? {} : { message: "SDGW_API_KEY is not set: sdgw-mcp has no key to call with." }),
    fix: { ...fix, note },
  };
}

/** A one-line summary of an error structure for the text content. */
function errorText(tool: string, status: number, body: Json): string {
  const fix = body["fix"] as Json | undefined;
  const hint = fix
    ? [fix["param"] ? `param ${String(fix["param"])}` : "", typeof fix["note"] === "string" ? fix["note"] : ""]
        .filter(Boolean)
        .join("; ")
    : "";
  return `${tool} failed (HTTP ${status}) ${String(body["code"])}: ${String(body["message"] ?? "")}${
    hint ? ` Fix: ${hint}` : ""
  } (request_id ${String(body["request_id"] ?? "")})`;
}

/**
 * The file format a finished answer's rows are written in over MCP (D55): a `batch_stats` tool answer whose
 * `applied_params.format` is csv or ndjson. Null for every other answer (JSON only).
 */
function fileFormatOf(answer: Json): FileFormat | null {
  if (answer["tool"] !== "batch_stats" || !Array.isArray(answer["items"])) return null;
  const format = (answer["applied_params"] as Json | undefined)?.["format"];
  return format === "csv" || format === "ndjson" ? format : null;
}

/** What the gateway answered a forwarded call: the status, the body as text, and as JSON when it is JSON. */
interface Forwarded {
  status: number;
  json: Json | null;
  text: string;
}

/** The media type of a results resource by its format. */
const MIME: Record<"json" | FileFormat, string> = {
  json: "application/json",
  csv: "text/csv",
  ndjson: "application/x-ndjson",
};

/** A `resource_link` content item to a stored result (D81), readable with `resources/read`. */
function resultLink(handle: string, tool: string, format: "json" | FileFormat, rows: number | null): Json {
  return {
    type: "resource_link",
    uri: `${RESULTS_URI_PREFIX}${handle}${format === "json" ? "" : `?format=${format}`}`,
    name: `${handle}.${format}`,
    title: `Whole result of ${tool}${format === "json" ? "" : ` as ${format}`}`,
    description:
      `The whole stored result${rows !== null ? ` (${rows} rows)` : ""}, free to read ` +
      `for 24 hours: resources/read this URI, or GET ` +
      `/v1/results/${handle}${format === "json" ? "" : `?format=${format}`} over HTTP with the same key.`,
    mimeType: MIME[format],
  };
}

const bytesOf = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");

/**
 * An MCP server (the official SDK's `Server`) with the gateway's tools, acting for one key. Connect it to any
 * transport: `await createMcpServer({ app, apiKey }).connect(new StdioServerTransport())`.
 *
 * - Tools: the 16 of {@link MCP_TOOLS}, or those `toolsets` and `readOnly` keep (D79); any other name is an unknown
 *   tool in `tools/list` and `tools/call` alike. Each has the `outputSchema` of D77: every `structuredContent` it
 *   answers (error results included) validates against it.
 * - A charging call with `handle` only reads `GET /v1/results/{handle}`: nothing runs, nothing is charged, other
 *   arguments are ignored; the part after the dot is the row to continue from. A handle made by another tool, or
 *   a position past the last row, is refused with `invalid_params` naming `handle` (D55).
 * - A 202 answers the running handle answer; call again with its `handle`. With a `progressToken`, the call is
 *   waited for up to `maxWaitMs`, with `notifications/progress`, and answers the finished result if it ended (D80).
 * - A result over the size bound (the whole serialized `CallToolResult`, D78) keeps its first rows and gains
 *   `more` (D30) when it has a handle. A finished answer with a handle links its whole result (`resource_link`,
 *   `sdgw://results/{handle}`, D81), which `resources/read` reads.
 * - `batch_stats` with `format` csv or ndjson answers the JSON answer as `structuredContent` and the rows of the
 *   page as that file in the first text content (D55): a charge always comes with its rows.
 * - An unknown tool and a `tools/list` cursor are protocol errors (InvalidParams, -32602). Arguments that break the
 *   contract (a malformed `handle` or `idempotency_key`, arguments to `capabilities` or `account`), an HTTP error of
 *   the gateway, and a handle refused as above, are a tool result with `isError: true` and the error structure as
 *   `structuredContent` (`invalid_params` naming the parameter for bad arguments, D66).
 * - With `keySource: "env"` (stdio), an `unauthorized` answer's fix says to set SDGW_API_KEY (D65).
 * - Tasks (MCP 2025-11-25, D145), with `gateway` only: `capabilities.tasks` (list, tools/call), the charging tools
 *   declare `execution.taskSupport: "optional"`; a `tools/call` with `task` answers at once, as soon as its run
 *   started (D174: the run answers 202 without the gateway's inline wait), a task whose `taskId` is the run's handle,
 *   `working`; `tasks/get` gives its status (working, completed, failed), `tasks/result` the tool's final result
 *   once the run ended, `tasks/list` the key's tasks (cursor paging), and `tasks/cancel` answers -32602 (a run
 *   cannot be stopped). Reading a task is free; another key's task is not found (-32602).
 *
 * @throws `McpToolsetError` when `toolsets` names a toolset that is not one.
 */
export function createMcpServer(options: CreateMcpServerOptions): Server {
  const { app, apiKey, gateway } = options;
  const maxBytes = options.maxAnswerBytes ?? MCP_ANSWER_BYTES;
  const keySource = options.keySource ?? "headers";
  const maxWaitMs = Math.max(0, options.maxWaitMs ?? MCP_MAX_WAIT_MS);
  const tools = selectTools(options);
  const server = new TaskServer(
    { name: "sdgw", version: "1.0.0" },
    {
      capabilities: {
        tools: {},
        resources: {},
        // Tasks (D145) follow the gateway's runs: offered only with the gateway at hand. No `cancel`: a run cannot
        // be stopped once started (the seed gives no way to), so `tasks/cancel` answers that it cannot.
        ...(gateway ? { tasks: { list: {}, requests: { tools: { call: {} } } } } : {}),
      },
      instructions: MCP_INSTRUCTIONS,
    },
  );
  const byName = new Map(tools.map((t) => [t.name, t]));
  const isTool = (name: string) => byName.get(name)?.charging === true;
  let listed: Json[] | null = null;

  server.setRequestHandler("tools/list", (request) => {
    // One page: no cursor is ever given out, so any cursor sent is not one of ours (a protocol error, D66).
    const cursor = (request.params as { cursor?: unknown } | undefined)?.cursor;
    if (cursor !== undefined)
      invalidParams(
        `Invalid cursor: tools/list answers every tool in one page and gives no nextCursor; call it without cursor.`,
      );
    listed ??= tools.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.inputSchema,
      outputSchema: t.outputSchema,
      annotations: t.annotations,
      // The charging tools can run long (a 202 and a handle): with the gateway at hand they run as tasks (D145).
      ...(gateway && t.charging ? { execution: { taskSupport: "optional" } } : {}),
    }));
    return { tools: listed } as never;
  });

  /**
   * Arguments that break the contract (D66): a tool result with isError and the `invalid_params` error structure
   * naming the parameter (MCP 2025-11-25: input validation errors are tool execution errors). Nothing was called.
   */
  function badArguments(tool: string, body: Json): CallToolResult {
    return { isError: true, structuredContent: body, content: [{ type: "text", text: errorText(tool, 400, body) }] };
  }
  function badArgument(tool: string, message: string, param: string, note: string): CallToolResult {
    const a = errorAnswer(
      "invalid_params",
      newRequestId(gateway?.now()),
      { message, fix: { param, note } },
      gateway ? { urls: gateway.config.urls, now: new Date(gateway.now()) } : {},
    );
    return badArguments(tool, a.body as unknown as Json);
  }

  async function forward(
    method: "GET" | "POST",
    url: string,
    body: Json | null,
    idempotencyKey: string | null,
    respondNow = false,
  ): Promise<Forwarded> {
    // A task-augmented call asks the route to answer 202 as soon as the run started (D174).
    const headers: Record<string, string> = respondNow ? respondNowHeader() : {};
    if (apiKey) headers["x-api-key"] = apiKey;
    if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
    if (body) headers["content-type"] = "application/json";
    const res = await app.inject({ method, url, headers, ...(body ? { payload: JSON.stringify(body) } : {}) });
    let json: Json | null = null;
    if (String(res.headers["content-type"] ?? "").startsWith("application/json")) {
      try {
        json = JSON.parse(res.body) as Json;
      } catch {
        json = null;
      }
    }
    return { status: res.statusCode, json, text: res.body };
  }

  const callerKey = async () => (gateway && apiKey ? await gateway.accounts.keyBySecret(apiKey) : undefined);

  /** The operation that made a handle of this key (the MCP tool's name for the 13 tools), or null when unknown. */
  async function madeBy(handle: string): Promise<string | null> {
    const key = await callerKey();
    if (!key) return null;
    return gateway!.runs.operationOf(handle, key.id);
  }

  /** The handle of the run a call under this key's Idempotency-Key started, or null (no gateway at hand, no run). */
  async function handleOfIdempotencyKey(idem: string): Promise<string | null> {
    const key = await callerKey();
    if (!key) return null;
    return gateway!.runs.handleOfIdempotencyKey(key.id, idem);
  }

  /** Keeps an answer that finished inline under `handle` (free, 24 hours), so that `more` can read on. */
  async function keep(tool: string, json: Json, handle: string): Promise<string | null> {
    try {
      const key = await callerKey();
      if (!key) return null;
      return await gateway!.runs.keep({
        handle,
        key,
        requestId: String(json["request_id"] ?? newRequestId()),
        operation: tool,
        headers: { "content-type": "application/json; charset=utf-8" },
        answer: JSON.stringify(json),
      });
    } catch (error) {
      // Not kept: the answer is then given whole (fitAnswer without a handle) rather than losing rows.
      gateway!.log(`mcp: could not keep the answer of ${tool}`, error);
      return null;
    }
  }

  /** A refusal made here (nothing ran, nothing was charged), as the gateway's error structure. */
  function refuse(tool: string, message: string, note: string): CallToolResult {
    const a = errorAnswer(
      "invalid_params",
      newRequestId(gateway?.now()),
      { message, fix: { param: "handle", note } },
      gateway ? { urls: gateway.config.urls, now: new Date(gateway.now()) } : {},
    );
    const body = a.body as unknown as Json;
    return {
      isError: true,
      structuredContent: body,
      content: [{ type: "text", text: errorText(tool, a.status, body) }],
    };
  }

  /** The running answer, with a note on how to read on (D80). */
  function running(tool: string, json: Json, waitedMs: number): CallToolResult {
    const waves = json["waves"] as { planned?: number; done?: number } | undefined;
    const progress = waves ? ` ${waves.done ?? 0} of ${waves.planned ?? "?"} waves done.` : "";
    const note =
      `${tool} is still ` +
      `running${waitedMs > 0 ? ` after ${Math.round(waitedMs / 1000)} s` : ""}.${progress} Nothing is ` +
      `charged until it ends. Call ${tool} with { "handle": "${String(json["handle"])}" } ` +
      `after ${String(json["retry_after_seconds"] ?? 5)} s to read it (free).`;
    return {
      structuredContent: json,
      content: [
        { type: "text", text: note },
        { type: "text", text: JSON.stringify(json) },
      ],
    };
  }

  /**
   * The MCP result of a forwarded call. An error is `isError`; a 202 is the running answer; a finished JSON answer
   * is cut so that the whole result fits the bound (D78), from `position` (kept under a handle first when it
   * finished inline and needs cutting); for batch_stats csv/ndjson its page's rows are also written as that file;
   * with a handle it links the whole result (D81).
   */
  async function result(
    tool: string,
    answer: Forwarded,
    handle: string | null,
    position: number,
  ): Promise<CallToolResult> {
    const charging = byName.get(tool)?.charging === true;
    const { status, json, text } = answer;
    if (!json) {
      // Not JSON: a file the gateway answered. Over MCP files come as the JSON answer plus the file (D55), so this
      // is reached only without the gateway at hand (see tools/call); the file is the data.
      if (status >= 400)
        return {
          isError: true,
          content: [{ type: "text", text: `${tool} failed (HTTP ${status}): ${text.slice(0, 2000)}` }],
        };
      return { content: [{ type: "text", text }] };
    }
    if (status >= 400) {
      const body =
        keySource === "env" && json["code"] === "unauthorized" && json["reason"] !== "key_in_query"
          ? envKeyFix(json, apiKey)
          : json;
      return {
        isError: true,
        structuredContent: body,
        content: [{ type: "text", text: errorText(tool, status, body) }],
      };
    }
    if (status === 202) return running(tool, json, 0);
    const format = fileFormatOf(json);
    const render = format ? (format === "csv" ? toCsv : toNdjson) : null;
    let linked = handle;
    const total = rowCount(json);
    /** The whole tool result of one page. */
    const build = (page: Json, file?: string): CallToolResult => {
      const content: CallToolResult["content"] = [];
      if (render) content.push({ type: "text", text: file ?? render(page) });
      content.push({ type: "text", text: JSON.stringify(page) });
      if (linked && charging) {
        content.push(resultLink(linked, tool, "json", total) as never);
        if (format) content.push(resultLink(linked, tool, format, total) as never);
      }
      return { structuredContent: page, content };
    };
    // A cut answer needs a handle to read on from: a new one, kept once the cut is known (fitAnswer asks for it).
    const fresh = newHandle();
    let wanted = false;
    const want = () => {
      wanted = true;
      linked = fresh;
      return fresh;
    };
    const fit = (h: string | null | (() => string)) =>
      fitAnswer(json, { handle: h, position, maxBytes, measure: (page) => bytesOf(build(page)) });
    const fitted = fit(handle ?? (charging ? want : null));
    if (wanted && (await keep(tool, json, fresh)) === null) {
      linked = null; // not kept: the answer is given whole rather than losing rows
      return build(fit(null).answer);
    }
    return build(fitted.answer);
  }

  /** `handle` only: reads the stored result (free), refusing another tool's handle and a position past the end. */
  async function read(tool: string, arg: unknown): Promise<CallToolResult> {
    const m = typeof arg === "string" ? HANDLE_ARG.exec(arg) : null;
    if (!m)
      return badArgument(
        tool,
        "`handle` must be a results handle, optionally followed by .position (more.handle).",
        "handle",
        "Pass handle or more.handle of an earlier answer exactly as given.",
      );
    const handle = m[1]!;
    const position = Number(m[2] ?? 0);
    const wrongTool = (made: string) =>
      refuse(
        tool,
        `The handle ${handle} holds a result of ${made}, not of ${tool}: a handle is read by the tool that made it.`,
        MCP_TOOL_DEFINITIONS.some((t) => t.name === made && t.charging)
          ? isTool(made)
            ? `Pass it as handle to the ${made} tool.`
            : `The ${made} tool is not offered by this server (toolsets or read-only); read it over HTTP with GET /v1/results/${handle}.`
          : `Read it over HTTP with GET /v1/results/${handle}.`,
      );
    const made = await madeBy(handle);
    if (made !== null && made !== tool) return wrongTool(made);
    const answer = await forward("GET", `/v1/results/${encodeURIComponent(handle)}?format=json`, null, null);
    const json = answer.json;
    if (answer.status !== 200 || !json) return result(tool, answer, handle, 0);
    // Without the gateway's runs at hand, a tool answer still names its tool.
    if (made === null && typeof json["tool"] === "string" && json["tool"] !== tool) return wrongTool(json["tool"]);
    const total = rowCount(json);
    if (position > 0 && (total === null || position >= total)) {
      return refuse(
        tool,
        total === null || total === 0
          ? `The result under ${handle} has no rows to read from position ${position}.`
          : `Position ${position} of ${handle} is past the end of its result: it has ${total} rows (positions 0 to ${total - 1}).`,
        "Pass more.handle of the previous answer exactly as given, or the handle without .position for the first rows; an answer without more was the last.",
      );
    }
    return result(tool, answer, handle, position);
  }

  /**
   * A call that answered 202, with a progressToken (D80, D141): sends `notifications/progress` at once and each time
   * the run moves (cells ended of cells planned for a data call, waves ended of waves planned for a tool run), and
   * answers the finished result as soon as the run's end is committed, or the running answer (with a note on how to
   * read on) when `maxWaitMs` passes first or the request is cancelled. A run of this process is followed as it
   * moves (`gateway.runs.watch`); one that another process runs (or without the gateway at hand) is read every
   * `pollIntervalMs` (else its `retry_after_seconds`).
   */
  async function waitFor(
    tool: string,
    first: Json,
    token: string | number,
    notify: (n: { method: "notifications/progress"; params: Json }) => Promise<void>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const handle = String(first["handle"]);
    const started = Date.now();
    let sent = -1;
    // Notifications go out one after the other, in the order the run moved.
    let queue: Promise<void> = Promise.resolve();
    const progress = (done: number, total: number, unit: "cells" | "waves") => {
      if (done <= sent) return queue;
      sent = done;
      queue = queue.then(() =>
        notify({
          method: "notifications/progress",
          params: { progressToken: token, progress: done, total, message: `${tool}: ${done} of ${total} ${unit} done` },
        }).catch(() => {
          // A client gone or a transport that cannot carry it: the call still answers.
        }),
      );
      return queue;
    };
    const fromAnswer = (answer: Json) => {
      const waves = answer["waves"] as { planned: number; done: number } | undefined;
      if (waves) return progress(waves.done, waves.planned, "waves");
      return queue;
    };
    /** The answer once the wait is over: the finished result, or the running answer as it stands. */
    const settle = async (ended: boolean): Promise<CallToolResult> => {
      if (ended) {
        await queue;
        return read(tool, handle);
      }
      const r = await forward("GET", `/v1/results/${encodeURIComponent(handle)}?format=json`, null, null);
      await queue;
      if (r.status !== 202 || !r.json) return read(tool, handle);
      return running(tool, r.json, Date.now() - started);
    };

    const watching = gateway
      ? await new Promise<CallToolResult | null>((resolve, reject) => {
          let stop: (() => void) | null = null;
          let over = false;
          let timer: NodeJS.Timeout | undefined;
          const finish = (ended: boolean) => {
            if (over) return;
            over = true;
            clearTimeout(timer);
            stop?.();
            signal.removeEventListener("abort", onAbort);
            settle(ended).then(resolve, reject);
          };
          const onAbort = () => finish(false);
          Promise.resolve(
            gateway.runs.watch(handle, (p) => {
              if (over) return;
              const total = Math.max(p.total, 1);
              if (p.ended) {
                progress(total, total, p.unit);
                finish(true);
              } else progress(p.done, total, p.unit);
            }),
          ).then((unwatch) => {
            if (unwatch === null) {
              // Not a run of this process (or it ended already): read as before.
              over = true;
              resolve(null);
              return;
            }
            stop = unwatch;
            if (over) return unwatch();
            timer = setTimeout(() => finish(false), maxWaitMs);
            signal.addEventListener("abort", onAbort, { once: true });
            if (signal.aborted) onAbort();
          }, reject);
        })
      : null;
    if (watching) return watching;

    let last = first;
    await fromAnswer(last);
    for (;;) {
      const left = maxWaitMs - (Date.now() - started);
      const interval = options.pollIntervalMs ?? Math.max(1, Number(last["retry_after_seconds"] ?? 1)) * 1000;
      if (left <= 0 || signal.aborted) break;
      await pause(Math.min(interval, left), signal);
      if (signal.aborted) break;
      const r = await forward("GET", `/v1/results/${encodeURIComponent(handle)}?format=json`, null, null);
      if (r.status !== 202 || !r.json) {
        await queue;
        return read(tool, handle);
      }
      last = r.json;
      await fromAnswer(last);
    }
    await queue;
    return running(tool, last, Date.now() - started);
  }

  /** A task not found for this key (D145): MCP's -32602, as for any unknown task id. */
  function noSuchTask(taskId: string): never {
    return invalidParams(
      `Failed to retrieve task: no task ${taskId.slice(0, 140)} of this key. A task id is the ` +
        `handle of a run of one of the charging tools, readable by the key that started it for 24 hours.`,
    );
  }

  /** The key's runs of the offered charging tools that have a handle, newest first (at most 200, D145). */
  async function taskRows(): Promise<ConsoleResult[]> {
    const key = await callerKey();
    if (!key) return [];
    const rows = await gateway!.runs.consoleResults(key.account_id, key.name);
    const mine: ConsoleResult[] = [];
    for (const row of rows) {
      if (!row.handle || !row.operation || !isTool(row.operation)) continue;
      // Another key of the same name (a rotated one) is another caller: its runs are not listed.
      if ((await gateway!.runs.operationOf(row.handle, key.id)) !== row.operation) continue;
      mine.push(row);
    }
    return mine;
  }

  /** A run's row as an MCP task (tasks/list), its status from the run's state. */
  function taskOfRow(row: ConsoleResult): Json {
    const status = row.state === "running" ? "working" : row.state === "finished" ? "completed" : "failed";
    return {
      taskId: row.handle,
      status,
      ttl: gateway!.config.retentionMs,
      createdAt: row.started_at,
      lastUpdatedAt: row.ended_at ?? row.started_at,
      ...(status === "working" ? { pollInterval: gateway!.config.pollAfterSeconds * 1000 } : {}),
    };
  }

  /**
   * The task of a handle (tasks/get, D145): its status from what a read of the handle answers (free): 202 working
   * (pollInterval from its Retry-After), 200 completed, an error of the run failed; a handle that is not this key's,
   * not of an offered charging tool, or expired is no task (-32602).
   */
  async function taskOf(taskId: string, answered?: Forwarded): Promise<{ tool: string; task: Json }> {
    if (!HANDLE_ID.test(taskId)) noSuchTask(taskId);
    const tool = await madeBy(taskId);
    if (tool === null || !isTool(tool)) noSuchTask(taskId);
    // The call's own 202 when it was just made (D174): the task is created working, even if the run ended since.
    const r = answered ?? (await forward("GET", `/v1/results/${encodeURIComponent(taskId)}?format=json`, null, null));
    if (r.status === 404 || r.status === 410) noSuchTask(taskId);
    const status = r.status === 202 ? "working" : r.status === 200 ? "completed" : "failed";
    // Its times: its row among the key's calls (the handle was checked to be this key's above).
    const key = await callerKey();
    const row = key
      ? (await gateway!.runs.consoleResults(key.account_id, key.name)).find((t) => t.handle === taskId)
      : undefined;
    const now = new Date(gateway!.now()).toISOString();
    const waves = r.json?.["waves"] as { planned?: number; done?: number } | undefined;
    const statusMessage =
      status === "working"
        ? `${tool} is running${waves ? `: ${waves.done ?? 0} of ${waves.planned ?? "?"} waves done` : ""}.`
        : status === "failed"
          ? `${tool} failed: ${String(r.json?.["message"] ?? `HTTP ${r.status}`)}`
          : undefined;
    return {
      tool,
      task: {
        taskId,
        status,
        ttl: gateway!.config.retentionMs,
        createdAt: row?.started_at ?? now,
        lastUpdatedAt: row?.ended_at ?? row?.started_at ?? now,
        ...(status === "working"
          ? { pollInterval: Math.max(1, Number(r.json?.["retry_after_seconds"] ?? 1)) * 1000 }
          : {}),
        ...(statusMessage ? { statusMessage } : {}),
      },
    };
  }

  /**
   * Resolves once the run under `handle` has ended (a read then answers its end) or `signal` aborts: a run of this
   * process is followed as it moves (`runs.watch`), another is read every `pollIntervalMs` (else its Retry-After).
   */
  async function untilEnded(handle: string, signal: AbortSignal): Promise<void> {
    const followed = await new Promise<boolean>((resolve, reject) => {
      let over = false;
      let stop: (() => void) | null = null;
      const onAbort = () => end(true);
      const end = (ended: boolean) => {
        if (over) return;
        over = true;
        stop?.();
        signal.removeEventListener("abort", onAbort);
        resolve(ended);
      };
      Promise.resolve(
        gateway!.runs.watch(handle, (p) => {
          if (p.ended) end(true);
        }),
      ).then((unwatch) => {
        if (unwatch === null) return end(false); // not a run of this process, or ended: read it
        if (over) return unwatch();
        stop = unwatch;
        signal.addEventListener("abort", onAbort, { once: true });
        if (signal.aborted) onAbort();
      }, reject);
    });
    if (followed) return;
    for (;;) {
      if (signal.aborted) return;
      const r = await forward("GET", `/v1/results/${encodeURIComponent(handle)}?format=json`, null, null);
      if (r.status !== 202) return;
      const interval = options.pollIntervalMs ?? Math.max(1, Number(r.json?.["retry_after_seconds"] ?? 1)) * 1000;
      await pause(interval, signal);
    }
  }

  /** The CreateTaskResult of a call that made `handle` (D145), its status from `answered` when given (D174). */
  async function created(handle: string, answered?: Forwarded): Promise<CallToolResult> {
    return { task: (await taskOf(handle, answered)).task } as never;
  }

  if (gateway) {
    server.setRequestHandler(
      "tasks/get",
      TASK_ID_PARAMS,
      async (params) => (await taskOf(params.taskId)).task as never,
    );
    server.setRequestHandler("tasks/result", TASK_ID_PARAMS, async (params, ctx) => {
      const taskId = params.taskId;
      const { tool } = await taskOf(taskId);
      await untilEnded(taskId, ctx.mcpReq.signal);
      const r = await read(tool, taskId);
      return { ...r, _meta: { ...r._meta, [RELATED_TASK]: { taskId } } } as never;
    });
    server.setRequestHandler("tasks/list", CURSOR_PARAMS, async (params) => {
      const cursor = params.cursor;
      let from = 0;
      if (cursor !== undefined) {
        const m = typeof cursor === "string" ? /^t([0-9]{1,4})$/.exec(cursor) : null;
        if (!m) invalidParams("Invalid cursor: pass nextCursor of the previous tasks/list answer exactly as given.");
        from = Number(m[1]);
      }
      const rows = await taskRows();
      const page = rows.slice(from, from + TASKS_PAGE);
      return {
        tasks: page.map(taskOfRow),
        ...(from + TASKS_PAGE < rows.length ? { nextCursor: `t${from + TASKS_PAGE}` } : {}),
      } as never;
    });
    server.setRequestHandler("tasks/cancel", TASK_ID_PARAMS, async (params) => {
      const { task } = await taskOf(params.taskId);
      return invalidParams(
        task["status"] === "working"
          ? `Task ${params.taskId} cannot be cancelled: a run of the gateway cannot be stopped once ` +
              `started. It ends on its own; nothing is charged for a run that fails.`
          : `Task ${params.taskId} cannot be cancelled: it is already ${String(task["status"])}.`,
      );
    });
  }

  server.setRequestHandler("tools/call", async (request, ctx) => {
    const { name } = request.params;
    const spec = byName.get(name);
    if (!spec) invalidParams(`Unknown tool ${name}. Tools: ${tools.map((t) => t.name).join(", ")}.`);
    const args = (request.params.arguments ?? {}) as Json;

    const asTask = (request.params as { task?: unknown }).task !== undefined;
    if (asTask && !(gateway && spec.charging))
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        `${name} does not run as a task (its execution.taskSupport is forbidden): call it without task.`,
      );

    if (spec.charging && args["handle"] !== undefined) {
      if (!asTask) return read(name, args["handle"]);
      // The task of an existing handle: the handle is the task (D145).
      const m = typeof args["handle"] === "string" ? HANDLE_ARG.exec(args["handle"]) : null;
      if (!m) return read(name, args["handle"]);
      return created(m[1]!);
    }

    const { handle: _h, idempotency_key: idem, ...body } = args;
    if (idem !== undefined && (typeof idem !== "string" || !/^[!-~]{1,255}$/.test(idem))) {
      return badArgument(
        name,
        "`idempotency_key` must be 1 to 255 printable ASCII characters.",
        "idempotency_key",
        "Use a string of 1 to 255 printable ASCII characters, the same one for a retry of the same call.",
      );
    }
    if (!spec.bodySchema) {
      const extra = Object.keys(body);
      if (extra.length)
        return badArgument(
          name,
          `${name} takes no arguments; got ${extra.join(", ")}.`,
          extra[0]!,
          `Call ${name} with no arguments.`,
        );
    } else {
      const validator = (
        requestValidators[spec.operationId as keyof typeof requestValidators] as unknown as {
          body?: (v: unknown) => { ok: true } | { ok: false; answer(requestId: string): Json };
        }
      ).body;
      const v = validator?.(body);
      if (v && !v.ok) return badArguments(name, v.answer(newRequestId(gateway?.now())));
    }

    // batch_stats asked as csv or ndjson (D55): a run that answers within the request is asked as json (a file
    // answer would carry neither the charge nor a handle) and its rows are written as the file here; a background
    // run keeps the format asked, and its handle is read as json and written the same way. A task's run always
    // answers 202 with a handle (D174), so it keeps the format asked too.
    let sent: Json = body;
    let asked: FileFormat | null = null;
    if (
      !asTask &&
      name === "batch_stats" &&
      (body["format"] === "csv" || body["format"] === "ndjson") &&
      body["confirm"] !== false
    ) {
      const quoted = await forward("POST", spec.path, { ...body, confirm: false }, null);
      if (quoted.status !== 200 || !quoted.json) return result(name, quoted, null, 0);
      if ((quoted.json["quote"] as Json | undefined)?.["mode"] !== "background") {
        asked = body["format"];
        sent = { ...body, format: "json" };
      }
    }

    const key = spec.charging
      ? ((idem as string | undefined) ?? (name === "search" ? `mcp-${randomUUID()}` : null))
      : null;
    // A task answers as soon as its run started (D174): the route is asked not to wait for the run's end.
    const answer = await forward(spec.method, spec.path, spec.method === "POST" ? sent : null, key, asTask);
    if (asked && answer.status === 200 && answer.json && answer.json["tool"] === "batch_stats") {
      // The answer's rows are written as the format asked: that is the format applied to this MCP answer.
      answer.json = { ...answer.json, applied_params: { ...(answer.json["applied_params"] as Json), format: asked } };
    }
    if (answer.status === 200 && !answer.json && key) {
      // A replay (same idempotency_key) of a finished background run asked as a file answers the file: its run's
      // handle is read instead, giving the JSON answer with the file (D55, D77).
      const stored = await handleOfIdempotencyKey(key);
      if (stored) return asTask ? created(stored) : read(name, stored);
    }
    const handle = answer.json && typeof answer.json["handle"] === "string" ? answer.json["handle"] : null;
    if (asTask && answer.json && (answer.status === 200 || answer.status === 202)) {
      // A task (D145): its id is the run's handle; an answer that finished inline is kept under one first.
      const taskId = handle ?? (answer.status === 200 ? await keep(name, answer.json, newHandle()) : null);
      if (taskId) return created(taskId, answer.status === 202 && handle ? answer : undefined);
    }
    const token =
      (request.params as { _meta?: { progressToken?: string | number } })._meta?.progressToken ??
      ctx.mcpReq._meta?.progressToken;
    if (answer.status === 202 && answer.json && handle && spec.charging && token !== undefined && maxWaitMs > 0) {
      return waitFor(name, answer.json, token, (n) => ctx.mcpReq.notify(n as never), ctx.mcpReq.signal);
    }
    return result(name, answer, handle, 0);
  });

  // Results as resources (D81): the links of tool results point here; nothing is listed, one template is given.
  server.setRequestHandler("resources/list", () => ({ resources: [] }) as never);
  server.setRequestHandler(
    "resources/templates/list",
    () =>
      ({
        resourceTemplates: [
          {
            uriTemplate: `${RESULTS_URI_PREFIX}{handle}{?format}`,
            name: "result",
            title: "A stored result",
            description:
              "The whole result under a handle (from a tool answer's handle or more.handle before " +
              "the dot), as json (default), csv or ndjson. Free; readable by the key that made it for 24 hours.",
            mimeType: "application/json",
          },
        ],
      }) as never,
  );
  server.setRequestHandler("resources/read", async (request) => {
    const uri = request.params.uri;
    const m = /^sdgw:\/\/results\/([A-Za-z0-9_-]{1,128})(?:\?format=(json|csv|ndjson))?$/.exec(uri);
    if (!m)
      invalidParams(
        `Unknown resource ${uri}: results are read as ${RESULTS_URI_PREFIX}{handle}, optionally with ?format=csv or ?format=ndjson.`,
      );
    const format = (m[2] ?? "json") as "json" | FileFormat;
    const r = await forward("GET", `/v1/results/${m[1]!}?format=${format}`, null, null);
    if (r.status >= 400) {
      const body = r.json ?? {};
      throw new ProtocolError(
        -32002 as ProtocolErrorCode,
        `${String(body["code"] ?? `HTTP ${r.status}`)}: ${String(body["message"] ?? r.text.slice(0, 500))}`,
        body,
      );
    }
    return { contents: [{ uri, mimeType: r.status === 202 ? MIME.json : MIME[format], text: r.text }] } as never;
  });

  return server;
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
