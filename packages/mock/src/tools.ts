/**
 * The plans of the seven tools of `POST /v1/tools/{tool}` (D8, D24, D41, D51), as the reference server makes them:
 * the parameters as applied, the waves of provider calls each tool may make (a quote of 1 credit per planned call,
 * `inline` up to 10 calls, else `background`), and the refusals decided before anything runs. The mock runs no
 * analysis: its answers take their items from the fixtures. Only the plan (and so the quote, the mode, the steps and
 * the price) follows the server, so that a frontend sees the same numbers against the mock as against a gateway.
 *
 * Waves per tool (n = platforms, targets or accounts):
 * - `brand_buzz`: `search` n × pages (small 1, standard 3), `comments` (platforms with comments) × posts (2, 5);
 * - `comment_insights`: `comments` n;
 * - `account_watch`: `profiles` n, `posts` n;
 * - `find_creators`: `search` n, `profiles` min(20 n, count, or 2 × count when `min_followers` > 0);
 * - `creator_card`: `profiles` n, `posts` n unless `include` is empty;
 * - `batch_stats`: `details` n, `comments` n when `include` has `comments`;
 * - `viral_finder`: `search` n, `posts` min(20 n, 2 × count);
 * then an `aggregate` step with no calls. Waves with no calls are left out.
 */
import { type AppliedParams, type Platform, type Quote, type Step, type ToolName } from "@sdgw/types";
import { platformsOffering } from "./catalog.ts";
import { refuseCommentsWithout, resolveLinks as resolveLinksOffered, type LinkKind, type ResolvedLink } from "@sdgw/validators";

/** Credits per provider call a plan makes (D51). */
export const CREDITS_PER_CALL = 1;

/** The largest `calls_planned` of an inline run; a plan with more calls runs in the background (D51). */
export const INLINE_MAX_CALLS = 10;

/** What each `scale` of `brand_buzz` reads per platform: pages of search results, and posts whose comments are read. */
export const BRAND_BUZZ_SCALES = {
  small: { pages: 1, commentedPosts: 2 },
  standard: { pages: 3, commentedPosts: 5 },
  large: { pages: 5, commentedPosts: 10 },
} as const;

/** Posts one search page answers (`find_creators` and `viral_finder` read one page per platform). */
const PAGE_SIZE = 20;

/** One wave of a plan: a step name and the provider calls it may make. */
export interface WavePlan {
  name: string;
  calls: number;
}

/**
 * Why a tool request is refused before anything runs (never charged): `invalid_params` (a wrong link, an `include`
 * the targets cannot give), `not_supported` `no_such_capability` (a platform or a target's platform without the
 * operation the tool reads; `allowed` the platforms that have it), `not_supported` `not_available_yet`
 * (`scale: "large"`: the mock's keys are paid ones, D24).
 */
export type ToolRefusal =
  | { code: "invalid_params"; param: string; message: string; allowed?: string[] }
  | { code: "not_supported"; reason: "no_such_capability" | "not_available_yet"; param: string; message: string; allowed?: string[] };

/** A tool request as planned. */
export interface ToolPlan {
  tool: ToolName;
  /** The parameters as applied, defaults filled in (D1), as the server shows them. */
  applied: AppliedParams;
  /** Warnings about the whole request (`platforms=all` expanded, platforms not given). */
  warnings: string[];
  /** What the call reads: its platforms, or its targets or accounts with their platforms. */
  units: Array<{ platform: Platform; target?: string; param?: "targets" | "accounts" }>;
  /** Mode, price, waves and calls, and the steps, all `pending` (D8, D51). */
  quote: Quote;
}

/** The quote of a list of waves: waves with no calls left out, a final `aggregate` step added, wave numbers 1..n. */
export function quoteOf(waves: readonly WavePlan[], inlineMax: number = INLINE_MAX_CALLS): Quote {
  const named = [...waves.filter((w) => w.calls > 0), { name: "aggregate", calls: 0 }];
  const plan: Step[] = named.map((w, i) => ({ wave: i + 1, name: w.name, status: "pending", calls_planned: w.calls, calls_done: 0 }));
  const calls = plan.reduce((n, s) => n + s.calls_planned, 0);
  return { mode: calls <= inlineMax ? "inline" : "background", quote_credits: calls * CREDITS_PER_CALL, waves_planned: plan.length, calls_planned: calls, plan };
}

