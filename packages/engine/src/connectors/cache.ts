/**
 * Reads through the upstream cache (D122): the key is the platform, the operation and the normalised parameters
 * (a link and the id it names share one entry); only `ok` and `empty` answers are kept, for the operation's TTL. A
 * hit is still a charged call (the seed: a cache hit is a call) and says so in a warning; it spends no upstream
 * quota.
 */
import { seedText } from "../canonical.ts";
import type { ProviderOutcome } from "../providers/port.ts";
import type { ConnectorContext } from "./context.ts";

const UNKEYED = new Set(["max_cost_credits", "op", "platform"]);

/** The cache key of a call: `platform|operation|canonical parameters`. */
export function cacheKey(platform: string, operation: string, params: Readonly<Record<string, unknown>>): string {
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) if (!UNKEYED.has(k) && v !== undefined) kept[k] = v;
  return `${platform}|${operation}|${seedText(kept)}`;
}

/** The warning of an answer served from the cache. */
export function cacheWarning(platform: string, ageSeconds: number): string {
  return `served from the gateway's cache: ${platform} answered this ${ageSeconds} s ago and was not asked again`;
}

/** The answer from the cache, or `read()`'s (kept when `ok` or `empty` and `ttlMs` > 0). */
export async function throughCache(
  ctx: ConnectorContext,
  o: { platform: string; operation: string; params: Readonly<Record<string, unknown>>; ttlMs: number },
  read: () => Promise<ProviderOutcome>,
): Promise<ProviderOutcome> {
  const key = cacheKey(o.platform, o.operation, o.params);
  if (o.ttlMs > 0) {
    const hit = await ctx.cache.get(key);
    if (hit) {
      const age = Math.max(0, Math.round((ctx.now() - hit.fetchedAt) / 1000));
      return {
        ...hit.outcome,
        warnings: [...(hit.outcome.warnings ?? []), cacheWarning(o.platform, age)],
        upstream: { units: 0, requests: 0, cached: true },
      };
    }
  }
  const fetchedAt = ctx.now();
  const outcome = await read();
  if (o.ttlMs > 0 && (outcome.status === "ok" || outcome.status === "empty")) {
    const { upstream: _spent, ...kept } = outcome;
    void _spent;
    await ctx.cache.set(key, { outcome: kept, fetchedAt }, o.ttlMs);
  }
  return outcome;
}
