/**
 * The data routes: `GET /v1/search`, `POST` search, trending, detail, comments, user_profile, user_posts, and
 * `POST /v1/call/{op}`. Each is admitted (validated, planned by the engine's `planRoute`, as the mock plans, its
 * caller allowed to read data), then charged and run.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { bodyProblem } from "@sdgw/validators";
import { planRoute, type DataRouteId } from "@sdgw/engine";
import { admitCall } from "../admission.ts";
import { runCall } from "../charging.ts";
import { respondsNow } from "../respond-now.ts";
import { handler, type RouteDeps } from "./deps.ts";

/** The typed data routes by method and path (`POST /v1/call/{op}` is registered with its path parameter). */
const DATA_ROUTES: ReadonlyArray<readonly ["get" | "post", string, Exclude<DataRouteId, "callOperation">]> = [
  ["get", "/v1/search", "search"],
  ["post", "/v1/search", "searchPost"],
  ["post", "/v1/trending", "trending"],
  ["post", "/v1/detail", "detail"],
  ["post", "/v1/comments", "comments"],
  ["post", "/v1/user_profile", "userProfile"],
  ["post", "/v1/user_posts", "userPosts"],
];

export function registerDataRoutes(app: FastifyInstance, deps: RouteDeps): void {
  for (const [method, path, operationId] of DATA_ROUTES) app[method](path, dataHandler(deps, operationId));
  app.post("/v1/call/:op", dataHandler(deps, "callOperation"));
}

/** Admitted (validated, planned, its caller allowed to read data), then charged and run. */
function dataHandler(deps: RouteDeps, operationId: DataRouteId) {
  const body = operationId !== "search"; // the parameters of GET /v1/search are its query, the others' their body
  return handler(deps, async (req: FastifyRequest, requestId) => {
    const op = operationId === "callOperation" ? (req.params as { op: string }).op : "";
    const call = await admitCall(deps, req, requestId, {
      operationId,
      body,
      ...(operationId === "callOperation" ? { path: { op } } : {}),
      plan: (v) => planRoute(deps.gw.catalog, operationId, body ? v.body : v.query, op, bodyProblem),
    });
    const params = body ? call.body : call.query;
    return runCall(deps, {
      caller: call.caller,
      requestId,
      operationId,
      params: operationId === "callOperation" ? { op, body: params } : params,
      idempotencyKey: call.headers["idempotency-key"],
      plan: call.plan,
      maxCost: params["max_cost_credits"],
      respondNow: respondsNow(call.headers),
    });
  });
}
