/**
 * The MCP server of the gateway: 16 tools (13 that charge and take `handle`, D29; `find`, `capabilities` and
 * `account`, free) that forward to the gateway's own HTTP routes in-process (`app.inject`, the caller's key as
 * X-API-Key), so auth, validation, credits, idempotency and runs are exactly the HTTP ones.
 */
import { randomUUID } from "node:crypto";
import { ProtocolError, ProtocolErrorCode, Server } from "@modelcontextprotocol/server";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { requestValidators } from "@sdgw/validators";
import type { FastifyInstance } from "fastify";
import type { Gateway } from "../gateway.ts";
import { newRequestId } from "../ids.ts";
import { fitAnswer, MCP_ANSWER_BYTES } from "./answers.ts";
import { toolInputSchema } from "./schemas.ts";

type Json = Record<string, unknown>;

/** One MCP tool: its HTTP route and the contract schema of its arguments. */
interface ToolSpec {
  name: string;
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

const data = (name: string, operationId: keyof typeof requestValidators, schema: string, description: string): ToolSpec => ({
  name,
  description: `${description} Charges credits (1 per platform or target); pass a result's \`handle\` or \`more.handle\` to read it again for free.`,
  method: "POST",
  path: `/v1/${name}`,
  operationId,
  schema,
  charging: true,
});

const tool = (name: string, operationId: keyof typeof requestValidators, schema: string, description: string): ToolSpec => ({
  name,
  description: `${description} Charges credits per planned call (confirm=false only quotes the price); pass a result's \`handle\` or \`more.handle\` to read it again for free.`,
  method: "POST",
  path: `/v1/tools/${name}`,
  operationId,
  schema,
  charging: true,
});

/** The 16 MCP tools, in the order `tools/list` gives them. */
export const MCP_TOOLS: readonly ToolSpec[] = [
  data("search", "searchPost", "SearchRequest", `Searches posts or users by keyword on one platform (\`platform\`) or several (\`platforms\`, or "all"), answering one uniform envelope. ${PLATFORMS_NOTE}`),
  data("trending", "trending", "TrendingRequest", "Lists what is trending now (hot lists, 热搜/热榜) on one platform or several."),
  data("detail", "detail", "DetailRequest", "Fetches full posts by id or link (1 to 20) on one platform, with metrics and media."),
  data("comments", "comments", "CommentsRequest", "Fetches the comments of posts (评论) by id or link on one platform."),
  data("user_profile", "userProfile", "UserProfileRequest", "Fetches account profiles (followers, bio, verification) by id or link on one platform."),
  data("user_posts", "userPosts", "UserPostsRequest", "Lists the posts an account published, by account id or link on one platform."),
  tool("brand_buzz", "brandBuzz", "BrandBuzzRequest", "Measures how much and how positively a brand or keyword is discussed across platforms over a time window."),
  tool("comment_insights", "commentInsights", "CommentInsightsRequest", "Summarizes the comments of given posts: themes, sentiment and notable comments."),
  tool("account_watch", "accountWatch", "AccountWatchRequest", "Tracks given accounts: their recent posts and how their metrics moved."),
  tool("find_creators", "findCreators", "FindCreatorsRequest", "Finds creators (KOL/达人) on a topic across platforms, ranked by reach and engagement."),
  tool("creator_card", "creatorCard", "CreatorCardRequest", "Builds one card per creator from account links: profile, audience, recent performance."),
  tool("batch_stats", "batchStats", "BatchStatsRequest", "Fetches current metrics (likes, comments, shares, views) of up to 20 post links at once."),
  tool("viral_finder", "viralFinder", "ViralFinderRequest", "Finds posts on a topic that are spreading unusually fast (爆款), with why they stand out."),
  { name: "find", description: "Finds which operation or tool serves a need, from a plain-language query (e.g. 'xiaohongshu note comments'). Free.", method: "POST", path: "/v1/find", operationId: "findOperation", schema: "FindRequest", charging: false },
  { name: "capabilities", description: "Lists every operation and tool with its platforms, parameters and price in credits. Free.", method: "GET", path: "/v1/capabilities", operationId: null, schema: null, charging: false },
  { name: "account", description: "Shows this key's account: balance in credits, today's spend, daily limit and permissions. Free.", method: "GET", path: "/v1/account", operationId: null, schema: null, charging: false },
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
   * handle (free, readable by this key for 24 hours), so that its `more` can read on; without it such an answer
   * is cut with a warning.
   */
  gateway?: Gateway;
}

const HANDLE_ARG = /^([A-Za-z0-9_-]{1,128})(?:\.([0-9]{1,9}))?$/;

function invalidParams(message: string, data?: unknown): never {
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, message, data);
}

/** A one-line summary of an error structure for the text content. */
function errorText(tool: string, status: number, body: Json): string {
  const fix = body["fix"] as Json | undefined;
  const hint = fix ? [fix["param"] ? `param ${String(fix["param"])}` : "", typeof fix["note"] === "string" ? fix["note"] : ""].filter(Boolean).join("; ") : "";
  return `${tool} failed (HTTP ${status}) ${String(body["code"])}: ${String(body["message"] ?? "")}${hint ? ` Fix: ${hint}` : ""} (request_id ${String(body["request_id"] ?? "")})`;
}

