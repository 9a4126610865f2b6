/**
 * The HTTP layer on Fastify 5: every route of spec/openapi.yaml. Each data call goes through the same steps, in
 * this order (ARCHITECTURE.md, "One call through the reference server"): parse and validate (the generated
 * validators) → authenticate → key state and permission → idempotency claim → rate limit and concurrency →
 * quote and `max_cost_credits` → credit hold → run. A request refused at any step before the hold never touches
 * the ledger; a claim taken before a refusal is given back.
 *
 * Where each step lives: a key in the URL and the Host header in the `onRequest` hook below; validation, plan and
 * authentication in admission.ts; from the idempotency claim to the run in charging.ts; the refusals' answers in
 * errors.ts (their long sentences in messages.ts); each group of routes in routes/ (data, call, tools, catalog,
 * account, schedules, results), registered here.
 */
import { REFUSALS } from "@sdgw/engine";
import type { Server } from "node:http";
import Fastify, { type FastifyHttpOptions, type FastifyInstance, type FastifyReply } from "fastify";
import { OPERATIONS, answerHeaders, errorAnswer, invalidBody, invalidParamsAnswer } from "@sdgw/validators";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import { newRequestId } from "../ids.ts";
import { mcpRoutes } from "../mcp/http.ts";
import { DatabaseUnavailable } from "../storage/postgres/unavailable.ts";
import { NOT_UTF8 } from "./admission.ts";
import { JSON_TYPE, fromError, jsonAnswer, send } from "./answer.ts";
import { keyInUrl } from "./auth.ts";
import { corsAnswerHeaders, preflightHeaders } from "./cors.ts";
import { clientErrorAnswer, capConnections, refuseOnSocket } from "./connections.ts";
import { proxyTrust, type ProxyTrust } from "./proxies.ts";
import { consoleApiRoutes } from "./console-api.ts";
import { consoleSessionRoutes } from "./console-session.ts";
import { consoleStaticRoutes } from "./console-static.ts";
import { docsRoutes, homeRoute, withCatalogueLink } from "./docs-routes.ts";
import { registerAccountRoutes } from "./routes/account.ts";
import { registerCatalogRoutes } from "./routes/catalog.ts";
import { registerDataRoutes } from "./routes/data.ts";
import { createRouteDeps, type RouteDeps } from "./routes/deps.ts";
import { registerResultRoutes } from "./routes/results.ts";
import { registerScheduleRoutes } from "./routes/schedules.ts";
import { registerToolRoutes } from "./routes/tools.ts";
import { Lifecycle, operatorRoutes } from "../ops/http.ts";
import { withRequestId } from "../ops/log.ts";

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Every route of the contract, as `METHOD /path` (the `fix.allowed` of an unknown path). */
export const ROUTE_LIST: string[] = Object.values(OPERATIONS).map((o) => `${o.method.toUpperCase()} ${o.path}`);

/**
 * Builds the Fastify app over a gateway. Not listening yet: call `app.listen` or use `app.inject`. `lifecycle`
 * (D113): where the server says it listens and that its stop began (`readyz` then answers 503 and new requests are
 * refused); the servers of `createServer` and `createPgServer` pass theirs.
 */
