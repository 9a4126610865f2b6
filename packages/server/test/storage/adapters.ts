/**
 * The storage suite's adapters: one factory per engine, each opening the gateway the server builds on it
 * (`createGateway` on the embedded SQLite store, `createPgGateway` on PostgreSQL) and giving its ports
 * (`GatewayPorts`) to contracts written once (`describe.each(adapters)`).
 *
 * - **sqlite**: one gateway on a store in memory (one process: `instances` has one member); or, when a test asks
 *   for several instances, gateways on one database file (as processes sharing it).
 * - **postgres**: a fresh database of the test file's own (`testDatabase` of pg-helpers), with `instances` gateways
 *   on it (each its own pool and lease, as each server process has), dropped at the end. Without PostgreSQL on
 *   127.0.0.1:5432 the file fails, it does not skip.
 *
 * Besides the ports, each instance has the two steps of a charge's life no port names, as the runs of each engine
 * take them: `settle` (a run's end: charge at most what was held, release the rest) and `audit` (the ledger's sums).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CallLimits, ChargePorts } from "@sdgw/engine";
import { expect } from "vitest";
import type { GatewayOptions } from "../../src/config.ts";
import { createGateway, type Gateway } from "../../src/storage/sqlite/gateway.ts";
import { hashKey } from "../../src/ids.ts";
import { createPgGateway, type PgGateway } from "../../src/storage/postgres/gateway.ts";
import type { PgCalls } from "../../src/storage/postgres/calls.ts";
import type { Postgres } from "../../src/storage/postgres/database.ts";
import type { GatewayPorts } from "../../src/storage/port.ts";
import type { HttpAnswer, RunContext } from "../../src/runs/types.ts";
import type { Store } from "../../src/storage/sqlite/store.ts";
import { pgUrl, testDatabase, type TestDatabase } from "../pg-helpers.ts";

/** The ledger's sums of an account. */
export interface Audit {
  balance: number;
  grants: number;
  charges: number;
  held: number;
  holdsHeld: number;
}

/** One instance of a gateway on the storage under test. */
export interface Instance {
  ports: GatewayPorts;
  /** The engine's storage port and limits. */
  calls: ChargePorts<RunContext, HttpAnswer>;
  /** Ends a run's hold as its run does: charges at most what was held, for `calls` calls, releases the rest; once. */
  settle(runId: string, amount: number, calls: number): Promise<{ charged: number; balance: number }>;
  /** The ledger's sums of an account (the same numbers whichever engine keeps them). */
  audit(accountId: string): Promise<Audit>;
  /**
   * Closes this instance as its server does when it stops: its lease ends now, and runs still in flight here are
   * ended by another instance; they write nothing when they end.
   */
  close(): Promise<void>;
  /** Waits for the runs in flight on this instance to end (closed or not). */
  drain(): Promise<void>;
  /** The instance's own database handle, for tests that read rows: its pool (postgres) or its store (sqlite). */
  db: { engine: "postgres"; pool: Postgres } | { engine: "sqlite"; store: Store };
}

/** A storage opened for one test file. */
export interface Storage {
  engine: Engine;
  /** Gateways on the one storage: one for the embedded store, several for PostgreSQL. */
  instances: Instance[];
  /** The clock every instance reads; tests move it. */
  clock: { now: number };
  /** The instance `i` modulo how many there are. */
  on(i: number): Instance;
  /**
   * An account (paid unless said) with `credits` granted and one key (with its daily limit, if given), made
   * through the accounts port, and the run context a call of that key carries.
   */
  account(
    credits: number,
    o?: { plan?: "free" | "paid"; keyDailyLimit?: number },
  ): Promise<{ id: string; ctx: RunContext }>;
  /** Expects `balance = grants − charges` and `held = Σ holds held` of every account `account` made. */
  expectLedgerIdentity(): Promise<void>;
  /** Closes every instance (and drops the database). */
  close(): Promise<void>;
}

export type Engine = "sqlite" | "postgres";

export interface OpenOptions {
  now?: number;
  /** A clock of the test's own, read by every instance instead of `Storage.clock`. */
  time?: () => number;
  /** How many gateways on the storage: PostgreSQL 3 unless said; SQLite 1 (in memory) unless said (then on a file). */
  instances?: number;
  /** Options of the gateways (their configuration), as `createGateway` and `createPgGateway` take them. */
  gateway?: GatewayOptions;
}

export interface Adapter {
  engine: Engine;
  /**
   * Opens the storage, its clock at `now` (or, with `time`, reading that clock instead of `clock`); `label` names
   * the PostgreSQL database (letters, digits, `_`).
   */
  open(label: string, o?: OpenOptions): Promise<Storage>;
}

/** Failures of the server's side are not printed (a closed instance's late run reports one, as it should). */
const quiet = (_message: string, _error?: unknown) => undefined;

let seq = 0;

