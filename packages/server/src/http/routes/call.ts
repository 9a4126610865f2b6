/** `POST /v1/call/{op}`: any op of the catalog by name, typed (a data route's op) or extra (a provider's own). */
import type { FastifyInstance } from "fastify";
import type { Platform } from "@sdgw/types";
import { OPERATIONS, requestValidators, type InvalidParams } from "@sdgw/validators";
import { isRouteOperation } from "@sdgw/engine";
import type { Gateway } from "../../gateway.ts";
import { planExtra, planPlatforms, planTargets, type PlanResult } from "@sdgw/engine";
import { admitCall } from "../admission.ts";
import { runCall } from "../charging.ts";
import { MESSAGES } from "../messages.ts";
import { handler, type RouteDeps } from "./deps.ts";

export function registerCallRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.post<{ Params: { op: string } }>(
    "/v1/call/:op",
    handler(deps, async (req, requestId) => {
      const op = (req.params as { op: string }).op;
      const plan = (v: { body: Record<string, unknown> }) => planOp(deps.gw, op, v.body);
      const call = admitCall(deps, req, requestId, { operationId: "callOperation", body: true, path: { op }, plan });
      const { caller, body, headers } = call;
      return runCall(deps, {
        caller,
        requestId,
        operationId: "callOperation",
        params: { op, body },
        idempotencyKey: headers["idempotency-key"],
        plan: call.plan,
        maxCost: body["max_cost_credits"],
      });
    }),
  );
}

/** The plan of an op named `platform.name`: `not_supported` when the catalog lacks it, naming who offers the name. */
function planOp(gw: Gateway, op: string, body: Record<string, unknown>): PlanResult {
  const [platform, name] = [op.slice(0, op.indexOf(".")), op.slice(op.indexOf(".") + 1)] as [Platform, string];
  const found = gw.catalog.lookup(op);
  if (!found) {
    const allowed = gw.catalog.platformsOffering(name);
    const message = MESSAGES.noSuchOp(op, platform, name, allowed);
    return {
      ok: false,
      refusal: { code: "not_supported", message, allowed, note: MESSAGES.noSuchOpNote(name, allowed) },
    };
  }
  if (isRouteOperation(name)) return planTyped(gw, { op, platform, name, body });
  return planExtra(found.provider, found.spec, op, body);
}

/** A typed op called by name: its route's parameters (no `platform`: the op names it), its route's validator. */
function planTyped(
  gw: Gateway,
  call: {
    op: string;
    platform: Platform;
    name: "search" | "trending" | "detail" | "comments" | "user_profile" | "user_posts";
    body: Record<string, unknown>;
  },
): PlanResult {
  const { op, platform, name, body } = call;
  const routeOp = (
    {
      search: "searchPost",
      trending: "trending",
      detail: "detail",
      comments: "comments",
      user_profile: "userProfile",
      user_posts: "userPosts",
    } as const
  )[name];
  const allowed = Object.keys(OPERATIONS[routeOp].body?.params ?? {}).filter(
    (p) => p !== "platform" && p !== "platforms",
  );
  for (const k of Object.keys(body))
    if (!allowed.includes(k))
      return {
        ok: false,
        refusal: {
          code: "invalid_params",
          invalid: { param: k, message: `\`${k}\` is not a parameter of this call.`, allowed },
        },
      };
  const full = { ...body, platform };
  const v = (requestValidators[routeOp] as { body: (value: unknown) => { ok: boolean; invalid?: InvalidParams } }).body(
    full,
  );
  if (!v.ok) return { ok: false, refusal: { code: "invalid_params", invalid: v.invalid! } };
  if (name === "search" || name === "trending") return planPlatforms(gw.catalog, name, full, "data", { op });
  return planTargets(gw.catalog, name, platform, full, { op });
}
