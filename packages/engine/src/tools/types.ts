/**
 * The shapes shared by the seven tools: what a tool is given (`ToolContext`), what planning answers (a `ToolPlan`
 * or a typed `ToolRefusal`), and what a run answers (`RunResult`). Pure data: no HTTP, no ledger.
 */
import type { Awaitable } from "../storage.ts";
import type { AppliedParams, EnvelopeError, Item, Platform, Quote, Step, ToolName } from "@sdgw/types";
import type { ServiceUrls } from "@sdgw/validators";
import type { PlatformProvider } from "../providers/port.ts";

/** One earlier reading of an account's followers (for `account_watch`'s follower series). */
export interface FollowerReading {
  /** When it was read: ms since the epoch, or an RFC 3339 text. */
  t: number | string;
  /** Followers at that moment. */
  value: number;
}

/** What a tool needs from its caller. Only `providers` is required. */
export interface ToolContext {
  /** The provider of every platform (the simulator's, or real connectors). */
  providers: Readonly<Record<Platform, PlatformProvider>>;
  /** The caller's plan: decides how `scale: "large"` is refused (D24). Default `free`. */
  accountPlan?: "free" | "paid";
  /** The moment the run stands at (ms); windows and ranges end here. Default `Date.now()`. */
  now?: number;
  /** Aborts the run: a call in flight rejects with the signal's reason, and the run rejects with it. */
  signal?: AbortSignal;
  /** A provider call not answered within this many ms ends as `timeout` (a warning). Default 30 000. */
  callTimeoutMs?: number;
  /** Provider calls in flight at once within a wave. Default 4. */
  concurrency?: number;
  /** Addresses the error objects point to (`action_url`). Default `DEFAULT_URLS`. */
  urls?: ServiceUrls;
  /** The largest `calls_planned` that runs inline; more is a background run. Default `INLINE_MAX_CALLS`. */
  inlineMaxCalls?: number;
  /**
   * Earlier follower readings of an account (from earlier scheduled runs), for `account_watch`. Without it the
   * follower series holds the one reading this run makes.
   */
  followerHistory?: (platform: Platform, accountId: string) => Awaitable<readonly FollowerReading[]>;
}

/**
 * Why a tool request is refused before anything runs (answered with an HTTP error, never charged):
 * - `invalid_params`: a parameter is wrong (`param` names it; `allowed` where the values are a closed list);
 * - `plan_limit` / `scale_needs_purchase`: `scale: "large"` on a free account (D24);
 * - `not_supported`: `not_available_yet` (`scale: "large"` on a paid account, D24) or `no_such_capability`
 *   (a target on a platform without the operation the tool needs; `allowed` lists the platforms that have it).
 */
export type ToolRefusal =
  | { code: "invalid_params"; param: string; message: string; allowed?: string[] }
  | { code: "plan_limit"; reason: "scale_needs_purchase"; param: "scale"; message: string }
  | {
      code: "not_supported";
      reason: "not_available_yet" | "no_such_capability";
      param: string;
      message: string;
      allowed?: string[];
    };

/** The plan of an accepted tool request: the parameters as applied, the quote (D8), and request-wide warnings. */
export interface ToolPlan {
  tool: ToolName;
  /** The parameters as applied, defaults filled in (D1). */
  applied_params: AppliedParams;
  /** Mode, price, waves and calls, and the steps, all `pending`. */
  quote: Quote;
  /** Warnings about the whole request (for example `platforms=all expanded to …`). */
  warnings: string[];
}

/** What `plan` answers. */
export type PlanResult = { ok: true; plan: ToolPlan } | { ok: false; refusal: ToolRefusal };

/** The finished analysis of a run (the tool answer's `status`, `items`, `warnings`, `steps`, `error`). */
export interface RunResult {
  /** `ok` (items), `empty` (nothing found), or, when every provider call failed, `error`, `timeout` or `not_supported`. */
  status: "ok" | "empty" | "error" | "not_supported" | "timeout";
  /** The computed items (none unless `ok`). */
  items: Item[];
  /** Request-wide warnings, then one per failed call and per analysis caveat. */
  warnings: string[];
  /** Provider calls made (at most the quote's `calls_planned`). */
  calls_made: number;
  /** Provider calls that answered `ok` or `empty`: the calls the seed lets a run charge. */
  calls_charged: number;
  /** The steps as they ended. */
  steps: Step[];
  /** The error object when `status` is `error`, `timeout` or `not_supported` (D13). */
  error?: EnvelopeError;
}

/** Called with a copy of the steps after each wave. */
export type OnStep = (steps: Step[]) => void;

/** One tool: plans (quote or refusal) and runs a request. */
export interface ToolModule<R> {
  readonly tool: ToolName;
  /** The quote of a request, or why it is refused. Pure: no provider is called. */
  plan(request: R, ctx: ToolContext): PlanResult;
  /**
   * Runs a request: its waves against the providers, then the analysis. Rejects with `ToolRefusedError` when
   * `plan` would refuse the request, and with the provider's exception when a provider throws (the run breaks).
   */
  run(request: R, ctx: ToolContext, onStep?: OnStep): Promise<RunResult>;
}

/** Thrown by `run` for a request that `plan` refuses; carries the refusal. */
export class ToolRefusedError extends Error {
  readonly refusal: ToolRefusal;
  constructor(refusal: ToolRefusal) {
    super(refusal.message);
    this.name = "ToolRefusedError";
    this.refusal = refusal;
  }
}
