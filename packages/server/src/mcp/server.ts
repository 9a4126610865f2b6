/**
 * The MCP server of the gateway: 16 tools (13 that charge and take `handle`, D29; `find`, `capabilities` and
 * `account`, free) that forward to the gateway's own HTTP routes in-process (`app.inject`, the caller's key as
 * X-API-Key), so auth, validation, credits, idempotency and runs are exactly the HTTP ones.
 */
import { randomUUID } from "node:crypto";
import { ProtocolError, ProtocolErrorCode, Server } from "@modelcontextprotocol/server";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { errorAnswer, requestValidators, toCsv, toNdjson } from "@sdgw/validators";
import type { FastifyInstance } from "fastify";
import type { Gateway } from "../gateway.ts";
import { newRequestId } from "../ids.ts";
import { fitAnswer, MCP_ANSWER_BYTES, rowCount } from "./answers.ts";
import { toolInputSchema } from "./schemas.ts";

type Json = Record<string, unknown>;

/** One MCP tool: its HTTP route and the contract schema of its arguments. */
interface ToolSpec {
  name: string;
  /** A short human title (`tools/list` `title`). */
  title: string;
  description: string;
  method: "GET" | "POST";
  path: string;
  /** The validator (operation id) and schema name of the request body; null for a tool without arguments. */
  operationId: keyof typeof requestValidators | null;
  schema: string | null;
  charging: boolean;
}

const PLATFORMS_NOTE =
  "Platforms: xiaohongshu (小红书 RED), douyin (抖音), kuaishou (快手), weibo (微博), bilibili (哔哩哔哩 B站), zhihu (知乎), wechat (微信公众号 official accounts), x, reddit, youtube.";

const data = (name: string, title: string, operationId: keyof typeof requestValidators, schema: string, description: string): ToolSpec => ({
  name,
  title,
  description: `${description} Charges credits (1 per platform or target); pass a result's \`handle\` or \`more.handle\` to read it again for free.`,
  method: "POST",
  path: `/v1/${name}`,
  operationId,
  schema,
  charging: true,
});

const tool = (name: string, title: string, operationId: keyof typeof requestValidators, schema: string, description: string): ToolSpec => ({
  name,
  title,
  description: `${description} Charges credits per planned call (confirm=false only quotes the price); pass a result's \`handle\` or \`more.handle\` to read it again for free.`,
  method: "POST",
  path: `/v1/tools/${name}`,
  operationId,
  schema,
  charging: true,
});

