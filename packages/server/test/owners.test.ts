/**
 * Owners of runs (storage/sqlite/owners.ts) inside one test process: which owners are gone (lease expired or retired, a
 * dead pid of this machine; never a live pid by itself, never this gateway), what a second gateway on the same file
 * ends and leaves alone, what the first one does when it finds its run ended elsewhere (no charge, no answer kept,
 * schedule left as recovered), a database made before owners (columns added, its running runs recovered), and
 * `SDGW_RUN_LEASE_MS`. The same in real processes: shared-database.test.ts.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../src/config.ts";
import { runLeaseFromEnv } from "../src/config.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { hostIdentity, Owners, pidExists } from "../src/storage/sqlite/owners.ts";
import { Store } from "../src/storage/sqlite/store.ts";
import { GENEROUS, newIdem, validateAnswer } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "sdgw-owners-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open = (db: string, options: Parameters<typeof createServer>[0] = {}) =>
  createServer({ dbPath: db, waitMs: 20, scheduleTickMs: 0, log: () => undefined, limits: GENEROUS, ...options });

/** A pid that existed a moment ago and no longer does (a child that exited and was reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((r) => child.once("exit", r));
  return child.pid!;
}

function audit(server: SdgwServer, accountId: string) {
  const s = server.gateway.ledger.audit(accountId);
  expect(s.balance + s.charges).toBe(s.grants);
  expect(s.held).toBe(s.holdsHeld);
  return s;
}

async function search(server: SdgwServer, key: string, idem: string, query = "a") {
  const res = await server.app.inject({
    method: "GET",
    url: `/v1/search?platform=weibo&query=${query}`,
    headers: { "x-api-key": key, "idempotency-key": idem },
  });
  return validateAnswer("search", res);
}

async function read(server: SdgwServer, key: string, handle: string) {
  return validateAnswer(
    "getResult",
    await server.app.inject({ method: "GET", url: `/v1/results/${handle}`, headers: { "x-api-key": key } }),
  );
}

/** A funded paid account and its key on a new database file (the server that made them closed again). */
async function funded(name: string, credits = 100) {
  const db = join(dir, name);
  const setup = open(db);
  const { account } = setup.gateway.accounts.createAccount({ name, plan: "paid" });
  setup.gateway.accounts.grant(account.id, credits);
  const key = setup.gateway.accounts.createKey({ accountId: account.id }).secret;
  await setup.close();
  return { db, accountId: account.id, key };
}

describe("which owners are gone", () => {
  const store = new Store(":memory:");
  const owners = new Owners({ store, leaseMs: 30_000, clock: () => 1_000_000 });
  const row = (over: Partial<{ id: string; host: string; pid: number; lease_until: number }>) => ({
    id: "own_x",
    host: owners.host,
    pid: process.pid,
    lease_until: 1_000_000 + 10_000,
    ...over,
  });

  it("a lease that expired, or was ended (0), is gone; one that holds is live wherever it runs", () => {
    expect(owners.isGone(row({ lease_until: 1_000_000 }))).toBe(true);
    expect(owners.isGone(row({ lease_until: 0 }))).toBe(true);
    expect(owners.isGone(row({ host: "linux|elsewhere|boot|pid:[1]", pid: 999_999_999 }))).toBe(false);
    expect(owners.isGone(row({}))).toBe(false);
  });

  it("on this machine, a pid that no longer exists is gone at once; a pid that exists proves nothing (the lease decides)", async () => {
    const dead = await deadPid();
    expect(pidExists(dead)).toBe(false);
    expect(pidExists(process.pid)).toBe(true);
    if (owners.host !== "") expect(owners.isGone(row({ pid: dead }))).toBe(true);
    // the same dead pid on another machine (or another pid namespace): only its lease says
    expect(owners.isGone(row({ pid: dead, host: `${owners.host}|other` }))).toBe(false);
    expect(owners.isGone(row({ pid: process.ppid }))).toBe(false);
    expect(owners.isGone(row({ pid: process.ppid, lease_until: 999_999 }))).toBe(true);
  });

  it("this gateway is never gone, even past its own lease; the host identity names the machine and its pid namespace", () => {
    expect(owners.isGone(row({ id: owners.id, lease_until: 0 }))).toBe(false);
    expect(hostIdentity()).toBe(owners.host);
    if (process.platform === "linux") expect(owners.host).toMatch(/^linux\|.+\|[0-9a-f-]{36}\|pid:\[\d+\]$/);
  });

  it("census and isLive read the rows: no row, or no owner, is not live", () => {
    owners.register();
    store.run(
      "INSERT INTO owners (id, host, pid, started_at, lease_until) VALUES ('own_old', 'h', 1, 'x', 5), ('own_new', 'h', 1, 'x', 9999999999999)",
    );
    const { live, gone } = owners.census();
    expect([...live].sort()).toEqual([owners.id, "own_new"].sort());
    expect(gone).toEqual(["own_old"]);
    expect(owners.isLive("own_new")).toBe(true);
    expect(owners.isLive("own_old")).toBe(false);
    expect(owners.isLive("own_none")).toBe(false);
    expect(owners.isLive(null)).toBe(false);
    owners.forget(gone);
    expect(store.all("SELECT id FROM owners ORDER BY id").map((r) => r["id"])).toEqual([owners.id, "own_new"].sort());
  });
});

