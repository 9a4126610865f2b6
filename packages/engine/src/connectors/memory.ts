/**
 * The budget and cache ports in one process's memory (D121, D122): what the server uses without Redis, what the
 * mock and tests use. Each instance counts alone, so N instances spend up to N times a budget; the server says so.
 */
import type {
  BudgetAnswer,
  BudgetBucket,
  BudgetCharge,
  CachedAnswer,
  SharedStore,
  UpstreamBudget,
  UpstreamCache,
} from "./context.ts";
import { nextMidnight, zonedDay } from "./zone.ts";

/** The buckets of every platform's budget, by platform. */
export type BudgetBuckets = Readonly<Record<string, readonly BudgetBucket[]>>;

/** The bucket `name` of `platform`; a name the connector never declared is a bug, not a refusal. */
export function bucketOf(buckets: BudgetBuckets, platform: string, name: string): BudgetBucket {
  const b = buckets[platform]?.find((x) => x.name === name);
  if (!b) throw new TypeError(`no upstream budget bucket ${platform}.${name} was declared`);
  return b;
}

/**
 * The period of a bucket that `now` falls in and when it ends (D150): a day in the bucket's time zone, refilled at
 * its midnight, or — for a bucket with `windowMs` — the window of that length, aligned to the epoch, that holds `now`.
 */
export function bucketPeriod(bucket: BudgetBucket, now: number): { period: string; resetsAt: number } {
  if (bucket.windowMs !== undefined && bucket.windowMs > 0) {
    const n = Math.floor(now / bucket.windowMs);
    return { period: `w${bucket.windowMs}-${n}`, resetsAt: (n + 1) * bucket.windowMs };
  }
  return { period: zonedDay(now, bucket.timeZone), resetsAt: nextMidnight(now, bucket.timeZone) };
}

/** Options of {@link MemoryBudget}. */
export interface MemoryBudgetOptions {
  /** The buckets of each platform's budget. */
  buckets: BudgetBuckets;
  /** The clock (ms since the epoch). */
  now: () => number;
}

/** Options of {@link MemoryCache}. */
export interface MemoryCacheOptions {
  /** The clock (ms since the epoch). */
  now: () => number;
  /** The most answers kept (default 2000). */
  maxEntries?: number;
}

/** A budget counted in this process (D121). */
export class MemoryBudget implements UpstreamBudget {
  private readonly usedBy = new Map<string, { day: string; used: number }>();
  private readonly buckets: BudgetBuckets;
  private readonly now: () => number;

  /** `buckets`: each platform's declared buckets; `now`: the clock whose day in each bucket's zone is counted. */
  constructor(o: MemoryBudgetOptions) {
    this.buckets = o.buckets;
    this.now = o.now;
  }

  /** Takes the units of every charge, all or none; refuses naming the first bucket without room. */
  async take(platform: string, charges: readonly BudgetCharge[]): Promise<BudgetAnswer> {
    const now = this.now();
    const rows = charges.map((c) => {
      const bucket = bucketOf(this.buckets, platform, c.bucket);
      return { c, bucket, row: this.row(platform, bucket, now) };
    });
    for (const { c, bucket, row } of rows)
      if (row.used + c.units > bucket.limit)
        return {
          ok: false,
          reason: "drained",
          bucket: bucket.name,
          label: bucket.label,
          limit: bucket.limit,
          resetsAt: bucketPeriod(bucket, now).resetsAt,
        };
    for (const { c, row } of rows) row.used += c.units;
    return { ok: true };
  }

  /** Marks the bucket used up until its next midnight. */
  async drain(platform: string, bucket: string): Promise<void> {
    const b = bucketOf(this.buckets, platform, bucket);
    this.row(platform, b, this.now()).used = b.limit;
  }

  /** Units used today per bucket. */
  async used(platform: string): Promise<Record<string, number>> {
    const now = this.now();
    return Object.fromEntries((this.buckets[platform] ?? []).map((b) => [b.name, this.row(platform, b, now).used]));
  }

  /** The count of the bucket's period (today in its zone, or its window); a new period starts at 0. */
  private row(platform: string, bucket: BudgetBucket, now: number): { day: string; used: number } {
    const key = `${platform}\u0000${bucket.name}`;
    const day = bucketPeriod(bucket, now).period;
    let row = this.usedBy.get(key);
    if (!row || row.day !== day) {
      row = { day, used: 0 };
      this.usedBy.set(key, row);
    }
    return row;
  }
}

/** A cache in this process: at most `maxEntries` answers, the oldest written dropped first (D122). */
export class MemoryCache implements UpstreamCache {
  private readonly entries = new Map<string, { answer: CachedAnswer; until: number }>();
  private readonly now: () => number;
  private readonly maxEntries: number;

  /** A cache on the clock `now`, of at most `maxEntries` answers. */
  constructor(o: MemoryCacheOptions) {
    this.now = o.now;
    this.maxEntries = o.maxEntries ?? 2000;
  }

  /** The answer kept under `key` and not expired, or undefined. */
  async get(key: string): Promise<CachedAnswer | undefined> {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.answer;
  }

  /** Keeps `answer` for `ttlMs` (dropping the oldest when full). */
  async set(key: string, answer: CachedAnswer, ttlMs: number): Promise<void> {
    if (!(ttlMs > 0)) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { answer, until: this.now() + ttlMs });
  }
}

/** Options of {@link MemoryShared}. */
export interface MemorySharedOptions {
  /** The clock (ms since the epoch). */
  now: () => number;
}

/** Shared values in this process (D150): what the server uses without Redis, what tests use. */
export class MemoryShared implements SharedStore {
  private readonly entries = new Map<string, { value: string; until: number }>();
  private readonly now: () => number;

  /** A store on the clock `o.now`. */
  constructor(o: MemorySharedOptions) {
    this.now = o.now;
  }

  /** The value under `key`, if not expired. */
  async get(key: string): Promise<string | undefined> {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Keeps `value` for `ttlMs`. */
  async set(key: string, value: string, ttlMs: number): Promise<void> {
    if (ttlMs > 0) this.entries.set(key, { value, until: this.now() + ttlMs });
  }

  /** Forgets `key`. */
  async delete(key: string): Promise<void> {
    this.entries.delete(key);
  }
}
