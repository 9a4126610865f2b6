/**
 * Builds the answers of charging calls from a plan and the outcome of each unit: the single-platform envelope,
 * the fanout answer (D3, D4), the targets answer (D5), the tool answer and quote (D8) and the 202 handle answer,
 * with their billing (D7). Items come from the fixtures (./pools.ts); failures carry the error objects of the
 * seed's closed table (D13, D36), taken from a fixture of the operation when it has one.
 */
import type { AnswerStatus, AppliedParams, ErrorCode, Item, OperationId, Quote, Step } from "@sdgw/types";
import type { ServiceUrls } from "@sdgw/validators";
import { FIXTURES, ROUTES } from "./generated/routes.ts";
import type { Plan, Unit } from "./plan.ts";
import { itemsFor } from "./pools.ts";
import { clone, isObject, timestamp } from "./util.ts";

/** What one unit (a platform, a target, or the call) ended as: a status and, for `error`, its code. */
export interface Outcome {
  status: AnswerStatus;
  code?: ErrorCode;
  /** The message of a `not_supported` the platform's capabilities decide (D41), instead of a fixture's. */
  message?: string;
}

/** Everything a builder needs besides the plan. */
export interface RenderContext {
  requestId: string;
  now: number;
  /** The balance to show (after this answer's charge). */
  balance: number;
  /** Credits spent today, after this answer's charge. */
  spentToday: number;
  /** Pages a paged result has (the last one answers `has_more: false`). */
  pages: number;
  /** Seconds of `Retry-After`. */
  retryAfter: number;
  urls: ServiceUrls;
  /** Records a cursor the mock gives out, and returns it. */
  issueCursor(op: OperationId, platform: string, page: number): string;
}

const charged = (o: Outcome) => o.status === "ok" || o.status === "empty";

/**
 * Credits a plan costs with these outcomes: one per unit that ended `ok` or `empty`; a tool that ended so, its
 * quote (the mock's runs make every planned call and each answers; D51: never more than the quote), else 0.
 */
export function costOf(plan: Plan, outcomes: Outcome[]): number {
  if (plan.shape === "tool") return charged(outcomes[0]!) ? plan.quote : 0;
  return outcomes.filter(charged).length;
}

/** D4: `ok` if any is ok; else `empty` if any is empty; else the common failure when all failed alike, else `error`. */
export function deriveStatus(statuses: AnswerStatus[]): AnswerStatus {
  if (statuses.includes("ok")) return "ok";
  if (statuses.includes("empty")) return "empty";
  const first = statuses[0]!;
  return (first === "not_supported" || first === "timeout") && statuses.every((s) => s === first) ? first : "error";
}

/** Credit billing (D7). */
export function creditBilling(cost: number, balance: number, spentToday: number) {
  return {
    cost_credits: cost,
    balance_credits: balance,
    today_spend_credits: spentToday,
    daily_limit_credits: null,
    daily_remaining_credits: null,
    display: `${balance} credits left; ${spentToday} spent today (UTC).`,
  };
}

// ------------------------------------------------------------------------------------------------ error objects

type ErrorObject = Record<string, unknown> & { code: string; message: string; retryable: boolean };

/** Every error object of the operation's fixtures (envelopes, tool answers, fanout entries, target cells), with the platform named in it. */
function fixtureErrors(op: OperationId): Array<{ platform: string | null; error: ErrorObject }> {
  const out: Array<{ platform: string | null; error: ErrorObject }> = [];
  for (const f of ROUTES[op].fixtures) {
    const body = FIXTURES[f.file];
    if (!isObject(body) || f.shape === "error" || f.mediaType !== "application/json") continue;
    if (isObject(body["error"])) out.push({ platform: typeof body["platform"] === "string" ? body["platform"] : null, error: body["error"] as ErrorObject });
    if (isObject(body["fanout"])) {
      for (const [p, e] of Object.entries(body["fanout"])) if (isObject(e) && isObject(e["error"])) out.push({ platform: p, error: e["error"] as ErrorObject });
    }
    if (Array.isArray(body["targets"])) {
      for (const c of body["targets"]) {
        if (isObject(c) && isObject(c["result"]) && isObject(c["result"]["error"])) out.push({ platform: String(c["platform"]), error: c["result"]["error"] as ErrorObject });
      }
    }
  }
  return out;
}

