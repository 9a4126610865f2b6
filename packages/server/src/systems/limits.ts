/**
 * Limits (D27) with rate-limiter-flexible's in-memory limiter: calls per second per key, running calls per
 * workspace, calls per minute per address on keyless routes, and the free-failure limit (too many failed calls of
 * one key in a short time). In memory on purpose: they protect one process; after a restart they start afresh.
 */
import rateLimiterFlexible from "rate-limiter-flexible";
import type { RateLimiterRes } from "rate-limiter-flexible";
import type { LimitsConfig } from "../config.ts";

const { RateLimiterMemory } = rateLimiterFlexible;

/** A refusal: which limit, and how many seconds (or until when) to wait. */
export type LimitRefusal =
  | { code: "rate_limited"; reason: "key_qps" | "workspace_concurrency" | "address"; retryAfter: number }
  | { code: "free_failure_limit"; retryAt: number };

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** Dependencies of the limits system. */
export interface LimitsDeps {
  limits: LimitsConfig;
  now: () => number;
}

/** The four limits of D27. */
export class Limits {
  private readonly keyRate;
  private readonly addressRate;
  private readonly failures;
  private readonly running = new Map<string, number>();

  private readonly deps: LimitsDeps;

  constructor(deps: LimitsDeps) {
    this.deps = deps;
    const l = deps.limits;
    this.keyRate = new RateLimiterMemory({ points: l.keyQps, duration: 1 });
    this.addressRate = new RateLimiterMemory({ points: l.addressPerMinute, duration: 60 });
    this.failures = new RateLimiterMemory({
      points: l.failureThreshold,
      duration: l.failureWindowSeconds,
      blockDuration: l.failureBlockSeconds,
    });
  }

  /** Counts one call of a key against its rate. */
  async keyCall(keyId: string): Promise<LimitRefusal | null> {
    try {
      await this.keyRate.consume(keyId);
      return null;
    } catch (e) {
      return { code: "rate_limited", reason: "key_qps", retryAfter: seconds((e as RateLimiterRes).msBeforeNext) };
    }
  }

  /** Counts one call from a network address on a keyless route. */
  async addressCall(address: string): Promise<LimitRefusal | null> {
    try {
      await this.addressRate.consume(address);
      return null;
    } catch (e) {
      return { code: "rate_limited", reason: "address", retryAfter: seconds((e as RateLimiterRes).msBeforeNext) };
    }
  }

  /** Whether the key (by the hash of what was sent) is held back by the free-failure limit. */
  async failureBlock(keyHash: string): Promise<LimitRefusal | null> {
    const res = await this.failures.get(keyHash);
    if (res && res.consumedPoints > this.deps.limits.failureThreshold)
      return { code: "free_failure_limit", retryAt: this.deps.now() + Math.max(1000, res.msBeforeNext) };
    return null;
  }

  /** Records a failed call of a key. */
  recordFailure(keyHash: string): void {
    this.failures.consume(keyHash).catch(() => undefined);
  }

  /** Takes one of the workspace's running-call slots, or refuses. Give it back with `endRun`. */
  startRun(workspaceId: string): LimitRefusal | null {
    const n = this.running.get(workspaceId) ?? 0;
    if (n >= this.deps.limits.workspaceConcurrency)
      return { code: "rate_limited", reason: "workspace_concurrency", retryAfter: 1 };
    this.running.set(workspaceId, n + 1);
    return null;
  }

  /** Gives back a running-call slot taken by `startRun` when the call ended or was refused after it. */
  endRun(workspaceId: string): void {
    const n = (this.running.get(workspaceId) ?? 1) - 1;
    if (n <= 0) this.running.delete(workspaceId);
    else this.running.set(workspaceId, n);
  }

  /** Running calls of a workspace now. */
  runningOf(workspaceId: string): number {
    return this.running.get(workspaceId) ?? 0;
  }
}
