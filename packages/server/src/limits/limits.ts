/**
 * Limits (D27) with rate-limiter-flexible: calls per second per key, running calls per workspace, calls per minute
 * per address on keyless routes, and the free-failure limit (too many failed calls of one key in a short time).
 *
 * Two modes (D107):
 * - in memory (the default): each process counts alone; after a restart they start afresh. N processes allow up to
 *   N times each limit.
 * - in Redis (`redis.url`, `SDGW_REDIS_URL`): every instance on the same Redis and key prefix shares one count of
 *   each limit. When Redis does not answer (down, unreachable, an error, a command past `timeoutMs`), every limit
 *   answers `limits_unavailable` (the HTTP layer's `503 temporarily_unavailable`, reason `paused`): the call is
 *   refused before anything is held or run. It never falls back to counting in memory, which would let each
 *   instance allow the whole rate.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import rateLimiterFlexible from "rate-limiter-flexible";
import type { CallLimits, LimitRefusal } from "@sdgw/engine";
import type { LimitsConfig, ServerConfig } from "../config.ts";
import { outsideRequests } from "../ops/log.ts";
import type { Metrics } from "../ops/metrics.ts";
import type { RunContext } from "../runs/types.ts";

const { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } = rateLimiterFlexible;
type Limiter = InstanceType<typeof RateLimiterMemory> | InstanceType<typeof RateLimiterRedis>;

/** A refusal: which limit, and how many seconds (or until when) to wait; or the limits could not be checked. */
export type { LimitRefusal };

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** Where the limits are kept when several instances share them (D107). */
export interface RedisLimitsOptions {
  /** `redis://[user:password@]host[:port][/db]` or `rediss://…` (TLS). */
  url: string;
  /** Prefix of every Redis key these limits write (default `sdgw:`): instances share limits only under one prefix. */
  keyPrefix?: string;
  /**
   * How long a running-call slot outlives the last renewal by its instance, in ms (default 30 000; the gateway
   * passes its `runLeaseMs`). Renewed every sixth of it while the call runs; the slot of an instance that died is
   * free again after at most this long.
   */
  slotTtlMs?: number;
  /** Bound of connecting and of each command, in ms (default 1000): past it the call is refused, not kept waiting. */
  timeoutMs?: number;
}

/** Dependencies of the limits system. */
export interface LimitsDeps {
  limits: LimitsConfig;
  now: () => number;
  /** D107: keep the limits in Redis, shared by every instance on it. Absent or null: in memory, this process alone. */
  redis?: RedisLimitsOptions | null;
  /** Where a lost or regained connection to Redis is reported (once each). */
  log?: (message: string, error?: unknown) => void;
  /** D113: where every error of Redis (the connection or a command) is counted (`sdgw_redis_errors_total`). */
  metrics?: Pick<Metrics, "redisError">;
}

/**
 * The limits of a gateway, on either store. D107: with a Redis URL they are shared by every instance on it; a
 * running-call slot lives as long as a run's lease (`leaseMs`), so the slot of an instance that died is free when
 * its runs are recovered. Without one, in memory, this process alone.
 */
export function gatewayLimits(
  config: Pick<ServerConfig, "limits" | "redisUrl" | "redisKeyPrefix">,
  deps: Omit<LimitsDeps, "limits" | "redis"> & { leaseMs: number },
): Limits {
  const { leaseMs, ...rest } = deps;
  const redis = config.redisUrl ? { url: config.redisUrl, keyPrefix: config.redisKeyPrefix, slotTtlMs: leaseMs } : null;
  return new Limits({ ...rest, limits: config.limits, redis });
}

/** The four limits of D27. */
export class Limits {
  private readonly keyRate: Limiter;
  private readonly addressRate: Limiter;
  private readonly failures: Limiter;
  private readonly slots: MemorySlots | RedisSlots;
  private readonly client: Redis | null = null;
  private readonly deps: LimitsDeps;
  /** Whether the last Redis command failed (a failure and a recovery are logged once each). */
  private failing = false;

