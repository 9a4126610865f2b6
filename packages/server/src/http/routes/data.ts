/** The typed data routes: `GET /v1/search` and `POST` search, trending, detail, comments, user_profile, user_posts. */
import type { FastifyInstance } from "fastify";
import type { Platform } from "@sdgw/types";
import { planPlatforms, planTargets, type PlanResult } from "../../plan.ts";
import { admitCall, type OperationId } from "../admission.ts";
import { runCall } from "../charging.ts";
import { handler, type RouteDeps } from "./deps.ts";

export function registerDataRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { gw } = deps;
  app.get(
    "/v1/search",
    handler(deps, async (req, requestId) => {
      const plan = (v: { query: Record<string, unknown> }) => planPlatforms(gw.catalog, "search", v.query, "search");
      const call = admitCall(deps, req, requestId, { operationId: "search", plan });
      const { caller, query, headers } = call;
      return runCall(deps, { caller, requestId, operationId: "search", params: query, idempotencyKey: headers["idempotency-key"], plan: call.plan, maxCost: query["max_cost_credits"] });
    }),
  );

  const postRoutes: Array<{ path: string; operationId: OperationId; plan: (body: Record<string, unknown>) => PlanResult }> = [
    { path: "/v1/search", operationId: "searchPost", plan: (b) => planPlatforms(gw.catalog, "search", b, "data") },
    { path: "/v1/trending", operationId: "trending", plan: (b) => planPlatforms(gw.catalog, "trending", b, "data") },
    { path: "/v1/detail", operationId: "detail", plan: (b) => planTargets(gw.catalog, "detail", b["platform"] as Platform, b) },
    { path: "/v1/comments", operationId: "comments", plan: (b) => planTargets(gw.catalog, "comments", b["platform"] as Platform, b) },
    { path: "/v1/user_profile", operationId: "userProfile", plan: (b) => planTargets(gw.catalog, "user_profile", b["platform"] as Platform, b) },
    { path: "/v1/user_posts", operationId: "userPosts", plan: (b) => planTargets(gw.catalog, "user_posts", b["platform"] as Platform, b) },
  ];
  for (const r of postRoutes) {
    app.post(
      r.path,
      handler(deps, async (req, requestId) => {
        const call = admitCall(deps, req, requestId, { operationId: r.operationId, body: true, plan: (v) => r.plan(v.body) });
        const { caller, body, headers } = call;
        return runCall(deps, { caller, requestId, operationId: r.operationId, params: body, idempotencyKey: headers["idempotency-key"], plan: call.plan, maxCost: body["max_cost_credits"] });
      }),
    );
  }
}