/** The 16 MCP tools, in the order `tools/list` gives them. */
export const MCP_TOOLS: readonly ToolSpec[] = [
  data("search", "Search posts or users", "searchPost", "SearchRequest", `Searches posts or users by keyword on one platform (\`platform\`) or several (\`platforms\`, or "all"), answering one uniform envelope. ${PLATFORMS_NOTE}`),
  data("trending", "Trending lists", "trending", "TrendingRequest", "Lists what is trending now (hot lists, 热搜/热榜) on one platform or several."),
  data("detail", "Post details", "detail", "DetailRequest", "Fetches full posts by id or link (1 to 20) on one platform, with metrics and media."),
  data("comments", "Post comments", "comments", "CommentsRequest", "Fetches the comments of posts (评论) by id or link on one platform."),
  data("user_profile", "Account profiles", "userProfile", "UserProfileRequest", "Fetches account profiles (followers, bio, verification) by id or link on one platform."),
  data("user_posts", "An account's posts", "userPosts", "UserPostsRequest", "Lists the posts an account published, by account id or link on one platform."),
  tool("brand_buzz", "Brand buzz", "brandBuzz", "BrandBuzzRequest", "Measures how much and how positively a brand or keyword is discussed across platforms over a time window."),
  tool("comment_insights", "Comment insights", "commentInsights", "CommentInsightsRequest", "Summarizes the comments of given posts: themes, sentiment and notable comments."),
  tool("account_watch", "Account watch", "accountWatch", "AccountWatchRequest", "Tracks given accounts: their recent posts and how their metrics moved."),
  tool("find_creators", "Find creators", "findCreators", "FindCreatorsRequest", "Finds creators (KOL/达人) on a topic across platforms, ranked by reach and engagement."),
  tool("creator_card", "Creator cards", "creatorCard", "CreatorCardRequest", "Builds one card per creator from account links: profile, audience, recent performance."),
  tool("batch_stats", "Batch post stats", "batchStats", "BatchStatsRequest", "Fetches current metrics (likes, comments, shares, views) of up to 20 post links at once."),
  tool("viral_finder", "Viral finder", "viralFinder", "ViralFinderRequest", "Finds posts on a topic that are spreading unusually fast (爆款), with why they stand out."),
  { name: "find", title: "Find an operation", description: "Finds which operation or tool serves a need, from a plain-language query (e.g. 'xiaohongshu note comments'). Free.", method: "POST", path: "/v1/find", operationId: "findOperation", schema: "FindRequest", charging: false },
  { name: "capabilities", title: "Capabilities and prices", description: "Lists every operation and tool with its platforms, parameters and price in credits. Free.", method: "GET", path: "/v1/capabilities", operationId: null, schema: null, charging: false },
  { name: "account", title: "Account and balance", description: "Shows this key's account: balance in credits, today's spend, daily limit and permissions. Free.", method: "GET", path: "/v1/account", operationId: null, schema: null, charging: false },
];

/** Options of {@link createMcpServer}. */
export interface CreateMcpServerOptions {
  /** The gateway's Fastify app (from `buildApp` or `createServer`); tools call its routes with `app.inject`. */
  app: FastifyInstance;
  /** The caller's key, sent as X-API-Key on every forwarded call; null sends none (charging tools then answer 401 as isError). */
  apiKey: string | null;
  /** The size bound of one answer in bytes of JSON (default {@link MCP_ANSWER_BYTES}); lower it only in tests. */
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
}

/**
 * The `instructions` the server gives at initialize (D64): how handles, `more`, quotes and costs work, and how to
 * read on. Hosts may add them to the model's context.
 */
export const MCP_INSTRUCTIONS = [
  "Social Data Gateway: public social-media data (search, trending, posts, comments, profiles) from ten platforms, and seven analysis tools, as MCP tools.",
  "Costs: find, capabilities and account are free. The other 13 tools charge credits (1 per platform or per planned provider call); account shows the balance.",
  "Quotes: pass confirm: false to brand_buzz, comment_insights, account_watch, find_creators, creator_card, batch_stats or viral_finder to get the plan and its price (quote.quote_credits) without running or charging; then call again without confirm, optionally with max_cost_credits set to the quote as a ceiling.",
  "Handles: every charged answer has a handle. Calling the same tool with only { handle } reads that result again for free; nothing runs. An answer with status running is still working: wait retry_after_seconds, then call the tool with its handle.",
  "More: an answer too large for one message carries its first rows and a more object; call the same tool with { handle: more.handle } to read the next rows (free), until an answer has no more.",
  "Repeats: pass idempotency_key (any string you choose) to make a retry of the same call answer the first result instead of charging again.",
  "Errors: a failed call is a result with isError and an error structure (code, message, fix naming what to change); nothing was charged for it. Not sure which tool fits? Call find with a plain-language need.",
].join("\n");

const HANDLE_ARG = /^([A-Za-z0-9_-]{1,128})(?:\.([0-9]{1,9}))?$/;

/** The file formats `batch_stats` takes besides json (D24). */
type FileFormat = "csv" | "ndjson";

function invalidParams(message: string, data?: unknown): never {
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, message, data);
}

/** The annotations of a tool (D64): free tools read only this gateway; charging tools read platforms and spend credits. */
function annotationsOf(t: ToolSpec): Json {
  return t.charging
    ? { title: t.title, readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }
    : { title: t.title, readOnlyHint: true, idempotentHint: true, openWorldHint: false };
}

