/**
 * `pnpm start` as a person meets it: the environment it reads (a wrong value stops the start, named), the banner
 * it prints, and the commands the banner prints, run as printed.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, configFromEnv, listenFromEnv } from "../src/config.ts";
import { createServer } from "../src/storage/sqlite/server.ts";

const ROOT = join(import.meta.dirname, "..", "..", "..");
const MAIN = join(ROOT, "packages", "server", "src", "main.ts");
const dir = mkdtempSync(join(tmpdir(), "sdgw-start-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("configFromEnv", () => {
  it("reads every SDGW_* setting it documents", () => {
    const options = configFromEnv({
      SDGW_DB: "/tmp/x.sqlite",
      SDGW_WAIT_MS: "0",
      SDGW_POLL_AFTER_SECONDS: "2",
      SDGW_LATENCY_MS: "100",
      SDGW_KEY_QPS: "7",
      SDGW_WORKSPACE_CONCURRENCY: "3",
      SDGW_ADDRESS_PER_MINUTE: "9",
      SDGW_FAILURE_THRESHOLD: "4",
      SDGW_FREE_CALLS: "0",
      SDGW_REQUEST_TIMEOUT_MS: "5000",
      SDGW_CONNECTIONS_PER_ADDRESS: "8",
      SDGW_ANSWER_LOG_QUOTA_BYTES: "2097152",
      SDGW_ANSWER_LOG_CHUNKS: "1",
      SDGW_REDIS_URL: "redis://:secret@127.0.0.1:6379/2",
      SDGW_REDIS_PREFIX: "gw-eu:",
    });
    expect(options).toEqual({
      dbPath: "/tmp/x.sqlite",
      waitMs: 0,
      pollAfterSeconds: 2,
      simulator: { knobs: { "*": { latencyMs: [50, 150] } } },
      limits: { keyQps: 7, workspaceConcurrency: 3, addressPerMinute: 9, failureThreshold: 4, freeCalls: 0 },
      http: { requestTimeoutMs: 5000, connectionsPerAddress: 8 },
      answerLogQuotaBytes: 2097152,
      answerLogChunks: true,
      redisUrl: "redis://:secret@127.0.0.1:6379/2",
      redisKeyPrefix: "gw-eu:",
    });
    expect(configFromEnv({ SDGW_WAIT_MS: "" })).toEqual({ limits: {} });
    expect(listenFromEnv({})).toEqual({ host: "127.0.0.1", port: 8787 });
    expect(listenFromEnv({ SDGW_HOST: "::1", SDGW_PORT: "0" })).toEqual({ host: "::1", port: 0 });
  });

  it.each([
    ["SDGW_WAIT_MS", "abc"],
    ["SDGW_WAIT_MS", "-1"],
    ["SDGW_WAIT_MS", "1.5"],
    ["SDGW_POLL_AFTER_SECONDS", "0"],
    ["SDGW_KEY_QPS", "ten"],
    ["SDGW_LATENCY_MS", "1e3"],
    ["SDGW_FREE_CALLS", "NaN"],
    ["SDGW_REQUEST_TIMEOUT_MS", "10"],
    ["SDGW_CONNECTIONS_PER_ADDRESS", "0"],
    ["SDGW_ANSWER_LOG_QUOTA_BYTES", "1000"],
    ["SDGW_ANSWER_LOG_CHUNKS", "yes"],
    ["SDGW_REDIS_URL", "http://127.0.0.1:6379"],
    ["SDGW_REDIS_URL", "127.0.0.1:6379"],
    ["SDGW_REDIS_URL", "redis://127.0.0.1:6379/db"],
    ["SDGW_REDIS_PREFIX", "a b"],
  ])("refuses %s=%s, naming the variable and the value", (name, value) => {
    let error: unknown;
    try {
      configFromEnv({ [name]: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      expect.stringMatching(new RegExp(`^${name} must be .*\\(got "${value.replace(/[.]/g, "\\.")}"\\)$`)),
    ]);
  });

  it("never repeats the password of a Redis URL it refuses", () => {
    expect(() => configFromEnv({ SDGW_REDIS_URL: "http://user:secret@127.0.0.1:6379" })).toThrow(
      /^invalid environment: SDGW_REDIS_URL must be a Redis URL.*\(got "http:\/\/user:\*\*\*@127\.0\.0\.1:6379\/?"\)$/,
    );
  });

  it("names every wrong variable at once", () => {
    expect(() => configFromEnv({ SDGW_WAIT_MS: "soon", SDGW_KEY_QPS: "-2" })).toThrow(
      /SDGW_KEY_QPS must be .*; SDGW_WAIT_MS must be|SDGW_WAIT_MS must be .*SDGW_KEY_QPS must be/,
    );
    expect(() => listenFromEnv({ SDGW_PORT: "70000" })).toThrow(
      /SDGW_PORT must be a TCP port, a whole number from 0 to 65535 \(got "70000"\)/,
    );
  });

  it("SDGW_POLL_AFTER_SECONDS is the Retry-After and retry_after_seconds of a 202", async () => {
    const server = createServer({
      ...configFromEnv({ SDGW_WAIT_MS: "1", SDGW_POLL_AFTER_SECONDS: "3", SDGW_LATENCY_MS: "200" }),
      dbPath: ":memory:",
      log: () => undefined,
    });
    const gw = server.gateway;
    const { account } = gw.accounts.createAccount({ name: "Poll" });
    gw.accounts.grant(account.id, 10);
    const key = gw.accounts.createKey({ accountId: account.id });
    const res = await server.app.inject({
      method: "GET",
      url: "/v1/search?platform=x&query=a",
      headers: { "x-api-key": key.secret, "idempotency-key": "poll-1" },
    });
    expect(res.statusCode).toBe(202);
    expect(res.headers["retry-after"]).toBe("3");
    expect(JSON.parse(res.body).retry_after_seconds).toBe(3);
    await gw.runs.drain();
    await server.close();
  });
});

/** Starts `main.ts` on a free port; answers its banner once it listens. */
function start(env: Record<string, string>): Promise<{ banner: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
    cwd: ROOT,
    env: { ...process.env, SDGW_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout!.on("data", (d) => {
      out += d;
      if (out.includes("Stop with Ctrl-C.")) resolve({ banner: out, child });
    });
    child.stderr!.on("data", (d) => (err += d));
    child.once("exit", (code) => reject(new Error(`main.ts exited ${code}: ${err}`)));
  });
}

