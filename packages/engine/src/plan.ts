/**
 * Planning: a validated request becomes a list of calls, one per platform or per target (each value of a list is
 * a call of its own), with the parameters as applied (D20 defaults), warnings (D18), and the calls the platform
 * does not offer marked `not_supported` up front. Pure: no storage, no clock.
 */
import type { AppliedParams, Platform } from "@sdgw/types";
import { PLATFORMS } from "@sdgw/types";
import type { InvalidParams } from "@sdgw/validators";
import type { Catalog } from "./catalog.ts";
import type { OpParam, OperationSpec, PlatformProvider } from "./providers/port.ts";

/** One call of a plan. */
export interface PlannedCall {
  platform: Platform;
  operation: string;
  /** The id or link this call reads (targets answers). */
  target?: string;
  /** `applied_params` of this call's entry. */
  applied: AppliedParams;
  /** What the provider gets. */
  params: Record<string, unknown>;
  warnings: string[];
  price: number;
  pricing: "standard" | "placeholder";
  /**
   * What the call costs upstream at most, in the platform's own units (YouTube quota units), beside its `price` in
   * credits, so that an operator sees the margin (D121); 0 for a simulated platform.
   */
  upstreamCost: number;
  /** Set when the platform does not offer this call: answered `not_supported` without running, not charged. */
  unsupported?: string;
}

/** What a request will do. */
export interface CallPlan {
  /** The provider operation (`search`, `comments`, `video_danmaku`, …). */
  operation: string;
  /** Which answer: one envelope, a fanout answer, or a targets answer. */
  shape: "single" | "fanout" | "targets";
  /** `search` answers take only the seed's four error codes; the other data routes also D13's three. */
  errorScope: "search" | "data";
  calls: PlannedCall[];
  /** Warnings about the whole request (fanout and targets answers). */
  warnings: string[];
}

/** Why a request cannot be planned: answered before anything runs. */
export type PlanRefusal =
  | { code: "invalid_params"; invalid: InvalidParams }
  | {
      code: "not_supported";
      message: string;
      allowed: string[];
      note: string;
      /** `no_such_capability` (the default) or `not_available_yet` (the op exists, not on this provider yet, D120). */
      reason?: "no_such_capability" | "not_available_yet";
    };

/** A plan, or a refusal. */
export type PlanResult = { ok: true; plan: CallPlan } | { ok: false; refusal: PlanRefusal };

type Body = Readonly<Record<string, unknown>>;

const SEARCH_DEFAULTS = {
  type: "content",
  sort: "relevance",
  time_range: "all",
  content_type: "all",
  count: 10,
} as const;

function noSuchCapability(catalog: Catalog, platform: string, name: string): PlanRefusal {
  const allowed = catalog.platformsOffering(name);
  return {
    code: "not_supported",
    message: allowed.length
      ? `${platform} does not offer ${name}; ${allowed.join(", ")} ${allowed.length === 1 ? "does" : "do"}. Nothing ran and nothing was charged.`
      : `The catalog has no op ${platform}.${name}. Nothing ran and nothing was charged.`,
    allowed,
    note: allowed.length
      ? `Call one of ${allowed.map((p) => `${p}.${name}`).join(", ")}; GET /v1/capabilities lists every op.`
      : "GET /v1/capabilities lists every op.",
  };
}

/**
 * D120: `not_supported`, reason `not_available_yet`, when the platform's provider lists the op but cannot run it yet
 * (a live platform never answers it with simulated data); null when it can.
 */
export function notAvailableYet(catalog: Catalog, provider: PlatformProvider, name: string): PlanRefusal | null {
  const why = provider.notAvailableYet?.(name);
  if (!why) return null;
  const allowed = catalog
    .platformsOffering(name)
    .filter((p) => p !== provider.platform && !catalog.providers[p].notAvailableYet?.(name));
  return {
    code: "not_supported",
    reason: "not_available_yet",
    message: why,
    allowed,
    note: allowed.length
      ? `Call one of ${allowed.map((p) => `${p}.${name}`).join(", ")}; GET /v1/capabilities lists every op.`
      : "GET /v1/capabilities lists every op and which platforms are live.",
  };
}

function badCursor(): PlanRefusal {
  return {
    code: "invalid_params",
    invalid: { param: "cursor", message: "`cursor` is invalid or expired; restart without `cursor`." },
  };
}

/** The applied value of `query` (D22: a whole number is searched as its decimal text). */
function queryText(v: unknown): string {
  return typeof v === "number" ? String(v) : String(v);
}

function scoped(provider: PlatformProvider, applied: Record<string, unknown>, warnings: string[]): void {
  if (applied["scope"] !== undefined && !provider.scoped) {
    warnings.push(`scope is ignored on ${provider.platform}`);
    delete applied["scope"];
  }
}