export function buildApp(gw: Gateway, lifecycle: Lifecycle = new Lifecycle()): FastifyInstance {
  const proxies = proxyTrust(gw.config.trustProxy);
  const app = Fastify(fastifyOptions(gw, proxies));
  const deps = createRouteDeps(gw);
  app.server.headersTimeout = gw.config.http.headersTimeoutMs;
  capConnections(app, gw, proxies);
  installHooks(app, gw);
  operatorRoutes(app, gw, lifecycle, deps.errors); // D113: /healthz, /readyz, /metrics, the count of answers, the stop

  registerDataRoutes(app, deps); // GET /v1/search, the six typed POST routes and POST /v1/call/{op}
  registerToolRoutes(app, deps); // POST /v1/tools/{tool}
  registerCatalogRoutes(app, deps); // no key: /v1/capabilities, /v1/find, /openapi.json
  registerAccountRoutes(app, deps); // GET /v1/account
  registerScheduleRoutes(app, deps); // GET /v1/schedules, DELETE /v1/schedules/{schedule_id}
  registerResultRoutes(app, deps); // GET /v1/results/{handle}

  void app.register(mcpRoutes, { gateway: gw, target: app }); // MCP (Streamable HTTP)
  consoleSessionRoutes(app, gw); // the console's sign-in sessions (D82–D85), not in the contract like /mcp
  docsRoutes(app, gw); // /docs: the HTTP reference built by `pnpm run docs` (docs-routes.ts)
  homeRoute(app); // GET /: where to go next (the console, /docs, /v1/capabilities, /openapi.json), D131
  consoleApiRoutes(app, gw); // the console's own account routes under /console/api/ (D88)
  consoleStaticRoutes(app); // the console's built pages at /console/ (D86): static files only

  installErrorHandlers(app, deps);
  return app;
}

/**
 * Path parameters are checked by the validators (a handle is up to 128 characters), not cut by the router. Router
 * errors (a path that is not valid percent-encoding) answer the contract's invalid_params, not Fastify's body.
 */
function fastifyOptions(gw: Gateway, proxies: ProxyTrust | null): FastifyHttpOptions<Server> {
  const bounds = gw.config.http;
  return {
    logger: false,
    // D111: behind trusted proxies, req.ip, req.protocol and req.host follow X-Forwarded-For, -Proto and -Host.
    ...(proxies ? { trustProxy: proxies.trusts } : {}),
    bodyLimit: gw.config.bodyLimit,
    // D57: a request must arrive within its time and size; what does not is answered in the contract's words.
    // Node checks its request timeouts every connectionsCheckingInterval (30 s by default): checked at a third of
    // the timeout, a stalled request is closed within 4/3 of it.
    http: {
      maxHeaderSize: bounds.maxHeaderBytes,
      requireHostHeader: false,
      connectionsCheckingInterval: Math.max(100, Math.min(5000, Math.floor(bounds.requestTimeoutMs / 3))),
    },
    requestTimeout: bounds.requestTimeoutMs,
    keepAliveTimeout: bounds.keepAliveTimeoutMs,
    clientErrorHandler: (error, socket) =>
      refuseOnSocket(socket, clientErrorAnswer(error as NodeJS.ErrnoException, bounds, newRequestId(gw.now()))),
    return503OnClosing: false,
    routerOptions: { maxParamLength: 4096 },
    frameworkErrors: (_error, req, reply) => {
      // Answered before the router ran, so before the hooks: D25's key check, D53's and D130's headers are made here.
      const requestId = newRequestId(gw.now());
      const exposed = keyInUrl(gw, req.url, requestId);
      const a = exposed
        ? fromError(exposed.answer)
        : jsonAnswer(
            invalidParamsAnswer({ param: "path", message: "The path is not a valid URL path." }, requestId),
            400,
          );
      // A key in the URL: answered once it is marked exposed and durable (D25, D108).
      void (exposed?.marked ?? Promise.resolve())
        .then(() => gw.durable())
        .then(() =>
          (reply as unknown as FastifyReply)
            .code(a.status)
            .headers({
              ...a.headers,
              ...answerHeaders(req.url, JSON_TYPE),
              ...corsAnswerHeaders(gw.config.corsOrigins, req.headers.origin ?? null, req.url.split("?")[0]!),
            })
            .send(a.body),
        );
    },
  };
}