  constructor(deps: LimitsDeps) {
    this.deps = deps;
    const l = deps.limits;
    const failureOptions = {
      points: l.failureThreshold,
      duration: l.failureWindowSeconds,
      blockDuration: l.failureBlockSeconds,
    };
    if (!deps.redis) {
      this.keyRate = new RateLimiterMemory({ points: l.keyQps, duration: 1 });
      this.addressRate = new RateLimiterMemory({ points: l.addressPerMinute, duration: 60 });
      this.failures = new RateLimiterMemory(failureOptions);
      this.slots = new MemorySlots();
      return;
    }
    const r = deps.redis;
    const timeoutMs = r.timeoutMs ?? 1000;
    const prefix = r.keyPrefix ?? "sdgw:";
    // Short bounds everywhere (D107): a command waits at most `timeoutMs`, queued while (re)connecting included;
    // reconnection is tried again at most every second; a command in flight when the connection drops is failed
    // after one reconnection attempt instead of twenty.
    this.client = new Redis(r.url, {
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      maxRetriesPerRequest: 1,
      retryStrategy: (times: number) => Math.min(times * 100, 1000),
    });
    this.client.on("error", (e: unknown) => this.failed(e));
    this.client.on("ready", () => this.recovered());
    const storeClient = this.client;
    this.keyRate = new RateLimiterRedis({ storeClient, keyPrefix: `${prefix}key-qps`, points: l.keyQps, duration: 1 });
    this.addressRate = new RateLimiterRedis({
      storeClient,
      keyPrefix: `${prefix}address`,
      points: l.addressPerMinute,
      duration: 60,
    });
    this.failures = new RateLimiterRedis({ storeClient, keyPrefix: `${prefix}failures`, ...failureOptions });
    this.slots = new RedisSlots(this.client, `${prefix}running:`, r.slotTtlMs ?? 30_000, (e) => this.failed(e));
  }

  /**
   * The Redis client of the limits (D107), or null in memory mode: the upstream budgets and cache of live
   * connectors (D121, D122) share it, its bounds and its connection, and are closed with it.
   */
  get redis(): Redis | null {
    return this.client;
  }

  /** Counts one call of a key against its rate. */
  async keyCall(keyId: string): Promise<LimitRefusal | null> {
    const r = await this.consume(this.keyRate, keyId);
    if (r === "ok") return null;
    if (r === "unavailable") return this.unavailable();
    return {
      code: "rate_limited",
      reason: "key_qps",
      retryAfter: seconds(r.msBeforeNext),
      most: this.deps.limits.keyQps,
    };
  }

  /** Counts one call from a network address on a keyless route. */
  async addressCall(address: string): Promise<LimitRefusal | null> {
    const r = await this.consume(this.addressRate, address);
    if (r === "ok") return null;
    if (r === "unavailable") return this.unavailable();
    const most = this.deps.limits.addressPerMinute;
    return { code: "rate_limited", reason: "address", retryAfter: seconds(r.msBeforeNext), most };
  }

  /** Whether the key (by the hash of what was sent) is held back by the free-failure limit. */
  async failureBlock(keyHash: string): Promise<LimitRefusal | null> {
    if (this.down()) return this.unavailable();
    let res: InstanceType<typeof RateLimiterRes> | null;
    try {
      res = await this.failures.get(keyHash);
    } catch (e) {
      this.failed(e);
      return this.unavailable();
    }
    if (res && res.consumedPoints > this.deps.limits.failureThreshold)
      return { code: "free_failure_limit", retryAt: this.deps.now() + Math.max(1000, res.msBeforeNext) };
    return null;
  }

  /** Records a failed call of a key (not awaited; when Redis does not answer, the failure is not counted). */
  recordFailure(keyHash: string): void {
    if (this.down()) return;
    this.failures.consume(keyHash).catch((e: unknown) => {
      if (!(e instanceof RateLimiterRes)) this.failed(e);
    });
  }

  /**
   * Takes one of the workspace's running-call slots, or refuses. Give it back with `endRun`. In Redis, a slot
   * another instance took counts too, and `limits_unavailable` answers when Redis does not.
   */
  async startRun(workspaceId: string): Promise<LimitRefusal | null> {
    const most = this.deps.limits.workspaceConcurrency;
    const refusal: LimitRefusal = { code: "rate_limited", reason: "workspace_concurrency", retryAfter: 1, most };
    if (this.slots instanceof MemorySlots) return this.slots.take(workspaceId, most) ? null : refusal;
    if (this.down()) return this.unavailable();
    try {
      return (await this.slots.take(workspaceId, most)) ? null : refusal;
    } catch (e) {
      this.failed(e);
      return this.unavailable();
    }
  }

