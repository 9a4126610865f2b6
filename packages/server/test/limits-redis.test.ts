/**
 * D107: the limits kept in Redis (`redisUrl`, `SDGW_REDIS_URL`), shared by several gateway instances: a key's rate,
 * an address's rate and a workspace's running calls are counted once across them; the slot of an instance that
 * died (a real `main.ts` killed with SIGKILL mid-run) is free again after its lease; with Redis unreachable every
 * call is refused with 503 `temporarily_unavailable` and nothing is charged. Needs Redis on 127.0.0.1:6379 (CI's
 * `.ci/run` installs and starts it): without it this file fails, it does not skip. Every key this file writes is
 * under a prefix of its own, deleted at the end.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LimitsConfig } from "../src/config.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { GENEROUS, harness, newIdem, validateAnswer, type Answer } from "./helpers.ts";
import { kill, sameClockEnv, startServer, stopAll } from "./processes.ts";

const REDIS_URL = "redis://127.0.0.1:6379";
/** This run's keys: no other run (or another file's servers) counts against them. */
const ROOT_PREFIX = `sdgw-test-${process.pid}-${Date.now()}:`;
const dir = mkdtempSync(join(tmpdir(), "sdgw-redis-"));
let redis: Redis;
let pairs = 0;
const servers: SdgwServer[] = [];

beforeAll(async () => {
  redis = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    expect(await redis.ping()).toBe("PONG");
  } catch (e) {
    throw new Error(
      `Redis does not answer at 127.0.0.1:6379 (${(e as Error).message}); these tests need it. Start it with ` +
        "`redis-server --daemonize yes --bind 127.0.0.1 --port 6379` (Debian: `apt-get install redis-server`; CI's " +
        ".ci/run installs and starts it).",
    );
  }
});

afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

