/** The typed data routes: `GET /v1/search` and `POST` search, trending, detail, comments, user_profile, user_posts. */
import type { FastifyInstance } from "fastify";
import type { Platform } from "@sdgw/types";
import { planPlatforms, planTargets, type PlanResult } from "@sdgw/engine";
import { admitCall, type Admitted, type OperationId } from "../admission.ts";
import { runCall } from "../charging.ts";
import { handler, type RouteDeps } from "./deps.ts";

export function registerDataRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { gw } = deps;
  const byPlatforms = (name: "search" | "trending") => (v: Admitted) => planPlatforms(gw.catalog, name, v.body, "data");
  const byTargets = (name: "detail" | "comments" | "user_profile" | "user_posts") => (v: Admitted) =>
    planTargets(gw.catalog, name, v.body["platform"] as Platform, v.body);
  const searchGet = (v: Admitted) => planPlatforms(gw.catalog, "search", v.query, "search");
  const route = (r: DataRoute) => dataHandler(deps, r);

  app.get("/v1/search", route({ operationId: "search", body: false, plan: searchGet }));
  app.post("/v1/search", route({ operationId: "searchPost", body: true, plan: byPlatforms("search") }));
  app.post("/v1/trending", route({ operationId: "trending", body: true, plan: byPlatforms("trending") }));
  app.post("/v1/detail", route({ operationId: "detail", body: true, plan: byTargets("detail") }));
  app.post("/v1/comments", route({ operationId: "comments", body: true, plan: byTargets("comments") }));
  app.post("/v1/user_profile", route({ operationId: "userProfile", body: true, plan: byTargets("user_profile") }));
  app.post("/v1/user_posts", route({ operationId: "userPosts", body: true, plan: byTargets("user_posts") }));
}

/** A data route: its operation, whether its parameters are the body (POST) or the query (GET), and its plan. */
interface DataRoute {
  operationId: OperationId;
  body: boolean;
  plan(v: Admitted): PlanResult;
}

/** Admitted (validated, planned, its caller allowed to read data), then charged and run. */
function dataHandler(deps: RouteDeps, route: DataRoute) {
  return handler(deps, async (req, requestId) => {
    const call = admitCall(deps, req, requestId, route);
    const params = route.body ? call.body : call.query;
    return runCall(deps, {
      caller: call.caller,
      requestId,
      operationId: route.operationId,
      params,
      idempotencyKey: call.headers["idempotency-key"],
      plan: call.plan,
      maxCost: params["max_cost_credits"],
    });
  });
}
