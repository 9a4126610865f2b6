/**
 * What a charging call asks for, read from its parameters: the shape of its answer (one platform's envelope, a
 * fanout, a targets answer, a tool answer), the units it is charged for (platforms or targets, D5), its applied
 * parameters (D1, D20) and how many items each unit answers.
 */
import { PLATFORMS, type AppliedParams, type Item, type OperationId, type Quote, type ToolName } from "@sdgw/types";
import { catalogEntry, expandAll, expandedWarning, typedNameOf, unsupported } from "./catalog.ts";
import { ROUTES } from "./generated/routes.ts";
import { planTool } from "./tools.ts";
import { isObject } from "./util.ts";

/** One unit of a call: a platform of a fanout, a target of a list, or the one platform of an envelope. */
export interface Unit {
  platform: string;
  /** The id or link this unit answers (targets answers and single-target envelopes). */
  target?: string;
  /** The parameter the target came from (`id`, `url`, `accounts`, `targets`). */
  param?: string;
  /** Why the platform cannot answer this unit (D41): it answers `not_supported` without running, and costs nothing. */
  unsupported?: string;
}

/** The shape of a charging call's answer. */
export type PlanShape = "envelope" | "fanout" | "targets" | "tool";

/** A charging call, read from its parameters. */
export interface Plan {
  op: OperationId;
  shape: PlanShape;
  units: Unit[];
  /** The envelope's or the tool answer's `applied_params`. */
  applied: AppliedParams;
  /** Items per unit. */
  count: number;
  /** Item kinds this call answers (D9); undefined: the fixture's own. */
  kinds?: Item["kind"][];
  /** The operation whose fixtures give the items (for `call`, the op's own route). */
  itemOp: OperationId;
  /** This call pages (`page.has_more` and a cursor): single-platform search, comments and user posts. */
  paged: boolean;
  /** The page asked for, 1 for a call without `cursor`. */
  page: number;
  /** Credits the call costs if every unit that runs answers `ok` or `empty` (units a platform cannot answer cost nothing). */
  quote: number;
  /** Warnings about the whole call (a fanout's `platforms=all`, D41; a tool's platforms expanded, a schedule created). */
  warnings: string[];
  /** The tool of a tool call. */
  tool?: string;
  /** A tool call's quote (D8, D51): mode, price, waves, calls and steps, as the server plans them. */
  toolQuote?: Quote;
  /** `confirm: false`: the quote only. */
  quoteOnly: boolean;
  /** The `max_cost_credits` the caller set. */
  maxCost?: number;
}

const DEFAULTS: Partial<Record<OperationId, Record<string, string | number | boolean>>> = {
  search: { type: "content", sort: "relevance", time_range: "all", content_type: "all", count: 10 },
  searchPost: { type: "content", sort: "relevance", time_range: "all", content_type: "all", count: 10 },
  trending: { count: 10 },
  comments: { limit: 20, sort: "latest" },
  userPosts: { limit: 20, sort: "latest" },
};

const PAGED = new Set<OperationId>(["search", "searchPost", "comments", "userPosts"]);

const KINDS: Partial<Record<OperationId, Item["kind"][]>> = {
  trending: ["leaderboard"],
  detail: ["item"],
  comments: ["item"],
  userPosts: ["item"],
  userProfile: ["profile_card"],
};

type Scalar = string | number | boolean;

/** Parameters as applied (D1): scalars and lists of scalars; a nested object's members as `a.b`; nothing null. */
export function appliedParams(params: Record<string, unknown>): AppliedParams {
  const out: Record<string, Scalar | Scalar[]> = {};
  const put = (name: string, v: unknown) => {
    if (v === null || v === undefined || name === "") return;
    if (Array.isArray(v)) out[name] = v.filter((x): x is Scalar => ["string", "number", "boolean"].includes(typeof x));
    else if (isObject(v)) for (const [k, x] of Object.entries(v)) put(`${name}.${k}`, x);
    else if (["string", "number", "boolean"].includes(typeof v)) out[name] = v as Scalar;
  };
  for (const [k, v] of Object.entries(params)) put(k, v);
  return out as AppliedParams;
}

const platformsOf = (value: unknown): string[] => (value === "all" ? [...PLATFORMS] : Array.isArray(value) ? (value as string[]) : []);

/** The item source of `POST /v1/call/{op}`: the data route the catalog names for that op, else `call`'s own fixtures. */
function itemOpOfCall(opName: string): OperationId {
  const route = catalogEntry(opName)?.route;
  const match = (Object.values(ROUTES) as Array<(typeof ROUTES)[OperationId]>).find((r) => r.path === route && r.charging && r.method === "POST");
  return match?.operationId ?? "callOperation";
}