describe("two gateways on one file", () => {
  it("the second leaves the first's 202 run alone and reads it as running (202); the first finishes it, charged once", async () => {
    const { db, accountId, key } = await funded("live.sqlite");
    const a = open(db, { simulator: { knobs: { weibo: { latencyMs: 300 } } } });
    const started = await search(a, key, newIdem());
    expect(started.status).toBe(202);
    const handle = started.json.handle as string;
    const b = open(db);
    expect(b.gateway.recovered).toBe(0);
    expect(b.gateway.runs.recover()).toEqual([]);
    const elsewhere = await read(b, key, handle);
    expect(elsewhere.status).toBe(202);
    expect(elsewhere.json).toMatchObject({
      status: "running",
      handle,
      charge: { quote_credits: 1, charged_credits: 0 },
      waves: { planned: 1, done: 0 },
    });
    expect(elsewhere.headers["retry-after"]).toBeDefined();
    await a.gateway.runs.drain();
    await a.gateway.store.durable(); // committed at the end of the turn (group commit), then b sees it
    expect((await read(b, key, handle)).status).toBe(200);
    expect(b.gateway.runs.recover()).toEqual([]);
    expect(audit(b, accountId)).toMatchObject({ balance: 99, charges: 1, held: 0 });
    await b.close();
  }, 60_000);

  it("an Idempotency-Key whose call answered 202 in one is taken in the other: 409 while it runs, 422 with other parameters, then the replay", async () => {
    const { db, accountId, key } = await funded("claims.sqlite");
    const a = open(db, { simulator: { knobs: { weibo: { latencyMs: 300 } } } });
    const idem = newIdem();
    expect((await search(a, key, idem)).status).toBe(202);
    const b = open(db);
    const busy = await search(b, key, idem);
    expect(busy.status).toBe(409);
    expect(busy.json.code).toBe("idempotency_in_progress");
    const other = await search(b, key, idem, "other");
    expect(other.status).toBe(422);
    expect(other.json.code).toBe("idempotency_conflict");
    await a.gateway.runs.drain();
    await a.gateway.store.durable();
    const replay = await search(b, key, idem);
    expect(replay.status).toBe(200);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(audit(b, accountId)).toMatchObject({ balance: 99, charges: 1, held: 0 });
    await a.close();
    await b.close();
  });

  it("a run ended by another process after its owner's lease lapsed: its owner charges nothing, keeps no answer, frees the key", async () => {
    const { db, accountId, key } = await funded("lapsed.sqlite");
    const a = open(db, { simulator: { knobs: { weibo: { latencyMs: 300 } } } });
    const idem = newIdem();
    const started = await search(a, key, idem);
    expect(started.status).toBe(202);
    const handle = started.json.handle as string;
    a.gateway.owners.stop(); // no more heartbeats: as a process frozen past its lease
    a.gateway.store.run("UPDATE owners SET lease_until = 1 WHERE id = ?", a.gateway.owners.id);
    a.gateway.store.commit();

    const b = open(db);
    expect(b.gateway.recovered).toBe(1);
    expect(b.gateway.store.get("SELECT state FROM runs WHERE handle = ?", handle)).toEqual({ state: "broken" });
    expect(b.gateway.store.get("SELECT id FROM owners WHERE id = ?", a.gateway.owners.id)).toBeUndefined();
    expect(b.gateway.store.get("SELECT COUNT(*) AS n FROM idempotency")).toEqual({ n: 0 }); // its written claim went with it
    await a.gateway.runs.drain();
    const seen = await read(a, key, handle);
    expect(seen.status).toBe(500);
    expect(seen.json.code).toBe("internal_error");
    expect(audit(a, accountId)).toMatchObject({ balance: 100, charges: 0, held: 0 });
    expect(a.gateway.store.get("SELECT COUNT(*) AS n FROM idempotency")).toEqual({ n: 0 });
    // The key is free in both: the call runs again once (here in a), charged once.
    const again = await search(a, key, idem);
    expect(again.status).toBe(202);
    await a.gateway.runs.drain();
    await a.gateway.store.durable();
    expect((await read(a, key, again.json.handle as string)).json.billing).toMatchObject({ cost: 1, balance: 99 });
    expect(audit(b, accountId)).toMatchObject({ balance: 99, charges: 1, held: 0 });
    await a.close();
    await b.close();
  });

  it("a scheduled tool run ended elsewhere stays as recovered: last_run error, uncharged; its owner neither charges nor records it ok", async () => {
    const { db, accountId, key } = await funded("tool.sqlite", 500);
    const a = open(db, { simulator: { knobs: { "*": { latencyMs: 300 } } } });
    const res = await a.app.inject({
      method: "POST",
      url: "/v1/tools/account_watch",
      headers: { "x-api-key": key, "content-type": "application/json" },
      payload: JSON.stringify({ accounts: ["https://x.com/vercel"], schedule: { every: "1h" }, confirm: true }),
    });
    const made = validateAnswer("accountWatch", res);
    expect([200, 202]).toContain(made.status);
    await a.gateway.runs.drain();
    const charged = audit(a, accountId).charges;
    const ws = a.gateway.accounts.keyBySecret(key)!.workspace_id;
    const [schedule] = a.gateway.schedules.list(ws);
    a.gateway.store.run("UPDATE schedules SET next_run_at = '2000-01-01T00:00:00Z' WHERE id = ?", schedule!.id);
    expect((await a.scheduler.tick()).started).toEqual([schedule!.id]);
    expect(a.gateway.schedules.list(ws)[0]!.last_run!.status).toBe("running");
    a.gateway.owners.stop();
    a.gateway.store.run("UPDATE owners SET lease_until = 1 WHERE id = ?", a.gateway.owners.id);
    a.gateway.store.commit();

    const b = open(db);
    expect(b.gateway.recovered).toBe(1);
    await a.gateway.runs.drain();
    expect(a.gateway.schedules.list(ws)[0]!.last_run).toMatchObject({ status: "error", charged_credits: 0 });
    expect(audit(b, accountId)).toMatchObject({ charges: charged, held: 0 });
    await a.close();
    await b.close();
  });

  it("a gateway that does not recover (recover: false) still renews the lease of a 202 run it runs", async () => {
    const { db, accountId, key } = await funded("norecover.sqlite");
    // Leases of 2 s renewed by heartbeats, a run of 9 s: a busy machine may delay a heartbeat, not by a lease.
    const a = open(db, { recover: false, runLeaseMs: 2000, simulator: { knobs: { weibo: { latencyMs: 9000 } } } });
    expect(a.gateway.store.get("SELECT COUNT(*) AS n FROM owners WHERE id = ?", a.gateway.owners.id)).toEqual({ n: 0 }); // nothing written until it runs
    const started = await search(a, key, newIdem());
    expect(started.status).toBe(202);
    const handle = started.json.handle as string;
    await new Promise((r) => setTimeout(r, 4500)); // past two leases: only heartbeats keep the run its own
    const b = open(db, { runLeaseMs: 2000 });
    expect(b.gateway.recovered).toBe(0);
    // Still in flight when b opened (else b had nothing to leave alone).
    expect(b.gateway.store.get("SELECT state FROM runs WHERE handle = ?", handle)).toEqual({ state: "running" });
    await a.gateway.runs.drain();
    // Closed before b reads: two gateways of one process share its one thread, and a write b makes could wait
    // out its busy_timeout on a batch a has not committed yet.
    await a.close();
    expect((await read(b, key, handle)).status).toBe(200);
    expect(audit(b, accountId)).toMatchObject({ balance: 99, charges: 1, held: 0 });
    await a.close();
    await b.close();
  });

  it("a gateway that closes with a run in flight ends its lease: the next one recovers the run at once", async () => {
    const { db, accountId, key } = await funded("closed.sqlite");
    // A run of 60 s (never waited for: close abandons it) is surely in flight when the gateway closes.
    const a = open(db, { simulator: { knobs: { weibo: { latencyMs: 60_000 } } } });
    expect((await search(a, key, newIdem())).status).toBe(202);
    await a.close({ drainMs: 0 });
    const b = open(db);
    expect(b.gateway.recovered).toBe(1);
    expect(audit(b, accountId)).toMatchObject({ balance: 100, charges: 0, held: 0 });
    await b.close();
  });
});

