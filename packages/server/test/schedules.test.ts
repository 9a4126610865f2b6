/**
 * Schedules (D11, D52) over HTTP and through the scheduler: created by `account_watch` with `schedule`, listed,
 * removed, limited to 20 a workspace and to paid accounts; each scheduled run charged like a call (hold, capture
 * once), paused by a refusal and resumed when the cause clears; schedules survive a restart, and a run broken by
 * one runs again without a double charge.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { GENEROUS, harness, validateAnswer, type Harness } from "./helpers.ts";

const ACCOUNTS = ["https://x.com/vercel", "https://www.youtube.com/@devbytes_daily"];
const HOUR = 3_600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let h: Harness | null = null;
let now = Date.parse("2026-11-21T08:00:00Z");
afterEach(async () => {
  if (!h) return;
  h.audit();
  await h.server.close({ drainMs: 3000 });
  h = null;
});

const dir = mkdtempSync(join(tmpdir(), "sdgw-schedules-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function clockHarness(credits = 1000): Harness {
  now = Date.parse("2026-11-21T08:00:00Z");
  h = harness({ credits, now: () => now, scheduleTickMs: 0 });
  return h;
}

const watch = (hh: Harness, body: Record<string, unknown>, key?: string) =>
  hh.call("accountWatch", "POST", "/v1/tools/account_watch", { body, ...(key ? { key } : {}) });
const charges = (s: SdgwServer, accountId: string) =>
  s.gateway.store.all<{ run_id: string; amount: number }>(
    "SELECT run_id, amount FROM ledger WHERE kind = 'charge' AND account_id = ? ORDER BY id",
    accountId,
  );

/** Waits until the schedule's last run has ended; returns the schedule as listed. */
async function lastRunEnded(hh: Harness, id: string): Promise<any> {
  for (let i = 0; i < 300; i++) {
    const list = await hh.call("listSchedules", "GET", "/v1/schedules");
    const s = list.json.schedules.find((x: { id: string }) => x.id === id);
    if (s?.last_run && s.last_run.status !== "running") return s;
    await sleep(10);
  }
  throw new Error(`schedule ${id} did not end its run`);
}

describe("creating, listing and removing schedules", () => {
  it("account_watch with schedule runs now, creates the schedule and says so; GET /v1/schedules lists it", async () => {
    const hh = clockHarness();
    const a = await watch(hh, { accounts: ACCOUNTS, range: "7d", schedule: { every: "1h" }, max_cost_credits: 10 });
    expect(a.status).toBe(200);
    const note = a.json.warnings.find((w: string) => w.startsWith("Schedule sch_"));
    expect(note).toMatch(/every 1h/);
    const id = /Schedule (sch_\w+)/.exec(note)![1];
    const list = await hh.call("listSchedules", "GET", "/v1/schedules");
    expect(list.json.schedules).toEqual([
      {
        id,
        tool: "account_watch",
        params: { accounts: ACCOUNTS, range: "7d" },
        every: "1h",
        status: "active",
        created_at: "2026-11-21T08:00:00Z",
        next_run_at: "2026-11-21T09:00:00Z",
        last_run: null,
      },
    ]);
    expect((await hh.call("getAccount", "GET", "/v1/account")).json.workspace.schedules_count).toBe(1);
    expect(charges(hh.server, hh.accountId)).toHaveLength(1);
  });

  it("a quote (confirm: false) creates no schedule; a free account gets plan_limit and nothing runs", async () => {
    const hh = clockHarness();
    const q = await watch(hh, { accounts: ACCOUNTS, schedule: { every: "1d" }, confirm: false });
    expect(q.status).toBe(200);
    expect(q.json.applied_params["schedule.every"]).toBe("1d");
    expect((await hh.call("listSchedules", "GET", "/v1/schedules")).json.schedules).toEqual([]);
    const gw = hh.server.gateway;
    const { account } = gw.accounts.createAccount({ name: "free", plan: "free" });
    gw.accounts.grant(account.id, 100);
    const freeKey = gw.accounts.createKey({ accountId: account.id }).secret;
    const r = await watch(hh, { accounts: ACCOUNTS, schedule: { every: "1d" } }, freeKey);
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ code: "plan_limit", reason: "schedules_need_purchase", fix: { param: "schedule" } });
    expect(charges(hh.server, account.id)).toEqual([]);
    expect((await watch(hh, { accounts: ACCOUNTS }, freeKey)).status).toBe(200);
    expect(charges(hh.server, account.id)).toHaveLength(1);
  });

  it("holds at most 20 a workspace: the 21st is invalid_params naming schedule; DELETE frees a place", async () => {
    const hh = clockHarness();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const a = await watch(hh, { accounts: [`https://weibo.com/u/${1749127100 + i}`], schedule: { every: "1d" } });
      expect(a.status).toBe(200);
      ids.push(/Schedule (sch_\w+)/.exec(a.json.warnings.join(" "))![1]!);
    }
    const before = charges(hh.server, hh.accountId).length;
    const full = await watch(hh, { accounts: ACCOUNTS, schedule: { every: "1d" } });
    expect(full.status).toBe(400);
    expect(full.json).toMatchObject({ code: "invalid_params", fix: { param: "schedule" } });
    expect(full.json.message).toMatch(/at most 20 schedules/);
    expect(charges(hh.server, hh.accountId)).toHaveLength(before);
    const del = await hh.call("deleteSchedule", "DELETE", `/v1/schedules/${ids[3]}`);
    expect(del.json).toMatchObject({ deleted: true, schedule_id: ids[3] });
    expect((await hh.call("deleteSchedule", "DELETE", `/v1/schedules/${ids[3]}`)).status).toBe(404);
    expect((await watch(hh, { accounts: ACCOUNTS, schedule: { every: "1d" } })).status).toBe(200);
    expect((await hh.call("listSchedules", "GET", "/v1/schedules")).json.schedules).toHaveLength(20);
  });

  it("another workspace neither sees nor deletes a schedule", async () => {
    const hh = clockHarness();
    const a = await watch(hh, { accounts: ACCOUNTS, schedule: { every: "6h" } });
    const id = /Schedule (sch_\w+)/.exec(a.json.warnings.join(" "))![1]!;
    const gw = hh.server.gateway;
    const { account } = gw.accounts.createAccount({ name: "other", plan: "paid" });
    const other = gw.accounts.createKey({ accountId: account.id }).secret;
    expect((await hh.call("listSchedules", "GET", "/v1/schedules", { key: other })).json.schedules).toEqual([]);
    expect((await hh.call("deleteSchedule", "DELETE", `/v1/schedules/${id}`, { key: other })).status).toBe(404);
    expect((await hh.call("listSchedules", "GET", "/v1/schedules")).json.schedules).toHaveLength(1);
  });
});

