/** Helpers of the tool tests: a context on the simulator, a recording of every provider call, and contract checks. */
import type { Item, Platform, Quote, TimeseriesItem, ToolName } from "@sdgw/types";
import { PLATFORMS } from "@sdgw/types";
import { validateItem, validateToolAnswer, validateToolQuoteAnswer } from "@sdgw/validators";
import { expect } from "vitest";
import type { PlatformProvider, ProviderOutcome, ProviderRequest } from "../../src/providers/port.ts";
import { Simulator, type SimulatorOptions } from "../../src/providers/simulator/index.ts";
import { DAY_MS, dayIso } from "../../src/tools/analysis.ts";
import type { PlanResult, RunResult, ToolContext, ToolPlan } from "../../src/tools/types.ts";

/** The simulator's moment: every simulated date is before it. */
export const ANCHOR = Date.parse("2026-11-20T00:00:00Z");

/** One provider call as the tool made it, and what it got. */
export interface Recorded {
  platform: Platform;
  operation: string;
  params: Record<string, unknown>;
  outcome: ProviderOutcome;
}

/** A context on a fresh simulator whose providers record every call. */
export function simCtx(options: { sim?: SimulatorOptions; ctx?: Partial<ToolContext> } = {}): {
  ctx: ToolContext;
  sim: Simulator;
  calls: Recorded[];
} {
  const sim = new Simulator({ now: () => ANCHOR, ...options.sim });
  const calls: Recorded[] = [];
  const providers = Object.fromEntries(
    PLATFORMS.map((p) => {
      const inner = sim.providers[p];
      const wrapped: PlatformProvider = {
        ...inner,
        unsupported: (op, params) => inner.unsupported(op, params),
        cursorValid: (op, c) => inner.cursorValid(op, c),
        async call(req: ProviderRequest) {
          const outcome = await inner.call(req);
          calls.push({ platform: req.platform, operation: req.operation, params: { ...req.params }, outcome });
          return outcome;
        },
      };
      return [p, wrapped];
    }),
  ) as Record<Platform, PlatformProvider>;
  return { ctx: { providers, now: ANCHOR, accountPlan: "paid", ...options.ctx }, sim, calls };
}

/** The plan of an accepted request (fails the test on a refusal). */
export function planned(r: PlanResult): ToolPlan {
  if (!r.ok) throw new Error(`refused: ${JSON.stringify(r.refusal)}`);
  return r.plan;
}

const BILLING = {
  balance_credits: 1000,
  today_spend_credits: 10,
  daily_limit_credits: null,
  daily_remaining_credits: null,
  display: "1000 credits left; 10 spent today (UTC).",
} as const;

/** Checks a plan as the contract's tool quote answer (D8) and the pricing rule (1 credit per planned call). */
export function expectValidQuote(tool: ToolName, plan: ToolPlan): Quote {
  const answer = {
    request_id: "req_test",
    schema_version: "v1",
    tool,
    applied_params: plan.applied_params,
    quote: plan.quote,
    billing: { ...BILLING, cost_credits: 0 },
  };
  const v = validateToolQuoteAnswer(answer);
  expect(v.ok, JSON.stringify(v.ok ? "" : v.errors)).toBe(true);
  const q = plan.quote;
  expect(q.calls_planned).toBe(q.plan.reduce((n, s) => n + s.calls_planned, 0));
  expect(q.quote_credits).toBe(q.calls_planned);
  expect(q.waves_planned).toBe(q.plan.length);
  expect(q.plan.map((s) => s.wave)).toEqual(q.plan.map((_, i) => i + 1));
  expect(q.plan.every((s) => s.status === "pending" && s.calls_done === 0)).toBe(true);
  expect(q.plan.at(-1)).toMatchObject({ name: "aggregate", calls_planned: 0 });
  expect(q.mode).toBe(q.calls_planned <= 10 ? "inline" : "background");
  return q;
}

/** Checks a run's result as the contract's tool answer (wrapped with the quote, a charge and billing) and its steps. */
export function expectValidRun(tool: ToolName, plan: ToolPlan, r: RunResult): void {
  const charged = r.status === "ok" || r.status === "empty";
  const cost = charged ? Math.max(1, r.calls_charged) : 0;
  const answer: Record<string, unknown> = {
    request_id: "req_test",
    schema_version: "v1",
    fetched_at: "2026-11-20T00:00:05Z",
    tool,
    status: r.status,
    applied_params: plan.applied_params,
    warnings: r.warnings,
    items: r.items,
    steps: r.steps,
    quote: plan.quote,
    charge: { quote_credits: plan.quote.quote_credits, charged_credits: cost },
    billing: { ...BILLING, cost_credits: cost },
  };
  if (r.error) answer["error"] = r.error;
  const v = validateToolAnswer(answer);
  expect(v.ok, `${JSON.stringify(v.ok ? "" : v.errors.slice(0, 5))}\n${JSON.stringify(answer).slice(0, 3000)}`).toBe(
    true,
  );
  for (const item of r.items) expect(validateItem(item).ok).toBe(true);
  expect(r.calls_made).toBeLessThanOrEqual(plan.quote.calls_planned);
  expect(r.calls_charged).toBeLessThanOrEqual(r.calls_made);
  expect(r.steps.map((s) => s.name)).toEqual(plan.quote.plan.map((s) => s.name));
  for (const [i, s] of r.steps.entries()) expect(s.calls_done).toBeLessThanOrEqual(plan.quote.plan[i]!.calls_planned);
  expect(r.steps.reduce((n, s) => n + s.calls_done, 0)).toBe(r.calls_made);
  if (r.status === "ok") expect(r.items.length).toBeGreaterThan(0);
  else expect(r.items).toEqual([]);
}

/** Items of a kind. */
export function ofKind<K extends Item["kind"]>(items: readonly Item[], kind: K): Array<Extract<Item, { kind: K }>> {
  return items.filter((i): i is Extract<Item, { kind: K }> => i.kind === kind);
}

/** Checks a daily series: `days` consecutive UTC midnights, the last one the day of `now - 1 ms`. */
export function expectDaily(ts: TimeseriesItem, days: number, now = ANCHOR): void {
  expect(ts.points).toHaveLength(days);
  const last = Math.floor((now - 1) / DAY_MS);
  for (const [i, p] of ts.points.entries()) expect(p.t).toBe(dayIso(last - days + 1 + i));
}

/** Checks shares: buckets in [0, 1] summing to 1 within 1e-9. */
export function expectShares(buckets: ReadonlyArray<{ value: number }>): void {
  for (const b of buckets) {
    expect(b.value).toBeGreaterThanOrEqual(0);
    expect(b.value).toBeLessThanOrEqual(1);
  }
  expect(Math.abs(buckets.reduce((a, b) => a + b.value, 0) - 1)).toBeLessThan(1e-9);
}

/** Checks a ranking: ranks 1..n, heat not increasing. */
export function expectRanked(items: ReadonlyArray<{ rank: number; heat?: number }>): void {
  expect(items.map((i) => i.rank)).toEqual(items.map((_, i) => i + 1));
  for (let i = 1; i < items.length; i++) expect(items[i]!.heat!).toBeLessThanOrEqual(items[i - 1]!.heat!);
}

/** Whether a moment is inside the `days`-day window ending at `now`. */
export function inDays(published: string | undefined, days: number, now = ANCHOR): boolean {
  if (!published) return false;
  const ms = Date.parse(published);
  const last = Math.floor((now - 1) / DAY_MS);
  return ms <= now && Math.floor(ms / DAY_MS) >= last - days + 1;
}