describe("a database made before owners", () => {
  it("gets its columns on open, and its running runs (no owner) are recovered, uncharged", async () => {
    const { db, accountId, key } = await funded("old.sqlite");
    const a = open(db, { simulator: { knobs: { weibo: { latencyMs: 2000 } } } });
    const started = await search(a, key, newIdem());
    expect(started.status).toBe(202);
    a.gateway.owners.stop();
    a.gateway.runs.close(); // as a process that went away (its lease ends)
    await a.gateway.store.close();
    // Back to the schema of 0.x: no owners table, no owner or waves column.
    const raw = new DatabaseSync(db);
    raw.exec("DROP TABLE owners; ALTER TABLE runs DROP COLUMN owner; ALTER TABLE runs DROP COLUMN waves;");
    raw.close();

    const b = open(db);
    expect(b.gateway.recovered).toBe(1);
    const columns = b.gateway.store
      .all<{ name: string }>("SELECT name FROM pragma_table_info('runs')")
      .map((c) => c.name);
    expect(columns).toEqual(expect.arrayContaining(["owner", "waves"]));
    expect(b.gateway.store.get("SELECT state, owner FROM runs WHERE handle = ?", started.json.handle)).toEqual({
      state: "broken",
      owner: null,
    });
    expect(audit(b, accountId)).toMatchObject({ balance: 100, charges: 0, held: 0 });
    await b.close();
  });
});

describe("SDGW_RUN_LEASE_MS", () => {
  it("is a whole number of milliseconds from 300 up; unset or empty is the default", () => {
    expect(runLeaseFromEnv({})).toEqual({});
    expect(runLeaseFromEnv({ SDGW_RUN_LEASE_MS: "" })).toEqual({});
    expect(runLeaseFromEnv({ SDGW_RUN_LEASE_MS: "1500" })).toEqual({ runLeaseMs: 1500 });
    for (const bad of ["abc", "100", "1.5", "-1"]) {
      expect(() => runLeaseFromEnv({ SDGW_RUN_LEASE_MS: bad })).toThrow(ConfigError);
    }
    expect(() => runLeaseFromEnv({ SDGW_RUN_LEASE_MS: "abc" })).toThrow(
      /SDGW_RUN_LEASE_MS must be .* from 300 up \(got "abc"\)/,
    );
  });
});
