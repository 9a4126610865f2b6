/**
 * The upstream budgets (D121) and cache (D122) of live connectors in Redis, shared by every instance on it, over the
 * limits' own client (D107: the same bounds, a command past 1 s fails). A budget that Redis cannot decide is
 * refused (`unavailable`: the call answers `temporarily_unavailable`, nothing charged), never granted — N
 * instances each spending alone would spend N times the quota. A cache that Redis cannot answer is a miss.
 */
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import {
  bucketOf,
  bucketPeriod,
  type BudgetAnswer,
  type BudgetBuckets,
  type BudgetCharge,
  type BudgetBucket,
  type CachedAnswer,
  type SharedStore,
  type UpstreamBudget,
  type UpstreamCache,
} from "@sdgw/engine/connectors";

/** Whether the client is known not to answer now (waiting to reconnect, or closed): refuse at once. */
const down = (client: Redis) => ["reconnecting", "close", "end"].includes(client.status);

/** Logs a failure once until a command succeeds again. */
class OnceLog {
  private failing = false;
  private readonly log: (message: string, error?: unknown) => void;
  private readonly what: string;
  constructor(log: (message: string, error?: unknown) => void, what: string) {
    this.log = log;
    this.what = what;
  }
  failed(e: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.log(`upstream ${this.what}: Redis does not answer`, e);
  }
  ok(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log(`upstream ${this.what}: Redis answers again`);
  }
}

/**
 * KEYS: one counter per bucket; ARGV: n, then per bucket its units, limit and expiry (ms since the epoch). 0 when
 * every bucket had room and all were counted; else the 1-based index of the first bucket without room.
 */
const TAKE = `local n = tonumber(ARGV[1])
for i = 1, n do
  local used = tonumber(redis.call('GET', KEYS[i]) or '0')
  if used + tonumber(ARGV[1 + (i - 1) * 3 + 1]) > tonumber(ARGV[1 + (i - 1) * 3 + 2]) then return i end
end
for i = 1, n do
  redis.call('INCRBY', KEYS[i], ARGV[1 + (i - 1) * 3 + 1])
  redis.call('PEXPIREAT', KEYS[i], ARGV[1 + (i - 1) * 3 + 3])
end
return 0`;

/**
 * A budget counted in Redis under `<prefix>upstream:budget:<platform>:<bucket>:<period>`: the day in the bucket's
 * zone, or the epoch-aligned window of a bucket with `windowMs` (D150).
 */
export class RedisBudget implements UpstreamBudget {
  private readonly health: OnceLog;
  private readonly o: {
    client: Redis;
    prefix: string;
    buckets: BudgetBuckets;
    now: () => number;
    log: (message: string, error?: unknown) => void;
  };
  constructor(o: RedisBudget["o"]) {
    this.o = o;
    this.health = new OnceLog(o.log, "budget");
    o.client.defineCommand("sdgwTakeBudget", { lua: TAKE });
  }

  private key(platform: string, bucket: BudgetBucket, now: number): string {
    return `${this.o.prefix}upstream:budget:${platform}:${bucket.name}:${bucketPeriod(bucket, now).period}`;
  }

  /** When a period's counter may go: a day's a day after its end (a clock a little off still finds it). */
  private expiry(bucket: BudgetBucket, now: number): number {
    const { resetsAt } = bucketPeriod(bucket, now);
    return resetsAt + (bucket.windowMs ? Math.max(bucket.windowMs, 60_000) : 86_400_000);
  }

  async take(platform: string, charges: readonly BudgetCharge[]): Promise<BudgetAnswer> {
    const now = this.o.now();
    const rows = charges.map((c) => ({ c, b: bucketOf(this.o.buckets, platform, c.bucket) }));
    if (down(this.o.client)) return this.unavailable(platform);
    const keys = rows.map(({ b }) => this.key(platform, b, now));
    const args = rows.flatMap(({ c, b }) => [c.units, b.limit, this.expiry(b, now)].map(String));
    let short: number;
    try {
      // A member call: the command ioredis defined reads the client as `this`.
      const client = this.o.client as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>;
      short = Number(await client["sdgwTakeBudget"]!(keys.length, ...keys, String(rows.length), ...args));
      this.health.ok();
    } catch (e) {
      this.health.failed(e);
      return this.unavailable(platform);
    }
    if (short === 0) return { ok: true };
    const b = rows[short - 1]!.b;
    return {
      ok: false,
      reason: "drained",
      bucket: b.name,
      label: b.label,
      limit: b.limit,
      resetsAt: bucketPeriod(b, now).resetsAt,
    };
  }