/** What both engines share once their instances are open. */
function storage(engine: Engine, instances: Instance[], clock: { now: number }, close: () => Promise<void>): Storage {
  const made: string[] = [];
  const on = (i: number) => instances[i % instances.length]!;
  return {
    engine,
    instances,
    clock,
    on,
    async account(credits, o = {}) {
      const first = on(0).ports.accounts;
      const n = ++seq;
      const { account } = await first.createAccount({ name: `Suite ${n}`, plan: o.plan ?? "paid" });
      if (credits > 0) await first.grant(account.id, credits);
      const key = await first.createKey({ accountId: account.id, dailyLimit: o.keyDailyLimit ?? null });
      const hash = hashKey(key.secret);
      const found = (await first.keyAndAccount(hash))!;
      made.push(account.id);
      const ctx = { requestId: `req_suite_${n}`, key: found.key, account: found.account, keyHash: hash } as RunContext;
      return { id: account.id, ctx };
    },
    async expectLedgerIdentity() {
      // the last instance: a test may have closed the first
      for (const id of made.splice(0)) {
        const a = await instances[instances.length - 1]!.audit(id);
        expect(a.balance, `balance of ${id} = grants − charges`).toBe(a.grants - a.charges);
        expect(a.held, `held of ${id} = Σ holds held`).toBe(a.holdsHeld);
      }
    },
    close,
  };
}

/**
 * The embedded store: one gateway on a store in memory, as `createGateway` builds it; or, with `instances` over 1,
 * that many gateways on one database file of a temporary folder (as processes sharing the file), removed at the end.
 */
export const sqlite: Adapter = {
  engine: "sqlite",
  async open(_label, o = {}) {
    const clock = { now: o.now ?? Date.now() };
    const n = o.instances ?? 1;
    const dir = n > 1 ? mkdtempSync(join(tmpdir(), "sdgw-suite-")) : null;
    const gateways: Gateway[] = [];
    for (let i = 0; i < n; i++) {
      const gw = createGateway({
        ...o.gateway,
        dbPath: dir ? join(dir, "suite.sqlite") : ":memory:",
        now: o.time ?? (() => clock.now),
        log: quiet,
      });
      gateways.push(gw);
      // what opening wrote (its lease) is committed at the end of the turn: the next gateway on the file waits for it
      await gw.durable();
    }
    const closed = new Set<Gateway>();
    const closeOne = async (gw: Gateway) => {
      if (closed.has(gw)) return;
      closed.add(gw);
      gw.runs.close();
      try {
        await gw.store.close();
      } finally {
        await gw.limits.close();
      }
    };
    const instances = gateways.map(
      (gw): Instance => ({
        ports: gw,
        calls: gw.calls,
        settle: async (runId, amount, calls) => gw.ledger.settle(runId, amount, calls),
        async audit(accountId) {
          const { balance, grants, charges, held, holdsHeld } = gw.ledger.audit(accountId);
          return { balance, grants, charges, held, holdsHeld };
        },
        db: { engine: "sqlite", store: gw.store },
        close: () => closeOne(gw),
        drain: () => gw.runs.drain(),
      }),
    );
    return storage("sqlite", instances, clock, async () => {
      for (const gw of gateways) await closeOne(gw);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });
  },
};

/** A fresh PostgreSQL database with `instances` gateways on it (3 unless said), as `createPgGateway` builds them. */
export const postgres: Adapter = {
  engine: "postgres",
  async open(label, o = {}) {
    const clock = { now: o.now ?? Date.now() };
    const t: TestDatabase = await testDatabase(`suite_${label}`, 1);
    const gateways: PgGateway[] = [];
    try {
      for (let i = 0; i < (o.instances ?? 3); i++)
        gateways.push(
          await createPgGateway({
            ...o.gateway,
            databaseUrl: pgUrl(t.name),
            poolSize: 8,
            now: o.time ?? (() => clock.now),
            log: quiet,
          }),
        );
    } catch (e) {
      await Promise.all(gateways.map((g) => g.close({ drainMs: 0 })));
      await t.drop();
      throw e;
    }
    const closed = new Set<PgGateway>();
    const closeOne = async (gw: PgGateway) => {
      if (closed.has(gw)) return;
      closed.add(gw);
      await gw.close({ drainMs: 0 });
    };
    const instances = gateways.map(
      (gw): Instance => ({
        ports: gw,
        calls: gw.calls,
        close: () => closeOne(gw),
        drain: () => gw.runner.drain(),
        settle: (runId, amount, calls) => pgCalls(gw).settle(runId, amount, calls),
        audit: (accountId) => pgCalls(gw).audit(accountId),
        db: { engine: "postgres", pool: gw.db },
      }),
    );
    return storage("postgres", instances, clock, async () => {
      await Promise.all(gateways.map(closeOne));
      await t.drop();
    });
  },
};

/** The PostgreSQL gateway's charge store (`PgCalls`: its port's store, with the run's end and the audit). */
const pgCalls = (gw: PgGateway) => gw.calls.store as PgCalls;

/** Every engine: the contracts run on each. */
export const adapters: readonly Adapter[] = [sqlite, postgres];

/** The PostgreSQL pool of an instance (a postgres adapter's). */
export function poolOf(i: Instance): Postgres {
  if (i.db.engine !== "postgres") throw new Error("not a PostgreSQL instance");
  return i.db.pool;
}

/** Limits that never refuse: the contracts of storage call the ports without the limits' rules in the way. */
export const NO_LIMITS: CallLimits<RunContext> = {
  failureBlock: () => null,
  keyCall: () => null,
  startRun: () => null,
  endRun: () => undefined,
};