/** The applied parameters without absent values (D1). */
function applied(values: Record<string, unknown>): AppliedParams {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as AppliedParams;
}

function isRefusal(x: unknown): x is ToolRefusal {
  return typeof x === "object" && x !== null && "code" in x && "message" in x;
}

/**
 * The platforms a search-based tool reads: the list sent, or every platform that offers `operation` for
 * `platforms: "all"` and when `platforms` is absent (with a warning that says so). A platform sent that lacks the
 * operation is `no_such_capability` with `allowed` the platforms that have it (D41).
 */
export function searchPlatforms(requested: unknown, operation = "search"): { platforms: Platform[]; warnings: string[] } | ToolRefusal {
  const offering = platformsOffering(operation);
  if (requested === undefined || requested === "all") {
    if (offering.length === 0) return { code: "not_supported", reason: "no_such_capability", param: "platforms", message: `No platform offers ${operation}.`, allowed: [] };
    const which = requested === undefined ? `platforms not given: every platform that offers ${operation} is read` : "platforms=all";
    return { platforms: offering, warnings: [`${which}; expanded to ${offering.length} platforms: ${offering.join(", ")}`] };
  }
  const list = (Array.isArray(requested) ? requested : []) as Platform[];
  const missing = list.find((p) => !offering.includes(p));
  if (missing) return { code: "not_supported", reason: "no_such_capability", param: "platforms", message: `${missing} does not offer ${operation}; ${offering.join(", ")} do.`, allowed: offering };
  return { platforms: [...list], warnings: [] };
}

/**
 * The links of `targets` or `accounts`, told apart (`invalid_params` naming the parameter for a link that cannot
 * be), each on a platform that offers every one of `operations` (else `no_such_capability`, `fix.param` the
 * parameter, D41).
 */
export function resolveLinks(links: readonly string[], kind: LinkKind, param: "targets" | "accounts", operations: readonly string[]): ResolvedLink[] | ToolRefusal {
  return resolveLinksOffered(links, kind, param, operations, platformsOffering);
}

interface Prepared {
  applied: AppliedParams;
  warnings: string[];
  units: ToolPlan["units"];
  waves: WavePlan[];
}

type Body = Record<string, unknown>;

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
const num = (v: unknown, d: number): number => (typeof v === "number" ? v : d);
const common = (b: Body) => ({ confirm: b["confirm"] ?? true, max_cost_credits: b["max_cost_credits"] });
const linkUnits = (links: ResolvedLink[], param: "targets" | "accounts") => links.map((l) => ({ platform: l.platform, target: l.link, param }));

/** A confirmed `scale: "large"` (D73): not available yet, naming `confirm` when the body sent `confirm: true`, else `scale`. */
export function largeScaleRefusal(confirmSent: boolean): ToolRefusal {
  return confirmSent
    ? { code: "not_supported", reason: "not_available_yet", param: "confirm", message: "Running scale=large is not available yet; confirm: false returns its plan and price, and scale small or standard runs now." }
    : { code: "not_supported", reason: "not_available_yet", param: "scale", message: "scale=large is not available yet; scale small or standard runs now, and confirm: false returns the plan and price of scale=large.", allowed: ["small", "standard"] };
}