afterAll(async () => {
  stopAll();
  if (redis?.status === "ready") {
    const keys: string[] = [];
    let cursor = "0";
    do {
      const [next, found] = await redis.scan(cursor, "MATCH", `${ROOT_PREFIX}*`, "COUNT", 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== "0");
    if (keys.length) await redis.del(...keys);
  }
  redis?.disconnect();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Two gateway instances on one Redis prefix (fresh for each call), each on its own copy of a database holding one
 * funded paid account and its key (the same ids in both: the limits count by key, address and workspace; two
 * stores on one file in one process would wait on each other's write lock).
 */
async function pair(limits: Partial<LimitsConfig>, options: { waitMs?: number } = {}) {
  const n = ++pairs;
  const seedPath = join(dir, `pair-${n}-seed.sqlite`);
  const seed = createServer({ dbPath: seedPath, log: () => undefined });
  const gw = seed.gateway;
  const { account } = gw.accounts.createAccount({ name: "Shared limits", plan: "paid" });
  gw.accounts.grant(account.id, 1000);
  const key = gw.accounts.createKey({ accountId: account.id, name: "test" }).secret;
  const workspaceId = gw.accounts.workspaceOf(account.id)!.id;
  await seed.close();
  const instance = (name: string) => {
    const dbPath = join(dir, `pair-${n}-${name}.sqlite`);
    for (const suffix of ["", "-wal"])
      if (existsSync(seedPath + suffix)) copyFileSync(seedPath + suffix, dbPath + suffix);
    const s = createServer({
      dbPath,
      waitMs: options.waitMs ?? 2000,
      log: () => undefined,
      redisUrl: REDIS_URL,
      redisKeyPrefix: `${ROOT_PREFIX}${n}:`,
      limits: { ...GENEROUS, ...limits },
    });
    servers.push(s);
    return s;
  };
  return { a: instance("a"), b: instance("b"), key, accountId: account.id, workspaceId };
}

/** A request to one instance, its answer validated against the contract. */
async function call(
  s: SdgwServer,
  operationId: Parameters<typeof validateAnswer>[0],
  method: "GET" | "POST",
  url: string,
  key: string | null,
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (key) headers["x-api-key"] = key;
  if (url.startsWith("/v1/search")) headers["idempotency-key"] = newIdem();
  return validateAnswer(operationId, await s.app.inject({ method, url, headers }));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("limits in Redis, shared by two instances (D107)", () => {
  it("a key's calls per second are counted once across instances: 2N calls spread over both, N accepted", async () => {
    const N = 3;
    const { a, b, key } = await pair({ keyQps: N });
    // The window is one second from the key's first call: a round counts only if it fit in well under a second (a
    // slow machine may need another round, after the window passed).
    for (let round = 1; ; round++) {
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: 2 * N }, (_, i) => call(i % 2 ? b : a, "getAccount", "GET", "/v1/account", key)),
      );
      const took = performance.now() - started;
      const accepted = answers.filter((x) => x.status === 200);
      const limited = answers.filter((x) => x.status === 429);
      expect(accepted.length + limited.length).toBe(2 * N);
      for (const l of limited) expect(l.json).toMatchObject({ code: "rate_limited", reason: "key_qps" });
      // whatever the timing, the first N of the window are accepted and never all 2N (each instance alone would allow N)
      expect(accepted.length).toBeGreaterThanOrEqual(N);
      if (took < 800) {
        expect(accepted).toHaveLength(N);
        break;
      }
      expect(round, `rounds took ${Math.round(took)} ms, more than the window`).toBeLessThan(5);
      await sleep(1100);
    }
  });

  it("an address's calls per minute on keyless routes are counted once across instances", async () => {
    const N = 4;
    const { a, b } = await pair({ addressPerMinute: N });
    const answers: Answer[] = [];
    for (let i = 0; i < 2 * N; i++)
      answers.push(await call(i % 2 ? b : a, "listCapabilities", "GET", "/v1/capabilities", null));
    expect(answers.map((x) => x.status)).toEqual([...Array(N).fill(200), ...Array(N).fill(429)]);
    expect(answers[N]!.json).toMatchObject({ code: "rate_limited", reason: "address" });
    expect(Number(answers[N]!.headers["retry-after"])).toBeGreaterThan(1);
  });

  it("a workspace's running calls are counted once: a slow run on A takes the slot, B refuses until it ends", async () => {
    const { a, b, key, workspaceId } = await pair({ workspaceConcurrency: 1 }, { waitMs: 50 });
    a.gateway.simulator!.setKnobs("*", { latencyMs: 1500 });
    const running = await call(a, "search", "GET", "/v1/search?platform=x&query=a", key);
    expect(running.status).toBe(202);
    expect(a.gateway.limits.runningOf(workspaceId)).toBe(1);
    const refused = await call(b, "search", "GET", "/v1/search?platform=x&query=b", key);
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({ code: "rate_limited", reason: "workspace_concurrency" });
    expect(b.gateway.store.all("SELECT * FROM ledger WHERE kind = 'charge'")).toHaveLength(0);
    // the run ends (charged once), its slot is given back, and B's call runs
    const handle = running.json.handle as string;
    const until = Date.now() + 15_000;
    let result = running;
    while (result.status === 202 && Date.now() < until) {
      await sleep(100);
      result = await call(a, "getResult", "GET", `/v1/results/${handle}`, key);
    }
    expect(result.status).toBe(200);
    expect(a.gateway.limits.runningOf(workspaceId)).toBe(0);
    const after = await call(b, "search", "GET", "/v1/search?platform=x&query=c", key);
    expect(after.status).toBe(200);
    expect(b.gateway.limits.runningOf(workspaceId)).toBe(0);
  });

  it("the slot of an instance that died mid-run is free again once its lease ran out", async () => {
    const db = join(dir, "killed.sqlite");
    const prefix = `${ROOT_PREFIX}killed:`;
    const leaseMs = 3000;
    // A real instance (`main.ts`) with the limits in Redis, one running call per workspace and slow platforms
    const dead = await startServer(db, {
      ...sameClockEnv(),
      SDGW_REDIS_URL: REDIS_URL,
      SDGW_REDIS_PREFIX: prefix,
      SDGW_RUN_LEASE_MS: String(leaseMs),
      SDGW_WORKSPACE_CONCURRENCY: "1",
      SDGW_LATENCY_MS: "60000",
    });
    expect(dead.banner).toContain(`Limits: counted in Redis at ${REDIS_URL}`);
    const key = dead.key!;
    const res = await fetch(`${dead.url}/v1/search?platform=x&query=a`, {
      headers: { "X-API-Key": key, "Idempotency-Key": newIdem() },
    });
    expect(res.status).toBe(202);
    const survivor = createServer({
      dbPath: db,
      waitMs: 2000,
      log: () => undefined,
      redisUrl: REDIS_URL,
      redisKeyPrefix: prefix,
      runLeaseMs: leaseMs,
      limits: { ...GENEROUS, workspaceConcurrency: 1 },
    });
    servers.push(survivor);
    await kill(dead.child);
    const killedAt = Date.now();
    // the dead instance's slot still counts (renewed every lease/6 until the kill)
    const first = await call(survivor, "search", "GET", "/v1/search?platform=x&query=b", key);
    expect(first.status).toBe(429);
    expect(first.json).toMatchObject({ code: "rate_limited", reason: "workspace_concurrency" });
    let accepted: Answer | null = null;
    while (!accepted && Date.now() - killedAt < leaseMs + 5000) {
      await sleep(200);
      const a = await call(survivor, "search", "GET", "/v1/search?platform=x&query=b", key);
      if (a.status === 200) accepted = a;
      else expect(a.json).toMatchObject({ reason: "workspace_concurrency" });
    }
    const freedAfter = Date.now() - killedAt;
    expect(accepted, `still refused ${freedAfter} ms after the kill`).not.toBeNull();
    // freed by its expiry: not before the lease (less one renewal interval) ran out, and soon after it
    expect(freedAfter).toBeGreaterThanOrEqual(leaseMs - leaseMs / 6 - 200);
  });
});

describe("Redis unreachable (D107)", () => {
  /** A loopback port nothing listens on. */
  async function closedPort(): Promise<number> {
    const s = createNetServer();
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
    const port = (s.address() as { port: number }).port;
    await new Promise((r) => s.close(r));
    return port;
  }

  it("refuses every limited call with 503 temporarily_unavailable, quickly: nothing held, run or charged", async () => {
    const h = harness({ redisUrl: `redis://127.0.0.1:${await closedPort()}`, credits: 1000 });
    servers.push(h.server);
    const gw = h.server.gateway;
    const balance = () => gw.accounts.account(h.accountId)!.balance;
    const before = balance();
    const idem = newIdem();
    for (let i = 0; i < 2; i++) {
      const started = performance.now();
      // the same Idempotency-Key twice: 503 both times (never 409), the key was not kept claimed
      const a = await h.call("search", "GET", "/v1/search?platform=x&query=a", {
        headers: { "idempotency-key": idem },
      });
      expect(performance.now() - started).toBeLessThan(3000);
      expect(a.status).toBe(503);
      expect(a.json).toMatchObject({ code: "temporarily_unavailable", reason: "paused", retryable: true });
      expect(a.json.message).toMatch(/limits.*Nothing ran and nothing was charged\./);
      expect(a.json.fix).toMatchObject({ action_url: gw.config.urls.status });
      expect(Number(a.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    }
    const tool = await h.call("brandBuzz", "POST", "/v1/tools/brand_buzz", {
      headers: { "idempotency-key": newIdem() },
      body: { query: "a", platforms: ["x"] },
    });
    expect(tool.status).toBe(503);
    expect((await h.call("getAccount", "GET", "/v1/account")).status).toBe(503);
    expect((await h.call("listCapabilities", "GET", "/v1/capabilities", { key: null })).status).toBe(503);
    // the spec itself, a static document whose contract has no 503, is still served
    expect((await h.call("getOpenApiDocument", "GET", "/openapi.json", { key: null })).status).toBe(200);
    expect(balance()).toBe(before);
    expect(gw.store.all("SELECT * FROM ledger WHERE kind = 'charge'")).toHaveLength(0);
    expect(gw.runs.inFlight).toBe(0);
    h.audit();
  });

  it("a Redis URL that is not one stops createServer, named", () => {
    expect(() => createServer({ dbPath: ":memory:", redisUrl: "http://user:secret@127.0.0.1:6379" })).toThrow(
      /redisUrl must be a Redis URL.*\(got "http:\/\/user:\*\*\*@127\.0\.0\.1:6379\/?"\)/,
    );
  });
});