function call(
  provider: PlatformProvider,
  spec: OperationSpec,
  applied: Record<string, unknown>,
  warnings: string[],
  target?: string,
): PlannedCall {
  const params = { ...applied };
  delete params["platform"];
  delete params["op"];
  const why = provider.notAvailableYet?.(spec.name) ?? provider.unsupported(spec.name, params);
  return {
    platform: provider.platform,
    operation: spec.name,
    ...(target !== undefined ? { target } : {}),
    applied: applied as AppliedParams,
    params,
    warnings,
    price: spec.price,
    pricing: spec.pricing,
    upstreamCost: why ? 0 : (provider.upstreamCost?.(spec.name, params) ?? 0),
    ...(why ? { unsupported: why } : {}),
  };
}

/** Plans `search` or `trending` (GET or POST): one platform, or a fanout over `platforms` (D17, D19). */
export function planPlatforms(
  catalog: Catalog,
  name: "search" | "trending",
  input: Body,
  errorScope: "search" | "data",
  extra: Record<string, unknown> = {},
): PlanResult {
  const base: Record<string, unknown> = {};
  if (name === "search") {
    base["query"] = queryText(input["query"]);
    for (const [k, d] of Object.entries(SEARCH_DEFAULTS)) base[k] = input[k] ?? d;
  } else {
    base["count"] = input["count"] ?? 10;
  }
  if (input["scope"] !== undefined) base["scope"] = input["scope"];
  if (input["cursor"] !== undefined) base["cursor"] = input["cursor"];

  const single = typeof input["platform"] === "string" ? (input["platform"] as Platform) : undefined;
  if (single) {
    const provider = catalog.providers[single];
    const spec = provider.operations.find((o) => o.name === name);
    if (!spec) return { ok: false, refusal: noSuchCapability(catalog, single, name) };
    const notYet = notAvailableYet(catalog, provider, name);
    if (notYet) return { ok: false, refusal: notYet };
    if (typeof base["cursor"] === "string" && !provider.cursorValid(name, base["cursor"], base))
      return { ok: false, refusal: badCursor() };
    const warnings: string[] = [];
    const applied: Record<string, unknown> = { ...extra, platform: single, ...base };
    scoped(provider, applied, warnings);
    return {
      ok: true,
      plan: {
        operation: name,
        shape: "single",
        errorScope,
        calls: [call(provider, spec, applied, warnings)],
        warnings: [],
      },
    };
  }

  const requested = input["platforms"];
  const top: string[] = [];
  let platforms: Platform[];
  if (requested === "all") {
    platforms = PLATFORMS.filter((p) => {
      const provider = catalog.providers[p];
      const spec = provider.operations.find((o) => o.name === name);
      return spec !== undefined && provider.unsupported(name, base) === null && !provider.notAvailableYet?.(name);
    });
    if (platforms.length === 0) return { ok: false, refusal: noSuchCapability(catalog, "any platform", name) };
    top.push(`platforms=all expanded to ${platforms.length} platforms: ${platforms.join(", ")}`);
  } else {
    platforms = requested as Platform[];
  }
  // D115: a cursor is checked by each platform it would go to (a cursor is bound to one platform, so a fanout with
  // one is refused, as D19 says; a caller that skipped the validators no longer forwards it unchecked).
  if (typeof base["cursor"] === "string") {
    const cursor = base["cursor"];
    if (platforms.some((p) => !catalog.providers[p].cursorValid(name, cursor, base)))
      return { ok: false, refusal: badCursor() };
  }
  const calls = platforms.map((p) => {
    const provider = catalog.providers[p];
    const spec = provider.operations.find((o) => o.name === name);
    const warnings: string[] = [];
    const applied: Record<string, unknown> = { ...extra, platform: p, ...base };
    scoped(provider, applied, warnings);
    if (!spec) {
      const others = catalog.platformsOffering(name);
      return {
        platform: p,
        operation: name,
        applied: applied as AppliedParams,
        params: {},
        warnings,
        price: 0,
        pricing: "standard" as const,
        upstreamCost: 0,
        unsupported: `${p} does not offer ${name}; ${others.join(", ")} ${others.length === 1 ? "does" : "do"}. Nothing was charged.`,
      };
    }
    return call(provider, spec, applied, warnings);
  });
  // Fanout entries take the seed's four error codes whatever the route (its fanout table; D13).
  return { ok: true, plan: { operation: name, shape: "fanout", errorScope: "search", calls, warnings: top } };
}

