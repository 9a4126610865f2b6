/**
 * D113: the operator's routes, outside the contract like `/mcp` and `/console` (no key, not counted against the
 * limits of an address, not in `ROUTE_LIST`): `GET /healthz` (liveness), `GET /readyz` (readiness, each check
 * bounded), `GET /metrics` (Prometheus, as `SDGW_METRICS` allows); the count of every answer for `/metrics`; and
 * the stop: from its first moment every request but these and the static documents is answered `503
 * temporarily_unavailable` (reason `paused`, `Retry-After`, `Connection: close`), nothing run or charged.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { MESSAGES } from "@sdgw/engine";
import { newRequestId } from "../ids.ts";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import { JSON_TYPE, send } from "../http/answer.ts";
import type { HttpErrors } from "../http/errors.ts";
import { isLoopback, type HealthCheck } from "./health.ts";

/** The operator's routes. */
export const OPERATOR_ROUTES: readonly string[] = ["/healthz", "/readyz", "/metrics"];

/** Routes still served while stopping: the operator's and the static documents (no state behind them). */
const SERVED_WHILE_STOPPING = new Set([
  ...OPERATOR_ROUTES,
  "/openapi.json",
  "/docs",
  "/docs/",
  "/docs/:file",
  "/console",
  "/console/",
  "/console/*",
]);

/** The label of an answer made before or without a route (an unknown path, a URL that is not one). */
const UNMATCHED = "(unmatched)";

/**
 * The life of one server as its HTTP layer sees it: where it listens (for the `loopback` access of `/metrics`)
 * and whether its stop began (`readyz` answers 503 from then on, new requests are refused).
 */
export class Lifecycle {
  /** Set at the first moment of a stop: `readyz` answers 503 and new requests are refused, in the contract's words. */
  stopping = false;
  /** The host this server listens on; null before `listen` (`app.inject` in tests: loopback). */
  host: string | null = null;
}

/** A readiness report: 200 when every check passed, else 503 with the failed ones' reasons. */
export interface Readiness {
  status: "ready" | "not_ready";
  checks: Record<string, Omit<HealthCheck, "name">>;
}

/** The readiness of a gateway now, with `shutdown` from its server's lifecycle. */
export async function readiness(gw: Pick<Gateway, "health">, lifecycle: Lifecycle): Promise<Readiness> {
  const checks: HealthCheck[] = await gw
    .health()
    .catch((e: unknown) => [{ name: "health", ok: false, ms: 0, error: e instanceof Error ? e.message : String(e) }]);
  checks.push(
    lifecycle.stopping
      ? { name: "shutdown", ok: false, ms: 0, error: "this instance is shutting down (SIGTERM): it takes no new calls" }
      : { name: "shutdown", ok: true, ms: 0 },
  );
  const out: Readiness["checks"] = {};
  for (const { name, ...rest } of checks) out[name] = rest;
  return { status: checks.every((c) => c.ok) ? "ready" : "not_ready", checks: out };
}

/** Registers the count of every answer, the stop's refusal and the operator's routes on `app`. */
export function operatorRoutes(app: FastifyInstance, gw: Gateway, lifecycle: Lifecycle, errors: HttpErrors): void {
  const { metrics } = gw;
  // Every answer, by its route's template: a bounded set of labels whatever the URLs asked.
  app.addHook("onResponse", (req, reply, done) => {
    metrics.request(req.method, routeOf(req), reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  // The stop: new requests (a kept-alive connection's next one) are refused at once, nothing run or charged; the
  // connection closes after the answer, so the client's next request goes to another instance.
  app.addHook("onRequest", (req, reply, done) => {
    if (!lifecycle.stopping) return done();
    if (SERVED_WHILE_STOPPING.has(req.routeOptions.url ?? "")) return done();
    const fix = { action_url: gw.config.urls.status, note: MESSAGES.shuttingDownNote };
    const extra = { reason: "paused", message: MESSAGES.shuttingDown, fix };
    const a = errors.fail("temporarily_unavailable", newRequestId(gw.now()), extra, null);
    send(reply.header("connection", "close"), a);
  });
  app.addHook("onSend", (req, reply, payload, done) => {
    // Answers of requests that were in flight when the stop began close their connections too.
    if (lifecycle.stopping && !OPERATOR_ROUTES.includes(req.routeOptions.url ?? ""))
      reply.header("connection", "close");
    done(null, payload);
  });

  app.get("/healthz", (_req, reply) => {
    void reply.code(200).header("content-type", JSON_TYPE).send('{"status":"ok"}');
  });

  app.get("/readyz", async (_req, reply) => {
    const r = await readiness(gw, lifecycle);
    return reply
      .code(r.status === "ready" ? 200 : 503)
      .header("content-type", JSON_TYPE)
      .send(JSON.stringify(r));
  });

  app.get("/metrics", async (req, reply) => {
    const allowed = metricsAccess(req, gw, lifecycle);
    if (allowed === "hidden") return reply.callNotFound();
    if (allowed === "unauthorized")
      return reply
        .code(401)
        .headers({ "content-type": JSON_TYPE, "www-authenticate": 'Bearer realm="sdgw-metrics"' })
        .send(
          JSON.stringify({
            status: "unauthorized",
            message: "GET /metrics needs Authorization: Bearer <SDGW_METRICS_TOKEN>.",
          }),
        );
    const text = await metrics.text();
    return reply.code(200).header("content-type", metrics.contentType).send(text);
  });
}

/** The template of the route that answered (`/v1/results/:handle`), or `(unmatched)` (the 404 of an unknown path). */
function routeOf(req: FastifyRequest): string {
  return req.routeOptions.url ?? UNMATCHED;
}

/** Whether this request may read `/metrics` (D113): served, hidden (answered as an unknown path) or unauthorized. */
function metricsAccess(req: FastifyRequest, gw: Gateway, lifecycle: Lifecycle): "ok" | "hidden" | "unauthorized" {
  const { access, token } = gw.metrics;
  if (access === "off") return "hidden";
  if (token !== null) return bearerIs(req, token) ? "ok" : "unauthorized";
  if (access === "on") return "ok";
  return lifecycle.host === null || isLoopback(lifecycle.host) ? "ok" : "hidden";
}

/** Whether `Authorization: Bearer <token>` was sent (compared in constant time). */
function bearerIs(req: FastifyRequest, token: string): boolean {
  const sent = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
  if (!sent) return false;
  const a = Buffer.from(sent);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
