/**
 * Building answers from ended calls: entries (D5), the single-platform envelope, the fanout answer with its D4
 * status, the targets answer, the error objects inside envelopes (seed table; D13, D36), and credit billing (D7).
 */
import type { AnswerStatus, AppliedParams, CreditBilling, EnvelopeError, Item, Page, Platform } from "@sdgw/types";
import type { ServiceUrls } from "@sdgw/validators";
import type { CallPlan, PlannedCall } from "./plan.ts";
import type { ProviderFailure, ProviderOutcome } from "./providers/port.ts";

/** What a caller's credits look like now, as answers show them in `billing` (D7). */
export interface CreditView {
  balance: number;
  todaySpend: number;
  dailyLimit: number | null;
  dailyRemaining: number | null;
  /** What runs of this scope hold now (part of `todaySpend`). */
  held: number;
}

/** One platform's or target's result (the closed entry shape of D3/D5). */
export interface Entry {
  status: AnswerStatus;
  applied_params: AppliedParams;
  warnings: string[];
  items: Item[];
  page?: Page;
  error?: EnvelopeError;
}

/** A call that ended: its entry and what it costs (its price when `ok` or `empty`, else 0). */
export interface EndedCall {
  call: PlannedCall;
  entry: Entry;
  cost: number;
}

/** The console's capability page of a platform (D36). */
export function capabilitiesUrl(urls: ServiceUrls, platform: string): string {
  return `${new URL(urls.console).origin}/capabilities?platform=${encodeURIComponent(platform)}`;
}

/** The envelope error of a platform failure; on `GET /v1/search` only the seed's four codes stand (D13). */
export function envelopeError(failure: ProviderFailure, scope: "search" | "data", urls: ServiceUrls): EnvelopeError {
  switch (failure.code) {
    case "upstream_error":
      return {
        code: "upstream_error",
        message: failure.message,
        retryable: failure.retryable,
        action_url: urls.status,
      };
    case "rate_limited":
      return {
        code: "rate_limited",
        message: failure.message,
        retryable: true,
        retry_after: Math.max(1, failure.retryAfter),
      };
    case "not_found":
      if (scope === "search")
        return { code: "upstream_error", message: failure.message, retryable: false, action_url: urls.status };
      return {
        code: "not_found",
        message: failure.message,
        retryable: false,
        fix: { note: "Check the id or link; nothing was charged." },
      };
    case "invalid_target":
      if (scope === "search") return { code: "invalid_params", message: failure.message, retryable: false };
      return {
        code: "invalid_target",
        message: failure.message,
        retryable: false,
        fix: { param: failure.param, note: "Send a link or id of the kind this call reads; nothing was charged." },
      };
    case "temporarily_unavailable":
      if (scope === "search")
        return { code: "upstream_error", message: failure.message, retryable: true, action_url: urls.status };
      return {
        code: "temporarily_unavailable",
        message: failure.message,
        retryable: true,
        fix: { action_url: urls.status },
      };
  }
}

/** The entry of a call from what its provider answered. */
export function entryOf(
  call: PlannedCall,
  outcome: ProviderOutcome,
  scope: "search" | "data",
  urls: ServiceUrls,
): EndedCall {
  const base = { applied_params: call.applied, warnings: [...call.warnings] };
  switch (outcome.status) {
    case "ok":
    case "empty": {
      const items = outcome.status === "ok" && outcome.items.length > 0 ? outcome.items : [];
      const entry: Entry = { status: items.length > 0 ? "ok" : "empty", ...base, items };
      if (outcome.warnings) entry.warnings.push(...outcome.warnings);
      if (outcome.page) entry.page = outcome.page;
      return { call, entry, cost: call.price };
    }
    case "error":
      return {
        call,
        entry: { status: "error", ...base, items: [], error: envelopeError(outcome.failure, scope, urls) },
        cost: 0,
      };
    case "not_supported":
      return { call, entry: notSupportedEntry(call, outcome.message, urls).entry, cost: 0 };
    case "timeout":
      return {
        call,
        entry: {
          status: "timeout",
          ...base,
          items: [],
          error: { code: "timeout", message: outcome.message, retryable: false },
        },
        cost: 0,
      };
  }
}

/** The entry of a call the platform does not offer (never run, never charged). */
export function notSupportedEntry(call: PlannedCall, message: string, urls: ServiceUrls): EndedCall {
  return {
    call,
    entry: {
      status: "not_supported",
      applied_params: call.applied,
      warnings: [...call.warnings],
      items: [],
      error: { code: "not_supported", message, retryable: false, action_url: capabilitiesUrl(urls, call.platform) },
    },
    cost: 0,
  };
}

