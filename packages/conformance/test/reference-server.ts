/**
 * The reference server (@sdgw/server) in-process on 127.0.0.1 over a temporary SQLite file, with the accounts and
 * keys every optional check needs: a funded paid account (key, second key, key without read_data), an account
 * without credits, and a key whose daily limit is 0. xiaohongshu answers after 1.5 s and calls wait 300 ms, so
 * the suite's default slow search answers 202.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPgServer, createServer, type GatewayOptions } from "@sdgw/server";
import pg from "pg";

export interface ReferenceKeys {
  key: string;
  secondKey: string;
  noscopeKey: string;
  insufficientBalanceKey: string;
  dailyLimitKey: string;
}

export interface ReferenceServer {
  baseUrl: string;
  keys: ReferenceKeys;
  /** Keys of new accounts (funded as the first ones): a run that must not share balances, holds or schedules with another. */
  freshKeys?(): ReferenceKeys;
  close(): Promise<void>;
}

export async function startReferenceServer(options: GatewayOptions = {}): Promise<ReferenceServer> {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-conformance-"));
  const server = createServer({
    dbPath: join(dir, "sdgw.sqlite"),
    waitMs: 300,
    pollAfterSeconds: 1,
    inProgressRetrySeconds: 1,
    simulator: { knobs: { xiaohongshu: { latencyMs: 1500 } } },
    log: () => undefined,
    ...options,
  });
  const { accounts } = server.gateway;
  const freshKeys = (): ReferenceKeys => {
    const paid = accounts.createAccount({ name: "Conformance", plan: "paid" }).account;
    accounts.grant(paid.id, 1000);
    const key = accounts.createKey({ accountId: paid.id, name: "main" }).secret;
    const secondKey = accounts.createKey({ accountId: paid.id, name: "second" }).secret;
    const noscopeKey = accounts.createKey({ accountId: paid.id, name: "no read_data", permissions: [] }).secret;
    const dailyLimitKey = accounts.createKey({ accountId: paid.id, name: "daily limit 0", dailyLimit: 0 }).secret;
    const broke = accounts.createAccount({ name: "No credits", plan: "paid" }).account;
    const insufficientBalanceKey = accounts.createKey({ accountId: broke.id, name: "broke" }).secret;
    return { key, secondKey, noscopeKey, insufficientBalanceKey, dailyLimitKey };
  };
  const keys = freshKeys();
  const baseUrl = await server.listen({ host: "127.0.0.1", port: 0 });
  return {
    baseUrl,
    keys,
    freshKeys,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The same server on PostgreSQL (D108): a database of its own on 127.0.0.1:5432 (user postgres, trust; CI's
 * `.ci/run` starts it), the same accounts and keys, dropped when closed.
 */
export async function startPostgresReferenceServer(options: GatewayOptions = {}): Promise<ReferenceServer> {
  const admin = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/postgres" });
  await admin.connect();
  const name = `sdgw_conformance_${process.pid}_${Date.now()}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const server = await createPgServer({
    waitMs: 300,
    pollAfterSeconds: 1,
    inProgressRetrySeconds: 1,
    simulator: { knobs: { xiaohongshu: { latencyMs: 1500 } } },
    log: () => undefined,
    ...options,
    databaseUrl: `postgres://postgres@127.0.0.1:5432/${name}`,
  });
  const { accounts } = server.gateway;
  const paid = (await accounts.createAccount({ name: "Conformance", plan: "paid" })).account;
  await accounts.grant(paid.id, 1000);
  const key = (await accounts.createKey({ accountId: paid.id, name: "main" })).secret;
  const secondKey = (await accounts.createKey({ accountId: paid.id, name: "second" })).secret;
  const noscopeKey = (await accounts.createKey({ accountId: paid.id, name: "no read_data", permissions: [] })).secret;
  const dailyLimitKey = (await accounts.createKey({ accountId: paid.id, name: "daily limit 0", dailyLimit: 0 })).secret;
  const broke = (await accounts.createAccount({ name: "No credits", plan: "paid" })).account;
  const insufficientBalanceKey = (await accounts.createKey({ accountId: broke.id, name: "broke" })).secret;
  const baseUrl = await server.listen({ host: "127.0.0.1", port: 0 });
  return {
    baseUrl,
    keys: { key, secondKey, noscopeKey, insufficientBalanceKey, dailyLimitKey },
    async close() {
      await server.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