  /** Gives back a running-call slot taken by `startRun` when the call ended or was refused after it. */
  endRun(workspaceId: string): void {
    this.slots.give(workspaceId);
  }

  /** Running calls of a workspace now that this process started (in Redis, other instances' are not counted). */
  runningOf(workspaceId: string): number {
    return this.slots.held(workspaceId);
  }

  /** D113: whether the limits are kept in Redis (readiness then checks that it answers). */
  get shared(): boolean {
    return this.client !== null;
  }

  /**
   * D113: asks Redis whether it answers (a PING, bounded by the client's command timeout, 1 s); throws, saying why,
   * when it does not. Nothing to ask in memory mode.
   */
  async ping(): Promise<void> {
    if (!this.client) return;
    if (this.down()) throw new Error(`Redis does not answer (connection ${this.client.status})`);
    await this.client.ping();
  }

  /**
   * Stops renewing slots and closes the connection to Redis (nothing in memory mode). Slots still held are not
   * given back: they expire as those of an instance that died.
   */
  async close(): Promise<void> {
    if (!(this.slots instanceof RedisSlots) || !this.client) return;
    this.slots.stop();
    const client = this.client;
    if (client.status === "end") return;
    let timer: NodeJS.Timeout | undefined;
    const quit = client.quit().catch(() => undefined);
    await Promise.race([quit, new Promise<void>((r) => (timer = setTimeout(r, 1000)))]);
    clearTimeout(timer);
    client.disconnect();
  }

  /** Consumes a point: `ok`, the refusal's `RateLimiterRes`, or `unavailable` when the store did not answer. */
  private async consume(limiter: Limiter, key: string): Promise<"ok" | "unavailable" | { msBeforeNext: number }> {
    if (this.down()) return "unavailable";
    try {
      await limiter.consume(key);
      this.recovered();
      return "ok";
    } catch (e) {
      if (e instanceof RateLimiterRes) return e;
      this.failed(e);
      return "unavailable";
    }
  }

  /**
   * Whether Redis is known to be unreachable now (the client waits to reconnect, or was closed): the call is
   * refused at once instead of waiting for a command's timeout. While connecting, commands wait (bounded).
   */
  private down(): boolean {
    const status = this.client?.status;
    return status === "reconnecting" || status === "close" || status === "end";
  }

  private unavailable(): LimitRefusal {
    return { code: "limits_unavailable" };
  }

  /** Redis did not answer: logged once until it answers again. */
  private failed(e: unknown): void {
    this.deps.metrics?.redisError();
    if (this.failing) return;
    this.failing = true;
    this.deps.log?.(
      "limits: Redis does not answer; calls are refused with 503 temporarily_unavailable until it does",
      e,
    );
  }

  /** Redis answered (a connection ready, or a command that succeeded): logged once after a failure. */
  private recovered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.deps.log?.("limits: Redis answers again; calls are accepted");
  }
}

/** Running calls per workspace in this process. */
class MemorySlots {
  private readonly running = new Map<string, number>();

  take(workspaceId: string, most: number): boolean {
    const n = this.running.get(workspaceId) ?? 0;
    if (n >= most) return false;
    this.running.set(workspaceId, n + 1);
    return true;
  }

  give(workspaceId: string): void {
    const n = (this.running.get(workspaceId) ?? 1) - 1;
    if (n <= 0) this.running.delete(workspaceId);
    else this.running.set(workspaceId, n);
  }

  held(workspaceId: string): number {
    return this.running.get(workspaceId) ?? 0;
  }
}

/**
 * Running calls per workspace shared by every instance on one Redis (D107): a sorted set per workspace whose members
 * are the slots taken, each scored with the time it expires (Redis's own clock, so instances need not agree on the
 * time). Taking a slot first drops the expired members, then adds one if fewer than the limit remain, in one script
 * (atomic). The instance renews the expiry of its slots every sixth of `ttlMs` while their calls run, and removes a
 * slot when its call ends. A slot never leaks: when an instance dies mid-run its slots are no longer renewed and
 * stop counting `ttlMs` after their last renewal. Chosen over a count whose points expire after a fixed bound
 * (such as the provider timeout plus a margin) because a call may run longer than any one provider call (several
 * platforms or calls in turn, a final write retried for minutes, D75): a fixed bound would free its slot while it
 * still runs, or have to be so long that a dead instance's slot would block the workspace for minutes.
 */
