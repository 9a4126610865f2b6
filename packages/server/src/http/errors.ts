/**
 * The HTTP layer's refusals as answers: the error structure of the validators under the contract's status, and the
 * failure count (D11) of the key that was sent for a 4xx other than 409 and 429.
 */
import {
  errorAnswer,
  invalidParamsAnswer,
  nextUtcMidnight,
  type HttpErrorCode,
  type InvalidParams,
} from "@sdgw/validators";
import type { Gateway } from "../gateway.ts";
import { refusalAnswer, type PlanRefusal, type RefusalAnswer, type ToolRefusal } from "@sdgw/engine";
import type { Claim } from "../systems/idempotency.ts";
import type { HoldRefusal } from "../systems/ledger.ts";
import type { LimitRefusal } from "../systems/limits.ts";
import type { HttpAnswer } from "../systems/runs.ts";
import { fromError, jsonAnswer } from "./answer.ts";
import { MESSAGES, REFUSALS } from "@sdgw/engine";

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

  limit(r: LimitRefusal, requestId: string): HttpAnswer {
    if (r.code === "limits_unavailable") {
      // D107: the limits are kept in Redis and it does not answer; the call is refused before anything is claimed,
      // held or run, in the words of a pause (the contract's reason for "no new calls now").
      const fix = { action_url: this.gw.config.urls.status, note: MESSAGES.pausedNote };
      return this.fail(
        "temporarily_unavailable",
        requestId,
        { reason: "paused", message: MESSAGES.limitsUnavailable, fix },
        null,
      );
    }
    if (r.code === "free_failure_limit") {
      const retryAt = new Date(r.retryAt).toISOString().replace(/\.\d{3}Z$/, "Z");
      const message = "Too many failed calls in a short time; new calls wait until retry_at.";
      return this.fail(
        "free_failure_limit",
        requestId,
        { message, retry_at: retryAt, fix: { note: MESSAGES.failedCallsNote } },
        null,
      );
    }
    const limits = this.gw.config.limits;
    const messages = {
      key_qps: `Too many calls per second for this key (at most ${limits.keyQps}).`,
      workspace_concurrency: MESSAGES.workspaceConcurrency(limits.workspaceConcurrency),
      address: MESSAGES.addressRate(limits.addressPerMinute),
    } as const;
    const note = r.reason === "address" ? "Wait Retry-After seconds, or send a key." : "Wait Retry-After seconds.";
    return this.fail(
      "rate_limited",
      requestId,
      { reason: r.reason, message: messages[r.reason], retry_after: r.retryAfter, fix: { note } },
      null,
    );
  }

  hold(r: HoldRefusal, quote: number, requestId: string, keyHash: string): HttpAnswer {
    const urls = this.gw.config.urls;
    switch (r.code) {
      case "temporarily_unavailable": {
        // D74: the account's cap on calls started per UTC day. Retryable at resets_at (Retry-After); nothing held.
        const resets = nextUtcMidnight(new Date(this.gw.now()));
        const message = MESSAGES.dailyCap(r.started, r.cap, resets);
        const fix = { action_url: urls.status, note: MESSAGES.dailyCapNote };
        return this.fail(
          "temporarily_unavailable",
          requestId,
          { reason: "daily_cap", message, resets_at: resets, fix },
          null,
        );
      }
      case "plan_limit": {
        const left = r.freeCallsLeft > 0 ? ` (${r.freeCallsLeft} left, this request makes more)` : "";
        const message = `This free account has used its ${this.gw.config.limits.freeCalls} calls${left}.`;
        const fix = { action_url: urls.billing, note: "Buy credits to lift the limit." };
        return this.fail("plan_limit", requestId, { reason: "free_calls_used", message, fix }, keyHash);
      }
      case "daily_limit_reached": {
        const of = r.reason === "key" ? "key" : "account";
        const resets = nextUtcMidnight(new Date(this.gw.now()));
        const message = MESSAGES.dailyLimit({ of, spent: r.spent, limit: r.limit, quote, resets });
        const extra = {
          reason: r.reason,
          message,
          resets_at: resets,
          fix: { action_url: urls.console, note: MESSAGES.dailyLimitNote(of) },
        };
        return this.fail("daily_limit_reached", requestId, extra, keyHash);
      }
      case "insufficient_balance": {
        const refusal = REFUSALS.insufficientBalance(quote, r.available, urls);
        return this.fail("insufficient_balance", requestId, refusal, keyHash);
      }
    }
  }

  /**
   * The answer of an Idempotency-Key already taken: the first answer again, 409 while it runs, 422 with other
   * parameters.
   */
  claimTaken(claim: Exclude<Claim, { kind: "claimed" }>, requestId: string, keyHash: string): HttpAnswer {
    if (claim.kind === "replay")
      return { status: claim.status, headers: { ...claim.headers, "idempotent-replayed": "true" }, body: claim.body };
    if (claim.kind === "lost") return this.internal(requestId, { message: MESSAGES.answerLost });
    if (claim.kind === "in_progress") {
      const refusal = REFUSALS.idempotencyInProgress(this.gw.config.inProgressRetrySeconds);
      return this.fail("idempotency_in_progress", requestId, refusal, null);
    }
    return this.fail("idempotency_conflict", requestId, REFUSALS.idempotencyConflict(), keyHash);
  }
}
