/** A request's way through the mock, in the server's order (D25, D50): admitted, authenticated, planned, answered. */
import { creditBilling, refusalAnswer, type DataRouteId, type PlanRefusal, type ToolRefusal } from "@sdgw/engine";
import { KEY_REFUSALS, keyPrefix, planRoute, presentedKey, quoteOf, REFUSALS, TOOLS } from "@sdgw/engine";
import type { AccountAnswer, Platform, ToolName } from "@sdgw/types";
import { admitRequest, bodyProblem, normalizeHeaders } from "@sdgw/validators";
import { invalid, keyInUrl, newRequestId, toolContext, type MockContext, type Params, type Req } from "./context.ts";
import { Refusal, refuse, reply, view } from "./context.ts";
import { OPENAPI_DOCUMENT } from "./generated/openapi.ts";
import { FIXTURES, ROUTES } from "./generated/routes.ts";
import type { MockRoute } from "./generated/route-types.ts";
import { charging, result } from "./runs.ts";
import { force, forcedRefusal, SCENARIO_HEADER, SKIPPED_HEADER } from "./scenarios.ts";
import type { Charged, Reply } from "./state.ts";

/** Bytes that are not UTF-8 are refused, not replaced; a BOM is kept (and is then not JSON), as the server does. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A request's body as text, or null when its bytes are not UTF-8. */
const textOf = (request: Request) =>
  request
    .arrayBuffer()
    .then((b) => UTF8.decode(b))
    .catch(() => null);

const decodePart = (v: string) => {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
};

/** The answer to a request of a route: D25's key check, a forced refusal, D50's checks, then the operation. */
export async function answer(
  ctx: MockContext,
  route: MockRoute,
  request: Request,
  matched: Params,
  options: { respondNow?: boolean } = {},
): Promise<Reply> {
  const op = route.operationId;
  const requestId = newRequestId();
  const url = new URL(request.url);
  const headers = normalizeHeaders(request.headers);
  // Only the route's own parameters: MSW also names the parts a `*` base matched ("0", "1", …).
  const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const pathParams = Object.fromEntries(names.map((k) => [k, decodePart(String(matched[k] ?? ""))]));
  const skipped: string[] = [];
  const forced = force(ctx, route, skipped, headers[SCENARIO_HEADER]);

  const respond = async (): Promise<Reply> => {
    const exposed = keyInUrl(ctx, url, requestId); // every route, keyless ones too: a key in a URL has leaked (D25)
    if (exposed) return exposed;
    if (forced?.kind === "refusal") {
      forced.take();
      if (op === "getResult" && forced.code === "internal_error") {
        const run = ctx.store.runMap.get(pathParams["handle"] ?? "");
        if (run?.status === "running") run.status = "broken";
      }
      return forcedRefusal(ctx, route, forced.code, forced.http, requestId);
    }
    // D50: a key in the URL first (above), then the request is validated, then the key is authenticated.
    const sent =
      route.method === "POST" ? { contentType: headers["content-type"], text: await textOf(request) } : undefined;
    const checked = admitRequest(op, { rawQuery: url.search.slice(1), headers, path: pathParams, body: sent });
    if (!checked.ok && route.responses.includes(400)) throw invalid(requestId, checked.invalid);
    const { query, body }: { query: Params; body: Params } = checked.ok ? checked : { query: {}, body: {} };
    const params = route.method === "GET" ? query : body;
    // D41, D50: what the request alone decides is refused before the key (`plan` throws it); the rest after it.
    const planned = route.charging ? plan(ctx, route, params, pathParams["op"] ?? "", requestId) : undefined;
    const apiKey = route.keyless ? "" : authenticate(ctx, route, headers, requestId);
    if (planned instanceof Refusal) throw planned;
    const req: Req = { route, requestId, params, headers, pathParams, apiKey, forced, skipped };
    if (options.respondNow) req.respondNow = true;
    const v1 = { request_id: requestId, schema_version: "v1" };

    switch (op) {
      case "listCapabilities":
        return reply(200, {
          ...v1,
          platforms: ctx.catalog.platforms,
          operations: ctx.catalog.operations,
          tools: ctx.catalog.tools,
        });
      case "getOpenApiDocument":
        return reply(200, OPENAPI_DOCUMENT);
      case "findOperation": {
        const limit = (body["limit"] as number | undefined) ?? 20;
        const matches = ctx.finder.find(String(body["query"]), { platform: body["platform"] as Platform, limit });
        return reply(200, { ...v1, query: body["query"], matches });
      }
      case "getAccount":
        return reply(200, account(ctx, apiKey, requestId));
      case "listSchedules":
        return reply(200, { ...v1, schedules: ctx.store.schedules, limit: 20 });
      case "deleteSchedule": {
        const id = pathParams["schedule_id"] ?? "";
        const at = ctx.store.scheduleList.findIndex((s) => s.id === id);
        if (at < 0) throw refuse(ctx, "not_found", requestId, REFUSALS.noSuchSchedule(id));
        ctx.store.scheduleList.splice(at, 1);
        return reply(200, { ...v1, deleted: true, schedule_id: id });
      }
      case "getResult":
        return result(ctx, req, query["format"]);
      default:
        return charging(ctx, req, planned!);
    }
  };
  const r = await respond().catch((e: unknown) => {
    if (e instanceof Refusal) return e.reply;
    throw e;
  });
  return skipped.length ? { ...r, headers: { ...r.headers, [SKIPPED_HEADER]: skipped.join("; ") } } : r;
}

