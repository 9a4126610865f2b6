/**
 * MCP over Streamable HTTP at `/mcp`, as a Fastify plugin: stateless (a new MCP server and transport per request,
 * acting for the request's key), JSON answers (no SSE stream needed: every tool answers at once or with a handle).
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { errorAnswer } from "@sdgw/validators";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Gateway } from "../gateway.ts";
import { newRequestId } from "../ids.ts";
import { createMcpServer } from "./server.ts";

/** Options of {@link mcpRoutes}. */
export interface McpRoutesOptions {
  /** The app whose routes the tools call (default: the instance the plugin is registered on). */
  target?: FastifyInstance;
  /** Size bound of one answer in bytes of JSON (tests only). */
  maxAnswerBytes?: number;
  /** The gateway behind the target app: answers over the bound that finished inline are kept for `more`. */
  gateway?: Gateway;
}

/** The key of an MCP request: X-API-Key, or Authorization: Bearer. Null when neither is sent. */
function presentedKey(req: FastifyRequest): string | null {
  const header = req.headers["x-api-key"];
  if (typeof header === "string" && header) return header;
  const auth = req.headers["authorization"];
  const m = typeof auth === "string" ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  return m ? m[1]! : null;
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

/**
 * Registers `POST|GET|DELETE /mcp`: MCP over Streamable HTTP. Each request is authenticated by X-API-Key or
 * `Authorization: Bearer`; without a key it is refused with 401 and the contract's `unauthorized` error structure,
 * as the HTTP API does. The tools forward to the app's routes with that key (see {@link createMcpServer}).
 *
 * ```ts
 * const server = createServer();
 * await server.app.register(mcpRoutes);
 * ```
 */
export async function mcpRoutes(app: FastifyInstance, options: McpRoutesOptions = {}): Promise<void> {
  const target = options.target ?? app;
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const key = presentedKey(req);
    if (!key) {
      const a = errorAnswer("unauthorized", newRequestId(), { message: "No key was sent; a valid key is required." });
      return reply.code(a.status).headers(a.headers).header("content-type", "application/json; charset=utf-8").send(JSON.stringify(a.body));
    }
    const server = createMcpServer({ app: target, apiKey: key, ...(options.maxAnswerBytes ? { maxAnswerBytes: options.maxAnswerBytes } : {}), ...(options.gateway ? { gateway: options.gateway } : {}) });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      const res = await transport.handleRequest(toWebRequest(req));
      const text = await res.text();
      reply.code(res.status);
      res.headers.forEach((value, name) => void reply.header(name, value));
      return reply.send(text);
    } finally {
      await server.close();
    }
  };
  for (const method of ["POST", "GET", "DELETE"] as const) app.route({ method, url: "/mcp", handler });
}