/**
 * An MCP server (the official SDK's `Server`) with the gateway's 16 tools, acting for one key. Connect it to any
 * transport: `await createMcpServer({ app, apiKey }).connect(new StdioServerTransport())`.
 *
 * - A charging call with `handle` only reads `GET /v1/results/{handle}`: nothing runs, nothing is charged, other
 *   arguments are ignored; the part after the dot is the row to continue from.
 * - A 202 answers the running handle answer; call again with its `handle`.
 * - An answer over the size bound keeps its first rows and gains `more` (D30) when it has a handle.
 * - Unknown tools and bad arguments are protocol errors (InvalidParams); an HTTP error of the gateway is a tool
 *   result with `isError: true` and the error structure as `structuredContent`.
 */
export function createMcpServer(options: CreateMcpServerOptions): Server {
  const { app, apiKey } = options;
  const maxBytes = options.maxAnswerBytes ?? MCP_ANSWER_BYTES;
  const server = new Server({ name: "sdgw", version: "1.0.0" }, { capabilities: { tools: {} } });
  const byName = new Map(MCP_TOOLS.map((t) => [t.name, t]));
  let listed: Json[] | null = null;

  server.setRequestHandler("tools/list", () => {
    listed ??= MCP_TOOLS.map((t) => ({ name: t.name, description: t.description, inputSchema: toolInputSchema(t.schema, t.charging), annotations: { readOnlyHint: true, openWorldHint: true, idempotentHint: !t.charging } }));
    return { tools: listed } as never;
  });

  async function forward(method: "GET" | "POST", url: string, body: Json | null, idempotencyKey: string | null): Promise<{ status: number; json: Json; text: string }> {
    const headers: Record<string, string> = {};
    if (apiKey) headers["x-api-key"] = apiKey;
    if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
    if (body) headers["content-type"] = "application/json";
    const res = await app.inject({ method, url, headers, ...(body ? { payload: JSON.stringify(body) } : {}) });
    let json: Json;
    try {
      json = JSON.parse(res.body) as Json;
    } catch {
      json = { code: "internal_error", message: `The gateway answered HTTP ${res.statusCode} without JSON.` };
    }
    return { status: res.statusCode, json, text: res.body };
  }

  /** A handle for an answer over the bound that has none (it finished inline): the answer kept, free. */
  function keep(tool: string, json: Json, text: string): string | null {
    const key = options.gateway && apiKey ? options.gateway.accounts.keyBySecret(apiKey) : undefined;
    if (!key || Buffer.byteLength(text, "utf8") <= maxBytes) return null;
    return options.gateway!.runs.keep(key, String(json["request_id"] ?? newRequestId()), tool, { "content-type": "application/json; charset=utf-8" }, text);
  }

  function result(tool: string, status: number, json: Json, handle: string | null, position: number): CallToolResult {
    if (status >= 400) return { isError: true, structuredContent: json, content: [{ type: "text", text: errorText(tool, status, json) }] };
    const answer = status === 202 ? json : fitAnswer(json, { handle, position, maxBytes }).answer;
    return { structuredContent: answer, content: [{ type: "text", text: JSON.stringify(answer) }] };
  }

  server.setRequestHandler("tools/call", async (request) => {
    const { name } = request.params;
    const spec = byName.get(name);
    if (!spec) invalidParams(`Unknown tool ${name}. Tools: ${MCP_TOOLS.map((t) => t.name).join(", ")}.`);
    const args = (request.params.arguments ?? {}) as Json;

    if (spec.charging && args["handle"] !== undefined) {
      const m = typeof args["handle"] === "string" ? HANDLE_ARG.exec(args["handle"]) : null;
      if (!m) invalidParams("`handle` must be a results handle, optionally followed by .position (more.handle).");
      const { status, json } = await forward("GET", `/v1/results/${m[1]}`, null, null);
      return result(name, status, json, m[1]!, Number(m[2] ?? 0));
    }

    const { handle: _h, idempotency_key: idem, ...body } = args;
    if (idem !== undefined && (typeof idem !== "string" || !/^[!-~]{1,255}$/.test(idem))) invalidParams("`idempotency_key` must be 1 to 255 printable ASCII characters.");
    if (!spec.operationId) {
      if (Object.keys(body).length) invalidParams(`${name} takes no arguments; got ${Object.keys(body).join(", ")}.`);
    } else {
      const validator = (requestValidators[spec.operationId] as unknown as { body?: (v: unknown) => { ok: true } | { ok: false; answer(requestId: string): Json } }).body;
      const v = validator?.(body);
      if (v && !v.ok) {
        const answer = v.answer(newRequestId());
        invalidParams(`Invalid arguments for ${name}: ${String(answer["message"])}`, answer);
      }
    }
    const key = spec.charging ? ((idem as string | undefined) ?? (name === "search" ? `mcp-${randomUUID()}` : null)) : null;
    const { status, json, text } = await forward(spec.method, spec.path, spec.method === "POST" ? body : null, key);
    const handle = typeof json["handle"] === "string" ? json["handle"] : status === 200 && spec.charging ? keep(name, json, text) : null;
    return result(name, status, json, handle, 0);
  });

  return server;
}
