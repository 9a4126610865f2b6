/**
 * The server's systems as the HTTP layer, the MCP server and tool runs see them: ports whose calls answer now (the
 * embedded SQLite store) or later (PostgreSQL, several instances on one database, D108). Each port is a system's
 * own methods with the same parameters and results, wrapped in `Awaitable`; the embedded systems satisfy them as
 * they are, and the HTTP layer awaits every call.
 */
import type { Awaitable, Catalog, ChargePorts, Finder, PlatformProvider, Simulator } from "@sdgw/engine";
import type { Platform } from "@sdgw/types";
import type { ServerConfig } from "../config.ts";
import type { HealthCheck } from "../ops/health.ts";
import type { Metrics } from "../ops/metrics.ts";
import type { Upstream } from "../connectors/index.ts";
import type { Accounts } from "./sqlite/accounts.ts";
import type { AccountRecord, KeyRecord } from "./accounts.ts";
import type { Ledger } from "./sqlite/ledger.ts";
import type { Limits } from "../limits/limits.ts";
import type { Runs } from "./sqlite/runs.ts";
import type { HttpAnswer, RunContext } from "../runs/types.ts";
import type { Schedules } from "./sqlite/schedules.ts";
import type { ServiceState } from "./sqlite/service.ts";
import type { Sessions } from "./sqlite/sessions.ts";

/** The methods `K` of a system `T`, each answering now or with a promise. */
export type Port<T, K extends keyof T> = {
  [P in K]: T[P] extends (...args: infer A) => infer R ? (...args: A) => Awaitable<Awaited<R>> : never;
};

/** Accounts, workspaces and keys. */
export type AccountsPort = Port<
  Accounts,
  | "account"
  | "accounts"
  | "workspace"
  | "workspaceOf"
  | "grant"
  | "createAccount"
  | "createKey"
  | "keyBySecret"
  | "keyAndAccount"
  | "key"
  | "findKey"
  | "keys"
  | "revokeKey"
  | "setKeyStatus"
  | "setKeyPermissions"
  | "setKeyDailyLimit"
  | "setKeyExpiry"
  | "setAccountStatus"
  | "setAccountPlan"
  | "setAccountDailyLimit"
  | "setAccountCallCap"
  | "markExposed"
> & {
  /**
   * D186 (PostgreSQL only): the key of a hash and its account as this process last read them by `keyAndAccount`,
   * without a read; undefined when not read yet. A data call may start on it only because the statement that admits
   * the call checks the key's row again; nothing else may trust it.
   */
  knownKeyAndAccount?(hash: string): { key: KeyRecord; account: AccountRecord } | undefined;
};

/** What answers show of the ledger: the credits of a billing block, a free account's calls left, charges per day. */
export type LedgerPort = Port<Ledger, "view" | "freeCallsLeft" | "dailyCharges">;

/** Runs and handles. */
export type RunsPort = Port<
  Runs,
  "execute" | "executeTool" | "read" | "keep" | "consoleResults" | "operationOf" | "handleOfIdempotencyKey" | "watch"
>;

/**
 * Schedules of `account_watch` and follower readings, as routes, tool runs and the scheduler use them. On
 * PostgreSQL `due` claims the due schedules for this instance, and `release` gives back one whose run was not
 * started (the embedded store has nothing to give back).
 */
export type SchedulesPort = Port<
  Schedules,
  "count" | "create" | "list" | "remove" | "recordFollowers" | "followerHistory" | "due" | "started" | "ended" | "pause"
> & { release?(id: string): Awaitable<void> };

/** Whether charged calls are paused (D60). */
export type ServicePort = Port<ServiceState, "paused" | "pause" | "unpause">;

/** Console users, sign-in and sessions. */
export type SessionsPort = Port<
  Sessions,
  "userByEmail" | "users" | "createUser" | "disableUser" | "signIn" | "lookup" | "end"
>;

/** A gateway as its HTTP layer and MCP server use it, whichever storage it runs on. */
export interface GatewayPorts {
  config: ServerConfig;
  accounts: AccountsPort;
  ledger: LedgerPort;
  runs: RunsPort;
  schedules: SchedulesPort;
  service: ServicePort;
  sessions: SessionsPort;
  /** The engine's storage port and limits: every charged call passes `chargeCall` through them. */
  calls: ChargePorts<RunContext, HttpAnswer>;
  limits: Limits;
  /** Resolves once what this request wrote is durable (the embedded store's group commit; at once on PostgreSQL). */
  durable(): Promise<void>;
  providers: Readonly<Record<Platform, PlatformProvider>>;
  /** The live connectors (D114): which platforms read their official API, their shared budget and cache. */
  upstream: Upstream;
  catalog: Catalog;
  finder: Finder;
  simulator: Simulator | null;
  /** The clock every system reads, in milliseconds since the epoch. */
  now: () => number;
  /** Where failures of the server's side are reported. */
  log: (message: string, error?: unknown) => void;
  /** D113: this gateway's counters and gauges, as `GET /metrics` shows them. */
  metrics: Metrics;
  /**
   * D113: whether this gateway can serve, as `GET /readyz` shows it: its database answers and its schema is the
   * version this build knows (the embedded store: it is open), and its Redis answers when the limits are kept there.
   * Each check is bounded in time (`CHECK_BOUND_MS`).
   */
  health(): Promise<HealthCheck[]>;
}
