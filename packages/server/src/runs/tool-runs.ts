/**
 * Planning and starting tool runs on a gateway, shared by `POST /v1/tools/{tool}` and the scheduler: the tools'
 * context (providers, addresses, the clock, follower readings), and a run whose end records what the next runs
 * need (follower counts read by `account_watch`).
 */
import type { ToolName, ToolRequest } from "@sdgw/types";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import type { HttpAnswer, RunContext, ToolRunRequest } from "./types.ts";
import {
  followerReadings,
  type RunResult,
  type ToolContext,
  type ToolPlan,
  type ToolPlanResult as PlanResult,
  TOOLS,
} from "@sdgw/engine";

/** The context the tools get on this gateway, for an account of `accountPlan`. */
export function toolContext(gw: Gateway, accountPlan: "free" | "paid"): ToolContext {
  return {
    providers: gw.providers,
    accountPlan,
    now: gw.now(),
    urls: gw.config.urls,
    callTimeoutMs: gw.config.providerTimeoutMs,
    followerHistory: (platform, accountId) => gw.schedules.followerHistory(platform, accountId),
  };
}

/** The quote of a tool request for an account of `accountPlan`, or why it is refused. Pure. */
export function planTool(
  gw: Gateway,
  tool: ToolName,
  body: Record<string, unknown>,
  accountPlan: "free" | "paid",
): PlanResult {
  return TOOLS[tool].plan(body as never, toolContext(gw, accountPlan));
}

/** Options of {@link startToolRun}. */
export interface StartToolRun {
  /** Warnings the answer carries before the run's own. */
  warnings?: string[];
  /** Answer 202 with a handle at once, whatever the quote's mode. */
  background?: boolean;
  /** Called when the run gets its handle, before the 202 is answered. */
  onHandle?(handle: string): void;
  /** Called inside the run's final transaction with its status and charge. */
  onEnd?: ToolRunRequest["onEnd"];
}

/** A planned tool run to start (see {@link startToolRun}): its id, who runs it, the tool body and its plan. */
export interface ToolRunStart extends StartToolRun {
  runId: string;
  ctx: RunContext;
  body: Record<string, unknown>;
  plan: ToolPlan;
}

/**
 * Starts a planned tool run whose hold is taken (`gw.runs.begin`): the finished answer, or 202 with a handle
 * (background quote, `background`, or a run past `waitMs`). `batch_stats`' `format` sets the answer's media type.
 */
export async function startToolRun(gw: Gateway, start: ToolRunStart): Promise<HttpAnswer> {
  const { runId, ctx, body, plan } = start;
  const module = TOOLS[plan.tool] as {
    run(request: ToolRequest<ToolName>, ctx: ToolContext, onStep: (steps: never[]) => void): Promise<RunResult>;
  };
  const format =
    plan.tool === "batch_stats" ? ((body["format"] as "json" | "csv" | "ndjson" | undefined) ?? "json") : "json";
  return gw.runs.executeTool(runId, ctx, {
    plan,
    run: (onStep) => module.run(body as never, toolContext(gw, ctx.account.plan), onStep as never),
    format,
    ...(start.warnings ? { warnings: start.warnings } : {}),
    ...(start.background ? { background: true } : {}),
    ...(start.onHandle ? { onHandle: start.onHandle } : {}),
    // Both writes are made now (the embedded store's run calls this inside its final transaction, synchronously);
    // a store that answers later is awaited by its runner through the promise returned.
    onEnd(end) {
      const recorded =
        end.result && plan.tool === "account_watch" ? gw.schedules.recordFollowers(followerReadings(end.result)) : null;
      const ended = start.onEnd?.(end);
      const later = [recorded, ended].filter(
        (x): x is PromiseLike<void> => typeof (x as PromiseLike<void> | null)?.then === "function",
      );
      return later.length > 0 ? Promise.all(later).then(() => undefined) : undefined;
    },
  });
}
