/**
 * The dependency bag: every system of the server built once from a configuration and handed to the HTTP layer.
 * Tests reach into it (the store, the ledger, the simulator's knobs) instead of going through globals.
 */
import type { Catalog, ChargePorts, Finder, PlatformProvider, Simulator } from "@sdgw/engine";
import type { Platform } from "@sdgw/types";
import {
  ConfigError,
  DEFAULT_RUN_LEASE_MS,
  defaultConfig,
  type GatewayOptions,
  isRedisUrl,
  type ServerConfig,
  withoutPassword,
} from "../../config.ts";
import { gatewayPlatforms } from "../../connectors/index.ts";
import { gatewayLimits, type Limits } from "../../limits/limits.ts";
import { bounded, type HealthCheck } from "../../ops/health.ts";
import { createLogger } from "../../ops/log.ts";
import { Metrics } from "../../ops/metrics.ts";
import type { HttpAnswer, RunContext } from "../../runs/types.ts";
import type { GatewayPorts } from "../port.ts";
import { Accounts } from "./accounts.ts";
import { chargePorts } from "./call-store.ts";
import { Idempotency } from "./idempotency.ts";
import { Ledger } from "./ledger.ts";
import { Owners } from "./owners.ts";
import { Runs } from "./runs.ts";
import { Schedules } from "./schedules.ts";
import { ServiceState } from "./service.ts";
import { Sessions } from "./sessions.ts";
import { Store } from "./store.ts";

/** Everything the server is made of, on the embedded store: its systems as they are (a test reaches into them). */
export interface Gateway extends GatewayPorts {
  config: ServerConfig;
  store: Store;
  accounts: Accounts;
  ledger: Ledger;
  idempotency: Idempotency;
  limits: Limits;
  runs: Runs;
  /**
   * This gateway's owner of runs and its lease (several processes may share the database file: recovery ends only
   * the runs of owners that are gone).
   */
  owners: Owners;
  /** Schedules of `account_watch` (D11) and the follower readings of its runs. */
  schedules: Schedules;
  /** Whether charged calls are paused (D60), as every process on the database sees it. */
  service: ServiceState;
  /** Console users, sign-in and sessions. */
  sessions: Sessions;
  /** The engine's storage port and limits over these systems: every charged call passes `chargeCall` through them. */
  calls: ChargePorts<RunContext, HttpAnswer>;
  /** The provider of every platform. */
  providers: Readonly<Record<Platform, PlatformProvider>>;
  catalog: Catalog;
  finder: Finder;
  /** The simulator, when the providers are the default ones. */
  simulator: Simulator | null;
  /** The clock every system reads, in milliseconds since the epoch. */
  now: () => number;
  /** Where failures of the server's side are reported (a broken run, a handler that threw). */
  log: (message: string, error?: unknown) => void;
  /** Runs of gone processes recovered as broken when this gateway opened its store. */
  recovered: number;
}

/**
 * Opens the store, builds every system, and (unless `recover: false`) takes a lease and ends the runs of processes
 * that are gone, then keeps renewing the lease and recovering while the store is open.
 */
export function createGateway(options: GatewayOptions = {}): Gateway {
  const config = defaultConfig(options);
  if (config.redisUrl !== null && !isRedisUrl(config.redisUrl))
    throw new ConfigError([
      `redisUrl must be a Redis URL, redis://[user:password@]host[:port][/db] or rediss://… (got ${JSON.stringify(withoutPassword(config.redisUrl))})`,
    ]);
  const now = options.now ?? Date.now;
  const log = options.log ?? createLogger({ format: options.logFormat ?? "text" });
  const metrics = new Metrics(options.metrics);
  // Chunks off (the default): every answer is stored whole, the chunk threshold out of reach (D67).
  const store = new Store(config.dbPath, {
    answers: {
      quotaBytes: config.answerLogQuotaBytes,
      fullForMs: config.answerLogFullMs,
      ...(config.answerLogChunks ? {} : { chunkFrom: Number.POSITIVE_INFINITY }),
    },
  });
  const accounts = new Accounts({ store, now });
  const ledger = new Ledger({ store, now, limits: config.limits, accounts });
  const idempotency = new Idempotency({ store, now, ttlMs: config.idempotencyTtlMs });
  const leaseMs = options.runLeaseMs ?? DEFAULT_RUN_LEASE_MS;
  const limits = gatewayLimits(config, { leaseMs, now, log, metrics });
  const platforms = gatewayPlatforms({ options, config, limits, now, log });
  const { providers } = platforms;
  const owners = new Owners({ store, leaseMs, log });
  const runs = new Runs({ store, ledger, idempotency, limits, owners, providers, config, now, log, metrics });
  metrics.watch({ inFlight: () => runs.inFlight });
  const schedules = new Schedules({ store, now });
  const service = new ServiceState(store, now);
  const calls = chargePorts({ store, idempotency, runs, service, limits });
  let recovered = 0;
  if (options.recover !== false) {
    /** Ends the runs of gone owners, and marks the schedules whose last run that was. */
    const recover = (): string[] => runs.recover((ended) => schedules.recover(new Set(ended)));
    store.tx(() => owners.register());
    if (store.answers) store.answers.onOpen = (file) => owners.useSegment(file);
    recovered = recover().length;
    if (config.dbPath !== ":memory:") {
      owners.start((renewed) => {
        if (!renewed) runs.reconcile();
        const ended = recover();
        if (ended.length)
          log(
            `recovered ${ended.length} run(s) of a process that is gone: ended as broken, holds released, nothing charged`,
          );
      });
    }
  }
  return {
    config,
    store,
    accounts,
    ledger,
    idempotency,
    limits,
    runs,
    owners,
    schedules,
    service,
    sessions: new Sessions({ store, now, config: config.sessions }),
    durable: () => store.durable(),
    calls,
    ...platforms,
    now,
    log,
    recovered,
    metrics,
    health: () => embeddedHealth(store, limits),
  };
}

/** D113: the embedded store is open (and answers a statement); Redis answers when the limits are kept there. */
async function embeddedHealth(store: Store, limits: Limits): Promise<HealthCheck[]> {
  const database = bounded("database", () => {
    if (!store.db.isOpen) throw new Error("the SQLite store is closed");
    store.db.prepare("SELECT 1").get();
    return "SQLite store open";
  });
  const redis = limits.shared ? [bounded("redis", () => limits.ping().then(() => "answers PING"))] : [];
  return Promise.all([database, ...redis]);
}
