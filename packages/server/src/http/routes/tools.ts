/**
 * `POST /v1/tools/{tool}`: D50's order for a tool (D51): a wrong body, link or platform before the key, what depends
 * on the account (scale, batches, schedules) after it; `confirm: false` answers the quote, free.
 */
import type { FastifyInstance } from "fastify";
import type { Schedule, ToolName } from "@sdgw/types";
import { TOOL_NAMES } from "@sdgw/types";
import { SCHEDULES_PER_WORKSPACE } from "../../storage/schedules.ts";
import type { HttpAnswer } from "../../runs/types.ts";
import { toolQuoteAnswer } from "@sdgw/engine";
import { planTool, startToolRun } from "../../runs/tool-runs.ts";
import type { ToolPlan, ToolRefusal } from "@sdgw/engine";
import { admit, callerOf, type OperationId } from "../admission.ts";
import { jsonAnswer, Refusal } from "../answer.ts";
import type { Caller } from "../auth.ts";
import { charging } from "../charging.ts";
import {
  MESSAGES,
  REFUSALS,
  TOOL_OPERATION_IDS,
  purchaseRefusal,
  scheduleParams,
  tooManySchedules,
} from "@sdgw/engine";
import { respondsNow } from "../respond-now.ts";
import { handler, type RouteDeps } from "./deps.ts";

type Every = { every: Schedule["every"] };

export function registerToolRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { gw } = deps;
  app.post<{ Params: { tool: string } }>(
    "/v1/tools/:tool",
    handler(deps, async (req, requestId) => {
      const name = (req.params as { tool: string }).tool;
      const operationId = (TOOL_OPERATION_IDS as Record<string, OperationId>)[name];
      if (!operationId || !Object.hasOwn(TOOL_OPERATION_IDS, name)) return noSuchTool(deps, name, requestId);
      const tool = name as ToolName;
      const { body, headers, keyHash } = admit(deps, req, requestId, { operationId, body: true });
      const early = planTool(gw, tool, body, "paid");
      if (!early.ok && beforeAuth(early.refusal)) return deps.errors.plan(early.refusal, requestId, keyHash);
      const caller = await callerOf(deps, headers, requestId, { needsReadData: true, presentedHash: keyHash });
      const planned = planTool(gw, tool, body, caller.account.plan);
      if (!planned.ok) return deps.errors.plan(planned.refusal, requestId, caller.keyHash);
      const confirmed = body["confirm"] !== false;
      const schedule = tool === "account_watch" && confirmed ? (body["schedule"] as Every | undefined) : undefined;
      await refuseByAccount(deps, { tool, caller, requestId, confirmed, schedule });
      const idempotencyKey = headers["idempotency-key"];
      return runTool(deps, {
        caller,
        requestId,
        operationId,
        body,
        idempotencyKey,
        plan: planned.plan,
        confirmed,
        schedule,
        respondNow: respondsNow(headers),
      });
    }),
  );
}

/** `404 not_found` for a name that is no tool (no key failure counted). */
function noSuchTool(deps: RouteDeps, name: string, requestId: string): HttpAnswer {
  return deps.errors.fail("not_found", requestId, REFUSALS.noSuchTool(name, TOOL_NAMES), null);
}

/** A refusal that needs no account to decide (the request itself is wrong), decided before authentication (D50). */
const beforeAuth = (r: ToolRefusal) =>
  r.code === "invalid_params" || (r.code === "not_supported" && r.reason === "no_such_capability");

/**
 * What the account does not open (D51, D58): a confirmed batch on a free account; a schedule on a free account or in
 * a workspace at its schedules. Throws the refusal.
 */
async function refuseByAccount(
  deps: RouteDeps,
  o: { tool: ToolName; caller: Caller; requestId: string; confirmed: boolean; schedule: Every | undefined },
): Promise<void> {
  const { gw, errors } = deps;
  const { caller, requestId } = o;
  const needsPurchase =
    caller.account.plan !== "free"
      ? null
      : o.tool === "batch_stats" && o.confirmed
        ? "batch_stats"
        : o.schedule
          ? "account_watch"
          : null;
  if (needsPurchase)
    throw new Refusal(errors.refused(purchaseRefusal(needsPurchase, gw.config.urls), requestId, caller.keyHash));
  if (!o.schedule) return;
  if ((await gw.schedules.count(caller.key.workspace_id)) >= SCHEDULES_PER_WORKSPACE) {
    throw new Refusal(errors.invalid(tooManySchedules(SCHEDULES_PER_WORKSPACE), requestId, caller.keyHash));
  }
}

/** A tool call planned and allowed: who calls, its body, Idempotency-Key and plan, whether it runs, its schedule. */
interface ToolCall {
  caller: Caller;
  requestId: string;
  operationId: OperationId;
  body: Record<string, unknown>;
  idempotencyKey: string | undefined;
  plan: ToolPlan;
  confirmed: boolean;
  schedule: Every | undefined;
  /** Answer 202 as soon as the run started (D174). */
  respondNow: boolean;
}

/**
 * A tool call after its plan, through `charging`: `confirm: false` answers the quote, free; a confirmed call holds
 * the quote and runs; a schedule asked for is created once the hold is taken (the call is its first run).
 */
function runTool(deps: RouteDeps, o: ToolCall): Promise<HttpAnswer> {
  const { gw } = deps;
  const { caller, requestId, operationId, body, idempotencyKey, plan, schedule } = o;
  const call = { caller, requestId, operationId, params: body, idempotencyKey };
  if (!o.confirmed) {
    return charging(deps, {
      ...call,
      price: "free",
      start: async () =>
        jsonAnswer(toolQuoteAnswer(requestId, plan, await gw.ledger.view(caller.account.id, caller.key))),
    });
  }
  const price = {
    credits: plan.quote.quote_credits,
    calls: plan.quote.calls_planned,
    maxCost: body["max_cost_credits"],
    tool: true,
  };
  return charging(deps, {
    ...call,
    price,
    ...(o.respondNow ? { respondNow: true } : {}),
    start: async (runId, ctx) => {
      const warnings: string[] = [];
      if (schedule) {
        const rest = Object.fromEntries(
          Object.entries(body).filter(([k]) => k !== "schedule" && k !== "confirm" && k !== "max_cost_credits"),
        );
        const created = await gw.schedules.create({
          workspaceId: caller.key.workspace_id,
          accountId: caller.account.id,
          keyId: caller.key.id,
          body: rest,
          params: scheduleParams(plan.applied_params),
          every: schedule.every,
        });
        warnings.push(MESSAGES.scheduleCreated(created));
      }
      return startToolRun(gw, { runId, ctx, body, plan, warnings });
    },
  });
}
