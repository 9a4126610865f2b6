/**
 * The shared steps of every charging route, from the idempotency claim to the answer (`charging`), and a data call
 * through them (`runCall`).
 */
import { chargeCall, quoteOf, type Awaitable, type CallPlan, type ChargeOutcome, type Price } from "@sdgw/engine";
import { newRunId } from "../ids.ts";
import type { HttpAnswer, RunContext } from "../runs/types.ts";
import type { OperationId } from "./admission.ts";
import type { Caller } from "./auth.ts";
import { KeyChanged } from "../storage/key-changed.ts";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
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
  const { requestId, idempotencyKey } = o;
  let { caller } = o;
  const { operationId, params, price } = o;
  // D186: a key taken as last read is checked by the statement that admits the call; a call that will not reach
  // that statement (over its max_cost_credits: the engine takes the steps) reads it now, as authentication did.
  if (caller.recheck && price !== "free" && typeof price.maxCost === "number" && price.credits > price.maxCost)
    caller = await caller.recheck();
  const ctx: RunContext = {
    requestId,
    key: caller.key,
    account: caller.account,
    keyHash: caller.keyHash,
    ...(idempotencyKey !== undefined ? { idemKey: idempotencyKey } : {}),
    ...(caller.recheck ? { keyUnchecked: true } : {}),
    ...(o.respondNow ? { respondNow: true } : {}),
  };
  const runId = newRunId(gw.now());
  const call = { caller: ctx, keyId: caller.key.id, runId, operationId, params, idempotencyKey, price };
  let out: ChargeOutcome<HttpAnswer>;
  try {
    out = await chargeCall(rechecking(gw.calls, caller), { ...call, start: () => o.start(runId, ctx) });
  } catch (e) {
    // The key's row refused the call in its admission (nothing claimed or held): read the key as authentication
    // does, whose refusal this throws; if it lets the key call after all (changed back meanwhile), admit it so.
    if (!(e instanceof KeyChanged) || !caller.recheck) throw e;
    return charging(deps, { ...o, caller: await caller.recheck() });
  }
  if (out.kind === "refused") return errors.charge(out.refusal, requestId, caller.keyHash);
  return out.answer;
}

/**
 * D186: the limits of a caller taken as last read, each refusal preceded by a read of the key (the answer of a key
 * that may no longer call is authentication's, which comes first); the ports as they are for a caller read now.
 */
function rechecking(ports: Gateway["calls"], caller: Caller): Gateway["calls"] {
  const { recheck } = caller;
  if (!recheck) return ports;
  const { limits } = ports;
  const checked = async <T>(refusal: T | null): Promise<T | null> => {
    if (refusal !== null) await recheck();
    return refusal;
  };
  return {
    store: ports.store,
    limits: {
      failureBlock: async (c) => checked(await limits.failureBlock(c)),
      keyCall: async (c) => checked(await limits.keyCall(c)),
      startRun: async (c) => checked(await limits.startRun(c)),
      endRun: (c) => limits.endRun(c),
    },
  };
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
