/**
 * The engine's storage port (`CallStore`) and limits (`CallLimits`) over the server's systems: the Idempotency-Key's
 * claim in `Idempotency` (and the answer log), credits held by `Runs.begin` in the `Ledger`, the pause in the
 * service state, and the limits of D27 in memory or Redis. The engine's `chargeCall` runs every charged call
 * through them.
 */
import type { CallLimits, CallStore, ChargePorts } from "@sdgw/engine";
import { fingerprint, type Idempotency } from "./idempotency.ts";
import type { Limits } from "./limits.ts";
import type { HttpAnswer, RunContext, Runs } from "./runs.ts";
import type { ServiceState } from "./service.ts";
import type { Store } from "./store.ts";

/** The systems the port is made of. */
export interface CallStoreDeps {
  store: Store;
  idempotency: Idempotency;
  runs: Runs;
  service: ServiceState;
  limits: Limits;
}

/** The storage port and the limits of the engine's `chargeCall`, as the server keeps them. */
export function chargePorts(deps: CallStoreDeps): ChargePorts<RunContext, HttpAnswer> {
  const { store, idempotency, runs, service, limits } = deps;
  const calls: CallStore<RunContext, HttpAnswer> = {
    paused: () => service.paused()?.message ?? null,
    full: () => idempotency.full()?.message ?? null,
    claim({ keyId, idemKey }, call) {
      const claim = idempotency.claim(keyId, idemKey, fingerprint(call.operationId, call.params), call.runId);
      if (claim.kind !== "replay") return claim;
      const headers = { ...claim.headers, "idempotent-replayed": "true" };
      return { kind: "replay", answer: { status: claim.status, headers, body: claim.body } };
    },
    release: ({ keyId, idemKey }) => idempotency.release(keyId, idemKey),
    complete: ({ keyId, idemKey }, answer) => store.tx(() => idempotency.complete({ keyId, idemKey, answer })),
    hold: (ctx, { runId, credits, calls }) => runs.begin(runId, ctx, credits, calls),
  };
  return { store: calls, limits: chargePortLimits(limits) };
}

/** The limits of D27 (in memory or Redis) as the engine's `CallLimits` of a call. */
export function chargePortLimits(limits: Limits): CallLimits<RunContext> {
  return {
    failureBlock: (ctx) => limits.failureBlock(ctx.keyHash),
    keyCall: (ctx) => limits.keyCall(ctx.key.id),
    startRun: (ctx) => limits.startRun(ctx.key.workspace_id),
    endRun: (ctx) => limits.endRun(ctx.key.workspace_id),
  };
}
