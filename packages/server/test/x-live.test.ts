/**
 * X live on X API v2 (issue 33, D155–D157), beside Reddit: the server started with `SDGW_X_BEARER_TOKEN` and the
 * `SDGW_REDDIT_*` variables pointing at fake upstreams on 127.0.0.1 says both are live, checks each once, never prints
 * a token or secret, lists them live in `/v1/capabilities`, answers X's operations over HTTP, and refuses x.trending
 * as not available (never simulated data).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadExchanges, startFakeUpstream, type FakeUpstream } from "../../conformance/src/connectors/index.ts";
import { RD, REDDIT_FIXTURES } from "../../conformance/test/reddit-subject.ts";
import { XF, X_FIXTURES, xSettings } from "../../conformance/test/x-subject.ts";
import { createMcpServer } from "../src/mcp/index.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { sdk } from "./mcp/sdk-client.ts";
import { GENEROUS, validateAnswer } from "./helpers.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = join(ROOT, "packages", "server", "src", "main.ts");
const tmp = mkdtempSync(join(tmpdir(), "sdgw-x-"));

let xUp: FakeUpstream;
let redditUp: FakeUpstream;
beforeAll(async () => {
  xUp = await startFakeUpstream({ exchanges: loadExchanges(X_FIXTURES) });
  redditUp = await startFakeUpstream({ exchanges: loadExchanges(REDDIT_FIXTURES) });
});
afterAll(async () => {
  await xUp.close();
  await redditUp.close();
  rmSync(tmp, { recursive: true, force: true });
});

async function until(ready: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("pnpm start with SDGW_X_BEARER_TOKEN and the SDGW_REDDIT_* variables", () => {
  let child: ChildProcess | null = null;
  afterAll(
    () =>
      new Promise<void>((r) => {
        if (!child || child.exitCode !== null) return r();
        child.once("exit", () => r());
        child.kill("SIGTERM");
      }),
  );

  it("says x and reddit are live, checks both, prints no token or secret, and answers x from the API", async () => {
    const started = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
      cwd: ROOT,
      env: {
        ...process.env,
        SDGW_PORT: "0",
        SDGW_DB: join(tmp, "start.sqlite"),
        SDGW_X_BEARER_TOKEN: XF.TOKEN,
        SDGW_X_BASE_URL: `${xUp.url}/2`,
        SDGW_REDDIT_CLIENT_ID: RD.CLIENT_ID,
        SDGW_REDDIT_CLIENT_SECRET: RD.CLIENT_SECRET,
        SDGW_REDDIT_USER_AGENT: RD.USER_AGENT,
        SDGW_REDDIT_BASE_URL: redditUp.url,
        SDGW_REDDIT_TOKEN_URL: `${redditUp.url}/api/v1/access_token`,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = started;
    let out = "";
    started.stdout!.on("data", (d) => (out += d));
    started.stderr!.on("data", (d) => (out += d));
    await until(() => out.includes("Stop with Ctrl-C.") && out.includes("x: ") && out.includes("reddit: "), 60_000);
    expect(out).toContain(
      `Platforms: reddit live (Reddit Data API at ${redditUp.url}; budgets and cache in this ` +
        `process); x live (X API v2 at ${xUp.url}/2; budgets and cache in this process); xiaohongshu, ` +
        `douyin, wechat, weibo, bilibili, zhihu, kuaishou, youtube simulated.`,
    );
    expect(out).toContain("x: X API v2 accepted the Bearer token (1 account read).");
    const url = /reference server on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;
    const key = /^ {2}(sdgw_\S+)$/m.exec(out)![1]!;
    const caps = (await (await fetch(`${url}/v1/capabilities`)).json()) as {
      platforms: { platform: string; source: string }[];
    };
    expect(
      caps.platforms
        .filter((p) => p.source === "live")
        .map((p) => p.platform)
        .sort(),
    ).toEqual(["reddit", "x"]);
    const post = async (path: string, body: unknown) =>
      (await fetch(`${url}${path}`, {
        method: "POST",
        headers: { "X-API-Key": key, "content-type": "application/json" },
        body: JSON.stringify(body),
      })) as Response;
    const detail = (await (
      await post("/v1/detail", { platform: "x", url: `https://x.com/${XF.USER}/status/${XF.T1}` })
    ).json()) as {
      items: { id: string }[];
    };
    expect(detail.items[0]!.id).toBe(XF.T1);
    const trending = await post("/v1/trending", { platform: "x" });
    expect(trending.status).toBe(400);
    const refused = (await trending.json()) as { code: string; reason: string; message: string };
    expect(refused).toMatchObject({ code: "not_supported", reason: "not_available_yet" });
    expect(refused.message).toContain("x.trending is not available on live X");
    for (const secret of [XF.TOKEN, RD.CLIENT_ID, RD.CLIENT_SECRET]) expect(out).not.toContain(secret);
  }, 90_000);
});

describe("x's operations over HTTP, read from X API v2", () => {
  const running: SdgwServer[] = [];
  afterEach(async () => {
    for (const s of running.splice(0)) await s.close();
  });

  it("answer X's data as items with 19-digit string ids; replies by conversation; pages; the quote in posts", async () => {
    const logs: string[] = [];
    const server = createServer({
      dbPath: ":memory:",
      waitMs: 10_000,
      limits: GENEROUS,
      log: (m) => logs.push(m),
      connectors: { x: xSettings(xUp.url) },
    });
    running.push(server);
    const gw = server.gateway;
    const { account } = gw.accounts.createAccount({ name: "Live", plan: "paid" });
    gw.accounts.grant(account.id, 1000);
    const key = gw.accounts.createKey({ accountId: account.id, name: "live" }).secret;
    const ops: Record<string, string> = {
      "/v1/search": "searchPost",
      "/v1/detail": "detail",
      "/v1/comments": "comments",
      "/v1/user_profile": "userProfile",
      "/v1/user_posts": "userPosts",
    };
    const texts: string[] = [];
    const call = async (path: string, body: unknown) => {
      const res = await server.app.inject({
        method: "POST",
        url: path,
        headers: { "x-api-key": key, "content-type": "application/json" },
        payload: JSON.stringify(body),
      });
      texts.push(res.body);
      return validateAnswer(ops[path] as never, res).json as any;
    };
    const search = await call("/v1/search", { platform: "x", query: "tide pools" });
    expect(search.items.map((i: any) => i.id)).toEqual([XF.T1, XF.T2]);
    const page2 = await call("/v1/search", { platform: "x", query: "tide pools", cursor: search.page.cursor });
    expect(page2.items.map((i: any) => i.id)).toEqual([XF.T3]);
    const comments = await call("/v1/comments", { platform: "x", id: XF.T1 });
    expect(comments.items.map((i: any) => i.parent_id)).toEqual([XF.T1, "1912345678901240001"]);
    const profile = await call("/v1/user_profile", { platform: "x", url: `https://x.com/${XF.USER}` });
    expect(profile.items[0]).toMatchObject({ kind: "profile_card", id: XF.USER, followers: 8123 });
    const posts = await call("/v1/user_posts", { platform: "x", id: XF.USER });
    expect(posts.items.map((i: any) => i.id)).toEqual([XF.T1]);
    const more = await call("/v1/user_posts", { platform: "x", id: XF.USER, cursor: posts.page.cursor });
    expect(more.items.map((i: any) => i.id)).toEqual([XF.T3]);
    expect(logs).toContain("upstream x.user_posts: 21 unit(s) in 2 request(s) (quoted 21); ok; charges 1 credit(s)");
    const { planPlatforms, quoteOf } = await import("@sdgw/engine");
    const planned = planPlatforms(gw.catalog, "search", { platform: "x", query: "tide pools", count: 25 }, "data");
    expect(planned.ok && quoteOf(planned.plan)).toEqual({ credits: 1, calls: 1, upstreamCost: 25 });
    for (const text of [...texts, ...logs]) expect(text).not.toContain(XF.TOKEN);
  }, 60_000);
});

describe("MCP", () => {
  it("the MCP tools answer x from the API, and x trending is refused as not available", async () => {
    const server = createServer({
      dbPath: ":memory:",
      waitMs: 10_000,
      limits: GENEROUS,
      log: () => undefined,
      connectors: { x: xSettings(xUp.url) },
    });
    try {
      const gw = server.gateway;
      const { account } = gw.accounts.createAccount({ name: "Live", plan: "paid" });
      gw.accounts.grant(account.id, 100);
      const key = gw.accounts.createKey({ accountId: account.id, name: "live" }).secret;
      const [c, s] = sdk.InMemoryTransport.createLinkedPair();
      await createMcpServer({ app: server.app, apiKey: key, gateway: gw }).connect(s);
      const client = new sdk.Client({ name: "x-live", version: "1.0.0" });
      await client.connect(c);
      const calls: [string, Record<string, unknown>, string][] = [
        ["search", { platform: "x", query: "tide pools" }, XF.T1],
        ["detail", { platform: "x", id: XF.T1 }, XF.T1],
        ["comments", { platform: "x", id: XF.T1 }, "1912345678901240001"],
        ["user_profile", { platform: "x", id: XF.USER }, XF.USER],
        ["user_posts", { platform: "x", id: XF.USER }, XF.T1],
      ];
      for (const [name, args, first] of calls) {
        const r = await client.callTool({ name, arguments: args });
        const sc = r.structuredContent as any;
        expect(r.isError ?? false, `${name}: ${JSON.stringify(sc).slice(0, 300)}`).toBe(false);
        expect(sc.items[0].id, name).toBe(first);
      }
      const trending = await client.callTool({ name: "trending", arguments: { platform: "x" } });
      expect(trending.isError).toBe(true);
      expect(JSON.stringify(trending.structuredContent ?? trending.content)).toContain("not_available_yet");
      await client.close();
    } finally {
      await server.close();
    }
  }, 60_000);
});
