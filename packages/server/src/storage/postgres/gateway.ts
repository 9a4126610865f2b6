/**
 * A gateway on PostgreSQL (D108): the same ports as the embedded store's (`GatewayPorts`), over one pool of this
 * instance on a database that several instances share. Opening it migrates the schema (once, whoever starts
 * first), registers this instance's lease and recovers what gone instances left; closing it ends the lease.
 */
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
import { newHandle } from "../../ids.ts";
import { chargePortLimits, gatewayLimits } from "../../limits/limits.ts";
import { Metrics } from "../../ops/metrics.ts";
import type { AccountRecord, KeyRecord } from "../accounts.ts";
import type { GatewayPorts } from "../port.ts";
import type { Pause } from "../service.ts";
import { PgAccounts } from "./accounts.ts";
import { PgCalls } from "./calls.ts";
import { DbClock } from "./clock.ts";
import { isPostgresUrl, Postgres, type PostgresEvent } from "./database.ts";
import { pgHealth } from "./health.ts";
import { migrate, type MigrationReport } from "./migrations.ts";
import { PgRunner } from "./runner.ts";
import { PgRuns } from "./runs.ts";
import { PgSchedules } from "./schedules.ts";
import { PgSessions } from "./sessions.ts";

/** A gateway on PostgreSQL: the ports, and what the server closes. */
export interface PgGateway extends GatewayPorts {
  /** This instance's pool. */
  db: Postgres;
  /** What opening migrated. */
  migration: MigrationReport;
  /** This instance's runs and lease. */
  runner: PgRunner;
  /** Ends the lease (runs still in flight are recovered by another instance), closes the limits and the pool. */
  close(options?: { drainMs?: number }): Promise<void>;
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Options of `createPgGateway`: the gateway's, with the database's URL. */
export interface PgGatewayOptions extends GatewayOptions {
  /** `postgres://user[:password]@host[:port]/database` (env `SDGW_DATABASE_URL`). */
  databaseUrl: string;
  /** Connections of this instance's pool (default 10). */
  poolSize?: number;
}

/**
 * Opens a gateway on PostgreSQL: checks the URL, migrates, registers this instance's lease, recovers what gone
 * instances left, and starts the heartbeat (every sixth of `runLeaseMs`).
 *
 * @throws {@link ConfigError} for a URL that is not PostgreSQL's; `DatabaseUnavailable` when it does not answer.
 */
export async function createPgGateway(options: PgGatewayOptions): Promise<PgGateway> {
  const config: ServerConfig = defaultConfig(options);
  if (!isPostgresUrl(options.databaseUrl))
    throw new ConfigError([
      `databaseUrl must be a PostgreSQL URL, postgres://user[:password]@host[:port]/database (got ${JSON.stringify(withoutPassword(options.databaseUrl))})`,
    ]);
  if (config.redisUrl !== null && !isRedisUrl(config.redisUrl))
    throw new ConfigError([`redisUrl must be a Redis URL (got ${JSON.stringify(withoutPassword(config.redisUrl))})`]);
  const log = options.log ?? ((message: string, error?: unknown) => console.error(`[sdgw] ${message}`, error ?? ""));
  const leaseMs = options.runLeaseMs ?? DEFAULT_RUN_LEASE_MS;
  const metrics = new Metrics(options.metrics);
  // Told before the runner exists; a database back after a fault has this instance's debris ended at once (D109).
  let restored: () => void = () => undefined;
  const onEvent = (e: PostgresEvent) => {
    if (e.kind !== "restored") metrics.poolError();
    if (e.kind === "restored") {
      log(`PostgreSQL answers again (after ${e.downMs} ms)`);
      restored();
    } else
      log(
        e.kind === "down"
          ? "PostgreSQL does not answer: calls answer 503 until it does"
          : "a PostgreSQL connection broke (the pool opens another)",
        errorText(e.error),
      );
  };
  const db = new Postgres(options.databaseUrl, { max: options.poolSize ?? 10, onEvent });
  // D110: money runs on the database's clock (unless a clock is given, as tests do).
  const clock = options.now ? null : new DbClock();
  let migration: MigrationReport;
  try {
    migration = await migrate(db);
    await clock?.sync(db);
  } catch (e) {
    await db.close();
    throw e;
  }
  const now = options.now ?? clock!.now;
  const limits = gatewayLimits(config, { leaseMs, now, log, metrics });
  const platforms = gatewayPlatforms({ options, config, limits, now, log });
  const { providers } = platforms;
  const runs = new PgRuns({
    db,
    now,
    leaseMs,
    retentionMs: config.retentionMs,
    idempotencyTtlMs: config.idempotencyTtlMs,
    ...(clock ? { clock } : {}),
  });
  const calls = new PgCalls({
    db,
    now,
    idempotencyTtlMs: config.idempotencyTtlMs,
    freeCalls: config.limits.freeCalls,
    owner: runs.owner,
  });
  const accounts = new PgAccounts({ db, now });
  const schedules = new PgSchedules({ db, now });
  const sessions = new PgSessions({ db, now, config: config.sessions });
  const runner = new PgRunner({ calls, runs, limits, providers, config, now, log, metrics });
  metrics.watch({ inFlight: () => runner.inFlight, pool: () => db.stats });
  await runner.start(leaseMs);
  restored = () => void runner.reconcile();
  const freeCallsLeft = (account: AccountRecord) =>
    account.plan !== "free"
      ? null
      : Math.max(0, config.limits.freeCalls - account.free_calls_used - account.free_calls_held);
  return {
    config,
    db,
    migration,
    runner,
    accounts,
    ledger: {
      view: (accountId: string, key: KeyRecord | null) => calls.view(accountId, key?.id ?? null),
      freeCallsLeft,
      dailyCharges: (accountId: string, fromDay: string) => calls.dailyCharges(accountId, fromDay),
    },
    runs: {
      execute: (runId, ctx, plan, quote) => runner.execute(runId, ctx, plan, quote),
      executeTool: (runId, ctx, request) => runner.executeTool(runId, ctx, request),
      read: (r) => runner.read(r),
      keep: (k) => runs.keep({ ...k, handle: k.handle ?? newHandle() }),
      consoleResults: (accountId, keyName) => runs.consoleResults(accountId, keyName),
      operationOf: (handle, keyId) => runs.operationOf(handle, keyId),
      handleOfIdempotencyKey: (keyId, idemKey) => runs.handleOfIdempotencyKey(keyId, idemKey),
      watch: (handle, listener) => runner.watch(handle, listener),
    },
    schedules: {
      count: (w) => schedules.count(w),
      create: (input) => schedules.create(input),
      list: (w) => schedules.list(w),
      remove: (w, id) => schedules.remove(w, id),
      recordFollowers: (r) => schedules.recordFollowers(r),
      followerHistory: (p, a) => schedules.followerHistory(p, a),
      // Several instances poll: each due schedule is claimed by one of them (SKIP LOCKED), its next run set at once.
      due: () => schedules.claimDue(),
      started: (s) => schedules.started(s),
      ended: (id, runId, status, charged) => schedules.ended(id, runId, status, charged),
      pause: (id, reason) => schedules.pause(id, reason),
      release: async (id) => {
        await schedules.release(id);
      },
    },
    service: {
      paused: async (): Promise<Pause | null> => {
        const row = await db.one<{ value: string }>("SELECT value FROM meta WHERE name = 'paused'");
        return row ? (JSON.parse(row.value) as Pause) : null;
      },
      pause: (message) => calls.pause(message),
      unpause: () => calls.unpause(),
    },
    sessions,
    calls: { store: calls, limits: chargePortLimits(limits) },
    limits,
    durable: async () => undefined, // every write is committed before its answer
    ...platforms,
    now,
    log,
    metrics,
    health: pgHealth(db, limits),
    async close({ drainMs = 2000 } = {}) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([runner.drain(), new Promise<void>((r) => (timer = setTimeout(r, drainMs)))]);
      clearTimeout(timer);
      try {
        await runner.close();
      } finally {
        await limits.close();
        await db.close();
      }
    },
  };
}
