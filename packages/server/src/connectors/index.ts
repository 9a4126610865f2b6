/**
 * Real platforms behind the providers port (D114): which platforms go live (those whose connector's credentials
 * are set), each live connector built over the gateway's `fetch` (recording or replaying, D123), the upstream
 * budget (D121) and cache (D122) in Redis when the limits are there, in memory otherwise; the other platforms stay
 * on the simulator. A live platform never falls back to simulated data. Every call of a live connector is reported
 * on one line for the operator: the units it spent upstream beside what its quote said and its price in credits.
 */
import type { Platform } from "@sdgw/types";
import { Catalog, Finder, type PlatformProvider, Simulator } from "@sdgw/engine";
import {
  CONNECTORS,
  isConnectorConfigError,
  MemoryBudget,
  MemoryCache,
  MemoryShared,
  switchedOn,
  type BudgetBuckets,
  type ConnectorContext,
  type ConnectorDefinition,
  type RawSettings,
  type SharedStore,
  type UpstreamBudget,
  type UpstreamCache,
} from "@sdgw/engine/connectors";
import type { Redis } from "ioredis";
import {
  ConfigError,
  type GatewayOptions,
  type ServerConfig,
  type UpstreamConfig,
  withoutPassword,
} from "../config.ts";
import type { Limits } from "../limits/limits.ts";
import { ignoredParams, recordingFetch, replayingFetch } from "./cassettes.ts";
import { RedisBudget, RedisCache, RedisShared } from "./redis.ts";
import { pluggedProvider } from "./plugins.ts";

/** One live platform: its connector and what it reads. */
export interface LivePlatform {
  platform: Platform;
  /** The API it reads (`YouTube Data API v3`). */
  api: string;
  /** Where it reads, for the banner (`YouTube Data API v3 at https://www.googleapis.com/youtube/v3`). */
  where: string;
  /** `live`: a connector of this build; `plugged`: an operator's own (D158). */
  source: "live" | "plugged";
}

/** The live connectors of a gateway: which platforms, their shared budget and cache. */
export interface Upstream {
  /** The platforms read live, in the order of the platform list. */
  live: readonly LivePlatform[];
  budget: UpstreamBudget;
  cache: UpstreamCache;
  /** One line for the banner: which platforms are live, which simulated (never a secret). */
  summary(): string;
  /** Asks each live platform whether the credentials work (one cheap request each). */
  check(signal?: AbortSignal): Promise<{ platform: Platform; ok: boolean; message: string }[]>;
}

/** The connector of a platform, if this build has one. */
function connectorOf(platform: string): ConnectorDefinition<unknown> | undefined {
  return CONNECTORS.find((c) => c.platform === platform) as ConnectorDefinition<unknown> | undefined;
}

/** What the gateway hands over to build its providers. */
export interface UpstreamDeps {
  upstream: UpstreamConfig;
  /** The prefix of the limits' Redis keys (the budget and cache live under it too). */
  redisKeyPrefix: string;
  /** The limits' Redis client (D107), or null: the budget and cache in memory. */
  redis: Redis | null;
  now: () => number;
  log: (message: string, error?: unknown) => void;
  /** The `fetch` of live connectors (default `globalThis.fetch`). */
  fetch?: typeof fetch;
}

/**
 * The providers of every platform: a live connector where its credentials are set, else `simulated`'s. Throws a
 * {@link ConfigError} naming each setting (`connectors.youtube.apiKey`) that is not what it must be.
 */
