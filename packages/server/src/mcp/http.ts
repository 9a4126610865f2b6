/**
 * MCP over Streamable HTTP at `/mcp`, as a Fastify plugin: stateless (a new MCP server and transport per request,
 * acting for the request's key), JSON answers (no SSE stream needed: every tool answers at once or with a handle).
 */
import { Readable } from "node:stream";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { MAX_BODY_DEPTH, errorAnswer, nestsDeeperThan } from "@sdgw/validators";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import { authenticate, presentedKeyHash } from "../http/auth.ts";
import { newRequestId } from "../ids.ts";
import { MCP_WWW_AUTHENTICATE, unauthorizedBody } from "@sdgw/engine/mcp";
import { createMcpServer } from "./server.ts";
import { selectTools } from "./toolsets.ts";

/** Options of {@link mcpRoutes}. */
export interface McpRoutesOptions {
  /** The app whose routes the tools call (default: the instance the plugin is registered on). */
  target?: FastifyInstance;
  /** Size bound of one answer in bytes of JSON (tests only). */
  maxAnswerBytes?: number;
  /**
   * The gateway behind the target app: answers over the bound that finished inline are kept for `more`, and a key
   * is checked (valid, not revoked, expired or suspended) on every request, so a wrong key is refused at initialize.
   */
  gateway?: Gateway;
  /**
   * Origins allowed besides the defaults (`http://127.0.0.1:*`, `http://localhost:*`, `http://[::1]:*`, and the
   * server's own origin from the Host header). Exact origins (`https://app.example.com`) or a `:*` port wildcard
   * (`http://devbox:*`). Default: the env var `SDGW_MCP_ALLOWED_ORIGINS`, comma-separated, read when the routes
   * are registered. A request without `Origin` is allowed (non-browser clients send none).
   */
  allowedOrigins?: readonly string[];
  /**
   * The toolsets `/mcp` offers (D79). Default: the gateway's `config.mcp.toolsets` (env `SDGW_MCP_TOOLSETS`), else all.
   */
  toolsets?: readonly string[] | null;
  /** Offer only the free tools (D79). Default: the gateway's `config.mcp.readOnly` (env `SDGW_MCP_READ_ONLY`), else false. */
  readOnly?: boolean;
  /** How long a 202 is waited for when a call asks for progress (D80; see `createMcpServer`). */
  maxWaitMs?: number;
  /** How often a running call is read while waiting (tests). */
  pollIntervalMs?: number;
}

/** The env var that adds origins to /mcp's allow-list (comma-separated). */
export const MCP_ALLOWED_ORIGINS_ENV = "SDGW_MCP_ALLOWED_ORIGINS";

/** The origins of `SDGW_MCP_ALLOWED_ORIGINS` (comma-separated; blanks dropped). */
export function allowedOriginsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env[MCP_ALLOWED_ORIGINS_ENV] ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter(Boolean);
}

const LOOPBACK_ORIGIN = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:[0-9]{1,5})?$/i;

/** Whether an Origin header value is allowed (D63): loopback over http, the server's own origin, or the list. */
export function originAllowed(origin: string, host: string | undefined, allowed: readonly string[]): boolean {
  const o = origin.trim().toLowerCase().replace(/\/$/, "");
  if (LOOPBACK_ORIGIN.test(o)) return true;
  if (host && (o === `http://${host.toLowerCase()}` || o === `https://${host.toLowerCase()}`)) return true;
  for (const a of allowed) {
    const p = a.trim().toLowerCase().replace(/\/$/, "");
    if (
      p.endsWith(":*")
        ? o === p.slice(0, -2) || (o.startsWith(p.slice(0, -1)) && /^[0-9]{1,5}$/.test(o.slice(p.length - 1)))
        : o === p
    )
      return true;
  }
  return false;
}

/** The headers of a request as one string each (lower-case names), as auth.ts reads them. */
function flatHeaders(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : String(v);
  return out;
}

