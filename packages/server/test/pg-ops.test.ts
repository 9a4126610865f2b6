/**
 * Issue 30 item 7, D113, on PostgreSQL with real `main.ts` processes: `/readyz` of an instance whose database goes
 * away behind a TCP proxy answers 503 within its bound (refused, then blackholed), naming the database and never
 * the URL's password, and 200 again once it is back; `/metrics` counts the charge and shows the pool; the JSON log
 * line of a request refused meanwhile carries its `request_id`; no log line of the run holds a key's secret or a
 * URL's password. SIGTERM on an instance whose run outlasts its grace: it exits 0 after the grace, and another
 * instance reads the handle as 500 broken within one lease, its hold released, nothing charged. Needs PostgreSQL
 * and Redis on 127.0.0.1.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PgAccounts } from "../src/pg/accounts.ts";
import { PgCalls } from "../src/pg/calls.ts";
import { faultProxy } from "./fault-proxy.ts";
import { pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";
import { kill, sameClockEnv, startServer, stopAll } from "./processes.ts";
import { parsePrometheus, valueOf } from "./prometheus.ts";

let t: TestDatabase;
let accounts: PgAccounts;
let ledger: PgCalls;
const made: string[] = [];

beforeAll(async () => {
  t = await testDatabase("ops", 1);
  const db = t.instances[0]!;
  accounts = new PgAccounts({ db, now: Date.now });
  ledger = new PgCalls({ db, now: Date.now, idempotencyTtlMs: 86_400_000, freeCalls: 100, owner: "own_ops_reader" });
}, 60_000);

afterAll(async () => {
  stopAll();
  await t?.drop();
});

afterEach(async () => {
  for (const id of made.splice(0)) {
    const a = await ledger.audit(id);
    expect(a.balance, `balance of ${id} = grants − charges`).toBe(a.grants - a.charges);
    expect(a.held, `held of ${id} = Σ holds held`).toBe(a.holdsHeld);
  }
});

/** A paid account with `credits` and a key; its secret. */
async function account(credits: number): Promise<{ id: string; key: string }> {
  const { account } = await accounts.createAccount({ name: "ops test", plan: "paid" });
  await accounts.grant(account.id, credits);
  const { secret } = await accounts.createKey({ accountId: account.id, name: "test" });
  made.push(account.id);
  return { id: account.id, key: secret };
}

interface Got {
  status: number;
  headers: Headers;
  body: Record<string, any>;
  ms: number;
}

async function get(base: string, path: string, headers: Record<string, string> = {}): Promise<Got> {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text), ms: performance.now() - started };
}

const search = (base: string, key: string, query: string, idem: string) =>
  get(base, `/v1/search?platform=x&count=2&query=${encodeURIComponent(query)}`, {
    "X-API-Key": key,
    "Idempotency-Key": idem,
  });

async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, tries = 150): Promise<T> {
  let v = await what();
  for (let i = 0; i < tries && !ok(v); i++) {
    await new Promise((r) => setTimeout(r, 100));
    v = await what();
  }
  return v;
}