/** A fixture's error object re-aimed at another platform: its name in the message and in a capability link. */
function retarget(error: ErrorObject, from: string | null, to: string): ErrorObject {
  const copy = clone(error);
  if (from && from !== to) {
    copy.message = copy.message.split(from).join(to);
    if (typeof copy["action_url"] === "string") copy["action_url"] = copy["action_url"].replace(`platform=${from}`, `platform=${to}`);
  }
  return copy;
}

/**
 * The error object of a failed unit, inside an HTTP 200 answer: the seed's closed objects (no `fix`) for its six
 * codes, and `fix` for the three of D13. `withFix` false keeps the search table's closed objects (fanout entries).
 */
export function envelopeError(op: OperationId, outcome: Outcome, unit: Unit, ctx: RenderContext): ErrorObject {
  const code = outcome.status === "error" ? (outcome.code ?? "upstream_error") : outcome.status;
  const p = unit.platform;
  const origin = new URL(ctx.urls.console).origin;
  if (code === "not_supported" && outcome.message) return { code, message: outcome.message, retryable: false, action_url: `${origin}/capabilities?platform=${encodeURIComponent(p)}` };
  const fromFixture = fixtureErrors(op).find((e) => e.error.code === code);
  if (fromFixture) {
    const error = retarget(fromFixture.error, fromFixture.platform, p);
    if (isObject(error["fix"]) && unit.param && (code === "not_found" || code === "invalid_target")) error["fix"]["param"] = unit.param;
    return error;
  }
  const param = unit.param ?? "id";
  switch (code) {
    case "rate_limited":
      return { code, message: `${p} is limiting how fast the gateway may read; nothing was charged. Ask again in ${ctx.retryAfter} seconds.`, retryable: true, retry_after: ctx.retryAfter };
    case "insufficient_balance":
      return { code, message: `The balance does not cover this ${p} call; nothing ran and nothing was charged.`, retryable: false, action_url: ctx.urls.billing };
    case "upstream_error":
      return { code, message: `${p} answered HTTP 502; nothing was charged. A retry in a few minutes usually works.`, retryable: true, action_url: ctx.urls.status };
    case "invalid_params":
      return { code, message: `${p} refused the parameters; nothing was charged.`, retryable: false };
    case "not_supported":
      return { code, message: `${p} does not offer this action; nothing was charged.`, retryable: false, action_url: `${origin}/capabilities?platform=${p}` };
    case "timeout":
      return { code, message: `${p} gave no result in time and it is unknown whether it ran. Nothing was charged; it is not retried automatically.`, retryable: false };
    case "not_found":
      return { code, message: `This ${p} object is missing, private or deleted; nothing was charged.`, retryable: false, fix: { param, note: "Check the id or link; nothing was charged." } };
    case "invalid_target":
      return { code, message: `This ${param} does not point at a valid ${p} target; nothing was charged.`, retryable: false, fix: { param, note: `Send an ${param} of what this route reads.` } };
    case "temporarily_unavailable":
      return { code, message: `Reads of ${p} are paused; nothing was charged.`, retryable: true, fix: { action_url: ctx.urls.status } };
    default:
      throw new Error(`@sdgw/mock: ${code} cannot stand inside an envelope`);
  }
}

// ------------------------------------------------------------------------------------------------ items and pages

/** The items of one unit's `ok` result: from the fixtures, at most `count`, renamed per page, aimed at the target. */
function unitItems(plan: Plan, unit: Unit, index: number): Item[] {
  const items = itemsFor(plan.itemOp, unit.platform, plan.count, plan.kinds);
  // Each target of a list gets its own item: rotate through the fixture's items.
  if (plan.shape === "targets" && items.length > 1 && (plan.op === "detail" || plan.op === "userProfile")) items.unshift(...items.splice(index % items.length, 1));
  const rows = plan.op === "detail" || plan.op === "userProfile" ? items.slice(0, 1) : items;
  return rows.map((item, i) => {
    const out = { ...item } as Record<string, unknown>;
    if (plan.page > 1 && typeof out["id"] === "string") out["id"] = `${out["id"]}-p${plan.page}`;
    if (plan.page > 1 && typeof out["rank"] === "number") out["rank"] = (plan.page - 1) * rows.length + i + 1;
    if (i === 0 && unit.target && (out["kind"] === "item" || out["kind"] === "profile_card")) {
      if (unit.param === "id") out["id"] = unit.target;
      if (unit.param === "url") out["url"] = unit.target;
    }
    return out as Item;
  });
}