/** The key of an MCP request: X-API-Key, or Authorization: Bearer. Null when neither is sent. */
function presentedKey(req: FastifyRequest): string | null {
  const header = req.headers["x-api-key"];
  if (typeof header === "string" && header) return header;
  const auth = req.headers["authorization"];
  const m = typeof auth === "string" ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  return m ? m[1]! : null;
}

function sendError(reply: FastifyReply, status: number, headers: Record<string, string>, body: unknown): FastifyReply {
  return reply
    .code(status)
    .headers(headers)
    .header("content-type", "application/json; charset=utf-8")
    .send(JSON.stringify(body));
}

function toWebRequest(req: FastifyRequest): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) headers.append(k, String(one));
  }
  const url = `http://${req.headers.host ?? "127.0.0.1"}${req.url}`;
  const hasBody = req.method !== "GET" && req.method !== "HEAD" && req.body !== undefined && req.body !== null;
  const body = hasBody ? (typeof req.body === "string" ? req.body : JSON.stringify(req.body)) : undefined;
  return new Request(url, { method: req.method, headers, ...(body !== undefined ? { body } : {}) });
}

export { MCP_UNAUTHORIZED_CODE, MCP_WWW_AUTHENTICATE, unauthorizedBody } from "@sdgw/engine/mcp";

/**
 * Registers `POST|GET|DELETE /mcp`: MCP over Streamable HTTP, stateless. In order, every request:
 *
 * 1. with an `Origin` that is not allowed answers 403 and `invalid_params` naming `Origin` (D63);
 * 2. GET and DELETE answer 405 with `Allow: POST` and `not_found`, reason `no_such_route` (D61): no SSE stream, no
 *    session to end;
 * 3. a POST without a valid key (X-API-Key or `Authorization: Bearer`) answers 401 with
 *    `WWW-Authenticate: ApiKey header="X-API-Key"` (D62; no `Bearer` challenge, which would send OAuth-capable
 *    clients into a discovery, D142) and a body that is both a JSON-RPC error answer a person can read ("This key
 *    is not valid. …") and the `unauthorized` error structure of the HTTP API (see {@link unauthorizedBody}), so a
 *    client's initialize fails at once and says why;
 * 4. a body nested deeper than `MAX_BODY_DEPTH` (64) levels answers 400 and the JSON-RPC parse error (-32700),
 *    `id` null (D112);
 * 5. else the MCP message is served by a server acting for that key (see {@link createMcpServer}).
 *
 * ```ts
 * const server = createServer();
 * await server.app.register(mcpRoutes);
 * ```
 */