/** A data call's or a tool's refusal (D24, D41, D42) in the server's words (the engine's `refusalAnswer`). */
function planRefusal(ctx: MockContext, r: PlanRefusal | ToolRefusal, requestId: string): Refusal {
  const answer = refusalAnswer(r, ctx.urls);
  return answer.code === "invalid_params"
    ? invalid(requestId, answer.invalid)
    : refuse(ctx, answer.code, requestId, answer.extra);
}

/** D25: the key presented, known and (on charging routes) with `read_data`; else 401 or 403. */
function authenticate(ctx: MockContext, route: MockRoute, headers: Req["headers"], requestId: string): string {
  const presented = presentedKey(headers);
  const key = presented.ok ? ctx.keys[presented.key] : undefined;
  if (!presented.ok || !key) {
    const why = REFUSALS.unauthorized(presented.ok ? KEY_REFUSALS.unknown : presented, ctx.urls);
    throw refuse(ctx, "unauthorized", requestId, why);
  }
  if (route.charging && !(key.permissions ?? []).includes("read_data"))
    throw refuse(ctx, "key_scope_denied", requestId, REFUSALS.keyScopeDenied(ctx.urls));
  return presented.key;
}

/** `GET /v1/account`: its fixture, with this key, the schedules and credits as they stand. */
function account(ctx: MockContext, apiKey: string, requestId: string): AccountAnswer {
  const fixture = structuredClone(FIXTURES[ROUTES.getAccount.defaultFixture!]) as AccountAnswer;
  const permissions = [...(ctx.keys[apiKey]?.permissions ?? [])];
  const id = `key_${apiKey.replace(/[^A-Za-z0-9]/g, "").slice(-8) || "mock"}`;
  const key = { ...fixture.key, id, prefix: keyPrefix(apiKey), name: "mock key", permissions };
  const workspace = { ...fixture.workspace, schedules_count: ctx.store.scheduleList.length };
  const billing = creditBilling(view(ctx), 0) as AccountAnswer["billing"];
  // The mock's keys have no daily limit and never expire.
  const unlimited = { daily_limit_credits: null, expires_at: null };
  return { ...fixture, request_id: requestId, workspace, key: { ...key, ...unlimited }, billing };
}

/**
 * A charging call planned by the engine, as the server plans it: a data route's calls (`planRoute`) or a tool's
 * quote (`TOOLS[tool].plan`). A refusal the request alone decides is thrown, before the key (D50); the one
 * that depends on the account (a tool's `scale=large`) is returned, to be answered after it.
 */
function plan(ctx: MockContext, route: MockRoute, params: Params, op: string, requestId: string): Charged | Refusal {
  if (route.tool) {
    const planned = TOOLS[route.tool as ToolName].plan(params as never, toolContext(ctx, ctx.simulator.providers));
    if (!planned.ok) {
      const r = planned.refusal;
      const refusal = planRefusal(ctx, r, requestId);
      if (r.code === "invalid_params" || (r.code === "not_supported" && r.reason === "no_such_capability"))
        throw refusal;
      return refusal;
    }
    const p = planned.plan;
    return { kind: "tool", plan: p, body: params, quote: p.quote.quote_credits, warnings: [...p.warnings] };
  }
  const planned = planRoute(ctx.catalog, route.operationId as DataRouteId, params, op, bodyProblem);
  if (!planned.ok) throw planRefusal(ctx, planned.refusal, requestId);
  return { kind: "data", plan: planned.plan, quote: quoteOf(planned.plan).credits };
}