/** Plans `detail`, `comments`, `user_profile` or `user_posts`: one target, or a list (each value a call of its own). */
export function planTargets(
  catalog: Catalog,
  name: "detail" | "comments" | "user_profile" | "user_posts",
  platform: Platform,
  input: Body,
  extra: Record<string, unknown> = {},
): PlanResult {
  const provider = catalog.providers[platform];
  const spec = provider.operations.find((o) => o.name === name);
  if (!spec) return { ok: false, refusal: noSuchCapability(catalog, platform, name) };
  const notYet = notAvailableYet(catalog, provider, name);
  if (notYet) return { ok: false, refusal: notYet };
  const by = input["id"] !== undefined ? "id" : "url";
  const value = input[by] as string | string[];
  const shared: Record<string, unknown> = {};
  if (name === "comments" || name === "user_posts") {
    shared["limit"] = input["limit"] ?? 20;
    shared["sort"] = input["sort"] ?? "latest";
    if (input["cursor"] !== undefined) {
      const bound = { [by]: Array.isArray(value) ? value[0] : value, ...shared };
      if (!provider.cursorValid(name, String(input["cursor"]), bound)) return { ok: false, refusal: badCursor() };
      shared["cursor"] = input["cursor"];
    }
  }
  const values = Array.isArray(value) ? value : [value];
  const calls = values.map((v) =>
    call(provider, spec, { ...extra, platform, [by]: v, ...shared }, [], Array.isArray(value) ? v : undefined),
  );
  return {
    ok: true,
    plan: {
      operation: name,
      shape: Array.isArray(value) ? "targets" : "single",
      errorScope: "data",
      calls,
      warnings: [],
    },
  };
}

function checkParam(p: OpParam, v: unknown): string | null {
  if (p.type === "integer") {
    if (
      typeof v !== "number" ||
      !Number.isSafeInteger(v) ||
      (p.min !== undefined && v < p.min) ||
      (p.max !== undefined && v > p.max)
    )
      return `\`${p.name}\` must be a whole number from ${p.min ?? 0} to ${p.max ?? 9007199254740991}.`;
    return null;
  }
  if (typeof v !== "string") return `\`${p.name}\` must be text.`;
  const n = [...v].length;
  if (p.allowed && !p.allowed.includes(v))
    return `\`${p.name}\` must be one of ${p.allowed.map((a) => `\`${a}\``).join(", ")}.`;
  if ((p.min !== undefined && n < p.min) || (p.max !== undefined && n > p.max))
    return p.min === p.max
      ? `\`${p.name}\` must be text of ${p.min} characters.`
      : `\`${p.name}\` must be text of ${p.min ?? 0} to ${p.max} characters.`;
  return null;
}

/** Plans a catalog-only op of `POST /v1/call/{op}` (its parameters checked against the op's own list, D23). */
export function planExtra(provider: PlatformProvider, spec: OperationSpec, op: string, body: Body): PlanResult {
  const params = spec.params ?? [];
  const allowed = [...params.map((p) => p.name), "max_cost_credits"];
  for (const k of Object.keys(body)) {
    if (!allowed.includes(k))
      return {
        ok: false,
        refusal: {
          code: "invalid_params",
          invalid: { param: k, message: `\`${k}\` is not a parameter of this call.`, allowed },
        },
      };
  }
  const applied: Record<string, unknown> = { op };
  for (const p of params) {
    const v = body[p.name];
    if (v === undefined) {
      if (p.required)
        return {
          ok: false,
          refusal: {
            code: "invalid_params",
            invalid: { param: p.name, message: `\`${p.name}\` is required.`, allowed },
          },
        };
      if (p.default !== undefined) applied[p.name] = p.default;
      continue;
    }
    const wrong = checkParam(p, v);
    if (wrong)
      return {
        ok: false,
        refusal: {
          code: "invalid_params",
          invalid: { param: p.name, message: wrong, ...(p.allowed ? { allowed: p.allowed } : {}) },
        },
      };
    applied[p.name] = v;
  }
  if (typeof applied["cursor"] === "string" && !provider.cursorValid(spec.name, applied["cursor"], applied))
    return { ok: false, refusal: badCursor() };
  return {
    ok: true,
    plan: {
      operation: spec.name,
      shape: "single",
      errorScope: "data",
      calls: [call(provider, spec, applied, [])],
      warnings: [],
    },
  };
}

/**
 * The quote of a plan: the price of every call that will run (calls answered `not_supported` cost nothing), and
 * what they cost upstream at most (D121).
 */
export function quoteOf(plan: CallPlan): { credits: number; calls: number; upstreamCost: number } {
  let credits = 0;
  let calls = 0;
  let upstreamCost = 0;
  for (const c of plan.calls) {
    if (c.unsupported) continue;
    credits += c.price;
    calls += 1;
    upstreamCost += c.upstreamCost;
  }
  return { credits, calls, upstreamCost };
}
