/**
 * The answers of `POST /v1/tools/{tool}` (D8): the tool quote (`confirm: false`: plan and price, nothing run) and
 * the finished tool answer (the run's status, items, steps, quote, charge and credit billing).
 */
import type { ToolAnswer, ToolQuoteAnswer } from "@sdgw/types";
import { creditBilling } from "./answers.ts";
import type { CreditView } from "./answers.ts";
import type { RunResult, ToolPlan } from "./tools/types.ts";

/** The tool quote: what the call would run and cost; `billing.cost_credits` 0. */
export function toolQuoteAnswer(requestId: string, plan: ToolPlan, view: CreditView): ToolQuoteAnswer {
  return {
    request_id: requestId,
    schema_version: "v1",
    tool: plan.tool,
    applied_params: plan.applied_params,
    quote: plan.quote,
    billing: creditBilling(view, 0) as ToolQuoteAnswer["billing"],
  };
}

/** What a finished tool answer is made of. */
export interface ToolAnswerParts {
  requestId: string;
  fetchedAt: string;
  plan: ToolPlan;
  result: RunResult;
  /** Credits the run was charged (0 for a failed run). */
  charged: number;
  /** The credit numbers after the charge. */
  view: CreditView;
  /** Warnings before the run's own (a schedule created with this call). */
  warnings: readonly string[];
}

/** The finished tool answer, with the envelope's status rules (`error` exactly for the three failure statuses). */
export function toolAnswer(p: ToolAnswerParts): ToolAnswer {
  const { result } = p;
  const warnings = [...p.warnings, ...result.warnings.filter((w) => !p.warnings.includes(w))];
  const base = {
    request_id: p.requestId,
    schema_version: "v1" as const,
    fetched_at: p.fetchedAt,
    tool: p.plan.tool,
    status: result.status,
    applied_params: p.plan.applied_params,
    warnings,
    items: result.status === "ok" ? result.items : [],
    steps: result.steps,
    quote: p.plan.quote,
    charge: { quote_credits: p.plan.quote.quote_credits, charged_credits: p.charged },
    billing: creditBilling(p.view, p.charged),
  };
  return (
    result.error && result.status !== "ok" && result.status !== "empty" ? { ...base, error: result.error } : base
  ) as ToolAnswer;
}
