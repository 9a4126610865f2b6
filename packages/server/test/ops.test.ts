/**
 * Issue 30 item 7, D113: what an operator sees of the embedded server. `/healthz` and `/readyz` need no key, are
 * not counted against an address's limit and are not routes of the contract; `/readyz` names each check and why it
 * failed, within its bound (Redis cut off behind a proxy); `/metrics` is Prometheus text that counts answers by
 * route template and status and the credits charged, with no label of a key, an account or a URL, served as
 * `SDGW_METRICS` allows; a line logged about a request carries its `request_id`; and `pnpm start` stopped with
 * SIGTERM during a 202 run: `readyz` answers 503 at once, a request on a kept-alive connection is refused in the
 * contract's words, the run ends and is charged once, and the process exits 0 within its grace.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ROUTE_LIST } from "../src/http/server.ts";
import { ConfigError } from "../src/config.ts";
import { opsFromEnv } from "../src/ops/env.ts";
import { createLogger, redact } from "../src/ops/log.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { GENEROUS, harness, type Harness } from "./helpers.ts";
import { faultProxy } from "./fault-proxy.ts";
import { kill, sameClockEnv, startServer, stopAll } from "./processes.ts";
import { parsePrometheus, sampleValue } from "./prometheus.ts";

const dir = mkdtempSync(join(tmpdir(), "sdgw-ops-"));
let h: Harness | null = null;
const servers: SdgwServer[] = [];
afterEach(async () => {
  if (h) {
    h.audit();
    await h.server.close();
    h = null;
  }
  for (const s of servers.splice(0)) await s.close({ drainMs: 100 });
});
afterAll(() => {
  stopAll();
  rmSync(dir, { recursive: true, force: true });
});

const json = (body: string) => JSON.parse(body) as Record<string, any>;

describe("GET /healthz and GET /readyz (D113)", () => {
  it("answer without a key, are not counted against an address's limit, and are not routes of the contract", async () => {
    h = harness({ limits: { ...GENEROUS, addressPerMinute: 1 } });
    const app = h.server.app;
    for (let i = 0; i < 5; i++) {
      const live = await app.inject({ method: "GET", url: "/healthz" });
      expect([live.statusCode, json(live.body)]).toEqual([200, { status: "ok" }]);
      const ready = await app.inject({ method: "GET", url: "/readyz" });
      expect(ready.statusCode).toBe(200);
      expect(json(ready.body)).toEqual({
        status: "ready",
        checks: {
          database: { ok: true, ms: expect.any(Number), detail: "SQLite store open" },
          shutdown: { ok: true, ms: 0 },
        },
      });
    }
    // The limit of an address still holds on the contract's keyless routes: one call a minute here.
    expect((await app.inject({ method: "GET", url: "/v1/capabilities" })).statusCode).toBe(200);
    expect((await app.inject({ method: "GET", url: "/v1/capabilities" })).statusCode).toBe(429);
    expect(ROUTE_LIST.some((r) => /healthz|readyz|metrics/.test(r))).toBe(false);
    const unknown = await h.call(null, "GET", "/healthz/deep", { key: null });
    expect([unknown.status, unknown.json.code, unknown.json.reason]).toEqual([404, "not_found", "no_such_route"]);
    expect(unknown.json.fix.allowed).toEqual(ROUTE_LIST);
  });

  it("readyz names Redis when it stops answering, within its bound, without the URL's password; 200 again once it answers", async () => {
    const proxy = await faultProxy(6379);
    try {
      const server = createServer({
        dbPath: ":memory:",
        redisUrl: `redis://:redis-pass-s3cret@127.0.0.1:${proxy.port}`,
        redisKeyPrefix: `sdgw-ops-${process.pid}-${Date.now()}:`,
        log: () => undefined,
      });
      servers.push(server);
      const ready = async () => {
        const started = performance.now();
        const res = await server.app.inject({ method: "GET", url: "/readyz" });
        return { status: res.statusCode, body: json(res.body), ms: performance.now() - started, text: res.body };
      };
      let first = await ready();
      for (let i = 0; i < 50 && first.status !== 200; i++) first = await ready(); // the first connection
      expect(first.body["checks"]["redis"]).toMatchObject({ ok: true, detail: "answers PING" });

      proxy.cut();
      const cut = await ready();
      expect(cut.status).toBe(503);
      expect(cut.body["status"]).toBe("not_ready");
      expect(cut.body["checks"]["database"]["ok"]).toBe(true);
      expect(cut.body["checks"]["redis"]).toMatchObject({
        ok: false,
        error: expect.any(String),
      });
      expect(cut.ms).toBeLessThan(5000);

      proxy.blackhole();
      let silent = await ready();
      for (let i = 0; i < 20 && !/no answer within/.test(silent.body["checks"]["redis"]["error"] ?? ""); i++)
        silent = await ready();
      // A Redis that accepts and never answers: the check fails within its bound (1.5 s), not at the client's leisure.
      expect(silent.status).toBe(503);
      expect(silent.ms).toBeLessThan(5000);
      expect(silent.text).not.toContain("redis-pass-s3cret");

      proxy.restore();
      let back = await ready();
      for (let i = 0; i < 100 && back.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        back = await ready();
      }
      expect(back.status).toBe(200);
    } finally {
      await proxy.close();
    }
  }, 60_000);
});

describe("GET /metrics (D113)", () => {
  it("counts answers by route template and status, and the credits charged; Prometheus text with no key, account or URL in it", async () => {
    h = harness({ credits: 100 });
    const a = await h.call("search", "GET", "/v1/search?platform=x&query=metrics&count=2");
    await h.call("search", "GET", "/v1/search?platform=reddit&query=metrics&count=2");
    await h.call("search", "GET", "/v1/search?platform=douyin&query=metrics&count=2");
    await h.call("search", "GET", "/v1/search?platform=x&query=metrics", { key: "sdgw_nope" }); // 401
    await h.call(null, "GET", "/v1/results/h_doesnotexist0001"); // 404 of a handle
    await h.call(null, "GET", `/no/such/path/${a.json.request_id}`); // 404 of a path
    const res = await h.server.app.inject({ method: "GET", url: "/metrics" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = parsePrometheus(res.body);
    const requests = (labels: Record<string, string>) => sampleValue(samples, "sdgw_http_requests_total", labels);
    expect(requests({ method: "GET", route: "/v1/search", status: "200" })).toBe(3);
    expect(requests({ method: "GET", route: "/v1/search", status: "401" })).toBe(1);
    expect(requests({ method: "GET", route: "/v1/results/:handle", status: "404" })).toBe(1);
    expect(requests({ method: "GET", route: "(unmatched)", status: "404" })).toBe(1);
    expect(sampleValue(samples, "sdgw_http_request_duration_seconds_count", { route: "/v1/search" })).toBe(4);
    expect(sampleValue(samples, "sdgw_charged_credits_total")).toBe(3);
    expect(sampleValue(samples, "sdgw_runs_in_flight")).toBe(0);
    // The process's CPU, user and system together: Linux splits a process's exact run time into user and system
    // by sampled ticks, so over a few calls on a busy machine the user part alone may not move (seen under CI).
    expect(sampleValue(samples, "process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(sampleValue(samples, "process_cpu_user_seconds_total")).toBeGreaterThanOrEqual(0);
    expect(sampleValue(samples, "nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
    // Bounded labels: route templates only, never what a caller sent or who called.
    const routes = new Set(samples.filter((s) => s.labels["route"]).map((s) => s.labels["route"]));
    expect([...routes].every((r) => r === "(unmatched)" || /^\/[\w/:.-]*$/.test(r!))).toBe(true);
    for (const secret of [h.key, h.key.slice(0, 12), h.accountId, "h_doesnotexist", "req_", "query=", "sdgw_nope"])
      expect(res.body).not.toContain(secret);
    const allowed = [
      "method",
      "route",
      "status",
      "le",
      "state",
      "version",
      "major",
      "minor",
      "patch",
      "kind",
      "space",
      "type",
    ];
    for (const l of new Set(samples.flatMap((x) => Object.keys(x.labels)))) expect(allowed).toContain(l);
  });

  it("two servers in one process count their own requests", async () => {
    const one = createServer({ dbPath: ":memory:", log: () => undefined });
    const two = createServer({ dbPath: ":memory:", log: () => undefined });
    servers.push(one, two);
    for (let i = 0; i < 3; i++) await one.app.inject({ method: "GET", url: "/v1/capabilities" });
    await two.app.inject({ method: "GET", url: "/v1/capabilities" });
    const count = async (s: SdgwServer) =>
      sampleValue(
        parsePrometheus((await s.app.inject({ method: "GET", url: "/metrics" })).body),
        "sdgw_http_requests_total",
        {
          route: "/v1/capabilities",
        },
      );
    expect([await count(one), await count(two)]).toEqual([3, 1]);
  });

  it("is served on a loopback listen address only, unless SDGW_METRICS says otherwise or a token is set", async () => {
    const served = async (o: Parameters<typeof createServer>[0], host: string | null, headers = {}) => {
      const s = createServer({ dbPath: ":memory:", log: () => undefined, ...o });
      servers.push(s);
      s.lifecycle.host = host;
      const res = await s.app.inject({ method: "GET", url: "/metrics", headers });
      return [
        res.statusCode,
        res.statusCode === 404
          ? json(res.body)["reason"]
          : res.statusCode === 401
            ? res.headers["www-authenticate"]
            : "text",
      ];
    };
    expect(await served({}, "127.0.0.1")).toEqual([200, "text"]);
    expect(await served({}, "::1")).toEqual([200, "text"]);
    expect(await served({}, "0.0.0.0")).toEqual([404, "no_such_route"]); // answered as an unknown path
    expect(await served({ metrics: { access: "on" } }, "0.0.0.0")).toEqual([200, "text"]);
    expect(await served({ metrics: { access: "off" } }, "127.0.0.1")).toEqual([404, "no_such_route"]);
    const token = "metrics-token-0123456789";
    expect(await served({ metrics: { token } }, "0.0.0.0")).toEqual([401, 'Bearer realm="sdgw-metrics"']);
    expect(await served({ metrics: { token } }, "0.0.0.0", { authorization: "Bearer wrong-token-0123456789" })).toEqual(
      [401, 'Bearer realm="sdgw-metrics"'],
    );
    expect(await served({ metrics: { token } }, "0.0.0.0", { authorization: `Bearer ${token}` })).toEqual([
      200,
      "text",
    ]);
  });
});

describe("log lines (D113)", () => {
  it("JSON lines: a failure of a request carries its request_id, and so does a run that breaks after its 202", async () => {
    const lines: Record<string, any>[] = [];
    const log = createLogger({ format: "json", write: (l) => lines.push(JSON.parse(l)) });
    h = harness({ log, waitMs: 30 });
    const sim = h.server.gateway.simulator!;
    sim.setKnobs("x", { fault: "crash" });
    const crashed = await h.call("search", "GET", "/v1/search?platform=x&query=crash");
    expect(crashed.status).toBe(500);
    const line = lines.find((l) => l["request_id"] === crashed.json.request_id);
    expect(line).toMatchObject({
      level: "error",
      msg: expect.stringMatching(/broke/),
      err: { message: expect.any(String) },
    });
    expect(line!["err"]["stack"]).toMatch(/\n\s+at /);
    expect(Date.parse(line!["time"])).toBeGreaterThan(0);

    sim.setKnobs("x", { fault: "crash", latencyMs: 150 });
    const started = await h.call("search", "GET", "/v1/search?platform=x&query=crash-later");
    expect(started.status).toBe(202);
    await h.server.gateway.runs.drain();
    expect(lines.filter((l) => l["request_id"] === started.json.request_id).map((l) => l["msg"])).toEqual([
      expect.stringMatching(/^run run_\w+ broke$/),
    ]);
    // A line about no request has no request_id (not the last request's).
    log("heartbeat");
    expect(lines.at(-1)).toEqual({ time: expect.any(String), level: "info", msg: "heartbeat" });
  });

  it("never writes a password of a URL or an API key's secret", () => {
    const out: string[] = [];
    const text = createLogger({ write: (l) => out.push(l) });
    const key = `sdgw_${"A1b2C3d4".repeat(4)}`;
    const e = new Error(`connect to postgres://sdgw:pa55word@db.internal:5432/sdgw failed with key ${key}`);
    text("could not open postgres://u:pa55word@h/db", e);
    createLogger({ format: "json", write: (l) => out.push(l) })(`key ${key}`, e);
    expect(out.join("\n")).not.toMatch(/pa55word|A1b2C3d4A1b2C3d4/);
    expect(out.join("\n")).toContain("postgres://sdgw:***@db.internal:5432/sdgw");
    expect(redact(key)).toBe(`${key.slice(0, 12)}…`);
  });
});

describe("the operator's settings (D113)", () => {
  it("reads SDGW_LOG_FORMAT, SDGW_METRICS, SDGW_METRICS_TOKEN and SDGW_SHUTDOWN_GRACE_MS, with their defaults", () => {
    expect(opsFromEnv({})).toEqual({
      logFormat: "text",
      metrics: { access: "loopback", token: null },
      shutdownGraceMs: 25_000,
    });
    const token = "a-token-of-20-chars!";
    expect(
      opsFromEnv({
        SDGW_LOG_FORMAT: "json",
        SDGW_METRICS: "on",
        SDGW_METRICS_TOKEN: token,
        SDGW_SHUTDOWN_GRACE_MS: "0",
      }),
    ).toEqual({ logFormat: "json", metrics: { access: "on", token }, shutdownGraceMs: 0 });
  });

  it("refuses a wrong value, naming every variable, never repeating a token", () => {
    let error: unknown;
    try {
      opsFromEnv({
        SDGW_LOG_FORMAT: "yaml",
        SDGW_METRICS: "public",
        SDGW_METRICS_TOKEN: "short secret",
        SDGW_SHUTDOWN_GRACE_MS: "25s",
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'SDGW_LOG_FORMAT must be text or json (got "yaml")',
      'SDGW_METRICS must be who may read GET /metrics, off, loopback, on (got "public")',
      "SDGW_METRICS_TOKEN must be the bearer token of GET /metrics, 16 to 256 visible ASCII characters without spaces (got 12 characters)",
      'SDGW_SHUTDOWN_GRACE_MS must be the milliseconds a stop waits for runs in flight, a whole number from 0 to 3600000 (got "25s")',
    ]);
  });
});

describe("SIGTERM during a 202 run, embedded (D113)", () => {
  it("readyz answers 503 at once, a new request on a kept-alive connection is refused, the run ends charged once, exit 0 within the grace", async () => {
    const db = join(dir, "sigterm.sqlite");
    const grace = 20_000;
    const env = {
      ...sameClockEnv(),
      SDGW_LATENCY_MS: "3000",
      SDGW_WAIT_MS: "50",
      SDGW_SHUTDOWN_GRACE_MS: String(grace),
    };
    const s = await startServer(db, env);
    const key = s.key!;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await get(agent, s.url, "/healthz")).status).toBe(200); // the kept-alive connection
      const started = await fetch(`${s.url}/v1/search?platform=x&query=sigterm&count=2`, {
        headers: { "X-API-Key": key, "Idempotency-Key": "sigterm-1" },
      });
      const handle = ((await started.json()) as { handle: string }).handle;
      expect(started.status).toBe(202);
      const exited = new Promise<number | null>((r) => s.child.once("exit", (code) => r(code)));
      const signalled = performance.now();
      s.child.kill("SIGTERM");
      // From its first moment: no new connection…
      for (let i = 0; i < 100 && (await refused(s.url)) === false; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await refused(s.url)).toBe(true);
      // …readiness fails on a connection still open, naming why…
      const ready = await get(agent, s.url, "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.json["checks"]["shutdown"]).toMatchObject({
        ok: false,
        error: expect.stringMatching(/shutting down/),
      });
      expect(ready.json["checks"]["database"]["ok"]).toBe(true);
      // …and a new call on it is refused in the contract's words, nothing run or charged, the connection closed.
      const late = await get(agent, s.url, "/v1/search?platform=x&query=late", {
        "X-API-Key": key,
        "Idempotency-Key": "late-1",
      });
      expect([late.status, late.json["code"], late.json["reason"]]).toEqual([503, "temporarily_unavailable", "paused"]);
      expect(late.json["message"]).toMatch(/shutting down.*nothing was charged/);
      expect(Number(late.headers["retry-after"])).toBeGreaterThanOrEqual(1);
      expect(late.headers["connection"]).toBe("close");
      const code = await exited;
      const took = performance.now() - signalled;
      expect(code).toBe(0);
      expect(took).toBeLessThan(grace);
      expect(s.output().stderr).toMatch(/SIGTERM: stopping.*1 run\(s\) in flight/);
      expect(s.output().stderr).toMatch(/stopped; every run in flight ended/);

      // The next start on the file reads the run's answer: finished, charged once; the refused call charged nothing.
      const again = await startServer(db, { ...sameClockEnv() });
      try {
        const read = await fetch(`${again.url}/v1/results/${handle}`, { headers: { "X-API-Key": key } });
        const body = (await read.json()) as { status: string; billing: { cost: number } };
        expect([read.status, body.status, body.billing.cost]).toEqual([200, "ok", 1]);
        const account = await fetch(`${again.url}/v1/account`, { headers: { "X-API-Key": key } });
        expect(((await account.json()) as { billing: { balance_credits: number } }).billing.balance_credits).toBe(4999);
        const replay = await fetch(`${again.url}/v1/search?platform=x&query=late`, {
          headers: { "X-API-Key": key, "Idempotency-Key": "late-1" },
        });
        expect(replay.headers.get("idempotent-replayed")).toBeNull(); // the refused call left no record: it runs now
      } finally {
        expect(await kill(again.child, "SIGTERM")).toBe(0);
      }
    } finally {
      agent.destroy();
    }
  }, 120_000);
});

describe("a second signal (D113)", () => {
  it("exits at once while the first one waits for a run", async () => {
    const s = await startServer(join(dir, "twice.sqlite"), {
      ...sameClockEnv(),
      SDGW_LATENCY_MS: "30000",
      SDGW_SHUTDOWN_GRACE_MS: "60000",
    });
    const started = await fetch(`${s.url}/v1/search?platform=x&query=twice`, {
      headers: { "X-API-Key": s.key!, "Idempotency-Key": "twice-1" },
    });
    expect(started.status).toBe(202);
    const exited = new Promise<number | null>((r) => s.child.once("exit", (code) => r(code)));
    s.child.kill("SIGTERM");
    for (let i = 0; i < 200 && !/SIGTERM: stopping/.test(s.output().stderr); i++)
      await new Promise((r) => setTimeout(r, 20));
    const second = performance.now();
    s.child.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(performance.now() - second).toBeLessThan(10_000);
    expect(s.output().stderr).toMatch(/SIGINT again: exiting at once/);
  }, 60_000);
});

/** A GET on `agent`'s connection: status, headers, JSON body. */
function get(
  agent: Agent,
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; json: Record<string, any> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { agent, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, json: JSON.parse(body) }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Whether a new TCP connection to `base` is refused (never a pooled one). */
function refused(base: string): Promise<boolean> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (e: NodeJS.ErrnoException) => resolve(e.code === "ECONNREFUSED"));
  });
}