/** `page` of a unit's result: more pages until `pages`, each with a cursor the mock records. */
function pageOf(plan: Plan, unit: Unit, outcome: Outcome, ctx: RenderContext) {
  if (!plan.paged && !(plan.shape === "fanout" && (plan.op === "search" || plan.op === "searchPost"))) return undefined;
  if (outcome.status === "empty" || plan.page >= ctx.pages) return { has_more: false as const };
  if (outcome.status !== "ok") return undefined;
  return { has_more: true as const, cursor: ctx.issueCursor(plan.op, unit.platform, plan.page + 1) };
}

/** One unit's result, in the fields every shape shares. */
function unitResult(plan: Plan, unit: Unit, index: number, outcome: Outcome, applied: AppliedParams, ctx: RenderContext) {
  const result: Record<string, unknown> = { status: outcome.status, applied_params: applied, warnings: [], items: [] };
  if (outcome.status === "ok") result["items"] = unitItems(plan, unit, index);
  const page = pageOf(plan, unit, outcome, ctx);
  if (page) result["page"] = page;
  if (outcome.status !== "ok" && outcome.status !== "empty") result["error"] = envelopeError(plan.op, outcome, unit, ctx);
  return result;
}

function appliedFor(plan: Plan, unit: Unit): AppliedParams {
  if (plan.shape === "fanout") return { platform: unit.platform, ...plan.applied };
  if (plan.shape === "targets" && unit.param && unit.target) return { platform: unit.platform, [unit.param]: unit.target, ...withoutPlatform(plan.applied) };
  return plan.applied;
}

function withoutPlatform(applied: AppliedParams): AppliedParams {
  const copy = { ...applied };
  delete copy["platform"];
  return copy;
}

const dataBilling = (cost: number, ctx: RenderContext) => ({ cost, balance: ctx.balance, unit: "credits", pricing: "standard" });

// ------------------------------------------------------------------------------------------------ answers

/** The finished answer of a charging call (HTTP 200), with `cost` as charged and `balance` as given. */
export function renderFinished(plan: Plan, outcomes: Outcome[], ctx: RenderContext): Record<string, unknown> {
  const head = { request_id: ctx.requestId, schema_version: "v1", fetched_at: timestamp(ctx.now) };
  const cost = costOf(plan, outcomes);
  switch (plan.shape) {
    case "envelope": {
      const unit = plan.units[0]!;
      const r = unitResult(plan, unit, 0, outcomes[0]!, plan.applied, ctx);
      const { status, applied_params, warnings, items, page, error } = r;
      return { ...head, status, applied_params, warnings, platform: unit.platform, items, ...(page ? { page } : {}), ...(error ? { error } : {}), billing: dataBilling(cost, ctx) };
    }
    case "fanout": {
      const fanout = Object.fromEntries(plan.units.map((u, i) => [u.platform, unitResult(plan, u, i, outcomes[i]!, appliedFor(plan, u), ctx)]));
      return { ...head, status: deriveStatus(outcomes.map((o) => o.status)), warnings: [...plan.warnings], fanout, billing: dataBilling(cost, ctx) };
    }
    case "targets": {
      const targets = plan.units.map((u, i) => ({ platform: u.platform, target: u.target!, result: unitResult(plan, u, i, outcomes[i]!, appliedFor(plan, u), ctx) }));
      return { ...head, status: deriveStatus(outcomes.map((o) => o.status)), warnings: [], targets, billing: dataBilling(cost, ctx) };
    }
    case "tool":
      return renderTool(plan, outcomes[0]!, ctx);
  }
}

/** How a tool run's steps stand: not started, running after `wavesDone` waves, or ended `ok`/`empty` or failed. */
type StepsAt = { at: "pending" } | { at: "running"; wavesDone: number } | { at: "ended"; failed: boolean };

/**
 * The steps of a tool run (D6), from its quote's plan (D51). A finished run made every planned call; a run whose
 * calls all failed shows its first wave `failed`, the waves after it `done` with no calls (nothing left to read),
 * and `aggregate` `failed`, as the server's runner does.
 */