export function liveProviders(
  simulated: Readonly<Record<Platform, PlatformProvider>>,
  deps: UpstreamDeps,
): { providers: Record<Platform, PlatformProvider>; upstream: Upstream } {
  const providers = { ...simulated } as Record<Platform, PlatformProvider>;
  const built: { def: ConnectorDefinition<unknown>; settings: unknown; plugged: boolean }[] = [];
  const problems: string[] = [];
  const plugins = (deps.upstream.plugins ?? []) as readonly ConnectorDefinition<unknown>[];
  for (const def of plugins) {
    if (plugins.filter((p) => p.platform === def.platform).length > 1) {
      problems.push(`plug-ins: two connectors for ${def.platform}; keep one`);
      continue;
    }
    // A plug-in is on when loaded: the operator named it (D158).
    try {
      built.push({
        def,
        settings: def.configure(deps.upstream.connectors[def.platform] ?? {}, (name) => {
          const env = def.settings.find((x) => x.name === name)?.env;
          return env ? `${env} (connectors.${def.platform}.${name})` : `connectors.${def.platform}.${name}`;
        }),
        plugged: true,
      });
    } catch (e) {
      if (!isConnectorConfigError(e)) throw e;
      problems.push(...e.problems.map((p) => `plug-in for ${def.platform}: ${p}`));
    }
  }
  for (const [platform, raw] of Object.entries(deps.upstream.connectors) as [Platform, RawSettings][]) {
    if (plugins.some((p) => p.platform === platform)) continue;
    const def = connectorOf(platform);
    if (!def) {
      problems.push(`connectors.${platform}: this build has no live connector for ${platform}`);
      continue;
    }
    if (!switchedOn(def, raw)) continue;
    try {
      built.push({ def, settings: def.configure(raw, (name) => `connectors.${platform}.${name}`), plugged: false });
    } catch (e) {
      if (!isConnectorConfigError(e)) throw e;
      problems.push(...e.problems);
    }
  }
  if (problems.length) throw new ConfigError(problems);
  const buckets: BudgetBuckets = Object.fromEntries(
    built.map(({ def, settings }) => [def.platform, def.budget(settings)]),
  );
  const budget: UpstreamBudget = deps.redis
    ? new RedisBudget({ client: deps.redis, prefix: deps.redisKeyPrefix, buckets, now: deps.now, log: deps.log })
    : new MemoryBudget({ buckets, now: deps.now });
  const cache: UpstreamCache = !deps.upstream.upstreamCache
    ? { get: async () => undefined, set: async () => undefined }
    : deps.redis
      ? new RedisCache({ client: deps.redis, prefix: deps.redisKeyPrefix, log: deps.log })
      : new MemoryCache({ now: deps.now });
  const shared: SharedStore = deps.redis
    ? new RedisShared({ client: deps.redis, prefix: deps.redisKeyPrefix, log: deps.log })
    : new MemoryShared({ now: deps.now });
  const live: LivePlatform[] = [];
  for (const { def, settings, plugged } of built) {
    const secrets = def.secrets(settings);
    const cassettes = {
      platform: def.platform,
      secrets,
      ignore: ignoredParams(def.volatileParams),
      log: deps.log,
    };
    const base = deps.fetch ?? globalThis.fetch.bind(globalThis);
    const fetch = deps.upstream.upstreamReplayDir
      ? replayingFetch({ ...cassettes, dir: deps.upstream.upstreamReplayDir })
      : deps.upstream.upstreamRecordDir
        ? recordingFetch(base, { ...cassettes, dir: deps.upstream.upstreamRecordDir })
        : base;
    const ctx: ConnectorContext = {
      fetch,
      budget,
      cache,
      now: deps.now,
      log: { info: (m) => deps.log(m), error: (m) => deps.log(`ERROR ${m}`) },
      shared,
    };
    const made = def.create(settings, ctx);
    if (plugged) {
      const checked = pluggedProvider(def.platform, made, simulated[def.platform]);
      if (!("provider" in checked)) {
        problems.push(...checked.problems.map((p) => `plug-in for ${def.platform}: ${p}`));
        continue;
      }
      providers[def.platform] = reported(checked.provider, deps.log);
    } else providers[def.platform] = reported(made, deps.log);
    live.push({
      platform: def.platform,
      api: def.api,
      where: withoutPassword(def.describe(settings)),
      source: plugged ? "plugged" : "live",
    });
  }
  if (problems.length) throw new ConfigError(problems);
  const mode = deps.upstream.upstreamReplayDir
    ? `, replaying ${deps.upstream.upstreamReplayDir}`
    : deps.upstream.upstreamRecordDir
      ? `, recording into ${deps.upstream.upstreamRecordDir}`
      : "";
  const where = deps.redis
    ? "budgets and cache in Redis, shared by every instance"
    : "budgets and cache in this process";
  return {
    providers,
    upstream: {
      live,
      budget,
      cache,
      summary: () => {
        const others = (source: string) =>
          (Object.keys(providers) as Platform[]).filter(
            (p) => !live.some((l) => l.platform === p) && (providers[p].source ?? "simulated") === source,
          );
        const parts = live.map((l) => `${l.platform} ${l.source} (${l.where}${mode}; ${where})`);
        for (const source of ["plugged", "simulated"])
          if (others(source).length) parts.push(`${others(source).join(", ")} ${source}`);
        return parts.join("; ");
      },
      check: async (signal) =>
        Promise.all(
          live.map(async (l) => {
            const check = providers[l.platform].check;
            if (!check) return { platform: l.platform, ok: true, message: "nothing to check" };
            try {
              return { platform: l.platform, ...(await check(signal ?? AbortSignal.timeout(30_000))) };
            } catch (e) {
              return { platform: l.platform, ok: false, message: e instanceof Error ? e.message : String(e) };
            }
          }),
        ),
    },
  };
}

