/**
 * Shared by the PostgreSQL tests: a database of the test file's own on 127.0.0.1:5432 (user postgres, trust; CI's
 * `.ci/run` starts it), migrated, with N instances (each its own pool, as each server process has), dropped at the
 * end; and accounts with a key, made as the server would find them. Without PostgreSQL the file fails, it does not
 * skip.
 */
import pg from "pg";
import { Postgres } from "../src/storage/postgres/database.ts";
import { migrate } from "../src/storage/postgres/migrations.ts";
import type { AccountRecord, KeyRecord } from "../src/storage/accounts.ts";
import type { RunContext } from "../src/runs/types.ts";
import { expect } from "vitest";
import type { PgCalls } from "../src/storage/postgres/calls.ts";

const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";

/** The URL of a database on the test server. */
export const pgUrl = (db: string) => `postgres://postgres@127.0.0.1:5432/${db}`;

/** A database of this test's own, migrated, with `instances` pools on it. */
export interface TestDatabase {
  name: string;
  instances: Postgres[];
  /** Runs a statement as the admin connection (on the `postgres` database). */
  admin: pg.Client;
  /** Closes the pools and drops the database. */
  drop(): Promise<void>;
}

/** Makes and migrates a fresh database named after `label`, the pid and the time, with `instances` pools. */
export async function testDatabase(label: string, instances = 3): Promise<TestDatabase> {
  const admin = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (e) {
    throw new Error(
      `PostgreSQL must answer on 127.0.0.1:5432 as user postgres without a password (CI's .ci/run starts it): ${String(e)}`,
    );
  }
  const name = `sdgw_test_${label}_${process.pid}_${Date.now()}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const pools = Array.from(
    { length: instances },
    (_, i) => new Postgres(pgUrl(name), { max: 8, applicationName: `sdgw-test-${i}` }),
  );
  await migrate(pools[0]!);
  return {
    name,
    instances: pools,
    admin,
    async drop() {
      await Promise.all(pools.map((p) => p.close()));
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

let seq = 0;

/** An account with its workspace and a key (no credits: grant them), and the run context a call of it carries. */
export async function pgAccount(
  db: Postgres,
  now: number,
  o: { plan?: "free" | "paid"; keyDailyLimit?: number } = {},
): Promise<{ id: string; ctx: RunContext }> {
  const n = `${process.pid}_${++seq}`;
  const [id, ws, keyId] = [`acc_${n}`, `ws_${n}`, `key_${n}`];
  const at = new Date(now).toISOString();
  await db.query("INSERT INTO accounts (id, name, plan, status, created_at) VALUES ($1, $1, $2, 'active', $3)", [
    id,
    o.plan ?? "paid",
    at,
  ]);
  await db.query("INSERT INTO workspaces (id, account_id, name, created_at) VALUES ($1, $2, $1, $3)", [ws, id, at]);
  await db.query(
    "INSERT INTO keys (id, account_id, workspace_id, hash, prefix, name, permissions, status, " +
      "daily_limit, created_at) VALUES ($1, $2, $3, $1, 'sdgw_', $1, 'read_data', 'active', $4, $5)",
    [keyId, id, ws, o.keyDailyLimit ?? null, at],
  );
  const ctx = {
    requestId: `req_${n}`,
    key: { id: keyId, workspace_id: ws, hash: keyId, daily_limit: o.keyDailyLimit ?? null } as KeyRecord,
    account: { id } as AccountRecord,
    keyHash: keyId,
  } as RunContext;
  return { id, ctx };
}

/** The ledger's identity of each account, checked after a test: `balance = grants − charges`, `held = Σ holds held`. */
export async function expectLedgerIdentity(ledger: PgCalls, accountIds: readonly string[]): Promise<void> {
  for (const id of accountIds) {
    const a = await ledger.audit(id);
    expect(a.balance, `balance of ${id} = grants − charges`).toBe(a.grants - a.charges);
    expect(a.held, `held of ${id} = Σ holds held`).toBe(a.holdsHeld);
  }
}
