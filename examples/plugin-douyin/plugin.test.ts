/**
 * The worked example of a plug-in (D158): the Acme douyin connector passes the connector acceptance suite against a
 * fake Acme on 127.0.0.1; the server takes it as a plug-in (douyin `plugged` in `/v1/capabilities`, answering from
 * Acme); and what is malformed — a module that exports no connector, a provider with a price of 0 or an operation
 * douyin does not have — stops the start with a message naming it.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  formatConnectorReport,
  loadExchanges,
  runConnectorAcceptance,
  startFakeUpstream,
  type ConnectorFault,
} from "../../packages/conformance/src/connectors/index.ts";
import { ConfigError } from "../../packages/server/src/config.ts";
import { loadPlugins } from "../../packages/server/src/connectors/plugins.ts";
import { createServer } from "../../packages/server/src/storage/sqlite/server.ts";
import connector from "./connector.ts";

const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));
const KEY = "acme-synthetic-key-0001";
const V1 = "7300000000000000001";
const A1 = "MS4wLjABAAAAsyntheticTidePool01";

const fault = (
  name: string,
  over: { status?: number; body?: unknown; headers?: Record<string, string>; hang?: boolean; reset?: boolean },
  expect: ConnectorFault["expect"],
  timeoutMs?: number,
): ConnectorFault => ({
  name,
  operation: "detail",
  body: { id: V1 },
  inject: (u) => u!.override({ path: `/v1/douyin/video/${V1}`, ...over }),
  expect,
  ...(timeoutMs ? { timeoutMs } : {}),
});

describe("the example plug-in (douyin from a licensed source)", () => {
  it("passes the connector acceptance suite, every check applicable", async () => {
    const report = await runConnectorAcceptance({
      name: "douyin (plugged: Acme Social Data)",
      platform: "douyin",
      exchanges: loadExchanges(FIXTURES),
      connector,
      settings: (url) => ({ key: KEY, baseUrl: `${url}/v1` }),
      badSettings: [
        { why: "no key", settings: (url) => ({ baseUrl: `${url}/v1` }), names: "key" },
        {
          why: "http to another host",
          settings: () => ({ key: KEY, baseUrl: "http://acme.example/v1" }),
          names: "baseUrl",
        },
        {
          why: "an unknown setting",
          settings: (url) => ({ key: KEY, baseUrl: `${url}/v1`, token: "x" }),
          names: "token",
        },
      ],
      calls: {
        search: { query: "潮池" },
        trending: {},
        detail: { id: V1 },
        comments: { id: V1 },
        user_profile: { id: A1 },
        user_posts: { id: A1 },
      },
      paging: [{ operation: "search", body: { query: "潮池" }, upstreamToken: "acme-page-2" }],
      urlForms: [
        { operation: "detail", url: `https://www.douyin.com/video/${V1}`, id: V1 },
        { operation: "user_profile", url: `https://www.douyin.com/user/${A1}`, id: A1 },
      ],
      notALink: { operation: "detail", url: "https://www.tiktok.com/@x/video/1" },
      faults: [
        fault(
          "our key refused",
          { status: 401, body: {} },
          { status: "error", code: "upstream_error", retryable: false },
        ),
        fault(
          "a server error",
          { status: 502, body: {} },
          { status: "error", code: "upstream_error", retryable: true },
        ),
        fault("a network error", { reset: true }, { status: "error", code: "upstream_error", retryable: true }),
        fault(
          "too many requests",
          { status: 429, headers: { "retry-after": "30" }, body: {} },
          { status: "error", code: "rate_limited" },
        ),
        fault("no answer in time", { hang: true }, { status: "timeout" }, 1500),
        fault("a video that is gone", { status: 404, body: {} }, { status: "error", code: "not_found" }),
      ],
    });
    expect(
      report.results.filter((r) => r.outcome !== "passed"),
      formatConnectorReport(report),
    ).toEqual([]);
  }, 120_000);

  it("the server takes it as a plug-in: douyin plugged, answering from the source, the key never shown", async () => {
    const upstream = await startFakeUpstream({ exchanges: loadExchanges(FIXTURES) });
    const logs: string[] = [];
    const server = createServer({
      dbPath: ":memory:",
      log: (m) => logs.push(m),
      plugins: [connector],
      connectors: { douyin: { key: KEY, baseUrl: `${upstream.url}/v1` } },
    });
    try {
      expect(server.gateway.upstream.summary()).toContain(`douyin plugged (Acme Social Data at ${upstream.url}/v1;`);
      const caps = (await server.app.inject({ method: "GET", url: "/v1/capabilities" })).json() as {
        platforms: { platform: string; source: string }[];
      };
      expect(caps.platforms.find((p) => p.platform === "douyin")?.source).toBe("plugged");
      const gw = server.gateway;
      const { account } = gw.accounts.createAccount({ name: "P", plan: "paid" });
      gw.accounts.grant(account.id, 100);
      const key = gw.accounts.createKey({ accountId: account.id, name: "p" }).secret;
      const res = await server.app.inject({
        method: "POST",
        url: "/v1/detail",
        headers: { "x-api-key": key, "content-type": "application/json" },
        payload: JSON.stringify({ platform: "douyin", id: V1 }),
      });
      expect(res.json()).toMatchObject({ status: "ok", items: [{ id: V1, text: "清晨的潮池：海葵和寄居蟹" }] });
      expect((await server.gateway.upstream.check()).find((c) => c.platform === "douyin")?.ok).toBe(true);
      for (const l of logs) expect(l).not.toContain(KEY);
    } finally {
      await server.close();
      await upstream.close();
    }
  }, 60_000);

  it("a malformed plug-in stops the start, naming what is wrong", async () => {
    const build = (def: object) => () =>
      createServer({ dbPath: ":memory:", plugins: [def as never], connectors: { douyin: { key: KEY } } });
    const freeOp = {
      ...connector,
      create: (s: never, ctx: never) => {
        const p = connector.create(s, ctx);
        return {
          ...p,
          operations: [
            { ...p.operations[0]!, price: 0 },
            { ...p.operations[1]!, name: "live_stream" },
          ],
        };
      },
    };
    expect(build(freeOp)).toThrow(ConfigError);
    try {
      build(freeOp)();
    } catch (e) {
      const text = (e as ConfigError).problems.join("\n");
      expect(text).toContain('plug-in for douyin: operation search: "price" must be whole credits from 1 (got 0)');
      expect(text).toContain("plug-in for douyin: operation live_stream is not one douyin has");
    }
    try {
      createServer({ dbPath: ":memory:", plugins: [connector], connectors: { douyin: { key: "short" } } });
      expect.unreachable();
    } catch (e) {
      expect((e as ConfigError).problems.join("\n")).toContain(
        "plug-in for douyin: SDGW_ACME_KEY (connectors.douyin.key) must be an Acme API key",
      );
      expect((e as ConfigError).problems.join("\n")).not.toContain("short");
    }
    await expect(loadPlugins("./examples/plugin-douyin/fixtures/search/tide_p1.json", process.cwd())).rejects.toThrow(
      'SDGW_CONNECTORS: ./examples/plugin-douyin/fixtures/search/tide_p1.json: "platform" must be one of',
    );
    await expect(loadPlugins("./examples/plugin-douyin/nothing-here.ts", process.cwd())).rejects.toThrow(
      /SDGW_CONNECTORS: \.\/examples\/plugin-douyin\/nothing-here\.ts could not be loaded/,
    );
    const loaded = await loadPlugins("./examples/plugin-douyin/connector.ts", process.cwd());
    expect(loaded.map((d) => d.platform)).toEqual(["douyin"]);
  }, 60_000);
});

describe("pnpm start with SDGW_CONNECTORS", () => {
  const ROOT = fileURLToPath(new URL("../../", import.meta.url));
  const MAIN = `${ROOT}packages/server/src/main.ts`;
  const start = (env: Record<string, string>) =>
    spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
      cwd: ROOT,
      env: { ...process.env, SDGW_PORT: "0", SDGW_DB: ":memory:", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });

  it("loads the plug-in, says douyin is plugged in, checks its key once, never prints it", async () => {
    const upstream = await startFakeUpstream({ exchanges: loadExchanges(FIXTURES) });
    const child = start({
      SDGW_CONNECTORS: "./examples/plugin-douyin/connector.ts",
      SDGW_ACME_KEY: KEY,
      SDGW_ACME_URL: `${upstream.url}/v1`,
    });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    try {
      const end = Date.now() + 60_000;
      while (!(out.includes("Stop with Ctrl-C.") && out.includes("douyin: ")) && child.exitCode === null) {
        if (Date.now() > end) throw new Error(`not started in time: ${out}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(out).toContain(
        `douyin plugged (Acme Social Data at ${upstream.url}/v1; budgets and cache in this process)`,
      );
      expect(out).toContain("douyin: Acme Social Data accepted the key in SDGW_ACME_KEY.");
      expect(out).not.toContain(KEY);
    } finally {
      await new Promise<void>((r) => {
        if (child.exitCode !== null) return r();
        child.once("exit", () => r());
        child.kill("SIGTERM");
      });
      await upstream.close();
    }
  }, 90_000);

  it("sdgw-mcp refuses to start on a malformed plug-in too, naming it", async () => {
    const child = spawn(
      process.execPath,
      ["--conditions=source", "--no-warnings", `${ROOT}packages/server/src/bin/sdgw-mcp.ts`],
      {
        cwd: ROOT,
        env: {
          PATH: process.env["PATH"] ?? "",
          SDGW_DB: ":memory:",
          SDGW_CONNECTORS: "./examples/plugin-douyin/connector.ts",
          SDGW_ACME_KEY: "short",
        },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let err = "";
    child.stderr!.on("data", (d) => (err += d));
    expect(await new Promise((r) => child.once("exit", r))).toBe(2);
    expect(err).toContain("sdgw-mcp: not started: plug-in for douyin: SDGW_ACME_KEY (connectors.douyin.key) must be");
    expect(err).not.toContain("short");
  }, 60_000);

  it("refuses to start on a module that exports no connector, naming it", async () => {
    const child = start({ SDGW_CONNECTORS: "./examples/plugin-douyin/missing.ts" });
    let err = "";
    child.stderr!.on("data", (d) => (err += d));
    expect(await new Promise((r) => child.once("exit", r))).toBe(2);
    expect(err).toContain("SDGW_CONNECTORS: ./examples/plugin-douyin/missing.ts could not be loaded");
  }, 60_000);
});
