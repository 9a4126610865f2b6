/**
 * The price and mode of a tool run, decided in one place.
 *
 * **Pricing rule.** A tool is quoted 1 credit for every provider call its plan may make
 * (`quote_credits = calls_planned × CREDITS_PER_CALL`); the aggregation wave makes no call and costs nothing.
 * `calls_planned` is an upper bound: a wave that finds less to read makes fewer calls, and a call that fails is
 * never charged (the seed), so what a run may charge is `creditsFor(calls_charged) ≤ quote_credits`.
 *
 * **Mode rule.** A plan of at most `INLINE_MAX_CALLS` calls runs inline (the answer comes in the response); a
 * larger plan runs in the background (HTTP 202 with a handle when confirmed, D8).
 */
import type { Quote, Step } from "@sdgw/types";

/** Credits per provider call a plan makes. */
export const CREDITS_PER_CALL = 1;

/** The largest `calls_planned` of an inline run; a plan with more calls runs in the background. */
export const INLINE_MAX_CALLS = 10;

/** The credits of `calls` provider calls. */
export function creditsFor(calls: number): number {
  return calls * CREDITS_PER_CALL;
}

/** What a finished tool run is charged: `creditsFor(calls_charged)`, at most its quote; nothing when it failed. */
export function toolCharge(result: { status: string; calls_charged: number }, quote: number): number {
  const failed = result.status === "error" || result.status === "not_supported" || result.status === "timeout";
  return failed ? 0 : Math.min(creditsFor(result.calls_charged), quote);
}

/** `inline` up to `inlineMax` calls, else `background`. */
export function modeFor(callsPlanned: number, inlineMax: number = INLINE_MAX_CALLS): Quote["mode"] {
  return callsPlanned <= inlineMax ? "inline" : "background";
}

/** One wave of a plan: a step name and the provider calls it may make. */
export interface WavePlan {
  name: string;
  calls: number;
}

/**
 * The quote of a list of waves, in order (wave numbers 1..n, every step `pending`). A final `aggregate` step with
 * no calls is added; waves with no calls are left out.
 */
export function quoteOf(waves: readonly WavePlan[], inlineMax: number = INLINE_MAX_CALLS): Quote {
  const named = [...waves.filter((w) => w.calls > 0), { name: "aggregate", calls: 0 }];
  const plan: Step[] = named.map((w, i) => ({
    wave: i + 1,
    name: w.name,
    status: "pending",
    calls_planned: w.calls,
    calls_done: 0,
  }));
  const calls = plan.reduce((n, s) => n + s.calls_planned, 0);
  return {
    mode: modeFor(calls, inlineMax),
    quote_credits: creditsFor(calls),
    waves_planned: plan.length,
    calls_planned: calls,
    plan,
  };
}
