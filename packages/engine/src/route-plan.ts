/**
 * Planning by route: which planner a validated request of a data route goes to, as the reference server's routes
 * choose (`GET /v1/search` with the search table's codes, the POST routes with D13's, the four target routes), and
 * `POST /v1/call/{op}`: an op the catalog lacks is `no_such_capability` (D42), a typed op takes its route's
 * parameters and rules (no `platform`: the op names it, D23), any other op its own list (`planExtra`). Pure.
 */
import type { Platform } from "@sdgw/types";
import { OPERATIONS, type InvalidParams } from "@sdgw/validators";
import { ROUTES, isRouteOperation, type Catalog } from "./catalog.ts";
import { notAvailableYet, planExtra, planPlatforms, planTargets, type PlanResult } from "./plan.ts";

/** The operationIds of the data routes (`callOperation` is `POST /v1/call/{op}`). */
export type DataRouteId =
  | "search"
  | "searchPost"
  | "trending"
  | "detail"
  | "comments"
  | "userProfile"
  | "userPosts"
  | "callOperation";

const EVERY_OP = "GET /v1/capabilities lists every op.";
const TARGET_OPS = {
  detail: "detail",
  comments: "comments",
  userProfile: "user_profile",
  userPosts: "user_posts",
} as const;

/**
 * Checks the body of a typed op called by name against its route's validator (`requestValidators[routeOp].body`
 * of @sdgw/validators; passed in, so that the engine bundles no validator it does not need): null when valid.
 */
export type RouteBodyCheck = (routeOp: keyof typeof OPERATIONS, body: Body) => InvalidParams | null;

type Body = Readonly<Record<string, unknown>>;

/**
 * Plans a validated request of a data route: `input` is the query of `GET /v1/search`, else the JSON body; `op` is
 * the `{op}` of `POST /v1/call/{op}`, whose typed ops `check` validates.
 */
export function planRoute(
  catalog: Catalog,
  operationId: DataRouteId,
  input: Body,
  op: string,
  check: RouteBodyCheck,
): PlanResult {
  switch (operationId) {
    case "search":
      return planPlatforms(catalog, "search", input, "search");
    case "searchPost":
      return planPlatforms(catalog, "search", input, "data");
    case "trending":
      return planPlatforms(catalog, "trending", input, "data");
    case "callOperation":
      return planOperation(catalog, op, input, check);
    default:
      return planTargets(catalog, TARGET_OPS[operationId], input["platform"] as Platform, input);
  }
}

/** Plans `POST /v1/call/{op}` (D23, D41, D42). */
export function planOperation(catalog: Catalog, op: string, body: Body, check: RouteBodyCheck): PlanResult {
  const dot = op.indexOf(".");
  const [platform, name] = [op.slice(0, dot), op.slice(dot + 1)] as [Platform, string];
  const found = catalog.lookup(op);
  if (!found) {
    const allowed = catalog.platformsOffering(name);
    const does = `${allowed.join(", ")} ${allowed.length === 1 ? "does" : "do"}`;
    return {
      ok: false,
      refusal: {
        code: "not_supported",
        message: allowed.length
          ? `The catalog has no op ${op}: ${platform} does not offer ${name}; ${does}. Nothing ran and nothing was charged.`
          : `The catalog has no op ${op}. Nothing ran and nothing was charged.`,
        allowed,
        note: allowed.length
          ? `${allowed.map((p) => `${p}.${name}`).join(", ")} ${allowed.length > 1 ? "are" : "is"} in the catalog; ${EVERY_OP}`
          : EVERY_OP,
      },
    };
  }
  if (!isRouteOperation(name)) {
    const notYet = notAvailableYet(catalog, found.provider, name);
    return notYet ? { ok: false, refusal: notYet } : planExtra(found.provider, found.spec, op, body);
  }
  const routeOp = ROUTES[name].operationId;
  const allowed = Object.keys(OPERATIONS[routeOp].body?.params ?? {}).filter(
    (p) => p !== "platform" && p !== "platforms",
  );
  const unknown = Object.keys(body).find((k) => !allowed.includes(k));
  if (unknown !== undefined) {
    const invalid = { param: unknown, message: `\`${unknown}\` is not a parameter of this call.`, allowed };
    return { ok: false, refusal: { code: "invalid_params", invalid } };
  }
  const full = { ...body, platform };
  const invalid = check(routeOp, full);
  if (invalid) return { ok: false, refusal: { code: "invalid_params", invalid } };
  if (name === "search" || name === "trending") return planPlatforms(catalog, name, full, "data", { op });
  return planTargets(catalog, name, platform, full, { op });
}