export async function mcpRoutes(app: FastifyInstance, options: McpRoutesOptions = {}): Promise<void> {
  const target = options.target ?? app;
  const gw = options.gateway;
  const allowed = options.allowedOrigins ?? allowedOriginsFromEnv();
  const filter = {
    toolsets: options.toolsets !== undefined ? options.toolsets : (gw?.config.mcp?.toolsets ?? null),
    readOnly: options.readOnly ?? gw?.config.mcp?.readOnly ?? false,
  };
  // An unknown toolset name stops the registration (the server does not start), naming the allowed ones.
  selectTools(filter);
  const errorOptions = () => (gw ? { urls: gw.config.urls, now: new Date(gw.now()) } : {});
  const requestId = () => newRequestId(gw?.now());

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const origin = req.headers["origin"];
    if (typeof origin === "string" && !originAllowed(origin, req.headers.host, allowed)) {
      const a = errorAnswer(
        "invalid_params",
        requestId(),
        {
          message: `Requests from the origin ${origin.slice(0, 200)} are not allowed at /mcp (DNS-rebinding protection).`,
          fix: {
            param: "Origin",
            note:
              `Allowed: http://127.0.0.1:*, http://localhost:*, http://[::1]:*, this server's ` +
              `own origin, and the origins the operator lists in ${MCP_ALLOWED_ORIGINS_ENV}.`,
          },
        },
        errorOptions(),
      );
      return sendError(reply, 403, a.headers, a.body);
    }
    if (req.method !== "POST") {
      const a = errorAnswer(
        "not_found",
        requestId(),
        {
          reason: "no_such_route",
          message:
            `${req.method} /mcp is not served: this MCP endpoint is stateless, so it opens ` +
            `no SSE stream and has no session to end. Send MCP messages with POST /mcp.`,
          fix: { allowed: ["POST /mcp"], example_call: { method: "POST", path: "/mcp" } },
        },
        errorOptions(),
      );
      return sendError(reply, 405, { ...a.headers, allow: "POST" }, a.body);
    }
    const key = presentedKey(req);
    let refusal: { headers: Record<string, string>; body: unknown } | null = null;
    if (gw) {
      const headers = flatHeaders(req);
      const auth = await authenticate(gw, headers, requestId());
      if (!auth.ok) {
        const hash = presentedKeyHash(headers);
        if (hash) gw.limits.recordFailure(hash);
        refusal = auth.answer;
      }
    } else if (!key) {
      refusal = errorAnswer("unauthorized", requestId(), { message: "No key was sent; a valid key is required." });
    }
    if (refusal || !key) {
      const a =
        refusal ?? errorAnswer("unauthorized", requestId(), { message: "No key was sent; a valid key is required." });
      return sendError(
        reply,
        401,
        { ...a.headers, "www-authenticate": MCP_WWW_AUTHENTICATE },
        unauthorizedBody(a.body as unknown as Record<string, unknown>, req.body),
      );
    }
    // D112: a message nested deeper than any tool's arguments need is refused before anything parses it.
    if (typeof req.body === "string" && nestsDeeperThan(req.body, MAX_BODY_DEPTH)) {
      const message =
        `Parse error: the body nests arrays and objects deeper than ${MAX_BODY_DEPTH} ` +
        `levels; a message to /mcp may nest at most ${MAX_BODY_DEPTH}.`;
      return sendError(reply, 400, {}, { jsonrpc: "2.0", error: { code: -32700, message }, id: null });
    }
    const server = createMcpServer({
      app: target,
      apiKey: key,
      ...filter,
      ...(options.maxAnswerBytes ? { maxAnswerBytes: options.maxAnswerBytes } : {}),
      ...(options.maxWaitMs !== undefined ? { maxWaitMs: options.maxWaitMs } : {}),
      ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
      ...(gw ? { gateway: gw } : {}),
    });
    // A call that asks for progress (a progressToken, and a client that takes an event stream) is answered as a
    // stream, so that its notifications/progress reach the client before the result (D80); every other answer is
    // one JSON body.
    const streamed = asksForProgress(req.body) && String(req.headers["accept"] ?? "").includes("text/event-stream");
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: !streamed,
    });
    await server.connect(transport);
    let closeLater = false;
    try {
      const res = await transport.handleRequest(toWebRequest(req));
      reply.code(res.status);
      res.headers.forEach((value, name) => void reply.header(name, value));
      if (streamed && res.body && String(res.headers.get("content-type")).startsWith("text/event-stream")) {
        const stream = Readable.fromWeb(res.body as import("node:stream/web").ReadableStream);
        closeLater = true;
        stream.once("close", () => void server.close());
        return reply.send(stream);
      }
      return reply.send(await res.text());
    } finally {
      if (!closeLater) await server.close();
    }
  };
  for (const method of ["POST", "GET", "DELETE"] as const) app.route({ method, url: "/mcp", handler });
}

/** Whether a JSON-RPC body (text, as the gateway reads bodies, or parsed) is a `tools/call` with `_meta.progressToken`. */
function asksForProgress(raw: unknown): boolean {
  let body = raw;
  if (typeof raw === "string") {
    if (!raw.includes("progressToken")) return false;
    try {
      body = JSON.parse(raw);
    } catch {
      return false; // the transport answers the parse error
    }
  }
  const one = (m: unknown) => {
    const params = (m as { method?: unknown; params?: { _meta?: { progressToken?: unknown } } } | null)?.params;
    return (m as { method?: unknown } | null)?.method === "tools/call" && params?._meta?.progressToken !== undefined;
  };
  return Array.isArray(body) ? body.some(one) : one(body);
}