describe("scheduled runs", () => {
  it("a due schedule runs as a call of its key: charged once like a call, readable by its handle, next run one period on", async () => {
    const hh = clockHarness();
    const a = await watch(hh, { accounts: ACCOUNTS, range: "7d", schedule: { every: "1h" } });
    const id = /Schedule (sch_\w+)/.exec(a.json.warnings.join(" "))![1]!;
    const first = a.json.charge.charged_credits;
    expect((await hh.server.scheduler.tick()).started).toEqual([]);
    now += HOUR;
    const tick = await hh.server.scheduler.tick();
    expect(tick).toEqual({ started: [id], skipped: [] });
    const s = await lastRunEnded(hh, id);
    expect(s).toMatchObject({
      status: "active",
      next_run_at: "2026-11-21T10:00:00Z",
      last_run: { status: "ok", started_at: "2026-11-21T09:00:00Z" },
    });
    const all = charges(hh.server, hh.accountId);
    expect(all.map((c) => c.amount)).toEqual([first, s.last_run.charged_credits]);
    expect(hh.server.gateway.ledger.view(hh.accountId, null).balance).toBe(1000 - first - s.last_run.charged_credits);
    const read = await hh.call("getResult", "GET", `/v1/results/${s.last_run.handle}`);
    expect(read.status).toBe(200);
    expect(read.json).toMatchObject({
      tool: "account_watch",
      status: "ok",
      charge: { charged_credits: s.last_run.charged_credits },
    });
    expect(read.json.warnings[0]).toBe(`Scheduled run of schedule ${id} (every 1h).`);
    // the follower series now holds the reading of the creating call and this run's
    const followers = read.json.items.filter(
      (i: { kind: string; metric?: string }) => i.kind === "timeseries" && i.metric === "followers",
    );
    expect(followers.length).toBeGreaterThan(0);
    for (const f of followers) expect(f.points).toHaveLength(2);
    // one tick runs it once: a second tick at the same moment starts nothing
    expect((await hh.server.scheduler.tick()).started).toEqual([]);
  });

  it("a run refused by a daily limit pauses the schedule; it resumes by itself once the limit allows it", async () => {
    const hh = clockHarness();
    const a = await watch(hh, { accounts: ACCOUNTS, schedule: { every: "1h" } });
    const id = /Schedule (sch_\w+)/.exec(a.json.warnings.join(" "))![1]!;
    const gw = hh.server.gateway;
    gw.accounts.setAccountDailyLimit(hh.accountId, a.json.charge.charged_credits);
    now += HOUR;
    expect(await hh.server.scheduler.tick()).toEqual({ started: [], skipped: [{ id, reason: "daily_limit_reached" }] });
    let s = (await hh.call("listSchedules", "GET", "/v1/schedules")).json.schedules[0];
    expect(s).toMatchObject({ status: "paused", next_run_at: "2026-11-21T09:00:00Z", last_run: null });
    expect(charges(hh.server, hh.accountId)).toHaveLength(1);
    now += 10 * 60_000;
    gw.accounts.setAccountDailyLimit(hh.accountId, null);
    expect((await hh.server.scheduler.tick()).started).toEqual([id]);
    s = await lastRunEnded(hh, id);
    expect(s).toMatchObject({
      status: "active",
      next_run_at: "2026-11-21T10:00:00Z",
      last_run: { status: "ok", started_at: "2026-11-21T09:10:00Z" },
    });
    expect(charges(hh.server, hh.accountId)).toHaveLength(2);
  });

  it("a revoked key pauses its schedules; the run is never charged", async () => {
    const hh = clockHarness();
    const a = await watch(hh, { accounts: ACCOUNTS, schedule: { every: "1h" } });
    const id = /Schedule (sch_\w+)/.exec(a.json.warnings.join(" "))![1]!;
    const gw = hh.server.gateway;
    gw.accounts.revokeKey(gw.accounts.keyBySecret(hh.key)!.id);
    now += HOUR;
    expect(await hh.server.scheduler.tick()).toEqual({ started: [], skipped: [{ id, reason: "key_unusable" }] });
    expect(charges(hh.server, hh.accountId)).toHaveLength(1);
  });
});