describe("an instance on PostgreSQL as its operator sees it (D113)", () => {
  it("readyz: 503 within its bound when the database is cut or blackholed, 200 when back; metrics; JSON logs with request_id and no secret", async () => {
    const proxy = await faultProxy(5432);
    const s = await startServer(":memory:", {
      ...sameClockEnv(),
      SDGW_DATABASE_URL: `postgres://postgres:pg-pass-s3cret@127.0.0.1:${proxy.port}/${t.name}`,
      SDGW_REDIS_URL: "redis://:redis-pass-s3cret@127.0.0.1:6379",
      SDGW_REDIS_PREFIX: `sdgw-pg-ops-${process.pid}-${Date.now()}:`,
      SDGW_LOG_FORMAT: "json",
      SDGW_SHUTDOWN_GRACE_MS: "2000",
    });
    try {
      const { key } = await account(10);
      const ready = await get(s.url, "/readyz");
      expect([ready.status, ready.body["checks"]["database"]["detail"], ready.body["checks"]["redis"]["ok"]]).toEqual([
        200,
        "schema version 1",
        true,
      ]);
      expect((await search(s.url, key, "ops", "ops-1")).status).toBe(200);
      const metrics = parsePrometheus(await (await fetch(`${s.url}/metrics`)).text());
      expect(valueOf(metrics, "sdgw_charged_credits_total")).toBe(1);
      expect(valueOf(metrics, "sdgw_http_requests_total", { route: "/v1/search", status: "200" })).toBe(1);
      expect(valueOf(metrics, "sdgw_pg_pool_clients", { state: "total" })).toBeGreaterThanOrEqual(1);
      expect(valueOf(metrics, "sdgw_pg_pool_clients", { state: "waiting" })).toBe(0);

      // Refused: the check fails at once, naming the database.
      proxy.cut();
      const cut = await until(
        () => get(s.url, "/readyz"),
        (g) => g.status === 503,
      );
      expect(cut.body["checks"]["database"]).toMatchObject({ ok: false, error: expect.any(String) });
      expect(cut.body["checks"]["redis"]["ok"]).toBe(true);
      expect(cut.ms).toBeLessThan(5000);
      const refused = await search(s.url, key, "while down", "ops-2");
      expect([refused.status, refused.body["code"]]).toEqual([503, "temporarily_unavailable"]);
      const requestId = refused.body["request_id"] as string;
      const logged = await until(
        async () => s.output().stderr,
        (err) => err.includes(requestId),
      );
      const lines = logged
        .split("\n")
        .filter((l) => l.includes(requestId))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      // The request's own line (the pool may also have said, under the same request id, that a connection broke).
      expect(lines).toContainEqual(
        expect.objectContaining({ request_id: requestId, msg: expect.stringMatching(/PostgreSQL does not answer/) }),
      );

      proxy.restore();
      expect(
        (
          await until(
            () => get(s.url, "/readyz"),
            (g) => g.status === 200,
          )
        ).status,
      ).toBe(200);

      // Blackholed (accepted, never answered): 503 within the check's bound (1.5 s), not after the pool's 5 s; once the
      // pool found the database gone (D109), at once.
      proxy.blackhole();
      const silent = await get(s.url, "/readyz");
      expect(silent.status).toBe(503);
      expect(silent.body["checks"]["database"]["error"]).toMatch(/no answer within 1500 ms|does not answer/);
      expect(silent.ms).toBeLessThan(4000);

      proxy.restore();
      const back = await until(
        () => get(s.url, "/readyz"),
        (g) => g.status === 200,
      );
      expect(back.status).toBe(200);
      expect((await search(s.url, key, "after", "ops-3")).status).toBe(200);
      expect(await kill(s.child, "SIGTERM")).toBe(0);

      // Every line is JSON; none holds a key's secret or a URL's password.
      const { stdout, stderr } = s.output();
      for (const l of `${stdout}\n${stderr}`.split("\n").filter(Boolean))
        expect(JSON.parse(l), l).toMatchObject({
          time: expect.any(String),
          level: expect.any(String),
          msg: expect.any(String),
        });
      const all = `${stdout}${stderr}${JSON.stringify([cut.body, silent.body])}`;
      for (const secret of [key, "pg-pass-s3cret", "redis-pass-s3cret"]) expect(all).not.toContain(secret);
      expect(all).not.toMatch(/sdgw_[A-Za-z0-9]{32}/);
      expect(stdout).toContain(`postgres://postgres:***@127.0.0.1:${proxy.port}/${t.name}`);
    } finally {
      proxy.restore();
      await kill(s.child);
      await proxy.close();
    }
  }, 120_000);

  it("SIGTERM with a run longer than the grace: exit 0; another instance reads it 500 broken within one lease, nothing charged", async () => {
    const lease = 3000;
    const env = { ...sameClockEnv(), SDGW_DATABASE_URL: pgUrl(t.name), SDGW_RUN_LEASE_MS: String(lease) };
    const [other, stopping] = await Promise.all([
      startServer(":memory:", env),
      startServer(":memory:", { ...env, SDGW_LATENCY_MS: "20000", SDGW_SHUTDOWN_GRACE_MS: "1000" }),
    ]);
    try {
      const { id, key } = await account(10);
      const started = await search(stopping.url, key, "outlasts the grace", "grace-1");
      expect(started.status).toBe(202);
      const handle = started.body["handle"] as string;
      expect(await ledger.audit(id)).toMatchObject({ held: 1 });
      const signalled = performance.now();
      expect(await kill(stopping.child, "SIGTERM")).toBe(0);
      const exited = performance.now();
      expect(exited - signalled).toBeGreaterThanOrEqual(900);
      expect(exited - signalled).toBeLessThan(15_000);
      expect(stopping.output().stderr).toMatch(/1 run\(s\) did not end within 1000 ms: ended broken, uncharged/);

      const read = await until(
        () => get(other.url, `/v1/results/${handle}`, { "X-API-Key": key }),
        (g) => g.status === 500,
        100,
      );
      const within = performance.now() - exited;
      expect([read.status, read.body["code"]]).toEqual([500, "internal_error"]);
      expect(within).toBeLessThan(lease);
      const audit = await until(
        () => ledger.audit(id),
        (a) => a.held === 0,
      );
      expect(audit).toMatchObject({ balance: 10, held: 0, charges: 0 });
      // Its Idempotency-Key is free: the same call runs again, once, on the other instance.
      const again = await search(other.url, key, "outlasts the grace", "grace-1");
      expect(again.status).toBe(200);
      expect(await ledger.audit(id)).toMatchObject({ balance: 9, held: 0, charges: 1 });
    } finally {
      await kill(other.child, "SIGTERM");
    }
  }, 120_000);
});
