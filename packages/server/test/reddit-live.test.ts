/**
 * Reddit live on its official API (issue 33, D151–D155), the way an operator and a caller meet it: the server
 * started with the `SDGW_REDDIT_*` variables pointing at a fake upstream on 127.0.0.1 (the hand-written exchanges
 * of fixtures/upstream/reddit: the token endpoint and the API) says reddit is live, checks the app once, never prints
 * the client id, the secret or the token, and answers the six operations over HTTP from the API.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadExchanges, startFakeUpstream, type FakeUpstream } from "../../conformance/src/connectors/index.ts";
import { RD, REDDIT_FIXTURES, redditSettings } from "../../conformance/test/reddit-subject.ts";
import { createMcpServer } from "../src/mcp/index.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { sdk } from "./mcp/sdk-client.ts";
import { GENEROUS, validateAnswer } from "./helpers.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = join(ROOT, "packages", "server", "src", "main.ts");
const tmp = mkdtempSync(join(tmpdir(), "sdgw-reddit-"));

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await startFakeUpstream({ exchanges: loadExchanges(REDDIT_FIXTURES) });
});
afterAll(async () => {
  await upstream.close();
  rmSync(tmp, { recursive: true, force: true });
});
afterEach(() => upstream.reset());

/** Waits until `ready()` holds, checking every 20 ms, at most `ms` (no fixed sleeps). */
async function until(ready: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

const env = () => ({
  SDGW_REDDIT_CLIENT_ID: RD.CLIENT_ID,
  SDGW_REDDIT_CLIENT_SECRET: RD.CLIENT_SECRET,
  SDGW_REDDIT_USER_AGENT: RD.USER_AGENT,
  SDGW_REDDIT_BASE_URL: upstream.url,
  SDGW_REDDIT_TOKEN_URL: `${upstream.url}/api/v1/access_token`,
});

describe("pnpm start with the SDGW_REDDIT_* variables", () => {
  let child: ChildProcess | null = null;
  afterAll(
    () =>
      new Promise<void>((r) => {
        if (!child || child.exitCode !== null) return r();
        child.once("exit", () => r());
        child.kill("SIGTERM");
      }),
  );

  it("says reddit is live, checks the app once, never prints the client id, secret or token, and answers from the API", async () => {
    // The fixture's token is `REDACTED` (D152); this one is issued so that its absence from the output means something.
    upstream.override({
      method: "POST",
      path: "/api/v1/access_token",
      body: { access_token: RD.TOKEN, token_type: "bearer", expires_in: 86_400, scope: "*" },
    });
    const started = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
      cwd: ROOT,
      env: { ...process.env, SDGW_PORT: "0", SDGW_DB: join(tmp, "start.sqlite"), ...env() },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = started;
    let out = "";
    started.stdout!.on("data", (d) => (out += d));
    started.stderr!.on("data", (d) => (out += d));
    await until(() => out.includes("Stop with Ctrl-C.") && out.includes("reddit: "), 60_000);
    expect(out).toContain(
      `Platforms: reddit live (Reddit Data API at ${upstream.url}; budgets and cache in this ` +
        `process); xiaohongshu, douyin, x, wechat, weibo, bilibili, zhihu, kuaishou, youtube simulated.`,
    );
    expect(out).toMatch(/reddit: Reddit issued an app-only token to the app in SDGW_REDDIT_CLIENT_ID \(valid \d+ s\)/);
    const url = /reference server on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;
    const key = /^ {2}(sdgw_\S+)$/m.exec(out)![1]!;
    const caps = (await (await fetch(`${url}/v1/capabilities`)).json()) as {
      platforms: { platform: string; source: string }[];
    };
    expect(caps.platforms.filter((p) => p.source === "live")).toEqual([{ platform: "reddit", source: "live" }]);
    const res = await fetch(`${url}/v1/detail`, {
      method: "POST",
      headers: { "X-API-Key": key, "content-type": "application/json" },
      body: JSON.stringify({ platform: "reddit", url: "https://redd.it/a1tide" }),
    });
    const detail = (await res.json()) as { items: { id: string; title: string }[] };
    expect(detail.items[0]).toMatchObject({ id: RD.POST, title: "Tide pool walk at dawn: anemones & hermit crabs" });
    const tokenRequests = upstream.requests.filter((r) => r.method === "POST");
    expect(tokenRequests.length).toBeGreaterThanOrEqual(1);
    for (const secret of [RD.CLIENT_ID, RD.CLIENT_SECRET, RD.TOKEN]) expect(out).not.toContain(secret);
  }, 90_000);

  it("refuses to start without a User-Agent, naming the variable and never the secret", async () => {
    const { SDGW_REDDIT_USER_AGENT: _ua, ...rest } = env();
    void _ua;
    const bad = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
      cwd: ROOT,
      env: { ...process.env, SDGW_DB: join(tmp, "bad.sqlite"), ...rest },
    });
    let err = "";
    bad.stderr.on("data", (d) => (err += d));
    expect(await new Promise((r) => bad.once("exit", r))).toBe(2);
    expect(err).toContain("SDGW_REDDIT_USER_AGENT is required: Reddit refuses generic agents");
    expect(err).not.toContain(RD.CLIENT_SECRET);
    expect(err).not.toContain(RD.CLIENT_ID);
  }, 60_000);
});

