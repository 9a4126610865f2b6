/**
 * The life of a charged call, written once for the reference server and the mock: the pause, the Idempotency-Key's
 * claim, the limits, `max_cost_credits` and the hold, then the run, over the storage port (`CallStore`) and the
 * limits (`CallLimits`). A refused call leaves no claim, slot or hold behind; the words of every refusal are here
 * too (`chargeRefusalAnswer`).
 */
import { type HttpErrorCode, nextUtcMidnight, type ServiceUrls } from "@sdgw/validators";
import { MESSAGES, REFUSALS } from "./messages.ts";
import type { CreditView } from "./answers.ts";
import type { CallLimits, CallStore, Claim, HoldRefusal, IdempotencySlot, LimitRefusal } from "./storage.ts";

/**
 * What a call costs: its quote and calls (held, then captured by the run), the `max_cost_credits` sent and whether
 * it is a tool's (its refusal then hints at `confirm: false`); or `free` (a tool quote: nothing runs).
 */
export type Price = { credits: number; calls: number; maxCost: unknown; tool?: boolean } | "free";

/** One charged call: who calls, what, under which Idempotency-Key, at what price, and how it runs. */
export interface ChargeCall<C, A> {
  caller: C;
  /** The API key's id: the scope of its Idempotency-Keys. */
  keyId: string;
  /** The run's id, made before the claim (a claim names the run that owns it). */
  runId: string;
  operationId: string;
  /** What the idempotency fingerprint compares: the same key with other parameters is a 422. */
  params: unknown;
  idempotencyKey: string | undefined;
  price: Price;
  /**
   * Runs the call once it is admitted and (unless `free`) its credits are held. From then on the run owns the claim
   * (it completes it with its answer, or releases it if it breaks), the hold and the running slot.
   */
  start(): Awaitable<A>;
}

type Awaitable<T> = T | PromiseLike<T>;

/** Why a charged call was refused before it ran: nothing ran, nothing was held or charged. */
export type ChargeRefusal =
  | { kind: "paused"; message: string }
  | { kind: "claim"; claim: Extract<Claim<unknown>, { kind: "in_progress" | "conflict" | "lost" }> }
  | { kind: "limit"; limit: LimitRefusal }
  | { kind: "max_cost"; credits: number; maxCost: number; tool: boolean }
  | { kind: "hold"; hold: HoldRefusal; credits: number };

/** How a charged call ended its admission: answered (by its run), replayed, or refused. */
export type ChargeOutcome<A> =
  | { kind: "answered"; answer: A }
  /** The first answer under the Idempotency-Key again: nothing ran, nothing was charged. */
  | { kind: "replayed"; answer: A }
  | { kind: "refused"; refusal: ChargeRefusal };

/** The storage port and the limits a call passes through. */
export interface ChargePorts<C, A> {
  store: CallStore<C, A>;
  limits: CallLimits<C>;
}

const refused = (refusal: ChargeRefusal): { kind: "refused"; refusal: ChargeRefusal } => ({ kind: "refused", refusal });

/**
 * Admits a charged call and runs it. Its refusal is the first in D50's order of stages: D60's pause (a charged
 * call starts nothing while calls are paused; a quote still answers), the Idempotency-Key's claim (a replay, a 409
 * or a 422 answers at once), D67's answer log, the limits (the key's failed calls, its rate, its workspace's
 * running calls), `max_cost_credits`, the hold. The limits are asked first (D128): when they pass, a store that
 * offers `admit` takes the pause, the claim and the hold in one step; when one refuses, the earlier stages are asked
 * still, so the answer is the same as in that order. A refusal leaves no claim, slot or hold behind, nor does
 * anything that throws before the call runs; from then on the run owns them. A `free` call (a tool quote) takes the
 * key's rate but no running slot, holds nothing, and completes its claim with its answer.
 */
export async function chargeCall<C, A>(ports: ChargePorts<C, A>, call: ChargeCall<C, A>): Promise<ChargeOutcome<A>> {
  const { store, limits } = ports;
  const { caller, price } = call;
  const free = price === "free";
  const limited =
    (await limits.failureBlock(caller)) ??
    (await limits.keyCall(caller)) ??
    (free ? null : await limits.startRun(caller));
  if (limited) return (await earlierStages(store, call)) ?? refused({ kind: "limit", limit: limited });
  let owned = false;
  let claimed: IdempotencySlot | null = null;
  try {
    const admitted = await admit(store, call);
    if (admitted.kind !== "admitted") return admitted;
    claimed = slotOf(call);
    if (!free) {
      owned = true; // the run owns its claim, hold and slot from its start, even if it throws
      return { kind: "answered", answer: await call.start() };
    }
    const answer = await call.start();
    if (claimed) await store.complete(claimed, answer);
    owned = true;
    return { kind: "answered", answer };
  } finally {
    if (!owned && claimed) await store.release(claimed);
    if (!owned && !free) await limits.endRun(caller);
  }
}