const stop = (child: ChildProcess) =>
  new Promise((r) => {
    child.once("exit", r);
    child.kill("SIGTERM");
  });

describe("pnpm start", () => {
  it("refuses to start on a wrong setting, naming the variable", async () => {
    const child = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
      cwd: ROOT,
      env: { ...process.env, SDGW_DB: join(dir, "bad.sqlite"), SDGW_WAIT_MS: "abc" },
    });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    const code = await new Promise((r) => child.once("exit", r));
    expect(code).toBe(2);
    expect(err).toContain(
      'sdgw: not started: SDGW_WAIT_MS must be the milliseconds a call may take before it answers 202, a whole number from 0 up (got "abc").',
    );
  });

  it("prints a key that works, says a key in a URL is burned, and how to see a 202; the commands of a later start run as printed", async () => {
    const db = join(dir, "banner.sqlite");
    const first = await start({
      SDGW_DB: db,
      SDGW_WAIT_MS: "50",
      SDGW_LATENCY_MS: "1000",
      SDGW_POLL_AFTER_SECONDS: "1",
    });
    const url = /reference server on (http:\/\/127\.0\.0\.1:\d+)/.exec(first.banner)![1]!;
    const key = /^ {2}(sdgw_\S+)$/m.exec(first.banner)![1]!;
    expect(first.banner).toMatch(/A key sent in a URL \(\?key=…\) is refused and burned/);
    expect(first.banner).toMatch(
      /202 with a handle to poll every 1 s; to see 202s, start with SDGW_WAIT_MS=50 SDGW_LATENCY_MS=1000/,
    );
    const res = await fetch(`${url}/v1/search?platform=x&query=banner`, {
      headers: { "X-API-Key": key, "Idempotency-Key": "banner-1" },
    });
    expect(res.status).toBe(202);
    expect(res.headers.get("retry-after")).toBe("1");
    await stop(first.child);

    const later = await start({ SDGW_DB: db });
    await stop(later.child);
    const printed = /A new key: (.+ admin create-key --account acc_\w+)$/m.exec(later.banner)?.[1];
    expect(printed, later.banner).toBeDefined();
    // Started through npx (as the README says on a machine with an older Node), the banner prints the npx form.
    if (/[\\/]_npx[\\/]/.test(process.execPath))
      expect(printed).toMatch(/^npx -y -p node@24 -p pnpm@12 -- pnpm admin /);
    const { stdout } = await promisify(execFile)("sh", ["-c", printed!], {
      cwd: ROOT,
      env: { ...process.env, SDGW_DB: db },
      timeout: 120_000,
    });
    expect(JSON.parse(stdout.slice(stdout.indexOf("{")))).toMatchObject({ secret: expect.stringMatching(/^sdgw_/) });
    const mcp = /stdio: SDGW_API_KEY=… ((npx -y -p node@24 -p pnpm@12 -- )?pnpm --silent mcp)$/m.exec(
      later.banner,
    )?.[1];
    expect(mcp, later.banner).toBeDefined();
    // The printed stdio command writes nothing but MCP messages on stdout (pnpm's own banner would break a host).
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "start-test", version: "1" } },
    };
    const child = spawn("sh", ["-c", mcp!], {
      cwd: ROOT,
      env: { ...process.env, SDGW_DB: db, SDGW_API_KEY: key },
      stdio: ["pipe", "pipe", "ignore"],
    });
    children.push(child);
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stdin.write(`${JSON.stringify(initialize)}\n`);
    await new Promise<void>((resolve) => child.stdout.on("data", () => out.includes("\n") && resolve()));
    child.stdin.end();
    const firstLine = JSON.parse(out.slice(0, out.indexOf("\n"))) as {
      id: number;
      result: { serverInfo: { name: string } };
    };
    expect(firstLine).toMatchObject({ id: 1, result: { serverInfo: { name: "sdgw" } } });
  }, 180_000);
});

