/**
 * Issue 20, D108: the reference server as several instances on one PostgreSQL database, each a real `main.ts`
 * process on its own loopback port with `SDGW_DATABASE_URL`, called over real sockets: 60 concurrent calls on one
 * Idempotency-Key spread over three instances charge once; 100 concurrent calls on a balance of 10 charge exactly
 * 10; a handle made on one instance reads on the others; an instance killed with SIGKILL mid-run has its run taken
 * over once (broken, its hold released, nothing charged) and the same call then runs once; a database that stops
 * answering gets 503 `temporarily_unavailable` with nothing charged. The ledger's identity is checked after every
 * test. Needs PostgreSQL (see pg-helpers.ts).
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PgAccounts } from "../src/pg/accounts.ts";
import { PgCalls } from "../src/pg/calls.ts";
import { createPgServer } from "../src/pg/server.ts";
import { faultProxy } from "./fault-proxy.ts";
import { expectLedgerIdentity, pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";
import { kill, ROOT, sameClockEnv, startServer, stopAll, type Started } from "./processes.ts";

let t: TestDatabase;
let url: string;
let accounts: PgAccounts;
let ledger: PgCalls;
/** The three instances that serve every test (no latency), and what the tests made. */
let three: Started[] = [];
const made: string[] = [];
const LEASE = "1500";

beforeAll(async () => {
  t = await testDatabase("instances", 1);
  url = pgUrl(t.name);
  const db = t.instances[0]!;
  accounts = new PgAccounts({ db, now: Date.now });
  ledger = new PgCalls({ db, now: Date.now, idempotencyTtlMs: 86_400_000, freeCalls: 100, owner: "own_test_reader" });
  // Three instances starting together on one database: one makes the demo account, all serve.
  // Many calls of one key at once must not trip its failure limit or its workspace's running calls here (D27 and
  // D45 have their own tests).
  const env = {
    ...sameClockEnv(),
    SDGW_DATABASE_URL: url,
    SDGW_RUN_LEASE_MS: LEASE,
    SDGW_WAIT_MS: "5000",
    SDGW_FAILURE_THRESHOLD: "1000",
    SDGW_WORKSPACE_CONCURRENCY: "1000",
  };
  three = await Promise.all([0, 1, 2].map(() => startServer(":memory:", env)));
}, 60_000);

afterAll(async () => {
  stopAll();
  await t?.drop();
});

afterEach(() => expectLedgerIdentity(ledger, made.splice(0)));

/** A paid account with `credits` and a key; its secret. */
async function account(credits: number): Promise<{ id: string; key: string }> {
  const { account } = await accounts.createAccount({ name: "instances test", plan: "paid" });
  if (credits > 0) await accounts.grant(account.id, credits);
  const { secret } = await accounts.createKey({ accountId: account.id, name: "test" });
  made.push(account.id);
  return { id: account.id, key: secret };
}

interface Got {
  status: number;
  headers: Headers;
  body: Record<string, any>;
  text: string;
}