/**
 * The stages before the limits, asked when a limit refused (D50): the pause, then the key's claim (given back at
 * once when it was free: the call will not run), then the answer log. Null when none of them refuses.
 */
async function earlierStages<C, A>(
  store: CallStore<C, A>,
  call: ChargeCall<C, A>,
): Promise<{ kind: "replayed"; answer: A } | { kind: "refused"; refusal: ChargeRefusal } | null> {
  const free = call.price === "free";
  const pause = free ? null : await store.paused();
  if (pause) return refused({ kind: "paused", message: `Calls are paused: ${pause}` });
  const slot = slotOf(call);
  if (!slot) return null;
  const claim = await store.claim(slot, call);
  if (claim.kind === "replay") return { kind: "replayed", answer: claim.answer };
  if (claim.kind !== "claimed") return refused({ kind: "claim", claim });
  try {
    const full = free ? null : await store.full();
    return full ? refused({ kind: "paused", message: `New calls with an Idempotency-Key are paused: ${full}` }) : null;
  } finally {
    await store.release(slot);
  }
}

const slotOf = (call: { keyId: string; idempotencyKey: string | undefined }): IdempotencySlot | null =>
  call.idempotencyKey === undefined ? null : { keyId: call.keyId, idemKey: call.idempotencyKey };

/**
 * The pause, the claim, the answer log, `max_cost_credits` and the hold of a call whose limits passed: by the
 * store's `admit` in one step, or step by step. Admitted: the call's claim (if any) and hold are its run's now.
 */
async function admit<C, A>(
  store: CallStore<C, A>,
  call: ChargeCall<C, A>,
): Promise<{ kind: "admitted" } | { kind: "replayed"; answer: A } | { kind: "refused"; refusal: ChargeRefusal }> {
  const { price } = call;
  const slot = slotOf(call);
  const free = price === "free";
  const overCap =
    !free && typeof price.maxCost === "number" && price.credits > price.maxCost
      ? ({ kind: "max_cost", credits: price.credits, maxCost: price.maxCost, tool: price.tool === true } as const)
      : null;
  if (store.admit && !overCap) {
    const a = await store.admit({
      caller: call.caller,
      slot,
      call: { operationId: call.operationId, params: call.params, runId: call.runId },
      hold: free ? null : { credits: price.credits, calls: price.calls },
      pausable: !free,
    });
    switch (a.kind) {
      case "admitted":
        return a;
      case "paused":
        return refused({ kind: "paused", message: `Calls are paused: ${a.message}` });
      case "full":
        return refused({ kind: "paused", message: `New calls with an Idempotency-Key are paused: ${a.message}` });
      case "claim":
        return a.claim.kind === "replay"
          ? { kind: "replayed", answer: a.claim.answer }
          : refused({ kind: "claim", claim: a.claim });
      case "hold":
        return refused({ kind: "hold", hold: a.refusal, credits: (price as { credits: number }).credits });
    }
  }
  const pause = free ? null : await store.paused();
  if (pause) return refused({ kind: "paused", message: `Calls are paused: ${pause}` });
  if (slot) {
    const claim = await store.claim(slot, call);
    if (claim.kind === "replay") return { kind: "replayed", answer: claim.answer };
    if (claim.kind !== "claimed") return refused({ kind: "claim", claim });
  }
  let held = false;
  try {
    const full = free || !slot ? null : await store.full();
    if (full) return refused({ kind: "paused", message: `New calls with an Idempotency-Key are paused: ${full}` });
    if (free) {
      held = true;
      return { kind: "admitted" };
    }
    if (overCap) return refused(overCap);
    const hold = await store.hold(call.caller, { runId: call.runId, credits: price.credits, calls: price.calls });
    if (hold) return refused({ kind: "hold", hold, credits: price.credits });
    held = true;
    return { kind: "admitted" };
  } finally {
    if (!held && slot) await store.release(slot);
  }
}

/** What the words of a charge refusal need: where its fixes point, and the gateway's clock and retry hint. */
export interface ChargeWords {
  urls: ServiceUrls;
  now: number;
  /** The `Retry-After` of a 409 `idempotency_in_progress`, in seconds. */
  inProgressRetrySeconds: number;
}

