/**
 * The dependency bag: every system of the server built once from a configuration and handed to the HTTP layer.
 * Tests reach into it (the store, the ledger, the simulator's knobs) instead of going through globals.
 */
import type { Platform } from "@sdgw/types";
import { Catalog } from "./catalog.ts";
import { defaultConfig, type ServerConfig, type ServerOptions } from "./config.ts";
import { Finder } from "./find.ts";
import type { PlatformProvider } from "./providers/port.ts";
import { Simulator, type SimulatorOptions } from "./providers/simulator/index.ts";
import { Accounts } from "./systems/accounts.ts";
import { Idempotency } from "./systems/idempotency.ts";
import { Ledger } from "./systems/ledger.ts";
import { Limits } from "./systems/limits.ts";
import { Runs } from "./systems/runs.ts";
import { Schedules } from "./systems/schedules.ts";
import { Store } from "./systems/store.ts";

/** Everything the server is made of. */
export interface Gateway {
  config: ServerConfig;
  store: Store;
  accounts: Accounts;
  ledger: Ledger;
  idempotency: Idempotency;
  limits: Limits;
  runs: Runs;
  /** Schedules of `account_watch` (D11) and the follower readings of its runs. */
  schedules: Schedules;
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
  /** Runs recovered as broken when this gateway opened its store. */
  recovered: number;
}

/** Options of `createGateway`: the configuration, and optionally other providers, a clock or a logger. */
export interface GatewayOptions extends ServerOptions {
  /** Providers per platform; default: the simulator. */
  providers?: Readonly<Record<Platform, PlatformProvider>>;
  /** Options of the default simulator. */
  simulator?: SimulatorOptions;
  /** The clock (ms). */
  now?: () => number;
  /** Where failures of the server's side are reported; default: `console.error` with an `[sdgw]` prefix. */
  log?: (message: string, error?: unknown) => void;
  /**
   * Whether opening the store ends the runs a previous process left running (default true). The admin CLI passes
   * false: it opens the database while the server may be running, and those runs are the server's.
   */
  recover?: boolean;
}

/** Opens the store, recovers runs left by a previous process, and builds every system. */
export function createGateway(options: GatewayOptions = {}): Gateway {
  const config = defaultConfig(options);
  const now = options.now ?? Date.now;
  const log = options.log ?? ((message: string, error?: unknown) => console.error(`[sdgw] ${message}`, error ?? ""));
  const store = new Store(config.dbPath);
  const simulator = options.providers ? null : new Simulator({ now, ...options.simulator });
  const providers = options.providers ?? simulator!.providers;
  const accounts = new Accounts({ store, now });
  const ledger = new Ledger({ store, now, limits: config.limits, accounts });
  const idempotency = new Idempotency({ store, now, ttlMs: config.idempotencyTtlMs });
  const limits = new Limits({ limits: config.limits, now });
  const runs = new Runs({ store, ledger, idempotency, limits, providers, config, now, log });
  const catalog = new Catalog(providers);
  const schedules = new Schedules({ store, now });
  let recovered = 0;
  if (options.recover !== false) {
    const running = new Set(store.all<{ id: string }>("SELECT id FROM runs WHERE state = 'running'").map((r) => r.id));
    recovered = runs.recover();
    schedules.recover(running);
  }
  return { config, store, accounts, ledger, idempotency, limits, runs, schedules, providers, catalog, finder: new Finder(catalog), simulator, now, log, recovered };
}