// D131: the first minutes, as the banner and the README tell them.
describe("pnpm start: the first minutes", () => {
  it("each start prints a new Idempotency-Key, so the printed call shows a 202; the printed handle read answers it; GET / points on", async () => {
    const db = join(dir, "first-minutes.sqlite");
    const slow = {
      SDGW_DB: db,
      SDGW_WAIT_MS: "50",
      SDGW_LATENCY_MS: "1000",
      SDGW_POLL_AFTER_SECONDS: "1",
      SDGW_CORS_ORIGINS: "http://localhost:5173",
    };
    const sh = promisify(execFile);
    const searchLine = (banner: string) =>
      /^ {2}(curl -s -H 'X-API-Key: [^']+' -H 'Idempotency-Key: [^']+' '[^']+\/v1\/search\?[^']+')$/m.exec(banner)?.[1];
    const idemOf = (line: string) => /Idempotency-Key: ([^']+)'/.exec(line)![1]!;

    const first = await start(slow);
    const url = /reference server on (http:\/\/127\.0\.0\.1:\d+)/.exec(first.banner)![1]!;
    const key = /^ {2}(sdgw_\S+)$/m.exec(first.banner)![1]!;
    const line1 = searchLine(first.banner);
    expect(line1, first.banner).toBeDefined();
    const started = JSON.parse((await sh("sh", ["-c", line1!], { timeout: 60_000 })).stdout);
    expect(started.handle, JSON.stringify(started)).toMatch(/^h_/);
    expect(started.status).toBe("running");

    // the handle, read as the banner prints it, until it answers the result
    const read =
      /^Read a 202's handle \(its "handle", h_…\) until it answers 200: (curl -s -H 'X-API-Key: [^']+' \S+\/v1\/results\/)h_…$/m.exec(
        first.banner,
      )?.[1];
    expect(read, first.banner).toBeDefined();
    let result: { status?: string; items?: unknown[] } = {};
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      result = JSON.parse((await sh("sh", ["-c", `${read}${started.handle}`], { timeout: 60_000 })).stdout);
      if (result.status !== "running") break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(result.status).toBe("ok");
    expect(result.items?.length).toBe(3);

    // GET / points to the console, /docs, /v1/capabilities and /openapi.json
    const home = (await (await fetch(`${url}/`)).json()) as { links: Record<string, string> };
    expect(home.links).toMatchObject({
      console: "/console/",
      docs: "/docs",
      capabilities: "/v1/capabilities",
      openapi: "/openapi.json",
    });
    expect(first.banner).toMatch(
      /^HTTP reference: (http:\/\/127\.0\.0\.1:\d+\/docs|not built; build it in the repository with `npx -y -p node@24 -p pnpm@12 -- pnpm run docs` .* or `pnpm run docs` )/m,
    );
    // D130: the origins let in are said
    expect(first.banner).toContain(
      "Browsers: pages on http://localhost:5173 may call the API (SDGW_CORS_ORIGINS), never with the console's cookie.",
    );
    await stop(first.child);

    // a later start prints another Idempotency-Key: its printed call (with the key) runs again, a new 202
    const later = await start(slow);
    const line2 = searchLine(later.banner);
    expect(line2, later.banner).toBeDefined();
    expect(idemOf(line2!)).not.toBe(idemOf(line1!));
    const again = JSON.parse((await sh("sh", ["-c", line2!.replace("<your key>", key)], { timeout: 60_000 })).stdout);
    expect(again.status).toBe("running");
    expect(again.handle).toMatch(/^h_/);
    expect(again.handle).not.toBe(started.handle);
    await stop(later.child);
  }, 180_000);
});

// `pnpm start`'s first start prints the demo user's sign-in beside the demo key (D89), and that sign-in works; a
// later start on the same database prints no password.
describe("pnpm start and the console", () => {
  it("prints the demo user's sign-in on the first start only, and it signs in", async () => {
    const db = join(dir, "demo.sqlite");
    const first = await start({ SDGW_DB: db });
    const url = /reference server on (http:\/\/127\.0\.0\.1:\d+)/.exec(first.banner)![1]!;
    const password = /sign in as demo@sdgw\.dev with the password[^\n]*\n\n {2}(\S+)$/m.exec(first.banner)?.[1];
    expect(password, first.banner).toBeDefined();
    const res = await fetch(`${url}/console/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "demo@sdgw.dev", password }),
    });
    expect(res.status).toBe(200);
    // The console key of the demo user reads the demo account.
    const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
    const account = (await (await fetch(`${url}/v1/account`, { headers: { cookie } })).json()) as {
      billing: { balance_credits: number };
    };
    expect(account.billing.balance_credits).toBe(5000);
    await stop(first.child);
    const later = await start({ SDGW_DB: db });
    await stop(later.child);
    expect(later.banner).toContain("sign in as demo@sdgw.dev");
    expect(later.banner).not.toContain(password!);
  }, 60_000);
});