/** A refusal in words: its code, the fields of its error answer, and whether it counts as the key's failed call. */
export interface ChargeRefusalAnswer {
  code: HttpErrorCode;
  extra: Record<string, unknown>;
  /** D27: the refusal counts against the key's failed calls (a 4xx other than 409 and 429 that the caller can fix). */
  failure: boolean;
}

/** The error answer of a refused charged call, in the server's and the mock's one set of words. */
export function chargeRefusalAnswer(r: ChargeRefusal, words: ChargeWords): ChargeRefusalAnswer {
  const { urls } = words;
  switch (r.kind) {
    case "paused": {
      const message = `${r.message} Nothing ran and nothing was charged.`;
      const fix = { action_url: urls.status, note: MESSAGES.pausedNote };
      return { code: "temporarily_unavailable", extra: { reason: "paused", message, fix }, failure: false };
    }
    case "claim":
      if (r.claim.kind === "lost")
        return { code: "internal_error", extra: { message: MESSAGES.answerLost }, failure: false };
      if (r.claim.kind === "in_progress") {
        const extra = REFUSALS.idempotencyInProgress(words.inProgressRetrySeconds);
        return { code: "idempotency_in_progress", extra, failure: false };
      }
      return { code: "idempotency_conflict", extra: REFUSALS.idempotencyConflict(), failure: true };
    case "max_cost": {
      const extra = REFUSALS.maxCostExceeded(r.credits, r.maxCost, r.tool ? MESSAGES.toolMaxCostHint : "");
      return { code: "max_cost_exceeded", extra, failure: true };
    }
    case "limit":
      return limitAnswer(r.limit, urls);
    case "hold":
      return holdAnswer(r.hold, r.credits, words);
  }
}

/** The words of a limit that refused a call (D27, D107). */
export function limitAnswer(r: LimitRefusal, urls: ServiceUrls): ChargeRefusalAnswer {
  if (r.code === "limits_unavailable") {
    // D107: the limits are kept in Redis and it does not answer; the call is refused before anything is claimed,
    // held or run, in the words of a pause (the contract's reason for "no new calls now").
    const fix = { action_url: urls.status, note: MESSAGES.pausedNote };
    const extra = { reason: "paused", message: MESSAGES.limitsUnavailable, fix };
    return { code: "temporarily_unavailable", extra, failure: false };
  }
  if (r.code === "free_failure_limit") {
    const retryAt = new Date(r.retryAt).toISOString().replace(/\.\d{3}Z$/, "Z");
    const message = "Too many failed calls in a short time; new calls wait until retry_at.";
    const extra = { message, retry_at: retryAt, fix: { note: MESSAGES.failedCallsNote } };
    return { code: "free_failure_limit", extra, failure: false };
  }
  const messages = {
    key_qps: `Too many calls per second for this key (at most ${r.most}).`,
    workspace_concurrency: MESSAGES.workspaceConcurrency(r.most),
    address: MESSAGES.addressRate(r.most),
  } as const;
  const note = r.reason === "address" ? "Wait Retry-After seconds, or send a key." : "Wait Retry-After seconds.";
  const extra = { reason: r.reason, message: messages[r.reason], retry_after: r.retryAfter, fix: { note } };
  return { code: "rate_limited", extra, failure: false };
}

/** The words of a refused hold; `quote` is what the call would have held. */
function holdAnswer(r: HoldRefusal, quote: number, words: ChargeWords): ChargeRefusalAnswer {
  const { urls } = words;
  switch (r.code) {
    case "temporarily_unavailable": {
      // D74: the account's cap on calls started per UTC day. Retryable at resets_at (Retry-After); nothing held.
      const resets = nextUtcMidnight(new Date(words.now));
      const message = MESSAGES.dailyCap(r.started, r.cap, resets);
      const fix = { action_url: urls.status, note: MESSAGES.dailyCapNote };
      const extra = { reason: "daily_cap", message, resets_at: resets, fix };
      return { code: "temporarily_unavailable", extra, failure: false };
    }
    case "plan_limit": {
      const left = r.freeCallsLeft > 0 ? ` (${r.freeCallsLeft} left, this request makes more)` : "";
      const message = `This free account has used its ${r.freeCalls} calls${left}.`;
      const fix = { action_url: urls.billing, note: "Buy credits to lift the limit." };
      return { code: "plan_limit", extra: { reason: "free_calls_used", message, fix }, failure: true };
    }
    case "daily_limit_reached": {
      const of = r.reason === "key" ? "key" : "account";
      const resets = nextUtcMidnight(new Date(words.now));
      const message = MESSAGES.dailyLimit({ of, spent: r.spent, limit: r.limit, quote, resets });
      const fix = { action_url: urls.console, note: MESSAGES.dailyLimitNote(of) };
      return {
        code: "daily_limit_reached",
        extra: { reason: r.reason, message, resets_at: resets, fix },
        failure: false, // a 429: the key waits for the day's reset, it did nothing wrong
      };
    }
    case "insufficient_balance":
      return {
        code: "insufficient_balance",
        extra: REFUSALS.insufficientBalance(quote, r.available, urls),
        failure: true,
      };
  }
}