describe("the six operations over HTTP, read from the Reddit Data API", () => {
  const running: SdgwServer[] = [];
  afterEach(async () => {
    for (const s of running.splice(0)) await s.close();
  });

  it("answer Reddit's data as items, each call charged its price; comments flattened, stubs left out", async () => {
    const logs: string[] = [];
    const server = createServer({
      dbPath: ":memory:",
      waitMs: 10_000,
      limits: GENEROUS,
      log: (m, e) => logs.push(`${m}${e ? ` ${String(e)}` : ""}`),
      connectors: { reddit: redditSettings(upstream.url) },
    });
    running.push(server);
    const gw = server.gateway;
    const { account } = gw.accounts.createAccount({ name: "Live", plan: "paid" });
    gw.accounts.grant(account.id, 1000);
    const key = gw.accounts.createKey({ accountId: account.id, name: "live" }).secret;
    const ops: Record<string, string> = {
      "/v1/search": "searchPost",
      "/v1/trending": "trending",
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
    const search = await call("/v1/search", { platform: "reddit", query: "tide pools" });
    expect(search.status).toBe("ok");
    expect(search.items.map((i: any) => i.id)).toEqual(["t3_a1tide", "t3_c3crab"]);
    const page2 = await call("/v1/search", { platform: "reddit", query: "tide pools", cursor: search.page.cursor });
    expect(page2.items.map((i: any) => i.id)).toEqual(["t3_e5gull"]);
    const trending = await call("/v1/trending", { platform: "reddit" });
    expect(trending.items.map((i: any) => i.rank)).toEqual([1, 2, 3]);
    const comments = await call("/v1/comments", { platform: "reddit", id: RD.POST });
    expect(comments.items.map((i: any) => i.id)).toEqual([
      "t1_k1aaaa",
      "t1_k2bbbb",
      "t1_k3cccc",
      "t1_k4dddd",
      "t1_k5eeee",
      "t1_k6ffff",
    ]);
    expect(comments.warnings.join(" ")).toContain("17 more");
    const profile = await call("/v1/user_profile", { platform: "reddit", url: `https://www.reddit.com/u/${RD.USER}` });
    expect(profile.items[0]).toMatchObject({ kind: "profile_card", id: RD.USER, followers: 812 });
    const posts = await call("/v1/user_posts", { platform: "reddit", id: RD.USER });
    expect(posts.items.map((i: any) => i.id)).toEqual(["t3_a1tide"]);
    const missing = await call("/v1/detail", { platform: "reddit", id: RD.MISSING });
    expect(missing.error.code).toBe("not_found");
    expect(gw.ledger.view(account.id, null).balance).toBe(1000 - 6);
    expect(logs.filter((l) => l.startsWith("upstream reddit."))).toContain(
      "upstream reddit.comments: 1 unit(s) in 1 request(s) (quoted 1); ok; charges 1 credit(s)",
    );
    for (const text of [...texts, ...logs])
      for (const secret of [RD.CLIENT_ID, RD.CLIENT_SECRET, RD.TOKEN]) expect(text).not.toContain(secret);
  }, 60_000);
});

describe("the token and the minute's budget shared by instances in Redis (D150)", () => {
  const prefix = `sdgw-rd-test-${process.pid}-${Date.now()}:`;
  const running: SdgwServer[] = [];
  afterAll(async () => {
    for (const s of running.splice(0)) await s.close();
    const { Redis } = await import("ioredis");
    const r = new Redis("redis://127.0.0.1:6379");
    const keys = await r.keys(`${prefix}*`);
    if (keys.length) await r.del(...keys);
    await r.quit();
  });

  it("two instances fetch one token and spend one budget of requests a minute", async () => {
    const instance = () => {
      const server = createServer({
        dbPath: ":memory:",
        waitMs: 10_000,
        limits: GENEROUS,
        log: () => undefined,
        redisUrl: "redis://127.0.0.1:6379",
        redisKeyPrefix: prefix,
        upstreamCache: false,
        connectors: { reddit: { ...redditSettings(upstream.url), minuteRequests: "3" } },
      });
      running.push(server);
      const gw = server.gateway;
      const { account } = gw.accounts.createAccount({ name: "Live", plan: "paid" });
      gw.accounts.grant(account.id, 100);
      const key = gw.accounts.createKey({ accountId: account.id, name: "live" }).secret;
      return async (body: unknown) =>
        (
          await server.app.inject({
            method: "POST",
            url: "/v1/user_profile",
            headers: { "x-api-key": key, "content-type": "application/json" },
            payload: JSON.stringify(body),
          })
        ).json() as any;
    };
    const a = instance();
    const b = instance();
    const from = upstream.requests.length;
    expect((await a({ platform: "reddit", id: RD.USER })).status).toBe("ok");
    expect((await b({ platform: "reddit", id: RD.USER })).status).toBe("ok");
    expect((await b({ platform: "reddit", id: RD.USER })).status).toBe("ok");
    const refused = await a({ platform: "reddit", id: RD.USER });
    const sent = upstream.requests.slice(from);
    expect(
      sent.filter((r) => r.method === "POST"),
      "one token for both instances",
    ).toHaveLength(1);
    // The fourth waits for the next minute, unsent and free — unless a minute began between the reads (a new window).
    const turned = refused.status === "ok";
    expect(sent.filter((r) => r.method === "GET")).toHaveLength(turned ? 4 : 3);
    if (!turned) {
      expect(refused.error.code).toBe("rate_limited");
      expect(refused.error.retry_after).toBeLessThanOrEqual(60);
      expect(refused.billing.cost_credits ?? refused.billing.cost ?? 0).toBe(0);
    }
  }, 60_000);
});

describe("MCP", () => {
  it("the MCP tools answer reddit from the API", async () => {
    const server = createServer({
      dbPath: ":memory:",
      waitMs: 10_000,
      limits: GENEROUS,
      log: () => undefined,
      connectors: { reddit: redditSettings(upstream.url) },
    });
    try {
      const gw = server.gateway;
      const { account } = gw.accounts.createAccount({ name: "Live", plan: "paid" });
      gw.accounts.grant(account.id, 100);
      const key = gw.accounts.createKey({ accountId: account.id, name: "live" }).secret;
      const [c, s] = sdk.InMemoryTransport.createLinkedPair();
      await createMcpServer({ app: server.app, apiKey: key, gateway: gw }).connect(s);
      const client = new sdk.Client({ name: "reddit-live", version: "1.0.0" });
      await client.connect(c);
      const calls: [string, Record<string, unknown>, string][] = [
        ["search", { platform: "reddit", query: "tide pools" }, RD.POST],
        [
          "trending",
          { platform: "reddit" },
          "https://www.reddit.com/r/kelpforest/comments/b2kelp/kelp_forest_timelapse,_40_minu/",
        ],
        ["detail", { platform: "reddit", id: RD.POST }, RD.POST],
        ["comments", { platform: "reddit", id: RD.POST }, "t1_k1aaaa"],
        ["user_profile", { platform: "reddit", id: RD.USER }, RD.USER],
        ["user_posts", { platform: "reddit", id: RD.USER }, RD.POST],
      ];
      for (const [name, args, first] of calls) {
        const r = await client.callTool({ name, arguments: args });
        const sc = r.structuredContent as any;
        expect(r.isError ?? false, `${name}: ${JSON.stringify(sc).slice(0, 300)}`).toBe(false);
        const item = sc.items[0];
        expect(item.id ?? item.url, name).toBe(first);
      }
      await client.close();
    } finally {
      await server.close();
    }
  }, 60_000);
});