/** D4: `ok` if any is ok; else `empty` if any is empty; else the common failure (`not_supported`, `timeout`), else `error`. */
export function deriveStatus(statuses: readonly AnswerStatus[]): AnswerStatus {
  if (statuses.includes("ok")) return "ok";
  if (statuses.includes("empty")) return "empty";
  const first = statuses[0];
  if ((first === "not_supported" || first === "timeout") && statuses.every((s) => s === first)) return first;
  return "error";
}

/** The data billing block (D7): `cost` is what the run was charged, `balance` the balance after it. */
export function dataBilling(
  cost: number,
  balance: number,
  ended: readonly EndedCall[],
): { cost: number; balance: number; unit: "credits"; pricing: "standard" | "placeholder" } {
  const placeholder = ended.some((e) => e.cost > 0 && e.call.pricing === "placeholder");
  return { cost, balance, unit: "credits", pricing: placeholder ? "placeholder" : "standard" };
}

/** The finished answer of a plan, in its shape. */
export function finishedAnswer(
  plan: CallPlan,
  ended: readonly EndedCall[],
  requestId: string,
  fetchedAt: string,
  charged: number,
  balance: number,
): { body: Record<string, unknown>; status: AnswerStatus } {
  const billing = dataBilling(charged, balance, ended);
  if (plan.shape === "single") {
    const e = ended[0]!;
    const body: Record<string, unknown> = {
      request_id: requestId,
      schema_version: "v1",
      fetched_at: fetchedAt,
      status: e.entry.status,
      applied_params: e.entry.applied_params,
      warnings: e.entry.warnings,
      items: e.entry.items,
    };
    if (e.entry.page) body["page"] = e.entry.page;
    body["platform"] = e.call.platform;
    body["billing"] = billing;
    if (e.entry.error) body["error"] = e.entry.error;
    return { body, status: e.entry.status };
  }
  const status = deriveStatus(ended.map((e) => e.entry.status));
  if (plan.shape === "fanout") {
    const fanout: Partial<Record<Platform, Entry>> = {};
    for (const e of ended) fanout[e.call.platform] = e.entry;
    return {
      body: {
        request_id: requestId,
        schema_version: "v1",
        fetched_at: fetchedAt,
        status,
        warnings: plan.warnings,
        fanout,
        billing,
      },
      status,
    };
  }
  const targets = ended.map((e) => ({ platform: e.call.platform, target: e.call.target!, result: e.entry }));
  return {
    body: {
      request_id: requestId,
      schema_version: "v1",
      fetched_at: fetchedAt,
      status,
      warnings: plan.warnings,
      targets,
      billing,
    },
    status,
  };
}

/** A cell of a 202 answer (D5): a platform's or target's result that has ended. */
export function cellOf(plan: CallPlan, e: EndedCall): Record<string, unknown> {
  return plan.shape === "targets"
    ? { platform: e.call.platform, target: e.call.target!, result: e.entry }
    : { platform: e.call.platform, result: e.entry };
}

/** Credit billing (D7) with a one-sentence `display`. */
export function creditBilling(view: CreditView, cost: number, runHolds = 0): CreditBilling {
  const spent =
    view.dailyLimit === null
      ? `${view.todaySpend} spent today (UTC)`
      : `${view.todaySpend} of ${view.dailyLimit} spent today (UTC)`;
  const holds = runHolds > 0 ? `, of which this run holds ${runHolds}` : "";
  return {
    cost_credits: cost,
    balance_credits: view.balance,
    today_spend_credits: view.todaySpend,
    daily_limit_credits: view.dailyLimit,
    daily_remaining_credits: view.dailyRemaining,
    display: `${view.balance} credits left; ${spent}${holds}.`,
  };
}

/** What the 202 answer of a run still going shows (D5, D6, D47). */
export interface RunningParts {
  /** The `request_id` of the call that started the run (every read of it answers under it). */
  requestId: string;
  handle: string;
  retryAfterSeconds: number;
  /** The caller's credits now, and the run's quote (what it holds). */
  view: CreditView;
  quote: number;
  /** Waves planned, and done so far. */
  waves: { planned: number; done: number };
  /** A tool run's steps so far. */
  steps?: readonly unknown[];
  /** A fanout's or targets' cells ended so far. */
  cells?: readonly unknown[];
}

/** The body of the 202 answer of a run still going: its handle, when to ask again, what ended, nothing charged. */
export function runningAnswer(p: RunningParts): Record<string, unknown> {
  const body: Record<string, unknown> = {
    request_id: p.requestId,
    schema_version: "v1",
    status: "running",
    handle: p.handle,
    retry_after_seconds: p.retryAfterSeconds,
  };
  if (p.steps) body["steps"] = p.steps;
  if (p.cells) body["cells"] = p.cells;
  body["billing"] = creditBilling(p.view, 0, p.quote);
  body["waves"] = p.waves;
  body["charge"] = { quote_credits: p.quote, charged_credits: 0 };
  return body;
}