/** An account and its key as a hold sees them, for the hold's UTC day, with every hold in flight counted. */
export interface HoldState {
  /** The account's plan: a free account's calls are counted against `freeCalls`. */
  plan: "free" | "paid";
  /** A suspended account holds nothing (`insufficient_balance`). */
  status: "active" | "suspended";
  balance: number;
  /** Credits held by the account's calls in flight. */
  held: number;
  /** Credits charged to the account today (UTC). */
  spentToday: number;
  dailyLimit: number | null;
  /** Calls a free account has left (its allowance less those charged and held); null on a paid plan. */
  freeCallsLeft: number | null;
  /** The allowance of a free account. */
  freeCalls: number;
  /** D74: the most calls the account may start per UTC day, and those started today. */
  callCap: number | null;
  startedToday: number;
  /** The key's daily limit. */
  keyDailyLimit: number | null;
  /** What the key spent and holds today (asked only when it has a limit). */
  keySpent: () => number;
}

/**
 * Whether an account may hold `credits` for a run of `calls` platform calls, by the rules in this order: the
 * account's call cap (D74), a free account's calls, the key's daily limit, the account's daily limit, then the
 * credits available (the balance less what is held). Null: the hold is allowed. Pure: every store that holds
 * credits (the server's SQLite and PostgreSQL ledgers) decides by it, in its own atomic step.
 */
export function holdRefusal(s: HoldState, req: { credits: number; calls: number }): HoldRefusal | null {
  if (s.callCap !== null && s.startedToday + req.calls > s.callCap)
    return { code: "temporarily_unavailable", reason: "daily_cap", cap: s.callCap, started: s.startedToday };
  const left = s.freeCallsLeft;
  const plan = left !== null && left < req.calls ? { code: "plan_limit" as const, freeCallsLeft: left } : null;
  if (plan) return { ...plan, freeCalls: s.freeCalls };
  if (s.keyDailyLimit !== null) {
    const spent = s.keySpent();
    if (spent + req.credits > s.keyDailyLimit)
      return { code: "daily_limit_reached", reason: "key", limit: s.keyDailyLimit, spent };
  }
  if (s.dailyLimit !== null) {
    const spent = s.spentToday + s.held;
    if (spent + req.credits > s.dailyLimit)
      return { code: "daily_limit_reached", reason: "account", limit: s.dailyLimit, spent };
  }
  const available = s.balance - s.held;
  if (s.status !== "active" || available < req.credits)
    return { code: "insufficient_balance", balance: s.balance, available };
  return null;
}

/** An account's credits of today as a billing block counts them. */
export interface CreditScope {
  /** Credits held by its calls in flight. */
  held: number;
  /** Credits charged today (UTC). */
  spentToday: number;
  dailyLimit: number | null;
}

/** A key's credits of today; `held` is asked only when the key has a daily limit. */
export interface KeyCredits {
  dailyLimit: number | null;
  spentToday: number;
  /** Credits its calls in flight hold. */
  held: () => number;
}

/**
 * The credit numbers a billing block shows (D7): the key's daily limit when it has one, else the account's; what
 * calls in flight hold counts as spent today. `key` is the key's limit, its charges today and what its calls hold.
 */
export function creditView(account: CreditScope & { balance: number }, key: KeyCredits | null): CreditView {
  const useKey = key !== null && key.dailyLimit !== null;
  const limit = useKey ? key.dailyLimit : account.dailyLimit;
  const held = useKey ? key.held() : account.held;
  const todaySpend = (useKey ? key.spentToday : account.spentToday) + held;
  const dailyRemaining = limit === null ? null : Math.max(0, limit - todaySpend);
  return { balance: account.balance, todaySpend, held, dailyLimit: limit, dailyRemaining };
}
