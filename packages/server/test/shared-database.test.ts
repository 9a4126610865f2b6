/**
 * One database file, several processes (issue 15, item 4): the HTTP server (`main.ts`), the stdio MCP server
 * (`sdgw-mcp`) and the admin CLI may open the same file. Recovery ends only the runs of a process that is gone (its
 * lease expired, or its pid no longer exists on this machine), never those of a live one; a run that another
 * process ended is not charged by its owner afterwards; a run that finishes ok is charged exactly once. Every
 * process here is a real child process on loopback; each test is bounded.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { sdk } from "./mcp/sdk-client.ts";
import { admin, kill, MCP_BIN, sameClockEnv, startServer, stopAll } from "./processes.ts";

const { StdioClientTransport } = (await import(
  "@modelcontextprotocol/client/stdio"
)) as typeof import("@modelcontextprotocol/client/stdio");

const dir = mkdtempSync(join(tmpdir(), "sdgw-shared-"));
const clients: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  stopAll();
  rmSync(dir, { recursive: true, force: true });
});

/** Connects the official MCP client to `sdgw-mcp` over stdio on `db`, acting for `key`. */
async function startMcp(db: string, key: string, env: Record<string, string> = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--conditions=source", "--no-warnings", MCP_BIN],
    env: { ...sameClockEnv(), SDGW_DB: db, SDGW_API_KEY: key, PATH: process.env["PATH"] ?? "", ...env },
    stderr: "pipe",
  });
  const client = new sdk.Client({ name: "sdgw-shared-db-test", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** A GET with the key; the status and the JSON body. */
async function get(url: string, key: string, idem?: string): Promise<{ status: number; json: any }> {
  const res = await fetch(url, { headers: { "X-API-Key": key, ...(idem ? { "Idempotency-Key": idem } : {}) } });
  return { status: res.status, json: await res.json() };
}

const balanceOf = async (s: { url: string }, key: string): Promise<number> =>
  (await get(`${s.url}/v1/account`, key)).json.billing.balance_credits as number;

/** Polls a handle until it is no longer 202 (every 100 ms, at most `ms`). */
async function settle(url: string, handle: string, key: string, ms = 15_000): Promise<{ status: number; json: any }> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await get(`${url}/v1/results/${handle}`, key);
    if (r.status !== 202 || Date.now() > until) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** What the database says of an account and of one run, read with a connection of this process (read-only). */
function inspect(db: string, accountId: string, handle: string) {
  const peek = new DatabaseSync(db, { readOnly: true });
  try {
    const account = peek.prepare("SELECT balance, held FROM accounts WHERE id = ?").get(accountId) as {
      balance: number;
      held: number;
    };
    const sum = (kind: string) =>
      (
        peek
          .prepare("SELECT COALESCE(SUM(amount), 0) AS s FROM ledger WHERE account_id = ? AND kind = ?")
          .get(accountId, kind) as { s: number }
      ).s;
    const run = peek.prepare("SELECT id, state, charged, owner FROM runs WHERE handle = ?").get(handle) as {
      id: string;
      state: string;
      charged: number;
      owner: string | null;
    };
    const charges = peek
      .prepare("SELECT amount FROM ledger WHERE run_id = ? AND kind = 'charge'")
      .all(run.id) as Array<{ amount: number }>;
    const hold = peek.prepare("SELECT state, amount, captured FROM holds WHERE run_id = ?").get(run.id) as {
      state: string;
      amount: number;
      captured: number;
    };
    const holdsHeld = (
      peek
        .prepare("SELECT COALESCE(SUM(amount), 0) AS s FROM holds WHERE account_id = ? AND state = 'held'")
        .get(accountId) as { s: number }
    ).s;
    return {
      balance: account.balance,
      held: account.held,
      holdsHeld,
      grants: sum("grant"),
      charges: sum("charge"),
      run,
      runCharges: charges.map((c) => c.amount),
      hold,
    };
  } finally {
    peek.close();
  }
}

describe("one database shared by the HTTP server, sdgw-mcp and the admin CLI", () => {
  it("sdgw-mcp and sdgw-admin started on the server's database leave its 202 run alone: it finishes ok, charged exactly once", async () => {
    const db = join(dir, "live.sqlite");
    // Short leases (heartbeats every 500 ms): sdgw-mcp sweeps many times while the run is in flight. A run of
    // 8 to 24 s, so that it is still in flight after sdgw-mcp and the admin CLI started on a busy machine.
    const server = await startServer(db, { SDGW_LATENCY_MS: "16000", SDGW_RUN_LEASE_MS: "3000" });
    const key = server.key!;
    const before = await balanceOf(server, key);
    const idem = `shared-${Date.now()}`;
    const started = await get(`${server.url}/v1/search?platform=weibo&query=x`, key, idem);
    expect(started.status).toBe(202);
    const handle = started.json.handle as string;
    expect(started.json.charge.quote_credits).toBeGreaterThan(0);

    // While the run is in flight: sdgw-mcp on the same file (it opens the store and starts serving), and the admin CLI.
    const mcp = await startMcp(db, key, { SDGW_RUN_LEASE_MS: "3000" });
    expect((await mcp.listTools()).tools.length).toBeGreaterThan(0);
    const listed = (await admin(db, "list-keys")) as Array<{ account: string }>;
    expect(listed.some((k) => k.account === server.accountId)).toBe(true);
    // The run is still in flight now (else this test would test nothing), and nobody ended it.
    expect(inspect(db, server.accountId, handle).run.state).toBe("running");
    const poll = await get(`${server.url}/v1/results/${handle}`, key);
    expect(poll.status).toBe(202);
    // Read through sdgw-mcp (another process than the run's owner): still running, not broken.
    const viaMcp = await mcp.callTool({ name: "search", arguments: { handle } });
    expect((viaMcp.structuredContent as { status?: string }).status, JSON.stringify(viaMcp.structuredContent)).toBe(
      "running",
    );
    // The same Idempotency-Key through sdgw-mcp is taken (its claim is written with the 202): no second run. The
    // tool sends POST /v1/search, another operation than the GET, hence 422 rather than 409.
    const twice = await mcp.callTool({
      name: "search",
      arguments: { platform: "weibo", query: "x", idempotency_key: idem },
    });
    expect((twice.structuredContent as { code?: string }).code, JSON.stringify(twice.structuredContent)).toBe(
      "idempotency_conflict",
    );
    const postTwice = await fetch(`${server.url}/v1/search`, {
      method: "POST",
      headers: { "X-API-Key": key, "Idempotency-Key": idem, "Content-Type": "application/json" },
      body: JSON.stringify({ platform: "weibo", query: "x" }),
    });
    expect(postTwice.status).toBe(422);

    const done = await settle(server.url, handle, key, 60_000);
    expect(done.status, JSON.stringify(done.json)).toBe(200);
    const cost = done.json.billing.cost as number;
    expect(cost).toBeGreaterThan(0);
    const after = await balanceOf(server, key);
    expect(before - after).toBe(cost);
    const s = inspect(db, server.accountId, handle);
    expect(s.run).toMatchObject({ state: "finished", charged: cost });
    expect(s.runCharges).toEqual([cost]);
    expect(s.hold).toMatchObject({ state: "captured", captured: cost });
    expect(s.balance + s.charges).toBe(s.grants);
    expect(s).toMatchObject({ held: 0, holdsHeld: 0, balance: after });
    // The same call again under the same key replays the first answer; nothing more is charged.
    const replay = await fetch(`${server.url}/v1/search?platform=weibo&query=x`, {
      headers: { "X-API-Key": key, "Idempotency-Key": idem },
    });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await balanceOf(server, key)).toBe(after);
    // sdgw-mcp sees the same account.
    const account = await mcp.callTool({ name: "account", arguments: {} });
    expect((account.structuredContent as { billing: { balance_credits: number } }).billing.balance_credits).toBe(after);
  }, 120_000);
});

/** Polls `check` every 50 ms until it holds (at most `ms`); answers whether it did. */
async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

describe("runs of a process that is gone", () => {
  it("a server killed (SIGKILL) during a 202 run: the next processes end it broken once, uncharged, " +
    "hold released; the same Idempotency-Key then runs and charges once", async () => {
    const db = join(dir, "killed.sqlite");
    const first = await startServer(db, { SDGW_LATENCY_MS: "6000", SDGW_RUN_LEASE_MS: "1000" });
    const key = first.key!;
    const before = await balanceOf(first, key);
    const idem = `killed-${Date.now()}`;
    const started = await get(`${first.url}/v1/search?platform=weibo&query=x`, key, idem);
    expect(started.status).toBe(202);
    const handle = started.json.handle as string;
    expect(inspect(db, first.accountId, handle)).toMatchObject({
      run: { state: "running" },
      hold: { state: "held" },
      held: started.json.charge.quote_credits,
    });
    await kill(first.child);
    await new Promise((r) => setTimeout(r, 1100)); // past its lease too

    // Two processes open the file at once; each may recover, the run is ended exactly once.
    const [second] = await Promise.all([
      startServer(db, { SDGW_LATENCY_MS: "1000", SDGW_RUN_LEASE_MS: "1000" }),
      startMcp(db, key, { SDGW_RUN_LEASE_MS: "1000" }),
    ]);
    const s = inspect(db, first.accountId, handle);
    expect(s.run.state).toBe("broken");
    expect(s.runCharges).toEqual([]);
    expect(s.hold).toMatchObject({ state: "released", captured: 0 });
    expect(s).toMatchObject({ held: 0, holdsHeld: 0, balance: before, charges: 0 });
    expect(s.balance + s.charges).toBe(s.grants);
    const read = await get(`${second.url}/v1/results/${handle}`, key);
    expect(read.status).toBe(500);
    expect(read.json.code).toBe("internal_error");

    // The Idempotency-Key is free: the same call runs once more and is charged once.
    const again = await get(`${second.url}/v1/search?platform=weibo&query=x`, key, idem);
    expect(again.status).toBe(202);
    const done = await settle(second.url, again.json.handle as string, key);
    expect(done.status).toBe(200);
    const cost = done.json.billing.cost as number;
    expect(before - (await balanceOf(second, key))).toBe(cost);
    const t = inspect(db, first.accountId, again.json.handle as string);
    expect(t.runCharges).toEqual([cost]);
    expect(t).toMatchObject({ charges: cost, held: 0, holdsHeld: 0 });
    expect(t.balance + t.charges).toBe(t.grants);
  }, 120_000);

  it("a server frozen (SIGSTOP) past its lease: a live sdgw-mcp's heartbeat ends its run broken; " +
    "woken up, the server charges nothing for it and its caller reads 500", async () => {
    const db = join(dir, "frozen.sqlite");
    // Its calls take 0.5 to 1.5 s: they are over when it wakes up, so it ends its run at once then.
    // Leases of 20 s: sdgw-mcp may take several seconds to start on a busy machine, and must start within it.
    const server = await startServer(db, { SDGW_LATENCY_MS: "1000", SDGW_RUN_LEASE_MS: "20000" });
    const key = server.key!;
    const before = await balanceOf(server, key);
    const idem = `frozen-${Date.now()}`;
    const started = await get(`${server.url}/v1/search?platform=weibo&query=x`, key, idem);
    expect(started.status).toBe(202);
    const handle = started.json.handle as string;
    server.child.kill("SIGSTOP");
    try {
      // sdgw-mcp starts while the frozen server's lease still holds: its start leaves the run alone...
      const mcp = await startMcp(db, key, { SDGW_RUN_LEASE_MS: "20000" });
      expect((await mcp.listTools()).tools.length).toBeGreaterThan(0);
      expect(inspect(db, server.accountId, handle).run.state).toBe("running");
      // ...and once the lease has expired, one of its heartbeats ends it (the pid still exists: only the lease decides).
      expect(await until(() => inspect(db, server.accountId, handle).run.state === "broken", 40_000)).toBe(true);
      const s = inspect(db, server.accountId, handle);
      expect(s.hold).toMatchObject({ state: "released", captured: 0 });
      expect(s).toMatchObject({ held: 0, balance: before, charges: 0 });
    } finally {
      server.child.kill("SIGCONT");
    }
    // The server wakes up; its run ends in its memory, finds its row ended by another process, and charges nothing
    // (nor keeps its answer under the Idempotency-Key, which would replay it free of charge).
    await new Promise((r) => setTimeout(r, 500));
    const read = await settle(server.url, handle, key);
    expect(read.status).toBe(500);
    expect(read.json.code).toBe("internal_error");
    const after = inspect(db, server.accountId, handle);
    expect(after.run.state).toBe("broken");
    expect(after.runCharges).toEqual([]);
    expect(after).toMatchObject({ held: 0, holdsHeld: 0, balance: before, charges: 0 });
    expect(await balanceOf(server, key)).toBe(before);
    // Its Idempotency-Key is free there too: the same call runs again, and is charged once.
    const again = await get(`${server.url}/v1/search?platform=weibo&query=x`, key, idem);
    expect(again.status).toBe(202);
    expect(again.json.handle).not.toBe(handle);
    const done = await settle(server.url, again.json.handle as string, key);
    expect(done.status).toBe(200);
    const cost = done.json.billing.cost as number;
    const t = inspect(db, server.accountId, again.json.handle as string);
    expect(t.runCharges).toEqual([cost]);
    expect(t).toMatchObject({ charges: cost, balance: before - cost, held: 0 });
  }, 120_000);
});

describe("two processes writing at once", () => {
  it("the HTTP server, sdgw-mcp and sdgw-admin charge and grant together: no 500, no call lost, the ledger adds up", async () => {
    const db = join(dir, "writers.sqlite");
    const env = { SDGW_KEY_QPS: "10000", SDGW_WORKSPACE_CONCURRENCY: "10000", SDGW_WAIT_MS: "40000" };
    const server = await startServer(db, env);
    const key = server.key!;
    const mcp = await startMcp(db, key, env);
    const before = await balanceOf(server, key);
    const overHttp = Array.from({ length: 40 }, (_, i) =>
      get(`${server.url}/v1/search?platform=${i % 2 ? "weibo" : "xiaohongshu"}&query=w${i}`, key, `w-http-${i}`),
    );
    const overMcp = Array.from({ length: 40 }, (_, i) =>
      mcp.callTool({ name: "search", arguments: { platform: "weibo", query: `m${i}`, idempotency_key: `w-mcp-${i}` } }),
    );
    const grants = Array.from({ length: 3 }, () => admin(db, "grant", "--account", server.accountId, "--credits", "7"));
    const [http, viaMcp] = await Promise.all([Promise.all(overHttp), Promise.all(overMcp), Promise.all(grants)]);
    expect(http.map((r) => r.status)).toEqual(http.map(() => 200));
    const mcpAnswers = viaMcp.map((r) => r.structuredContent as { status: string; billing: { cost: number } });
    expect(viaMcp.filter((r) => r.isError)).toEqual([]);
    const charged = [
      ...http.map((r) => r.json.billing.cost as number),
      ...mcpAnswers.map((a) => a.billing.cost),
    ].reduce((a, b) => a + b, 0);
    expect(charged).toBeGreaterThan(0);
    const after = await balanceOf(server, key);
    expect(after).toBe(before + 21 - charged);
    const peek = new DatabaseSync(db, { readOnly: true });
    try {
      const sums = peek
        .prepare(
          "SELECT kind, COUNT(*) AS n, SUM(amount) AS s FROM ledger WHERE account_id = ? GROUP BY kind ORDER BY kind",
        )
        .all(server.accountId) as Array<{ kind: string; n: number; s: number }>;
      const account = peek.prepare("SELECT balance, held FROM accounts WHERE id = ?").get(server.accountId) as {
        balance: number;
        held: number;
      };
      expect(account).toEqual({ balance: after, held: 0 });
      expect(sums.find((r) => r.kind === "charge")!.s).toBe(charged);
      expect(account.balance + sums.find((r) => r.kind === "charge")!.s).toBe(sums.find((r) => r.kind === "grant")!.s);
    } finally {
      peek.close();
    }
  }, 120_000);
});