/** Each tool's own rules on a body the contract accepts: its applied parameters and waves, or a refusal. */
const PREPARE: Record<ToolName, (b: Body) => Prepared | ToolRefusal> = {
  brand_buzz(b) {
    const scale = (b["scale"] ?? "small") as "small" | "standard" | "large";
    if (scale === "large" && b["confirm"] !== false) return largeScaleRefusal(b["confirm"] === true);
    const found = searchPlatforms(b["platforms"]);
    if (isRefusal(found)) return found;
    const withComments = platformsOffering("comments");
    const { pages, commentedPosts } = BRAND_BUZZ_SCALES[scale];
    return {
      applied: applied({ query: String(b["query"]), platforms: found.platforms, window: b["window"] ?? "7d", scale, ...common(b) }),
      warnings: found.warnings,
      units: found.platforms.map((platform) => ({ platform })),
      waves: [
        { name: "search", calls: found.platforms.length * pages },
        { name: "comments", calls: found.platforms.filter((p) => withComments.includes(p)).length * commentedPosts },
      ],
    };
  },
  comment_insights(b) {
    const targets = resolveLinks(strings(b["targets"]), "post", "targets", ["comments"]);
    if (isRefusal(targets)) return targets;
    return {
      applied: applied({ targets: strings(b["targets"]), limit: num(b["limit"], 20), ...common(b) }),
      warnings: [],
      units: linkUnits(targets, "targets"),
      waves: [{ name: "comments", calls: targets.length }],
    };
  },
  account_watch(b) {
    const accounts = resolveLinks(strings(b["accounts"]), "account", "accounts", ["user_profile", "user_posts"]);
    if (isRefusal(accounts)) return accounts;
    const schedule = b["schedule"] as { every?: unknown } | undefined;
    return {
      applied: applied({ accounts: strings(b["accounts"]), range: b["range"] ?? "7d", "schedule.every": schedule?.every, ...common(b) }),
      warnings: [],
      units: linkUnits(accounts, "accounts"),
      waves: [
        { name: "profiles", calls: accounts.length },
        { name: "posts", calls: accounts.length },
      ],
    };
  },
  find_creators(b) {
    const found = searchPlatforms(b["platforms"]);
    if (isRefusal(found)) return found;
    const count = num(b["count"], 10);
    const minFollowers = num(b["min_followers"], 0);
    return {
      applied: applied({ query: String(b["query"]), platforms: found.platforms, count, min_followers: minFollowers, ...common(b) }),
      warnings: found.warnings,
      units: found.platforms.map((platform) => ({ platform })),
      waves: [
        { name: "search", calls: found.platforms.length },
        { name: "profiles", calls: Math.min(found.platforms.length * PAGE_SIZE, minFollowers > 0 ? 2 * count : count) },
      ],
    };
  },
  creator_card(b) {
    const include = Array.isArray(b["include"]) ? strings(b["include"]) : ["posts", "metrics"];
    const accounts = resolveLinks(strings(b["accounts"]), "account", "accounts", include.length > 0 ? ["user_profile", "user_posts"] : ["user_profile"]);
    if (isRefusal(accounts)) return accounts;
    return {
      applied: applied({ accounts: strings(b["accounts"]), include, ...common(b) }),
      warnings: [],
      units: linkUnits(accounts, "accounts"),
      waves: [
        { name: "profiles", calls: accounts.length },
        { name: "posts", calls: include.length > 0 ? accounts.length : 0 },
      ],
    };
  },
  batch_stats(b) {
    const include = Array.isArray(b["include"]) ? strings(b["include"]) : ["metrics"];
    const targets = resolveLinks(strings(b["targets"]), "post", "targets", ["detail"]);
    if (isRefusal(targets)) return targets;
    const noComments = include.includes("comments") ? refuseCommentsWithout(targets, platformsOffering) : null;
    if (noComments) return noComments;
    return {
      applied: applied({ targets: strings(b["targets"]), include, format: b["format"] ?? "json", ...common(b) }),
      warnings: [],
      units: linkUnits(targets, "targets"),
      waves: [
        { name: "details", calls: targets.length },
        { name: "comments", calls: include.includes("comments") ? targets.length : 0 },
      ],
    };
  },
  viral_finder(b) {
    const found = searchPlatforms(b["platforms"]);
    if (isRefusal(found)) return found;
    const count = num(b["count"], 10);
    return {
      applied: applied({ query: String(b["query"]), platforms: found.platforms, window: b["window"] ?? "7d", count, ...common(b) }),
      warnings: found.warnings,
      units: found.platforms.map((platform) => ({ platform })),
      waves: [
        { name: "search", calls: found.platforms.length },
        { name: "posts", calls: Math.min(found.platforms.length * PAGE_SIZE, 2 * count) },
      ],
    };
  },
};

/** Whether a name is one of the seven tools. */
export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(PREPARE, name);
}

/**
 * The plan of a tool request the contract accepts (its body already validated): the applied parameters, the quote
 * and what it reads, or why it is refused. Pure.
 */
export function planTool(tool: ToolName, body: Readonly<Record<string, unknown>>): { ok: true; plan: ToolPlan } | { ok: false; refusal: ToolRefusal } {
  const p = PREPARE[tool]({ ...body });
  if (isRefusal(p)) return { ok: false, refusal: p };
  return { ok: true, plan: { tool, applied: p.applied, warnings: p.warnings, units: p.units, quote: quoteOf(p.waves) } };
}

/** Whether a refusal is decided from the request alone, before the key (D50, D51): a wrong body or link, a capability gap. */
export function refusedBeforeKey(r: ToolRefusal): boolean {
  return r.code === "invalid_params" || r.reason === "no_such_capability";
}
