/**
 * The request rules the tools share: the contract's body validation (the seed's wording of each case), the
 * platforms of a search-based tool, the links of `targets` and `accounts`, the `scale` refusal (D24), and the
 * `defineTool` skeleton that turns a tool's `prepare` and `execute` into `plan` and `run`.
 */
import type { AppliedParams, Item, Platform, ToolName } from "@sdgw/types";
import { PLATFORMS } from "@sdgw/types";
import { resolveLinks as resolveLinksOffered, type RequestValidation } from "@sdgw/validators";
import type { LinkKind, ResolvedLink } from "./links.ts";
import { quoteOf, type WavePlan } from "./pricing.ts";
import { Runner } from "./runner.ts";
import {
  ToolRefusedError,
  type OnStep,
  type PlanResult,
  type RunResult,
  type ToolContext,
  type ToolModule,
  type ToolRefusal,
} from "./types.ts";

/** The text searched for a `query` (D22: a whole number is searched as its decimal text). */
export function queryText(query: string | number): string {
  return String(query);
}

/** The applied parameters without absent values (D1). */
export function applied(values: Record<string, unknown>): AppliedParams {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as AppliedParams;
}

/** The platforms of the ten that offer `operation`. */
export function platformsOffering(ctx: ToolContext, operation: string): Platform[] {
  return PLATFORMS.filter((p) => ctx.providers[p].operations.some((o) => o.name === operation));
}

/**
 * The platforms a search-based tool reads: the list sent, or every platform that offers `operation` for
 * `platforms: "all"` and when `platforms` is absent (with a warning that says so).
 */
export function searchPlatforms(
  requested: readonly Platform[] | "all" | undefined,
  ctx: ToolContext,
  operation = "search",
): { platforms: Platform[]; warnings: string[] } | ToolRefusal {
  const offering = platformsOffering(ctx, operation);
  if (requested === undefined || requested === "all") {
    if (offering.length === 0)
      return {
        code: "not_supported",
        reason: "no_such_capability",
        param: "platforms",
        message: `No platform offers ${operation}.`,
        allowed: [],
      };
    const which =
      requested === undefined
        ? `platforms not given: every platform that offers ${operation} is read`
        : "platforms=all";
    return {
      platforms: offering,
      warnings: [`${which}; expanded to ${offering.length} platforms: ${offering.join(", ")}`],
    };
  }
  const missing = requested.find((p) => !offering.includes(p));
  if (missing) {
    return {
      code: "not_supported",
      reason: "no_such_capability",
      param: "platforms",
      message: `${missing} does not offer ${operation}; ${offering.join(", ")} do.`,
      allowed: offering,
    };
  }
  return { platforms: [...requested], warnings: [] };
}

/**
 * The links of `targets` or `accounts`, told apart (seed case 14 for a link that cannot be), each on a platform
 * that offers every one of `operations` (else `not_supported`, reason `no_such_capability`).
 */
export function resolveLinks(
  links: readonly string[],
  kind: LinkKind,
  param: "targets" | "accounts",
  ctx: ToolContext,
  operations: readonly string[],
): ResolvedLink[] | ToolRefusal {
  return resolveLinksOffered(links, kind, param, operations, (op) => platformsOffering(ctx, op));
}

/**
 * `scale: "large"` of a confirmed run (D24, D73): a purchase opens it (`plan_limit` on a free account); on a paid
 * one it is not available yet, and the refusal names the parameter that asked to run it: `confirm` when the body
 * sent `confirm: true`, otherwise `scale`. A quote (`confirm: false`) is never refused: it answers the plan and
 * price of scale=large.
 */
export function scaleRefusal(ctx: ToolContext, confirm?: boolean): ToolRefusal {
  if ((ctx.accountPlan ?? "free") === "free")
    return {
      code: "plan_limit",
      reason: "scale_needs_purchase",
      param: "scale",
      message: "scale=large opens after the first purchase; scale small or standard runs now.",
    };
  return confirm === true
    ? {
        code: "not_supported",
        reason: "not_available_yet",
        param: "confirm",
        message:
          "Running scale=large is not available yet; confirm: false returns its plan and price, and scale small or standard runs now.",
      }
    : {
        code: "not_supported",
        reason: "not_available_yet",
        param: "scale",
        message:
          "scale=large is not available yet; scale small or standard runs now, and confirm: false returns the plan and price of scale=large.",
        allowed: ["small", "standard"],
      };
}

/** Whether a value is a refusal. */
export function isRefusal(x: unknown): x is ToolRefusal {
  return typeof x === "object" && x !== null && "code" in x && "message" in x;
}

/** What a tool's `prepare` gives: its own setup, the applied parameters, warnings, and its waves (in order). */
export interface Prepared<S> {
  setup: S;
  applied: AppliedParams;
  warnings: string[];
  waves: WavePlan[];
}

/** The context of `execute`: the caller's, with the run's moment fixed. */
export type RunContext = ToolContext & { now: number };

/** The parts of one tool. */
export interface ToolDefinition<R, S> {
  tool: ToolName;
  /** The contract's validator of the tool's body (`validateBrandBuzzBody`, …). */
  validate: (body: unknown) => RequestValidation<R>;
  /** The tool's own rules on a valid body: its setup and waves, or a refusal. */
  prepare(request: R, ctx: ToolContext): Prepared<S> | ToolRefusal;
  /** The waves (through `runner.wave` and `runner.call`), then the analysis: the items. */
  execute(setup: S, runner: Runner, ctx: RunContext): Promise<Item[]>;
}

/** Turns a tool's definition into its `plan` and `run`. */
export function defineTool<R, S>(def: ToolDefinition<R, S>): ToolModule<R> {
  const prepare = (request: R, ctx: ToolContext): Prepared<S> | ToolRefusal => {
    const v = def.validate(request);
    if (!v.ok)
      return {
        code: "invalid_params",
        param: v.invalid.param,
        message: v.invalid.message,
        ...(v.invalid.allowed ? { allowed: [...v.invalid.allowed] } : {}),
      };
    return def.prepare(v.value, ctx);
  };
  return {
    tool: def.tool,
    plan(request: R, ctx: ToolContext): PlanResult {
      const p = prepare(request, ctx);
      if (isRefusal(p)) return { ok: false, refusal: p };
      return {
        ok: true,
        plan: {
          tool: def.tool,
          applied_params: p.applied,
          quote: quoteOf(p.waves, ctx.inlineMaxCalls),
          warnings: p.warnings,
        },
      };
    },
    async run(request: R, ctx: ToolContext, onStep?: OnStep): Promise<RunResult> {
      const p = prepare(request, ctx);
      if (isRefusal(p)) throw new ToolRefusedError(p);
      const quote = quoteOf(p.waves, ctx.inlineMaxCalls);
      const runner = new Runner(ctx, quote.plan, p.warnings, onStep);
      const items = await def.execute(p.setup, runner, { ...ctx, now: ctx.now ?? Date.now() });
      return runner.finish(items);
    },
  };
}