  async drain(platform: string, bucket: string): Promise<void> {
    const now = this.o.now();
    const b = bucketOf(this.o.buckets, platform, bucket);
    try {
      await this.o.client.set(this.key(platform, b, now), String(b.limit), "PXAT", this.expiry(b, now));
    } catch (e) {
      this.health.failed(e);
    }
  }

  async used(platform: string): Promise<Record<string, number>> {
    const now = this.o.now();
    const buckets = this.o.buckets[platform] ?? [];
    if (!buckets.length) return {};
    const values = await this.o.client.mget(...buckets.map((b) => this.key(platform, b, now)));
    return Object.fromEntries(buckets.map((b, i) => [b.name, Number(values[i] ?? 0)]));
  }

  private unavailable(platform: string): BudgetAnswer {
    return { ok: false, reason: "unavailable", message: `the ${platform} budget in Redis does not answer` };
  }
}

/** A cache in Redis under `<prefix>upstream:cache:<sha-256 of the key>`; what Redis cannot answer is a miss. */
export class RedisCache implements UpstreamCache {
  private readonly health: OnceLog;
  private readonly o: { client: Redis; prefix: string; log: (message: string, error?: unknown) => void };
  constructor(o: RedisCache["o"]) {
    this.o = o;
    this.health = new OnceLog(o.log, "cache");
  }

  private key(key: string): string {
    return `${this.o.prefix}upstream:cache:${createHash("sha256").update(key).digest("base64url")}`;
  }

  async get(key: string): Promise<CachedAnswer | undefined> {
    if (down(this.o.client)) return undefined;
    try {
      const text = await this.o.client.get(this.key(key));
      this.health.ok();
      return text ? (JSON.parse(text) as CachedAnswer) : undefined;
    } catch (e) {
      this.health.failed(e);
      return undefined;
    }
  }

  async set(key: string, answer: CachedAnswer, ttlMs: number): Promise<void> {
    if (!(ttlMs > 0) || down(this.o.client)) return;
    try {
      await this.o.client.set(this.key(key), JSON.stringify(answer), "PX", Math.ceil(ttlMs));
    } catch (e) {
      this.health.failed(e);
    }
  }
}

/**
 * Values shared by the instances (D150), in Redis under `<prefix>upstream:shared:<key>`: an access token one
 * instance fetched. What Redis cannot answer reads as nothing and keeps nothing (each instance then fetches its own).
 */
export class RedisShared implements SharedStore {
  private readonly health: OnceLog;
  private readonly o: { client: Redis; prefix: string; log: (message: string, error?: unknown) => void };
  constructor(o: RedisShared["o"]) {
    this.o = o;
    this.health = new OnceLog(o.log, "shared values");
  }

  private key(key: string): string {
    return `${this.o.prefix}upstream:shared:${key}`;
  }

  async get(key: string): Promise<string | undefined> {
    if (down(this.o.client)) return undefined;
    try {
      const v = await this.o.client.get(this.key(key));
      this.health.ok();
      return v ?? undefined;
    } catch (e) {
      this.health.failed(e);
      return undefined;
    }
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    if (!(ttlMs > 0) || down(this.o.client)) return;
    try {
      await this.o.client.set(this.key(key), value, "PX", Math.ceil(ttlMs));
    } catch (e) {
      this.health.failed(e);
    }
  }

  async delete(key: string): Promise<void> {
    if (down(this.o.client)) return;
    try {
      await this.o.client.del(this.key(key));
    } catch (e) {
      this.health.failed(e);
    }
  }
}