function steps(plan: Plan, where: StepsAt): Step[] {
  return (plan.toolQuote?.plan ?? []).map((s, i, all): Step => {
    const last = i === all.length - 1;
    const step = (status: Step["status"], done: number): Step => ({ wave: s.wave, name: s.name, status, calls_planned: s.calls_planned, calls_done: done });
    switch (where.at) {
      case "pending":
        return step("pending", 0);
      case "running":
        return s.wave <= where.wavesDone ? step("done", s.calls_planned) : s.wave === where.wavesDone + 1 ? step("running", 0) : step("pending", 0);
      case "ended":
        if (!where.failed) return step("done", s.calls_planned);
        return i === 0 ? step("failed", s.calls_planned) : last ? step("failed", 0) : step("done", 0);
    }
  });
}

/** The tool's quote (D8, D51): its mode, credits, waves and calls, and the plan of steps, all pending. */
export function toolQuote(plan: Plan): Quote {
  const quote = plan.toolQuote!;
  return { ...quote, plan: steps(plan, { at: "pending" }) };
}

function toolItems(plan: Plan): Item[] {
  return itemsFor(plan.op, null, 1000).slice(0, plan.op === "findCreators" || plan.op === "viralFinder" ? plan.count : undefined);
}

function renderTool(plan: Plan, outcome: Outcome, ctx: RenderContext): Record<string, unknown> {
  const ok = charged(outcome);
  const failed = !ok;
  const answer: Record<string, unknown> = {
    request_id: ctx.requestId,
    schema_version: "v1",
    fetched_at: timestamp(ctx.now),
    tool: plan.tool,
    status: outcome.status,
    applied_params: plan.applied,
    warnings: [...plan.warnings],
    items: outcome.status === "ok" ? toolItems(plan) : [],
    steps: steps(plan, { at: "ended", failed }),
    quote: toolQuote(plan),
    charge: { quote_credits: plan.quote, charged_credits: ok ? plan.quote : 0 },
    billing: creditBilling(ok ? plan.quote : 0, ctx.balance, ctx.spentToday),
  };
  if (failed) answer["error"] = envelopeError(plan.op, outcome, plan.units[0]!, ctx);
  return answer;
}

/** The answer of a tool call with `confirm: false`: the plan and price; nothing ran (D8). Its mode is the plan's (D51). */
export function renderQuote(plan: Plan, ctx: RenderContext): Record<string, unknown> {
  return {
    request_id: ctx.requestId,
    schema_version: "v1",
    tool: plan.tool,
    applied_params: plan.applied,
    quote: toolQuote(plan),
    billing: creditBilling(0, ctx.balance, ctx.spentToday),
  };
}

/**
 * The 202 answer of a run still going (charge 0): `handle`, `retry_after_seconds`, and the progress after
 * `done` of `of` reads: the cells already ended for a fanout or a list of targets (D5), the steps of a tool (D6).
 */
export function renderRunning(plan: Plan, outcomes: Outcome[], handle: string, done: number, of: number, ctx: RenderContext): Record<string, unknown> {
  const answer: Record<string, unknown> = { request_id: ctx.requestId, schema_version: "v1", status: "running", handle, retry_after_seconds: ctx.retryAfter };
  if (plan.shape === "fanout" || plan.shape === "targets") {
    const ended = Math.floor((plan.units.length * done) / of);
    answer["cells"] = plan.units.slice(0, ended).map((u, i) => {
      const result = unitResult(plan, u, i, outcomes[i]!, appliedFor(plan, u), ctx);
      return plan.shape === "targets" ? { platform: u.platform, target: u.target!, result } : { platform: u.platform, result };
    });
  }
  const wavesPlanned = plan.shape === "tool" ? plan.toolQuote!.waves_planned : 1;
  const wavesDone = Math.min(wavesPlanned - 1, Math.floor((wavesPlanned * done) / of));
  if (plan.shape === "tool") answer["steps"] = steps(plan, { at: "running", wavesDone });
  answer["billing"] = creditBilling(0, ctx.balance, ctx.spentToday);
  answer["waves"] = { planned: wavesPlanned, done: wavesDone };
  answer["charge"] = { quote_credits: plan.quote, charged_credits: 0 };
  return answer;
}

