/**
 * The answers of refused plans, in the reference server's words: a data call's `PlanRefusal` (D41, D42) and a
 * tool's `ToolRefusal` (D24, D41) become `400 invalid_params` naming the parameter, or an error code with the
 * fields of its answer (`reason`, `message`, `fix`). Nothing ran and nothing was charged. Pure.
 */
import type { InvalidParams, ServiceUrls } from "@sdgw/validators";
import { MESSAGES } from "./messages.ts";
import type { PlanRefusal } from "./plan.ts";
import type { ToolRefusal } from "./tools/types.ts";

/** How a refusal is answered: `invalid_params` naming what to fix, or a code and the fields of its error answer. */
export type RefusalAnswer =
  | { code: "invalid_params"; invalid: InvalidParams }
  | { code: "not_supported" | "plan_limit"; extra: { reason: string; message: string; fix: Record<string, unknown> } };

const CAPABILITIES = { method: "GET", path: "/v1/capabilities" } as const;

/** The fix note of a tool's `not_supported` (D73 names `confirm` or `scale` for scale=large). */
function toolNote(r: Extract<ToolRefusal, { code: "not_supported" }>): string {
  if (r.reason !== "not_available_yet") return "GET /v1/capabilities lists the platforms of each operation.";
  return r.param === "confirm" ? MESSAGES.largeScaleConfirmNote : MESSAGES.largeScaleNote;
}

/** The answer of a refused data plan or tool plan; `urls.billing` is where a `plan_limit` points. */
export function refusalAnswer(r: PlanRefusal | ToolRefusal, urls: ServiceUrls): RefusalAnswer {
  if ("invalid" in r) return r;
  if ("note" in r) {
    const fix = { allowed: r.allowed, note: r.note, example_call: CAPABILITIES };
    return { code: "not_supported", extra: { reason: r.reason ?? "no_such_capability", message: r.message, fix } };
  }
  if (r.code === "invalid_params") {
    const allowed = r.allowed ? { allowed: r.allowed } : {};
    return { code: "invalid_params", invalid: { param: r.param, message: r.message, ...allowed } };
  }
  const message = `${r.message} Nothing ran and nothing was charged.`;
  if (r.code === "plan_limit") {
    const fix = { param: r.param, action_url: urls.billing, note: "Buy credits to open it, or send a smaller scale." };
    return { code: "plan_limit", extra: { reason: r.reason, message, fix } };
  }
  const allowed = r.allowed ? { allowed: r.allowed } : {};
  const fix = { param: r.param, ...allowed, note: toolNote(r), example_call: CAPABILITIES };
  return { code: "not_supported", extra: { reason: r.reason, message, fix } };
}

/**
 * The `403 plan_limit` a free account gets for what opens after the first purchase: a confirmed `account_watch`
 * with `schedule` (D11, D51: `schedules_need_purchase`) or a confirmed `batch_stats` (D58: `batches_need_purchase`).
 */
export function purchaseRefusal(
  tool: "account_watch" | "batch_stats",
  urls: ServiceUrls,
): RefusalAnswer & { code: "plan_limit" } {
  if (tool === "account_watch") {
    const fix = { param: "schedule", action_url: urls.billing, note: "Buy credits to open schedules." };
    const extra = { reason: "schedules_need_purchase", message: MESSAGES.schedulesNeedPurchase, fix };
    return { code: "plan_limit" as const, extra };
  }
  const fix = { param: "targets", action_url: urls.billing, note: MESSAGES.batchesNeedPurchaseNote };
  return {
    code: "plan_limit" as const,
    extra: { reason: "batches_need_purchase", message: MESSAGES.batchesNeedPurchase, fix },
  };
}
