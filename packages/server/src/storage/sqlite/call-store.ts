/**
 * The engine's storage port (`CallStore`) and limits (`CallLimits`) over the server's systems: the Idempotency-Key's
 * claim in `Idempotency` (and the answer log), credits held by `Runs.begin` in the `Ledger`, the pause in the
 * service state, and the limits of D27 in memory or Redis. The engine's `chargeCall` runs every charged call
 * through them.
 */
import type { CallStore, ChargePorts } from "@sdgw/engine";
import type { Idempotency } from "./idempotency.ts";
import { fingerprint } from "../idempotency.ts";
import { chargePortLimits, type Limits } from "../../limits/limits.ts";
import type { Runs } from "./runs.ts";
import type { HttpAnswer, RunContext } from "../../runs/types.ts";
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