/** The fix of an `unauthorized` answer over stdio (D65): the key is SDGW_API_KEY, not a header. */
function envKeyFix(body: Json, apiKey: string | null): Json {
  const fix = (body["fix"] as Json | undefined) ?? {};
  const note = apiKey
    ? "Set SDGW_API_KEY in the environment of sdgw-mcp (the env of this server in the MCP host's config) to a valid key, then restart the server."
    : "Set SDGW_API_KEY in the environment of sdgw-mcp (the env of this server in the MCP host's config) to your key, then restart the server.";
  return { ...body, ...(apiKey ? {} : { message: "SDGW_API_KEY is not set: sdgw-mcp has no key to call with." }), fix: { ...fix, note } };
}

/** A one-line summary of an error structure for the text content. */
function errorText(tool: string, status: number, body: Json): string {
  const fix = body["fix"] as Json | undefined;
  const hint = fix ? [fix["param"] ? `param ${String(fix["param"])}` : "", typeof fix["note"] === "string" ? fix["note"] : ""].filter(Boolean).join("; ") : "";
  return `${tool} failed (HTTP ${status}) ${String(body["code"])}: ${String(body["message"] ?? "")}${hint ? ` Fix: ${hint}` : ""} (request_id ${String(body["request_id"] ?? "")})`;
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

const isTool = (name: string) => MCP_TOOLS.some((t) => t.name === name && t.charging);

/** What the gateway answered a forwarded call: the status, the body as text, and as JSON when it is JSON. */
interface Forwarded {
  status: number;
  json: Json | null;
  text: string;
}

/**
 * An MCP server (the official SDK's `Server`) with the gateway's 16 tools, acting for one key. Connect it to any
 * transport: `await createMcpServer({ app, apiKey }).connect(new StdioServerTransport())`.
 *
 * - A charging call with `handle` only reads `GET /v1/results/{handle}`: nothing runs, nothing is charged, other
 *   arguments are ignored; the part after the dot is the row to continue from. A handle made by another tool, or
 *   a position past the last row, is refused with `invalid_params` naming `handle` (D55).
 * - A 202 answers the running handle answer; call again with its `handle`.
 * - An answer over the size bound keeps its first rows and gains `more` (D30) when it has a handle.
 * - `batch_stats` with `format` csv or ndjson answers the JSON answer as `structuredContent` and the rows of the
 *   page as that file in the first text content (D55): a charge always comes with its rows.
 * - An unknown tool and a `tools/list` cursor are protocol errors (InvalidParams, -32602). Arguments that break the
 *   contract (a malformed `handle` or `idempotency_key`, arguments to `capabilities` or `account`), an HTTP error of
 *   the gateway, and a handle refused as above, are a tool result with `isError: true` and the error structure as
 *   `structuredContent` (`invalid_params` naming the parameter for bad arguments, D66).
 * - With `keySource: "env"` (stdio), an `unauthorized` answer's fix says to set SDGW_API_KEY (D65).
 */
export function createMcpServer(options: CreateMcpServerOptions): Server {
  const { app, apiKey, gateway } = options;
  const maxBytes = options.maxAnswerBytes ?? MCP_ANSWER_BYTES;
  const keySource = options.keySource ?? "headers";
  const server = new Server({ name: "sdgw", version: "1.0.0" }, { capabilities: { tools: {} }, instructions: MCP_INSTRUCTIONS });
  const byName = new Map(MCP_TOOLS.map((t) => [t.name, t]));
  let listed: Json[] | null = null;

  server.setRequestHandler("tools/list", (request) => {
    // One page: no cursor is ever given out, so any cursor sent is not one of ours (a protocol error, D66).
    const cursor = (request.params as { cursor?: unknown } | undefined)?.cursor;
    if (cursor !== undefined) invalidParams(`Invalid cursor: tools/list answers every tool in one page and gives no nextCursor; call it without cursor.`);
    listed ??= MCP_TOOLS.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: toolInputSchema(t.schema, t.charging), annotations: annotationsOf(t) }));
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
    const a = errorAnswer("invalid_params", newRequestId(gateway?.now()), { message, fix: { param, note } }, gateway ? { urls: gateway.config.urls, now: new Date(gateway.now()) } : {});
    return badArguments(tool, a.body as unknown as Json);
  }

  async function forward(method: "GET" | "POST", url: string, body: Json | null, idempotencyKey: string | null): Promise<Forwarded> {
    const headers: Record<string, string> = {};
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

  const callerKey = () => (gateway && apiKey ? gateway.accounts.keyBySecret(apiKey) : undefined);

  /** The operation that made a handle of this key (the MCP tool's name for the 13 tools), or null when unknown. */
  function madeBy(handle: string): string | null {
    const key = callerKey();
    if (!key) return null;
    return gateway!.store.get<{ operation: string }>("SELECT operation FROM runs WHERE handle = ? AND key_id = ?", handle, key.id)?.operation ?? null;
  }

  /** Keeps an answer that finished inline under a new handle (free, 24 hours), so that `more` can read on. */
  function keep(tool: string, json: Json): string | null {
    const key = callerKey();
    if (!key) return null;
    try {
      return gateway!.runs.keep(key, String(json["request_id"] ?? newRequestId()), tool, { "content-type": "application/json; charset=utf-8" }, JSON.stringify(json));
    } catch (error) {
      // Not kept: the answer is then given whole (fitAnswer without a handle) rather than losing rows.
      gateway!.log(`mcp: could not keep the answer of ${tool}`, error);
      return null;
    }
  }

  /** A refusal made here (nothing ran, nothing was charged), as the gateway's error structure. */
  function refuse(tool: string, message: string, note: string): CallToolResult {
    const a = errorAnswer("invalid_params", newRequestId(gateway?.now()), { message, fix: { param: "handle", note } }, gateway ? { urls: gateway.config.urls, now: new Date(gateway.now()) } : {});
    const body = a.body as unknown as Json;
    return { isError: true, structuredContent: body, content: [{ type: "text", text: errorText(tool, a.status, body) }] };
  }

  /**
   * The MCP result of a forwarded call. An error is `isError`; a 202 is the running answer; a finished JSON answer
   * is cut to the bound from `position` (kept under a handle first when it finished inline and needs cutting) and,
   * for batch_stats csv/ndjson, its page's rows are also written as that file.
   */
  function result(tool: string, answer: Forwarded, handle: string | null, position: number): CallToolResult {
    const charging = byName.get(tool)?.charging === true;
    const { status, json, text } = answer;
    if (!json) {
      // Not JSON: a file the gateway answered (an idempotent replay of a csv or ndjson run). It is the data.
      if (status >= 400) return { isError: true, content: [{ type: "text", text: `${tool} failed (HTTP ${status}): ${text.slice(0, 2000)}` }] };
      return { content: [{ type: "text", text }] };
    }
    if (status >= 400) {
      const body = keySource === "env" && json["code"] === "unauthorized" && json["reason"] !== "key_in_query" ? envKeyFix(json, apiKey) : json;
      return { isError: true, structuredContent: body, content: [{ type: "text", text: errorText(tool, status, body) }] };
    }
    if (status === 202) return { structuredContent: json, content: [{ type: "text", text: JSON.stringify(json) }] };
    const format = fileFormatOf(json);
    const fitted = fitAnswer(json, {
      handle: handle ?? (charging ? () => keep(tool, json) : null),
      position,
      maxBytes,
      ...(format ? { render: format === "csv" ? toCsv : toNdjson } : {}),
    });
    const structured = JSON.stringify(fitted.answer);
    return { structuredContent: fitted.answer, content: format ? [{ type: "text", text: fitted.text ?? "" }, { type: "text", text: structured }] : [{ type: "text", text: structured }] };
  }

  /** `handle` only: reads the stored result (free), refusing another tool's handle and a position past the end. */
  async function read(tool: string, arg: unknown): Promise<CallToolResult> {
    const m = typeof arg === "string" ? HANDLE_ARG.exec(arg) : null;
    if (!m) return badArgument(tool, "`handle` must be a results handle, optionally followed by .position (more.handle).", "handle", "Pass handle or more.handle of an earlier answer exactly as given.");
    const handle = m[1]!;
    const position = Number(m[2] ?? 0);
    const wrongTool = (made: string) =>
      refuse(
        tool,
        `The handle ${handle} holds a result of ${made}, not of ${tool}: a handle is read by the tool that made it.`,
        isTool(made) ? `Pass it as handle to the ${made} tool.` : `Read it over HTTP with GET /v1/results/${handle}.`,
      );
    const made = madeBy(handle);
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

  server.setRequestHandler("tools/call", async (request) => {
    const { name } = request.params;
    const spec = byName.get(name);
    if (!spec) invalidParams(`Unknown tool ${name}. Tools: ${MCP_TOOLS.map((t) => t.name).join(", ")}.`);
    const args = (request.params.arguments ?? {}) as Json;

    if (spec.charging && args["handle"] !== undefined) return read(name, args["handle"]);

    const { handle: _h, idempotency_key: idem, ...body } = args;
    if (idem !== undefined && (typeof idem !== "string" || !/^[!-~]{1,255}$/.test(idem))) {
      return badArgument(name, "`idempotency_key` must be 1 to 255 printable ASCII characters.", "idempotency_key", "Use a string of 1 to 255 printable ASCII characters, the same one for a retry of the same call.");
    }
    if (!spec.operationId) {
      const extra = Object.keys(body);
      if (extra.length) return badArgument(name, `${name} takes no arguments; got ${extra.join(", ")}.`, extra[0]!, `Call ${name} with no arguments.`);
    } else {
      const validator = (requestValidators[spec.operationId] as unknown as { body?: (v: unknown) => { ok: true } | { ok: false; answer(requestId: string): Json } }).body;
      const v = validator?.(body);
      if (v && !v.ok) return badArguments(name, v.answer(newRequestId(gateway?.now())));
    }

    // batch_stats asked as csv or ndjson (D55): a run that answers within the request is asked as json (a file
    // answer would carry neither the charge nor a handle) and its rows are written as the file here; a background
    // run keeps the format asked, and its handle is read as json and written the same way.
    let sent: Json = body;
    let asked: FileFormat | null = null;
    if (name === "batch_stats" && (body["format"] === "csv" || body["format"] === "ndjson") && body["confirm"] !== false) {
      const quoted = await forward("POST", spec.path, { ...body, confirm: false }, null);
      if (quoted.status !== 200 || !quoted.json) return result(name, quoted, null, 0);
      if ((quoted.json["quote"] as Json | undefined)?.["mode"] !== "background") {
        asked = body["format"];
        sent = { ...body, format: "json" };
      }
    }

    const key = spec.charging ? ((idem as string | undefined) ?? (name === "search" ? `mcp-${randomUUID()}` : null)) : null;
    const answer = await forward(spec.method, spec.path, spec.method === "POST" ? sent : null, key);
    if (asked && answer.status === 200 && answer.json && answer.json["tool"] === "batch_stats") {
      // The answer's rows are written as the format asked: that is the format applied to this MCP answer.
      answer.json = { ...answer.json, applied_params: { ...(answer.json["applied_params"] as Json), format: asked } };
    }
    const handle = answer.json && typeof answer.json["handle"] === "string" ? answer.json["handle"] : null;
    return result(name, answer, handle, 0);
  });

  return server;
}