async function search(base: string, key: string, query: string, idem: string, extra = ""): Promise<Got> {
  const res = await fetch(`${base}/v1/search?platform=x&count=2&query=${encodeURIComponent(query)}${extra}`, {
    headers: { "X-API-Key": key, "Idempotency-Key": idem },
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Record<string, any>, text };
}

async function read(base: string, key: string, handle: string): Promise<Got> {
  const res = await fetch(`${base}/v1/results/${handle}`, { headers: { "X-API-Key": key } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Record<string, any>, text };
}

const count = (xs: number[]) => xs.reduce<Record<number, number>>((m, s) => ({ ...m, [s]: (m[s] ?? 0) + 1 }), {});

describe("the reference server as three instances on one PostgreSQL (issue 20, D108)", () => {
  it("started together: each version of the schema applied once, one demo account, every instance answers", async () => {
    expect(three.filter((s) => s.key !== null)).toHaveLength(1);
    expect(new Set(three.map((s) => s.accountId))).toEqual(new Set(["acc_demo"]));
    const rows = await t.instances[0]!.query<{ version: number }>("SELECT version FROM schema_migrations");
    expect(rows.map((r) => r.version)).toEqual([1]);
    const demoKey = three.find((s) => s.key)!.key!;
    for (const s of three) expect((await search(s.url, demoKey, "露营", `demo-${s.url}`)).status).toBe(200);
  });

  it("60 concurrent calls on one Idempotency-Key spread over the instances: one runs and is charged once", async () => {
    const { id, key } = await account(100);
    const got = await Promise.all(
      Array.from({ length: 60 }, (_, i) => search(three[i % 3]!.url, key, "one key", "same-key-60")),
    );
    const ok = got.filter((g) => g.status === 200);
    expect(count(got.map((g) => g.status))[500] ?? 0).toBe(0);
    expect(got.every((g) => g.status === 200 || g.status === 409)).toBe(true);
    expect(ok.filter((g) => g.headers.get("idempotent-replayed") === null)).toHaveLength(1);
    expect(new Set(ok.map((g) => g.text)).size).toBe(1); // every 200 is the first answer, byte for byte
    for (const s of three) {
      const again = await search(s.url, key, "one key", "same-key-60");
      expect([again.status, again.headers.get("idempotent-replayed"), again.text]).toEqual([200, "true", ok[0]!.text]);
    }
    expect(await ledger.audit(id)).toMatchObject({ balance: 99, charges: 1, held: 0 });
  });

  it("100 concurrent calls on a balance of 10 spread over the instances: exactly 10 run and are charged", async () => {
    const { id, key } = await account(10);
    const got = await Promise.all(
      Array.from({ length: 100 }, (_, i) => search(three[i % 3]!.url, key, `q${i}`, `k-${i}`)),
    );
    expect(count(got.map((g) => g.status))).toEqual({ 200: 10, 402: 90 });
    for (const g of got.filter((x) => x.status === 402)) expect(g.body["code"]).toBe("insufficient_balance");
    expect(await ledger.audit(id)).toEqual({ balance: 0, grants: 10, charges: 10, held: 0, holdsHeld: 0 });
  });

  it("a handle made on one instance reads on the others: 202 while it runs, then the same answer, charged once", async () => {
    const env = { ...sameClockEnv(), SDGW_DATABASE_URL: url, SDGW_RUN_LEASE_MS: LEASE, SDGW_LATENCY_MS: "800" };
    const slow = await startServer(":memory:", { ...env, SDGW_WAIT_MS: "50" });
    try {
      const { id, key } = await account(10);
      const started = await search(slow.url, key, "slow handle", "h-1");
      expect(started.status).toBe(202);
      const handle = started.body["handle"] as string;
      expect((await read(three[0]!.url, key, handle)).status).toBe(202);
      let done: Got | undefined;
      for (let i = 0; i < 60 && done?.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 200));
        done = await read(three[1]!.url, key, handle);
      }
      expect(done?.status).toBe(200);
      const elsewhere = await read(three[2]!.url, key, handle);
      expect(elsewhere.text).toBe(done!.text);
      expect(done!.body["request_id"]).toBe(started.body["request_id"]);
      expect(await ledger.audit(id)).toMatchObject({ balance: 9, charges: 1, held: 0 });
    } finally {
      await kill(slow.child, "SIGTERM");
    }
  });

  it("an instance killed with SIGKILL mid-run: its run is taken over once, nothing charged; the call then runs once", async () => {
    const env = { ...sameClockEnv(), SDGW_DATABASE_URL: url, SDGW_RUN_LEASE_MS: LEASE, SDGW_LATENCY_MS: "20000" };
    const doomed = await startServer(":memory:", { ...env, SDGW_WAIT_MS: "50" });
    const { id, key } = await account(10);
    const started = await search(doomed.url, key, "killed mid-run", "k-kill");
    expect(started.status).toBe(202);
    const handle = started.body["handle"] as string;
    expect(await ledger.audit(id)).toMatchObject({ held: 1 });
    await kill(doomed.child); // SIGKILL: no retire, no drain; its lease runs out
    let after: Got | undefined;
    for (let i = 0; i < 50 && after?.status !== 500; i++) {
      await new Promise((r) => setTimeout(r, 200));
      after = await read(three[i % 3]!.url, key, handle);
    }
    expect([after?.status, after?.body["code"]]).toEqual([500, "internal_error"]);
    // Within a lease and a heartbeat one of the live instances has ended it: hold released, nothing charged.
    for (let i = 0; i < 50 && (await ledger.audit(id)).held > 0; i++) await new Promise((r) => setTimeout(r, 200));
    expect(await ledger.audit(id)).toMatchObject({ balance: 10, held: 0, charges: 0 });
    const broken = await t.instances[0]!.query<{ state: string }>("SELECT state FROM runs WHERE handle = $1", [handle]);
    expect(broken.map((r) => r.state)).toEqual(["broken"]);
    // The same call under the same Idempotency-Key runs again, once, on a live instance.
    const again = await search(three[1]!.url, key, "killed mid-run", "k-kill");
    expect(again.status).toBe(200);
    expect((await search(three[2]!.url, key, "killed mid-run", "k-kill")).headers.get("idempotent-replayed")).toBe(
      "true",
    );
    expect(await ledger.audit(id)).toMatchObject({ balance: 9, held: 0, charges: 1 });
  });

  it("sdgw-admin on the same database: an account and key it makes serve at once; its pause and revoke hold on every instance", async () => {
    const made_ = (await adminPg("create-account", "--name", "From the CLI")) as { account: string };
    made.push(made_.account);
    await adminPg("grant", "--account", made_.account, "--credits", "5");
    const { secret } = (await adminPg("create-key", "--account", made_.account)) as { secret: string };
    for (const s of three) expect((await search(s.url, secret, "cli", `cli-${s.url}`)).status).toBe(200);
    await adminPg("pause", "--message", "Maintenance window.");
    for (const s of three) {
      const paused = await search(s.url, secret, "cli paused", `cli-p-${s.url}`);
      expect([paused.status, paused.body["reason"], paused.body["message"]]).toEqual([
        503,
        "paused",
        "Calls are paused: Maintenance window. Nothing ran and nothing was charged.",
      ]);
    }
    expect(await adminPg("unpause")).toEqual({ unpaused: true });
    await adminPg("revoke-key", "--key", secret.slice(0, 12));
    for (const s of three)
      expect((await search(s.url, secret, "cli", `cli-r-${s.url}`)).body["reason"]).toBe("revoked");
    expect(await ledger.audit(made_.account)).toMatchObject({ balance: 2, charges: 3, held: 0 });
  }, 60_000); // six sdgw-admin processes one after another: about 3 s alone, past 5 s on a busy 2-core machine

  it("a database that stops answering: 503 temporarily_unavailable, nothing charged; calls resume when it is back", async () => {
    const proxy = await faultProxy(5432);
    const server = await createPgServer({
      databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/${t.name}`,
      runLeaseMs: 30_000,
      log: () => undefined,
      scheduleTickMs: 0,
    });
    try {
      const base = await server.listen({ port: 0 });
      const { id, key } = await account(10);
      expect((await search(base, key, "before", "u-1")).status).toBe(200);
      proxy.cut();
      const refused = await search(base, key, "while down", "u-2");
      expect([refused.status, refused.body["code"], refused.body["reason"]]).toEqual([
        503,
        "temporarily_unavailable",
        "paused",
      ]);
      expect(refused.body["message"]).toMatch(/cannot reach its database.*nothing was charged/);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      proxy.restore();
      const resumed = await search(base, key, "while down", "u-2");
      expect(resumed.status).toBe(200);
      expect(await ledger.audit(id)).toMatchObject({ balance: 8, charges: 2, held: 0 });
    } finally {
      proxy.restore();
      await server.close({ drainMs: 100 });
      await proxy.close();
    }
  });
});

/** Runs `sdgw-admin` as its own process on the test's database (SDGW_DATABASE_URL); its JSON output. */
async function adminPg(...args: string[]): Promise<unknown> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--conditions=source", "--no-warnings", join(ROOT, "packages", "server", "src", "bin", "sdgw-admin.ts"), ...args],
    { cwd: ROOT, timeout: 20_000, env: { ...process.env, SDGW_DATABASE_URL: url } },
  );
  return JSON.parse(stdout);
}
