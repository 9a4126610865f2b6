/**
 * The shared steps of every charging route, from the idempotency claim to the answer (`charging`), and a data call
 * through them (`runCall`).
 */
import { chargeCall, quoteOf, type Awaitable, type CallPlan, type Price } from "@sdgw/engine";
import { newRunId } from "../ids.ts";
import type { HttpAnswer, RunContext } from "../systems/runs.ts";
import type { OperationId } from "./admission.ts";
import type { Caller } from "./auth.ts";
import type { RouteDeps } from "./routes/deps.ts";

/** What a call costs: its quote and calls (held, then captured by the run), or `free` (a tool quote: nothing runs). */
export type { Price };

/** One charged call: who calls, what (the operation and its parameters), its Idempotency-Key, price and run. */
export interface ChargeOptions {
  caller: Caller;
  requestId: string;
  operationId: OperationId;
  /** What the idempotency fingerprint compares: the same key with other parameters is a 422. */
  params: unknown;
  idempotencyKey: string | undefined;
  price: Price;
  /** Answer 202 as soon as the run started (D174: the MCP layer's task-augmented call), not after `waitMs`. */
  respondNow?: boolean;
  start: (runId: string, ctx: RunContext) => Awaitable<HttpAnswer>;
}

/**
 * A charged call through the engine's `chargeCall` over the server's storage port (`gw.calls`): the pause, the
 * Idempotency-Key's claim, the limits, `max_cost_credits` and the hold, then `start`; a refusal in the engine's words.
 */
export async function charging(deps: RouteDeps, o: ChargeOptions): Promise<HttpAnswer> {
  const { gw, errors } = deps;
  const { caller, requestId, idempotencyKey } = o;
  const ctx: RunContext = {
    requestId,
    key: caller.key,
    account: caller.account,
    keyHash: caller.keyHash,
    ...(idempotencyKey !== undefined ? { idemKey: idempotencyKey } : {}),
    ...(o.respondNow ? { respondNow: true } : {}),
  };
  const runId = newRunId(gw.now());
  const { operationId, params, price } = o;
  const call = { caller: ctx, keyId: caller.key.id, runId, operationId, params, idempotencyKey, price };
  const out = await chargeCall(gw.calls, { ...call, start: () => o.start(runId, ctx) });
  if (out.kind === "refused") return errors.charge(out.refusal, requestId, caller.keyHash);
  return out.answer;
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
  /** Answer 202 as soon as the run started (D174). */
  respondNow?: boolean;
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
    ...(o.respondNow ? { respondNow: true } : {}),
    start: (runId, ctx) => deps.gw.runs.execute(runId, ctx, o.plan, quote.credits),
  });
}