class RedisSlots {
  /** The members this instance holds, by workspace (any one of them is given back when one of its calls ends). */
  private readonly mine = new Map<string, string[]>();
  private readonly instance = randomUUID();
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly client: Redis;
  private readonly prefix: string;
  private readonly ttlMs: number;
  private readonly failed: (e: unknown) => void;

  constructor(client: Redis, prefix: string, ttlMs: number, failed: (e: unknown) => void) {
    this.client = client;
    this.prefix = prefix;
    this.ttlMs = ttlMs;
    this.failed = failed;
    client.defineCommand("sdgwTakeSlot", { numberOfKeys: 1, lua: TAKE_SLOT });
    client.defineCommand("sdgwRenewSlots", { numberOfKeys: 1, lua: RENEW_SLOTS });
  }

  /** Takes a slot if fewer than `most` are held by every instance together; throws when Redis does not answer. */
  async take(workspaceId: string, most: number): Promise<boolean> {
    const member = `${this.instance}:${++this.next}`;
    const took = await this.run("sdgwTakeSlot", this.prefix + workspaceId, member, String(most), String(this.ttlMs));
    if (Number(took) !== 1) return false;
    const held = this.mine.get(workspaceId);
    if (held) held.push(member);
    else this.mine.set(workspaceId, [member]);
    // Started by the first call that took a slot, but about none of them: its lines carry no request's id.
    this.timer ??= outsideRequests(() => setInterval(() => this.renew(), Math.max(50, Math.floor(this.ttlMs / 6))));
    this.timer.unref();
    return true;
  }

  /** Gives back one of this instance's slots of the workspace (not awaited: if Redis does not answer, it expires). */
  give(workspaceId: string): void {
    const held = this.mine.get(workspaceId);
    const member = held?.pop();
    if (!member) return;
    if (!held!.length) this.mine.delete(workspaceId);
    if (!this.mine.size) this.stopTimer();
    this.client.zrem(this.prefix + workspaceId, member).catch((e: unknown) => this.failed(e));
  }

  held(workspaceId: string): number {
    return this.mine.get(workspaceId)?.length ?? 0;
  }

  /** Stops renewing: the slots still held expire `ttlMs` after their last renewal. */
  stop(): void {
    this.stopTimer();
    this.mine.clear();
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Pushes back the expiry of every slot this instance holds (one script per workspace, pipelined). */
  private renew(): void {
    if (!this.mine.size) {
      this.stopTimer();
      return;
    }
    const pipeline = this.client.pipeline();
    for (const [workspaceId, members] of this.mine)
      (pipeline as unknown as Record<string, (...args: string[]) => unknown>)["sdgwRenewSlots"]!(
        this.prefix + workspaceId,
        String(this.ttlMs),
        ...members,
      );
    pipeline
      .exec()
      .then((results) => {
        const error = results?.find(([e]) => e)?.[0];
        if (error) this.failed(error);
      })
      .catch((e: unknown) => this.failed(e));
  }

  private run(command: string, ...args: string[]): Promise<unknown> {
    return (this.client as unknown as Record<string, (...a: string[]) => Promise<unknown>>)[command]!(...args);
  }
}

/** The time on Redis's clock in ms (replicated by effects: Redis 5 and later). */
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** The set lives as long as its latest slot, whatever the slot lifetime of the instance that took it. */
const EXPIRE_WITH_LATEST = `local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if top[2] then redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(top[2]))) end`;

/** KEYS[1] the workspace's set; ARGV: member, most, ttl ms. 1 if taken, 0 if the workspace holds `most` already. */
const TAKE_SLOT = `${NOW}
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
${EXPIRE_WITH_LATEST}
return 1`;

/** KEYS[1] the workspace's set; ARGV: ttl ms, then the members to keep (only those still there). */
const RENEW_SLOTS = `${NOW}
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[i]) end
${EXPIRE_WITH_LATEST}
return 1`;

/** The limits of D27 (in memory or Redis) as the engine's `CallLimits` of a call. */
export function chargePortLimits(limits: Limits): CallLimits<RunContext> {
  return {
    failureBlock: (ctx) => limits.failureBlock(ctx.keyHash),
    keyCall: (ctx) => limits.keyCall(ctx.key.id),
    startRun: (ctx) => limits.startRun(ctx.key.workspace_id),
    endRun: (ctx) => limits.endRun(ctx.key.workspace_id),
  };
}
