/**
 * The shared steps of every charging route, from the idempotency claim to the answer (`charging`), and a data call
 * through them (`runCall`).
 */
import type { CallPlan } from "@sdgw/engine";
import { MESSAGES, REFUSALS, quoteOf } from "@sdgw/engine";
import { newRunId } from "../ids.ts";
import { fingerprint } from "../systems/idempotency.ts";
import type { HttpAnswer, RunContext } from "../systems/runs.ts";
import type { OperationId } from "./admission.ts";
import type { Caller } from "./auth.ts";
import type { RouteDeps } from "./routes/deps.ts";

/** What a call costs: its quote and calls (held, then captured by the run), or `free` (a tool quote: nothing runs). */
export type Price = { credits: number; calls: number; maxCost: unknown; maxCostNote?: string } | "free";

/** One charged call: who calls, what (the operation and its parameters), its Idempotency-Key, price and run. */
export interface ChargeOptions {
  caller: Caller;
  requestId: string;
  operationId: OperationId;
  /** What the idempotency fingerprint compares: the same key with other parameters is a 422. */
  params: unknown;
  idempotencyKey: string | undefined;
  price: Price;
  start: (runId: string, ctx: RunContext) => Promise<HttpAnswer> | HttpAnswer;
}

/**
 * The key is claimed first, in memory (a replay, a 409 or a 422 answers at once), and given back when a limit,
 * `max_cost_credits` or the hold refuses the call, or anything throws before it runs: a refused call leaves no claim
 * behind. A `free` answer (a tool quote) takes the key's rate but no running slot and no hold, and completes its
 * claim at once.
 */
export async function charging(deps: RouteDeps, o: ChargeOptions): Promise<HttpAnswer> {
  const { gw, errors } = deps;
  const { caller, requestId, idempotencyKey: idemKey, price } = o;
  const keyId = caller.key.id;
  const runId = newRunId(gw.now());
  const paused = (message: string) => {
    const fix = { action_url: gw.config.urls.status, note: MESSAGES.pausedNote };
    return errors.fail(
      "temporarily_unavailable",
      requestId,
      { reason: "paused", message: `${message} Nothing ran and nothing was charged.`, fix },
      null,
    );
  };
  // D60: while the service is paused a charged call starts nothing (a quote, which runs nothing, still answers).
  const pause = price === "free" ? null : gw.service.paused();
  if (pause) return paused(`Calls are paused: ${pause.message}`);
  if (idemKey !== undefined) {
    const claim = gw.idempotency.claim(keyId, idemKey, fingerprint(o.operationId, o.params), runId);
    if (claim.kind !== "claimed") return errors.claimTaken(claim, requestId, caller.keyHash);
  }
  let owned = false;
  try {
    // D67: a new keyed call starts nothing while the answer log cannot keep its answer (quota reached, disk
    // full); its replays, 409 and 422 (above) still answer. The claim is given back below.
    const full = price === "free" || idemKey === undefined ? null : gw.idempotency.full();
    if (full) return paused(`New calls with an Idempotency-Key are paused: ${full.message}`);
    const limited =
      (await gw.limits.failureBlock(caller.keyHash)) ??
      (await gw.limits.keyCall(keyId)) ??
      (price === "free" ? null : await gw.limits.startRun(caller.key.workspace_id));
    if (limited) return errors.limit(limited, requestId);
    const ctx: RunContext = {
      requestId,
      key: caller.key,
      account: caller.account,
      keyHash: caller.keyHash,
      ...(idemKey !== undefined ? { idemKey } : {}),
    };
    if (price === "free") {
      const answer = await o.start(runId, ctx);
      if (idemKey !== undefined) gw.store.tx(() => gw.idempotency.complete({ keyId, idemKey, answer }));
      owned = true;
      return answer;
    }
    const { credits, maxCost } = price;
    if (typeof maxCost === "number" && credits > maxCost) {
      gw.limits.endRun(caller.key.workspace_id);
      const refusal = REFUSALS.maxCostExceeded(credits, maxCost, price.maxCostNote);
      return errors.fail("max_cost_exceeded", requestId, refusal, caller.keyHash);
    }
    const refused = gw.runs.begin(runId, ctx, credits, price.calls);
    if (refused) {
      gw.limits.endRun(caller.key.workspace_id);
      return errors.hold(refused, credits, requestId, caller.keyHash);
    }
    owned = true;
    return await o.start(runId, ctx);
  } finally {
    // From the start of the run on, the run owns the claim: it completes it with the answer or gives it back if it
    // breaks.
    if (!owned && idemKey !== undefined) gw.idempotency.release(keyId, idemKey);
  }
}

/** A data call admitted and planned: its quote charged through `charging`, its calls run. */
export interface CallOptions {
  caller: Caller;
  requestId: string;
  operationId: OperationId;
  params: unknown;
  idempotencyKey: string | undefined;
  plan: CallPlan;
  maxCost: unknown;
}

export function runCall(deps: RouteDeps, o: CallOptions): Promise<HttpAnswer> {
  const quote = quoteOf(o.plan);
  const price = { credits: quote.credits, calls: quote.calls, maxCost: o.maxCost };
  const { caller, requestId, operationId, params, idempotencyKey } = o;
  return charging(deps, {
    caller,
    requestId,
    operationId,
    params,
    idempotencyKey,
    price,
    start: (runId, ctx) => deps.gw.runs.execute(runId, ctx, o.plan, quote.credits),
  });
}