/** What a gateway reads platforms with, on either store. */
export interface GatewayPlatforms {
  /** The simulator, when the providers are the default ones. */
  simulator: Simulator | null;
  providers: Readonly<Record<Platform, PlatformProvider>>;
  /** The live connectors (D114): which platforms read their official API, their shared budget and cache. */
  upstream: Upstream;
  catalog: Catalog;
  finder: Finder;
}

/**
 * The platforms of a gateway, on either store: `options.providers` (or the simulator's), with a live connector
 * wherever the configuration sets one up (D114; the other platforms stay on the simulator), its budget and cache on
 * the limits' Redis client when there is one; and the catalog and finder over them.
 */
export function gatewayPlatforms(o: {
  options: Pick<GatewayOptions, "providers" | "upstreamFetch" | "simulator">;
  config: ServerConfig;
  limits: Pick<Limits, "redis">;
  now: () => number;
  log: (message: string, error?: unknown) => void;
}): GatewayPlatforms {
  const simulator = o.options.providers ? null : new Simulator({ now: o.now, ...o.options.simulator });
  const { providers, upstream } = liveProviders(o.options.providers ?? simulator!.providers, {
    upstream: o.config,
    redisKeyPrefix: o.config.redisKeyPrefix,
    redis: o.limits.redis,
    now: o.now,
    log: o.log,
    ...(o.options.upstreamFetch ? { fetch: o.options.upstreamFetch } : {}),
  });
  const catalog = new Catalog(providers);
  return { simulator, providers, upstream, catalog, finder: new Finder(catalog) };
}

/** The provider, its every call reported on one line: units spent upstream, its quote, the answer, its price. */
function reported(provider: PlatformProvider, log: (message: string) => void): PlatformProvider {
  return {
    ...provider,
    call: async (req) => {
      const outcome = await provider.call(req);
      const spent = outcome.upstream;
      if (spent) {
        const quoted = provider.upstreamCost?.(req.operation, req.params) ?? 0;
        const price = provider.operations.find((o) => o.name === req.operation)?.price ?? 0;
        const answered = outcome.status === "error" ? `error ${outcome.failure.code}` : outcome.status;
        const charged = outcome.status === "ok" || outcome.status === "empty" ? `${price} credit(s)` : "nothing";
        log(
          `upstream ${provider.platform}.${req.operation}: ${
            spent.cached ? "from the cache, 0 units" : `${spent.units} unit(s) in ${spent.requests} request(s)`
          } (quoted ${quoted}); ${answered}; charges ${charged}`,
        );
      }
      return outcome;
    },
  };
}
