/**
 * D108 with D11/D52: schedules on three instances of the server sharing one PostgreSQL database. A schedule made
 * through `account_watch` on one instance is listed on every instance; when it falls due and the three schedulers
 * tick at the same moment, exactly one of them starts its run (`FOR UPDATE SKIP LOCKED`), charged once, whose
 * handle reads on the others. Needs PostgreSQL (see pg-helpers.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PgCalls } from "../src/storage/postgres/calls.ts";
import { createPgServer, type PgServer } from "../src/storage/postgres/server.ts";
import { pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";

const HOUR = 3_600_000;
const ACCOUNTS = ["https://x.com/vercel", "https://www.youtube.com/@devbytes_daily"];
let now = Date.parse("2026-11-25T08:00:00Z");
let t: TestDatabase;
let servers: PgServer[] = [];
let key = "";
let accountId = "";

beforeAll(async () => {
  t = await testDatabase("schedinst", 1);
  const options = { databaseUrl: pgUrl(t.name), now: () => now, scheduleTickMs: 0, log: () => undefined };
  servers = await Promise.all([0, 1, 2].map(() => createPgServer(options)));
  const { accounts } = servers[0]!.gateway;
  const { account } = await accounts.createAccount({ name: "Watcher", plan: "paid" });
  await accounts.grant(account.id, 200);
  key = (await accounts.createKey({ accountId: account.id })).secret;
  accountId = account.id;
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close({ drainMs: 500 })));
  await t?.drop();
});

const call = async (i: number, method: "GET" | "POST" | "DELETE", url: string, body?: unknown) => {
  const res = await servers[i]!.app.inject({
    method,
    url,
    headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, body: JSON.parse(res.body) as Record<string, any> };
};

describe("schedules across three instances on PostgreSQL (D108, D11)", () => {
  it("a due schedule is started by exactly one of three schedulers ticking together, and charged once", async () => {
    const made = await call(0, "POST", "/v1/tools/account_watch", {
      accounts: ACCOUNTS,
      range: "7d",
      schedule: { every: "1h" },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const listed = await Promise.all([1, 2].map((i) => call(i, "GET", "/v1/schedules")));
    for (const l of listed) expect(l.body["schedules"], JSON.stringify(l.body)).toHaveLength(1);
    const id = listed[0]!.body["schedules"][0].id as string;
    const balance = async () => (await servers[2]!.gateway.ledger.view(accountId, null)).balance;
    const before = await balance();
    // Not due yet: nothing starts.
    const early = await Promise.all(servers.map((s) => s.scheduler.tick()));
    expect(early.flatMap((r) => r.started)).toEqual([]);
    now += HOUR + 1000;
    const ticks = await Promise.all(servers.map((s) => s.scheduler.tick()));
    expect(ticks.flatMap((r) => r.started)).toEqual([id]);
    expect(ticks.flatMap((r) => r.skipped)).toEqual([]);
    // Ticking again at once starts nothing more: its next run is an hour on.
    const again = await Promise.all(servers.map((s) => s.scheduler.tick()));
    expect(again.flatMap((r) => r.started)).toEqual([]);
    await Promise.all(servers.map((s) => s.gateway.runner.drain()));
    const schedule = (await call(1, "GET", "/v1/schedules")).body["schedules"][0];
    expect(schedule.last_run, JSON.stringify(schedule)).toMatchObject({ status: "ok" });
    const read = await call(2, "GET", `/v1/results/${schedule.last_run.handle}`);
    expect([read.status, read.body["tool"]]).toEqual([200, "account_watch"]);
    const charged = read.body["billing"]["cost_credits"] as number;
    expect(charged).toBeGreaterThan(0);
    expect(await balance()).toBe(before - charged);
    const audit = await (servers[0]!.gateway.calls.store as PgCalls).audit(accountId);
    expect(audit.balance).toBe(audit.grants - audit.charges);
    expect(audit.held).toBe(audit.holdsHeld);
    // Removed on one instance, gone on every one: a second removal is 404.
    const removed = await call(2, "DELETE", `/v1/schedules/${id}`);
    expect([removed.status, removed.body["deleted"]]).toEqual([200, true]);
    expect((await call(0, "DELETE", `/v1/schedules/${id}`)).status).toBe(404);
    expect((await call(1, "GET", "/v1/schedules")).body["schedules"]).toEqual([]);
  });
});
