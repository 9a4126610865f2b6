/**
 * The HTTP layer's refusals as answers: the error structure of the validators under the contract's status, and the
 * failure count (D11) of the key that was sent for a 4xx other than 409 and 429.
 */
import { errorAnswer, invalidParamsAnswer, type HttpErrorCode, type InvalidParams } from "@sdgw/validators";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import { chargeRefusalAnswer, limitAnswer, refusalAnswer, type ChargeRefusal, type LimitRefusal } from "@sdgw/engine";
import { MESSAGES, type PlanRefusal, type RefusalAnswer, type ToolRefusal } from "@sdgw/engine";
import type { HttpAnswer } from "../runs/types.ts";
import { fromError, jsonAnswer } from "./answer.ts";

export class HttpErrors {
  private readonly gw: Gateway;

  constructor(gw: Gateway) {
    this.gw = gw;
  }

  /** The options of `errorAnswer`: the gateway's links and clock. */
  opts() {
    return { urls: this.gw.config.urls, now: new Date(this.gw.now()) };
  }

  /** An error answer; a 4xx other than 409 and 429 also counts as a failed call of the key that was sent. */
  fail(code: HttpErrorCode, requestId: string, extra: Record<string, unknown>, keyHash: string | null): HttpAnswer {
    const a = errorAnswer(code, requestId, extra as never, this.opts());
    if (keyHash && a.status >= 400 && a.status < 500 && a.status !== 409 && a.status !== 429)
      this.gw.limits.recordFailure(keyHash);
    return fromError(a);
  }

  invalid(invalidParams: InvalidParams, requestId: string, keyHash: string | null): HttpAnswer {
    if (keyHash) this.gw.limits.recordFailure(keyHash);
    return jsonAnswer(invalidParamsAnswer(invalidParams, requestId), 400);
  }

  /** A 500 that echoes nothing. */
  internal(requestId: string, extra: Record<string, unknown> = {}): HttpAnswer {
    return fromError(errorAnswer("internal_error", requestId, extra as never, this.opts()));
  }

  /** A refused data or tool plan (the engine's `refusalAnswer`, one wording for the server and the mock). */
  plan(r: PlanRefusal | ToolRefusal, requestId: string, keyHash: string | null): HttpAnswer {
    return this.refused(refusalAnswer(r, this.gw.config.urls), requestId, keyHash);
  }

  /** A refusal the engine worded: `invalid_params` naming the parameter, or its code with its fields. */
  refused(a: RefusalAnswer, requestId: string, keyHash: string | null): HttpAnswer {
    if (a.code === "invalid_params") return this.invalid(a.invalid, requestId, keyHash);
    return this.fail(a.code, requestId, a.extra, keyHash);
  }

  /** D108: the shared database does not answer: 503 `temporarily_unavailable` (reason `paused`), nothing charged. */
  databaseUnavailable(requestId: string): HttpAnswer {
    const fix = { action_url: this.gw.config.urls.status, note: MESSAGES.pausedNote };
    return this.fail(
      "temporarily_unavailable",
      requestId,
      { reason: "paused", message: MESSAGES.databaseUnavailable, fix },
      null,
    );
  }

  /** A limit that refused a call (D27, D107), in the engine's words. */
  limit(r: LimitRefusal, requestId: string): HttpAnswer {
    const a = limitAnswer(r, this.gw.config.urls);
    return this.fail(a.code, requestId, a.extra, null);
  }

  /** A charged call refused before it ran (the engine's `chargeCall`), in the engine's words. */
  charge(r: ChargeRefusal, requestId: string, keyHash: string): HttpAnswer {
    const { urls, inProgressRetrySeconds } = this.gw.config;
    const a = chargeRefusalAnswer(r, { urls, now: this.gw.now(), inProgressRetrySeconds });
    if (a.code === "internal_error") return this.internal(requestId, a.extra);
    return this.fail(a.code, requestId, a.extra, a.failure ? keyHash : null);
  }
}
