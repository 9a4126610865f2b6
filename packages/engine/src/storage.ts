/**
 * The storage port: what the life of a charged call (`chargeCall`) asks of the place a gateway keeps its state.
 * The reference server implements it over its database (SQLite, or PostgreSQL shared by several instances), the
 * mock over memory. Every method may answer at once or with a promise, so that a store without I/O waits on
 * nothing. Types only.
 */

/** A value now, or a promise of it. */
export type Awaitable<T> = T | PromiseLike<T>;

/** What a claim of an Idempotency-Key found; `A` is the store's answer (what a replay gives back). */
export type Claim<A> =
  /** The key is this call's now: nobody else runs under it until the claim is completed or released. */
  | { kind: "claimed" }
  /** The call under this key still runs (409). */
  | { kind: "in_progress" }
  /** The key was used with other parameters (422). */
  | { kind: "conflict" }
  /** The call ended: its first answer again, charged once. */
  | { kind: "replay"; answer: A }
  /** The call ended and was charged, but its answer's bytes are gone (a crash of the server's disk): 500. */
  | { kind: "lost" };

/** Why a hold was refused, with what the refusal's words need. */
export type HoldRefusal =
  /** D74: the account's cap on calls started per UTC day. */
  | { code: "temporarily_unavailable"; reason: "daily_cap"; cap: number; started: number }
  /** A free account's calls are used up (`freeCalls` of them). */
  | { code: "plan_limit"; freeCallsLeft: number; freeCalls: number }
  /** The key's or the account's daily spending limit. */
  | { code: "daily_limit_reached"; reason: "key" | "account"; limit: number; spent: number }
  /** The quote over the credits available: the balance less what running calls hold. */
  | { code: "insufficient_balance"; balance: number; available: number };

/** Why a limit refused a call (D27), with what the refusal's words need. */
export type LimitRefusal =
  /** `most`: the limit that was reached (calls per second, runs at once, calls per minute). */
  | { code: "rate_limited"; reason: "key_qps" | "workspace_concurrency" | "address"; retryAfter: number; most: number }
  | { code: "free_failure_limit"; retryAt: number }
  /** D107: the limits are kept in Redis and Redis did not answer; nothing may run (503 `temporarily_unavailable`). */
  | { code: "limits_unavailable" };

/** One Idempotency-Key of one API key, and the call that claims it. */
export interface IdempotencySlot {
  /** The API key's id: keys are scoped to it. */
  keyId: string;
  /** The Idempotency-Key header's value. */
  idemKey: string;
}

/**
 * Where a gateway keeps the state of charged calls: idempotency claims, and credits held for a call that runs.
 * `A` is the store's answer; `C` is the caller as the store knows it (its key, account and workspace).
 */
export interface CallStore<C, A> {
  /** D60: why charged calls are paused now, or null when they are not. */
  paused(): Awaitable<string | null>;
  /**
   * D67: why a new call with an Idempotency-Key cannot start now (its answer could not be kept), or null. Its
   * replays, 409 and 422 still answer.
   */
  full(): Awaitable<string | null>;
  /**
   * Claims the key for the call (`operationId` and `params` make its fingerprint), or says what holds it. Exactly
   * one of concurrent claims of one slot gets `claimed`, whichever instance of the gateway it reaches.
   */
  claim(slot: IdempotencySlot, call: { operationId: string; params: unknown; runId: string }): Awaitable<Claim<A>>;
  /** Gives a claim back: the call was refused before it ran, and the key starts a new call. */
  release(slot: IdempotencySlot): Awaitable<void>;
  /** Keeps a call's answer under its claim: its replays give it back. */
  complete(slot: IdempotencySlot, answer: A): Awaitable<void>;
  /**
   * Holds `credits` of the caller's account for the run `runId`, which makes `calls` platform calls; or says why
   * not. Concurrent holds never hold more than is available. The run settles or releases the hold.
   */
  hold(caller: C, run: { runId: string; credits: number; calls: number }): Awaitable<HoldRefusal | null>;
  /**
   * Optional (D128): the pause, the claim and the hold in one step, for a store whose round trips cost (one
   * statement on PostgreSQL). It answers as the steps would, in their order — `paused`, then the claim's outcome,
   * then `full`, then the hold — and leaves nothing behind when it refuses. `chargeCall` uses it instead of the steps
   * when present. `max_cost_credits` is decided before: a call over its cap takes the steps (its claim, so that a
   * replay still answers, then given back), never `admit`.
   */
  admit?(request: AdmitRequest<C>): Awaitable<Admitted<A>>;
}

/** What `CallStore.admit` is asked: the caller, its key's slot (if it sent one), the call, and what to hold. */
export interface AdmitRequest<C> {
  caller: C;
  slot: IdempotencySlot | null;
  call: { operationId: string; params: unknown; runId: string };
  /** Credits and calls to hold for the run; null for a call that holds nothing (a free quote). */
  hold: { credits: number; calls: number } | null;
  /** Whether the pause applies (charged calls; a free quote still answers while paused). */
  pausable: boolean;
}

/** How `CallStore.admit` answered. */
export type Admitted<A> =
  /** Claimed (when a slot was sent) and held (when asked): the run owns both now. */
  | { kind: "admitted" }
  | { kind: "paused"; message: string }
  /** The answer log is full (D67): a new call with an Idempotency-Key cannot start. */
  | { kind: "full"; message: string }
  /** The Idempotency-Key was not claimed: its call still runs, was made with other parameters, ended, or was lost. */
  | { kind: "claim"; claim: Exclude<Claim<A>, { kind: "claimed" }> }
  | { kind: "hold"; refusal: HoldRefusal };

/** The limits of D27 a charged call passes: per key, per workspace, and on failed calls. */
export interface CallLimits<C> {
  /** D27: a key whose calls failed too often waits. */
  failureBlock(caller: C): Awaitable<LimitRefusal | null>;
  /** Counts one call of the key against its rate. */
  keyCall(caller: C): Awaitable<LimitRefusal | null>;
  /** Takes one of the workspace's running slots; `endRun` gives it back. */
  startRun(caller: C): Awaitable<LimitRefusal | null>;
  /** Gives back a slot `startRun` took. */
  endRun(caller: C): Awaitable<void>;
}