/** Reads a charging call's parameters (already valid by the contract) into a plan. `page` comes from the cursor. */
export function planCall(op: OperationId, params: Record<string, unknown>, pathParams: Record<string, string>, page: number): Plan {
  const route = ROUTES[op];
  const withDefaults: Record<string, unknown> = { ...params };
  for (const [k, v] of Object.entries(DEFAULTS[op] ?? {})) if (!(k in withDefaults)) withDefaults[k] = v;
  const maxCost = typeof params["max_cost_credits"] === "number" ? params["max_cost_credits"] : undefined;
  const base = { op, itemOp: op, paged: false, page, quoteOnly: false, warnings: [] as string[], ...(maxCost !== undefined ? { maxCost } : {}) };
  /** The units that run: a unit a platform cannot answer is quoted nothing. */
  const quoteOf = (units: Unit[]) => units.filter((u) => !u.unsupported).length;
  /** A unit of a typed operation, marked when its platform lacks the operation or the parameter value (D41). */
  const name = typedNameOf(op);
  const unit = (u: Unit): Unit => {
    const why = name ? unsupported(u.platform, name, withDefaults) : undefined;
    return why ? { ...u, unsupported: why } : u;
  };

  if (route.tool) {
    // D51: the tool's own plan (./tools.ts), as the server makes it; the refusals were answered before this.
    const planned = planTool(route.tool as ToolName, params);
    if (!planned.ok) throw new Error(`@sdgw/mock: ${route.tool} was planned after its refusal (${planned.refusal.message})`);
    const { plan: tool } = planned;
    const units: Unit[] = tool.units.map((u) => ({ platform: u.platform, ...(u.target !== undefined ? { target: u.target, param: u.param! } : {}) }));
    return {
      ...base,
      shape: "tool",
      units,
      applied: tool.applied,
      count: typeof params["count"] === "number" ? params["count"] : 20,
      tool: route.tool,
      toolQuote: tool.quote,
      quote: tool.quote.quote_credits,
      quoteOnly: params["confirm"] === false,
      warnings: [...tool.warnings],
    };
  }

  const kinds = op === "search" || op === "searchPost" ? [params["type"] === "user" ? ("profile_card" as const) : ("item" as const)] : KINDS[op];
  const count = typeof withDefaults["count"] === "number" ? withDefaults["count"] : typeof withDefaults["limit"] === "number" ? withDefaults["limit"] : op === "detail" || op === "userProfile" ? 1 : 10;
  const common = { ...base, count, ...(kinds ? { kinds } : {}) };

  if (op === "callOperation") {
    const opName = pathParams["op"] ?? "x.unknown";
    const [platform, opOf] = [opName.slice(0, opName.indexOf(".")), opName.slice(opName.indexOf(".") + 1)];
    // A typed op called by name meets the same parameter values as its route (D41).
    const why = catalogEntry(opName) ? unsupported(platform, opOf, params) : undefined;
    const units: Unit[] = [{ platform, ...(why ? { unsupported: why } : {}) }];
    return { ...common, shape: "envelope", itemOp: itemOpOfCall(opName), units, applied: appliedParams(params), quote: quoteOf(units) };
  }

  if ("platforms" in params) {
    const rest = { ...withDefaults };
    delete rest["platforms"];
    let platforms = platformsOf(params["platforms"]);
    const warnings: string[] = [];
    if (params["platforms"] === "all" && name) {
      // D41: `all` is every platform that can answer; the others are left out, and a warning says which and why.
      const expanded = expandAll(name, rest);
      platforms = expanded.platforms;
      warnings.push(expandedWarning(expanded));
    }
    const units = platforms.map((p) => unit({ platform: p }));
    return { ...common, shape: "fanout", units, applied: appliedParams(rest), quote: quoteOf(units), warnings };
  }

  const platform = String(params["platform"]);
  const param = "id" in params ? "id" : "url" in params ? "url" : undefined;
  const value = param ? params[param] : undefined;
  if (param && Array.isArray(value)) {
    const rest = { ...withDefaults };
    delete rest[param];
    const units = (value as string[]).map((t) => unit({ platform, target: t, param }));
    return { ...common, shape: "targets", units, applied: appliedParams(rest), quote: quoteOf(units) };
  }
  const units = [unit({ platform, ...(param ? { target: String(value), param } : {}) })];
  return { ...common, shape: "envelope", paged: PAGED.has(op), units, applied: appliedParams(withDefaults), quote: quoteOf(units) };
}