function installHooks(app: FastifyInstance, gw: Gateway): void {
  // Before any route: D25, D50 — a key in the URL of any route (the contract's, /mcp, an unknown path) is refused
  // before anything else is looked at, the body not even read; then an HTTP/1.1 request must name its host (RFC
  // 9112 3.2; Node's own refusal would be a bare 400). The usual request (no query key, a Host) passes at once.
  app.addHook("onRequest", (req, reply, done) => {
    const exposed = req.url.includes("?") ? keyInUrl(gw, req.url, newRequestId(gw.now())) : null;
    if (exposed) {
      // The 401 waits for the key to be marked exposed and that to be durable: by the time the caller reads it, no
      // instance on the database accepts the key any more (D108).
      void exposed.marked.then(() => gw.durable()).then(() => send(reply, fromError(exposed.answer)));
      return;
    }
    if (req.raw.httpVersion === "1.1" && req.headers.host === undefined) {
      const noHost = { param: "Host", message: "`Host` is missing: an HTTP/1.1 request names the host it is sent to." };
      send(reply, jsonAnswer(invalidParamsAnswer(noHost, newRequestId(gw.now())), 400));
      return;
    }
    // D130: a browser's preflight of a contract's path, answered 204 (with the CORS headers when its origin is let
    // in). Any other OPTIONS goes on, and is not found.
    const origin = req.headers.origin;
    if (req.method === "OPTIONS" && origin !== undefined && req.headers["access-control-request-method"]) {
      const headers = preflightHeaders(gw.config.corsOrigins, origin, req.url.split("?")[0]!);
      if (headers) {
        void reply.code(204).headers(headers).send();
        return;
      }
    }
    done();
  });

  // Every answer, whichever path made it (routes, refusals, MCP), carries D53's headers; with `docsLinks`, an
  // error's `fix.note` ends with its entry in the error catalogue (D92: this is the one place that adds it).
  // D130: an answer of a contract's path to a page on an origin let in says so and exposes the headers clients read.
  app.addHook("onSend", (req, reply, payload, done) => {
    reply.headers(answerHeaders(req.url, reply.getHeader("content-type") as string | undefined));
    if (req.method !== "OPTIONS") {
      reply.headers(corsAnswerHeaders(gw.config.corsOrigins, req.headers.origin ?? null, req.url.split("?")[0]!));
    }
    done(
      null,
      gw.config.docsLinks && reply.statusCode >= 400 ? withCatalogueLink(payload, req.protocol, req.host) : payload,
    );
  });

  // Bodies arrive as text; JSON is parsed in the handler so that every bad body is the seed's invalid_params.
  // Bytes that are not UTF-8 are not replaced by U+FFFD and charged as such: the body becomes NOT_UTF8 and is
  // refused as invalid_params.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => {
    try {
      done(null, UTF8.decode(body as Buffer));
    } catch {
      done(null, NOT_UTF8);
    }
  });
}

/** Anything else: an unknown route (its `fix.allowed` is ROUTE_LIST), a body over the limit, an unexpected throw. */
function installErrorHandlers(app: FastifyInstance, deps: RouteDeps): void {
  const { gw, errors } = deps;
  app.setNotFoundHandler((req, reply) => {
    const requestId = newRequestId(gw.now());
    const refusal = REFUSALS.noSuchRoute(req.method, req.url.split("?")[0]!, ROUTE_LIST);
    const a = errorAnswer("not_found", requestId, refusal as never, errors.opts());
    return send(reply, fromError(a));
  });

  app.setErrorHandler((error: { statusCode?: number; code?: string }, _req, reply) => {
    const requestId = newRequestId(gw.now());
    if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      const tooLarge = {
        param: "body",
        message: "The body is too large; send fewer targets.",
        note: `At most ${gw.config.bodyLimit} bytes.`,
      };
      return send(reply, jsonAnswer(invalidParamsAnswer(tooLarge, requestId), 400));
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return send(reply, jsonAnswer(invalidParamsAnswer(invalidBody(), requestId), 400));
    }
    if (error instanceof DatabaseUnavailable) {
      // D108: a route outside the contract's handlers (the console's) whose database does not answer: 503, as theirs.
      withRequestId(requestId, () => gw.log(`request ${requestId}: ${error.message}`));
      return send(reply, errors.databaseUnavailable(requestId));
    }
    withRequestId(requestId, () => gw.log(`request ${requestId} failed`, error));
    return send(reply, errors.internal(requestId));
  });
}
