/**
 * The ports a live connector is given (D114): its `fetch`, the upstream budget (D121) and cache (D122) the server
 * shares between its instances, the clock and an operator's log. The server implements them (memory, or Redis when
 * configured); tests pass their own. Nothing here does I/O.
 */
import type { ProviderOutcome } from "../providers/port.ts";

/** Where a connector tells the operator something: one line, secrets already removed (D116). */
export interface ConnectorLog {
  /** Something worth knowing (a retry, a cache that stopped answering). */
  info(message: string): void;
  /** Something the operator must act on: credentials refused, a budget drained by the platform itself. */
  error(message: string): void;
}

/** Units to take from one bucket of a platform's budget. */
export interface BudgetCharge {
  /** The bucket's name as the connector declared it (`units`, `search`). */
  bucket: string;
  units: number;
}

/** What a budget answers to a take: granted, or refused naming the bucket that is short and when it refills. */
export type BudgetAnswer =
  | { ok: true }
  | { ok: false; reason: "drained"; bucket: string; label: string; limit: number; resetsAt: number }
  | { ok: false; reason: "unavailable"; message: string };

/** One bucket of a platform's daily upstream budget, as a connector declares it. */
export interface BudgetBucket {
  /** Its name (`units`, `search`). */
  name: string;
  /** Units a day. */
  limit: number;
  /** The IANA time zone whose midnight refills it (YouTube's quota: `America/Los_Angeles`). */
  timeZone: string;
  /**
   * A bucket that refills every `windowMs` instead of at midnight (D150): Reddit's requests a minute. Its windows are
   * aligned to the epoch (`floor(now / windowMs)`), so every instance counts the same window; `limit` is then units a
   * window and `timeZone` is not used.
   */
  windowMs?: number;
  /** What it is for, in a sentence's words: "YouTube Data API units", "YouTube searches". */
  label: string;
}

/**
 * Upstream budgets per platform and day, shared by every instance of the gateway (D121). `take` is all or nothing
 * across the buckets it names; a take that cannot be decided (its store does not answer) is refused as
 * `unavailable`, never granted.
 */
export interface UpstreamBudget {
  /** Takes the units of every charge from its bucket of `platform`, all or none; never grants what it cannot decide. */
  take(platform: string, charges: readonly BudgetCharge[]): Promise<BudgetAnswer>;
  /** Marks a bucket used up until it refills (the platform said its quota is exceeded). */
  drain(platform: string, bucket: string): Promise<void>;
  /** Units used today per bucket of a platform (operators' reports and tests). */
  used(platform: string): Promise<Record<string, number>>;
}

/** An answer kept by the cache, with when it was fetched. */
export interface CachedAnswer {
  outcome: Extract<ProviderOutcome, { status: "ok" | "empty" }>;
  /** When upstream answered it (ms since the epoch). */
  fetchedAt: number;
}

/**
 * The answers of upstream reads, kept for a while per platform, operation and normalised parameters (D122). A
 * cache that does not answer is a miss, never a failure of the call.
 */
export interface UpstreamCache {
  /** The answer kept under `key`, or undefined (a miss, also when the cache does not answer). */
  get(key: string): Promise<CachedAnswer | undefined>;
  /** Keeps `answer` under `key` for `ttlMs`; a cache that does not answer keeps nothing, without an error. */
  set(key: string, answer: CachedAnswer, ttlMs: number): Promise<void>;
}

/**
 * Short values shared by every instance of the gateway (D150): an OAuth access token that one instance fetched and
 * all use until it expires. In Redis when the limits are there, in memory otherwise. A store that does not answer
 * reads as nothing and keeps nothing, without an error (the connector then fetches its own).
 */
export interface SharedStore {
  /** The value kept under `key` and not expired, or undefined. */
  get(key: string): Promise<string | undefined>;
  /** Keeps `value` under `key` for `ttlMs`. */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Forgets `key` (a token the platform refused). */
  delete(key: string): Promise<void>;
}

/** What a live connector is handed by the gateway that runs it. */
export interface ConnectorContext {
  /** The platform's `fetch` (the server's, possibly recording or replaying, D123). */
  fetch: typeof fetch;
  budget: UpstreamBudget;
  cache: UpstreamCache;
  /** The gateway's clock (ms since the epoch). */
  now: () => number;
  log: ConnectorLog;
  /** A number in [0, 1) for jitter (default `Math.random`). */
  random?: () => number;
  /** Values shared by the instances (an access token, D150); absent: the connector keeps them in its own memory. */
  shared?: SharedStore;
}