describe("schedules across a restart", () => {
  function open(db: string, latencyMs = 0): SdgwServer {
    return createServer({
      dbPath: db,
      now: () => now,
      scheduleTickMs: 0,
      waitMs: 2000,
      log: () => undefined,
      limits: GENEROUS,
      ...(latencyMs ? { simulator: { knobs: { "*": { latencyMs: [latencyMs, latencyMs] } } } } : {}),
    });
  }
  async function post(s: SdgwServer, key: string, body: unknown) {
    const res = await s.app.inject({
      method: "POST",
      url: "/v1/tools/account_watch",
      headers: { "x-api-key": key, "content-type": "application/json" },
      payload: JSON.stringify(body),
    });
    return validateAnswer("accountWatch", res);
  }

  it("a schedule made before a restart runs after it, when due, charged once", async () => {
    now = Date.parse("2026-11-21T08:00:00Z");
    const db = join(dir, "restart.sqlite");
    const a = open(db);
    const { account } = a.gateway.accounts.createAccount({ name: "restart", plan: "paid" });
    a.gateway.accounts.grant(account.id, 500);
    const key = a.gateway.accounts.createKey({ accountId: account.id }).secret;
    const made = await post(a, key, { accounts: ACCOUNTS, schedule: { every: "1d" } });
    expect(made.status).toBe(200);
    await a.close();

    now += 25 * HOUR;
    const b = open(db);
    const tick = await b.scheduler.tick();
    expect(tick.started).toHaveLength(1);
    await b.gateway.runs.drain();
    const [s] = b.gateway.schedules.list(b.gateway.accounts.keyBySecret(key)!.workspace_id);
    expect(s).toMatchObject({ status: "active", next_run_at: "2026-11-23T08:00:00Z", last_run: { status: "ok" } });
    expect(charges(b, account.id)).toHaveLength(2);
    const audit = b.gateway.ledger.audit(account.id);
    expect(audit.balance + audit.charges).toBe(audit.grants);
    await b.close();
  });

  it("a scheduled run cut by a restart is recorded as error, uncharged, and runs again at once; charged once in all", async () => {
    now = Date.parse("2026-11-21T08:00:00Z");
    const db = join(dir, "crash.sqlite");
    const a = open(db, 400);
    const { account } = a.gateway.accounts.createAccount({ name: "crash", plan: "paid" });
    a.gateway.accounts.grant(account.id, 500);
    const key = a.gateway.accounts.createKey({ accountId: account.id }).secret;
    const made = await post(a, key, { accounts: ACCOUNTS, schedule: { every: "1h" } });
    expect(made.status).toBe(200);
    now += HOUR;
    expect((await a.scheduler.tick()).started).toHaveLength(1);
    const ws = a.gateway.accounts.keyBySecret(key)!.workspace_id;
    expect(a.gateway.schedules.list(ws)[0]!.last_run!.status).toBe("running");
    await a.close({ drainMs: 0 }); // the process goes away with the run in flight

    const b = open(db);
    expect(b.gateway.recovered).toBe(1);
    const [s] = b.gateway.schedules.list(ws);
    expect(s).toMatchObject({ last_run: { status: "error", charged_credits: 0 }, next_run_at: "2026-11-21T09:00:00Z" });
    expect(charges(b, account.id)).toHaveLength(1);
    expect((await b.scheduler.tick()).started).toHaveLength(1);
    await b.gateway.runs.drain();
    expect(b.gateway.schedules.list(ws)[0]).toMatchObject({
      status: "active",
      next_run_at: "2026-11-21T10:00:00Z",
      last_run: { status: "ok" },
    });
    expect(charges(b, account.id)).toHaveLength(2);
    const audit = b.gateway.ledger.audit(account.id);
    expect(audit.balance + audit.charges).toBe(audit.grants);
    expect(audit.held).toBe(0);
    await b.close();
  });
});
