/**
 * YouTube live on its official API (issue 31, D114–D124), the way an operator and a caller meet it: the server
 * started with `SDGW_YOUTUBE_API_KEY` and `SDGW_YOUTUBE_BASE_URL` pointing at a fake upstream on 127.0.0.1 (the
 * hand-written exchanges of fixtures/upstream/youtube) answers all six operations over HTTP, MCP and the console;
 * a list of ids is one upstream request; the cache saves quota and says so; budgets refuse before calling upstream,
 * with a real retry_after, nothing charged; upstream faults answer honestly; an abandoned call cancels its request;
 * cursors are checked; the key never shows.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { nextMidnight, YOUTUBE_QUOTA_ZONE } from "@sdgw/engine/connectors";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadExchanges, startFakeUpstream, type FakeUpstream } from "../../conformance/src/connectors/index.ts";
import { YOUTUBE_FIXTURES, YT, youtubeError } from "../../conformance/test/youtube-subject.ts";
import { createMcpServer } from "../src/mcp/index.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { hashPasswordSync } from "../src/storage/sessions.ts";
import { GENEROUS, newIdem, validateAnswer } from "./helpers.ts";
import { sdk } from "./mcp/sdk-client.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = join(ROOT, "packages", "server", "src", "main.ts");
const tmp = mkdtempSync(join(tmpdir(), "sdgw-youtube-"));
const exchanges = loadExchanges(YOUTUBE_FIXTURES);

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await startFakeUpstream({ exchanges });
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

/** Requests the fake upstream received since `from`, as lines (`GET /youtube/v3/videos?id=…`). */
const sentSince = (from: number) => upstream.requests.slice(from).map((r) => r.line);

interface Live {
  server: SdgwServer;
  key: string;
  accountId: string;
  logs: string[];
  texts: string[];
  call(method: "GET" | "POST", path: string, body?: unknown, headers?: Record<string, string>): Promise<any>;
  balance(): number;
}

const running: SdgwServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.close();
});

/** A server whose youtube reads the fake upstream, with one funded account. */
function live(youtube: Record<string, string> = {}, options: Parameters<typeof createServer>[0] = {}): Live {
  const logs: string[] = [];
  const texts: string[] = [];
  const server = createServer({
    dbPath: ":memory:",
    waitMs: 10_000,
    limits: GENEROUS,
    log: (m, e) => logs.push(`${m}${e ? ` ${String(e)}` : ""}`),
    connectors: { youtube: { apiKey: YT.KEY, baseUrl: `${upstream.url}/youtube/v3`, ...youtube } },
    ...options,
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
    "/v1/capabilities": "listCapabilities",
  };
  return {
    server,
    key,
    accountId: account.id,
    logs,
    texts,
    async call(method, path, body, headers = {}) {
      const res = await server.app.inject({
        method,
        url: path,
        headers: {
          ...(headers["cookie"] ? {} : { "x-api-key": key }),
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
          ...(path.startsWith("/v1/search") && method === "GET" ? { "idempotency-key": newIdem() } : {}),
          ...headers,
        },
        ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
      });
      texts.push(res.body);
      const op = path.startsWith("/v1/call/")
        ? "callOperation"
        : (ops[path.split("?")[0]!] ?? (path.startsWith("/v1/search") ? "search" : null));
      return { ...validateAnswer(op as never, res).json, http: res.statusCode };
    },
    balance: () => gw.ledger.view(account.id, null).balance,
  };
}

describe("pnpm start with SDGW_YOUTUBE_API_KEY and SDGW_YOUTUBE_BASE_URL", () => {
  let child: ChildProcess | null = null;
  afterAll(
    () =>
      new Promise<void>((r) => {
        if (!child || child.exitCode !== null) return r();
        child.once("exit", () => r());
        child.kill("SIGTERM");
      }),
  );

  it("says youtube is live and the other nine simulated, checks the key once, never prints it, and answers from the API", async () => {
    const started = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
      cwd: ROOT,
      env: {
        ...process.env,
        SDGW_PORT: "0",
        SDGW_DB: join(tmp, "start.sqlite"),
        SDGW_YOUTUBE_API_KEY: YT.KEY,
        SDGW_YOUTUBE_BASE_URL: `${upstream.url}/youtube/v3`,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = started;
    let out = "";
    started.stdout!.on("data", (d) => (out += d));
    started.stderr!.on("data", (d) => (out += d));
    await until(() => out.includes("Stop with Ctrl-C.") && out.includes("youtube: "), 60_000);
    expect(out).toContain(
      `Platforms: youtube live (YouTube Data API v3 at ${upstream.url}/youtube/v3; budgets and ` +
        `cache in this process); xiaohongshu, douyin, x, reddit, wechat, weibo, bilibili, zhihu, kuaishou simulated.`,
    );
    expect(out).toContain("youtube: the YouTube Data API accepted the key (1 unit).");
    const url = /reference server on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;
    const key = /^ {2}(sdgw_\S+)$/m.exec(out)![1]!;
    const caps = (await (await fetch(`${url}/v1/capabilities`)).json()) as {
      platforms: { platform: string; source: string }[];
    };
    expect(caps.platforms.filter((p) => p.source === "live")).toEqual([{ platform: "youtube", source: "live" }]);
    // POST /v1/find says the same per match (issue 33: capabilities tell the truth on both keyless routes).
    const found = (await (
      await fetch(`${url}/v1/find`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "comments" }),
      })
    ).json()) as { matches: { op: string; source: string | null }[] };
    const sourceOf = (op: string) => found.matches.find((m) => m.op === op)?.source;
    expect([sourceOf("youtube.comments"), sourceOf("weibo.comments"), sourceOf("comment_insights")]).toEqual([
      "live",
      "simulated",
      null,
    ]);
    const res = await fetch(`${url}/v1/detail`, {
      method: "POST",
      headers: { "X-API-Key": key, "content-type": "application/json" },
      body: JSON.stringify({ platform: "youtube", url: `https://youtu.be/${YT.V1}` }),
    });
    const detail = (await res.json()) as { items: { title: string }[] };
    expect(detail.items[0]!.title).toBe("Tide pool walk at dawn: anemones & hermit crabs");
    expect(out).not.toContain(YT.KEY);
  }, 90_000);

  it("with a key the API refuses, starts and says so loudly, without the key", async () => {
    upstream.override({
      path: "/youtube/v3/videos",
      query: { part: "id" },
      status: 400,
      body: youtubeError("400_key_invalid"),
    });
    const refused = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
      cwd: ROOT,
      env: {
        ...process.env,
        SDGW_PORT: "0",
        SDGW_DB: join(tmp, "refused.sqlite"),
        SDGW_YOUTUBE_API_KEY: YT.KEY,
        SDGW_YOUTUBE_BASE_URL: `${upstream.url}/youtube/v3`,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    refused.stdout!.on("data", (d) => (out += d));
    refused.stderr!.on("data", (d) => (out += d));
    try {
      await until(() => out.includes("is live but"), 60_000);
      expect(out).toContain(
        "[sdgw] youtube is live but the YouTube Data API refused the key in SDGW_YOUTUBE_API_KEY (HTTP 400); its calls fail until this is fixed.",
      );
      expect(out).toContain(
        "ERROR youtube: the platform refused the gateway's own credentials (HTTP 400 badRequest: the API key is not valid)",
      );
      expect(out).not.toContain(YT.KEY);
      expect(out, "the operator's line carries no stack of main.ts").not.toContain("main.ts:");
    } finally {
      await new Promise<void>((r) => {
        refused.once("exit", () => r());
        refused.kill("SIGTERM");
      });
    }
  }, 90_000);

  it("refuses to start on a bad setting, naming the variable and never the key", async () => {
    const bad = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
      cwd: ROOT,
      env: {
        ...process.env,
        SDGW_DB: join(tmp, "bad.sqlite"),
        SDGW_YOUTUBE_API_KEY: "AIza secret",
        SDGW_YOUTUBE_BASE_URL: "http://youtube.example/v3",
      },
    });
    let err = "";
    bad.stderr.on("data", (d) => (err += d));
    expect(await new Promise((r) => bad.once("exit", r))).toBe(2);
    expect(err).toContain(
      "SDGW_YOUTUBE_API_KEY must be a YouTube Data API key, 1 to 512 visible ASCII characters without spaces",
    );
    expect(err).toContain("SDGW_YOUTUBE_BASE_URL must be an https:// URL (or http:// to 127.0.0.1");
    expect(err).not.toContain("secret");
  }, 60_000);
});

describe("the six operations over HTTP, read from the YouTube Data API", () => {
  it("answer the API's data as items, each call charged its price of 1 credit", async () => {
    const g = live();
    const search = await g.call("POST", "/v1/search", { platform: "youtube", query: "tide pools" });
    expect(search.http).toBe(200);
    // The search result's HTML-escaped title is plain text; counts are integers; times RFC 3339 UTC.
    expect(search.items.map((i: any) => i.title)).toEqual([
      "Tide pool walk at dawn: anemones & hermit crabs",
      "Reading tide tables & charts, the easy way",
    ]);
    expect(search.items[0].metrics).toEqual({ views: 48213, likes: 2107, comments: 96 });
    expect(search.items[1].metrics).toEqual({ views: 9120, comments: 41 }); // likes hidden: absent, not 0
    expect(search.items[0].published_at).toBe("2026-03-14T06:12:09Z");
    expect(search.page.has_more).toBe(true);

    const trending = await g.call("POST", "/v1/trending", { platform: "youtube" });
    expect(trending.items.map((i: any) => [i.rank, i.title, i.heat])).toEqual([
      [1, "What lives under a rock? A field guide", 3331930783],
      [2, "Why the sea foams", 210],
    ]);

    const detail = await g.call("POST", "/v1/detail", { platform: "youtube", id: YT.V1 });
    expect(detail.items[0]).toMatchObject({
      id: YT.V1,
      url: `https://www.youtube.com/watch?v=${YT.V1}`,
      media: [{ type: "video", duration_s: 761 }],
    });

    const comments = await g.call("POST", "/v1/comments", {
      platform: "youtube",
      url: `https://www.youtube.com/watch?v=${YT.V1}`,
    });
    expect(comments.items[0]).toMatchObject({
      parent_id: YT.V1,
      text: "Saw a blenny at 4:10 — see https://example.org/blenny & more", // textOriginal, not the HTML
      author: { name: "@rockpoolreader" },
      metrics: { likes: 12 },
      reply_count: 2,
    });

    const profile = await g.call("POST", "/v1/user_profile", {
      platform: "youtube",
      url: `https://www.youtube.com/${YT.HANDLE}`,
    });
    expect(profile.items[0]).toMatchObject({
      id: YT.C1,
      name: "Tidepool Notes",
      url: "https://www.youtube.com/@tidepoolnotes",
      followers: 184000,
      posts_count: 212,
      location: "GB",
    });

    const posts = await g.call("POST", "/v1/user_posts", { platform: "youtube", id: YT.C1 });
    expect(posts.items.map((i: any) => i.id)).toEqual([YT.V1, YT.V3]);

    for (const a of [search, trending, detail, comments, profile, posts]) expect(a.billing.cost).toBe(1);
    expect(g.balance()).toBe(994);
    expect(upstream.unmatched).toEqual([]);
  });

  it("pages with a cursor that reaches the API's next page; a cursor of another query or garbled is refused, naming cursor", async () => {
    const g = live();
    const first = await g.call("GET", `/v1/search?platform=youtube&query=${encodeURIComponent("tide pools")}`);
    const from = upstream.requests.length;
    const second = await g.call(
      "GET",
      `/v1/search?platform=youtube&query=${encodeURIComponent("tide pools")}&cursor=${first.page.cursor}`,
    );
    expect(second.items.map((i: any) => i.id)).toEqual([YT.V4]);
    expect(second.page).toEqual({ has_more: false });
    expect(sentSince(from)[0]).toContain("pageToken=CAoQAA");
    for (const cursor of [first.page.cursor.slice(0, 20), "bm90IGEgY3Vyc29y"]) {
      const refused = await g.call(
        "GET",
        `/v1/search?platform=youtube&query=${encodeURIComponent("tide pools")}&cursor=${cursor}`,
      );
      expect([refused.http, refused.code, refused.fix.param]).toEqual([400, "invalid_params", "cursor"]);
    }
    const other = await g.call("GET", `/v1/search?platform=youtube&query=surfing&cursor=${first.page.cursor}`);
    expect([other.http, other.fix.param]).toEqual([400, "cursor"]);
    expect(first.page.cursor.length).toBeLessThan(20_000);
  });
});

describe("MCP and the console", () => {
  it("the MCP tools answer from the API", async () => {
    const g = live();
    const [c, s] = sdk.InMemoryTransport.createLinkedPair();
    await createMcpServer({ app: g.server.app, apiKey: g.key, gateway: g.server.gateway }).connect(s);
    const client = new sdk.Client({ name: "youtube-live", version: "1.0.0" });
    await client.connect(c);
    const calls: [string, Record<string, unknown>, string][] = [
      ["search", { platform: "youtube", query: "coastline", type: "user" }, YT.C2],
      ["trending", { platform: "youtube" }, YT.V3],
      ["detail", { platform: "youtube", id: YT.V1 }, YT.V1],
      ["comments", { platform: "youtube", id: YT.V1 }, "UgxSynthThread0001AaABAg"],
      ["user_profile", { platform: "youtube", id: YT.C1 }, YT.C1],
      ["user_posts", { platform: "youtube", id: YT.C1 }, YT.V1],
    ];
    for (const [name, args, first] of calls) {
      const r = await client.callTool({ name, arguments: args });
      const sc = r.structuredContent as any;
      expect(r.isError ?? false, `${name}: ${JSON.stringify(sc).slice(0, 300)}`).toBe(false);
      const item = sc.items[0];
      expect(item.id ?? item.url, name).toBe(name === "trending" ? `https://www.youtube.com/watch?v=${first}` : first);
    }
    await client.close();
  });

  it("the console's Playground call, with the sign-in cookie, answers from the API", async () => {
    const g = live();
    const gw = g.server.gateway as any;
    gw.sessions.createUser({
      accountId: g.accountId,
      email: "yt@example.com",
      passwordHash: hashPasswordSync("a long enough password"),
    });
    const signIn = await g.server.app.inject({
      method: "POST",
      url: "/console/session",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ email: "yt@example.com", password: "a long enough password" }),
    });
    const cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;
    const csrf = JSON.parse(signIn.body).csrf_token as string;
    const res = await g.call(
      "POST",
      "/v1/user_posts",
      { platform: "youtube", id: YT.C1 },
      { cookie, "x-csrf-token": csrf },
    );
    expect([res.http, res.status]).toEqual([200, "ok"]);
    expect(res.items).toHaveLength(2);
  });
});

describe("a list of ids, the cache and the quote", () => {
  it("reads a list of video ids with one upstream request; each id is a call of its own, a missing one free", async () => {
    const g = live();
    const from = upstream.requests.length;
    const a = await g.call("POST", "/v1/detail", { platform: "youtube", id: [YT.V1, YT.V2, YT.MISSING] });
    expect(a.targets.map((t: any) => t.result.status)).toEqual(["ok", "ok", "error"]);
    expect(a.targets[2].result.error.code).toBe("not_found");
    expect(a.billing.cost).toBe(2);
    expect(sentSince(from)).toEqual([
      `GET /youtube/v3/videos?id=${YT.V1}%2C${YT.V2}%2C${YT.MISSING}&part=snippet%2Cstatistics%2CcontentDetails`,
    ]);
    // Each call reports its share of the one request, beside its quote and price.
    expect(g.logs.filter((l) => l.startsWith("upstream youtube.detail")).sort()).toEqual([
      "upstream youtube.detail: 0.33 unit(s) in 0.33 request(s) (quoted 1); error not_found; charges nothing",
      "upstream youtube.detail: 0.33 unit(s) in 0.33 request(s) (quoted 1); ok; charges 1 credit(s)",
      "upstream youtube.detail: 0.33 unit(s) in 0.33 request(s) (quoted 1); ok; charges 1 credit(s)",
    ]);
  });

  it("answers the same read from the cache: no upstream request, still charged, and says so", async () => {
    const g = live();
    const from = upstream.requests.length;
    const first = await g.call("POST", "/v1/user_posts", { platform: "youtube", id: YT.C1 });
    const sent = upstream.requests.length - from;
    const again = await g.call("POST", "/v1/user_posts", {
      platform: "youtube",
      url: `https://www.youtube.com/channel/${YT.C1}`,
    });
    expect(sent).toBe(3); // channels.list, playlistItems.list, videos.list: 3 units
    expect(upstream.requests.length - from).toBe(3); // the second read spent none
    expect(again.items).toEqual(first.items);
    expect(again.billing.cost).toBe(1);
    expect(again.warnings).toEqual([
      expect.stringMatching(
        /^served from the gateway's cache: youtube answered this \d+ s ago and was not asked again$/,
      ),
    ]);
    expect(g.logs.filter((l) => l.startsWith("upstream youtube.user_posts"))).toEqual([
      "upstream youtube.user_posts: 3 unit(s) in 3 request(s) (quoted 3); ok; charges 1 credit(s)",
      "upstream youtube.user_posts: from the cache, 0 units (quoted 3); ok; charges 1 credit(s)",
    ]);
  });

  it("quotes what a call costs upstream beside its price: search 101 units for 1 credit", async () => {
    const g = live();
    const { catalog } = g.server.gateway;
    const { planPlatforms, quoteOf } = await import("@sdgw/engine");
    const planned = planPlatforms(catalog, "search", { platform: "youtube", query: "tide pools" }, "data");
    expect(planned.ok && quoteOf(planned.plan)).toEqual({ credits: 1, calls: 1, upstreamCost: 101 });
  });
});

describe("budgets", () => {
  it("a drained daily budget refuses before calling upstream: rate_limited until midnight Pacific, nothing charged", async () => {
    const g = live({ dailyUnits: "2" });
    await g.call("POST", "/v1/detail", { platform: "youtube", id: YT.V1 });
    await g.call("POST", "/v1/user_profile", { platform: "youtube", id: YT.C1 });
    const from = upstream.requests.length;
    const before = g.balance();
    const refused = await g.call("POST", "/v1/detail", { platform: "youtube", id: YT.V4 });
    expect([refused.http, refused.status, refused.error.code]).toEqual([200, "error", "rate_limited"]);
    const expected = Math.ceil((nextMidnight(Date.now(), YOUTUBE_QUOTA_ZONE) - Date.now()) / 1000);
    expect(Math.abs(refused.error.retry_after - expected)).toBeLessThanOrEqual(5);
    expect(refused.error.message).toMatch(
      /The gateway's daily YouTube Data API budget \(2 units\) is used up; it refills at \d{4}-\d\d-\d\dT\d\d:00:00Z\. Nothing was charged\./,
    );
    expect(refused.billing.cost).toBe(0);
    expect(g.balance()).toBe(before);
    expect(upstream.requests.length).toBe(from);
  });

  it("searches have a bucket of their own: when it is drained, cheap reads still work", async () => {
    const g = live({ searchUnits: "100" });
    expect((await g.call("POST", "/v1/search", { platform: "youtube", query: "tide pools" })).status).toBe("ok");
    const refused = await g.call("POST", "/v1/search", { platform: "youtube", query: "coastline", type: "user" });
    expect(refused.error.code).toBe("rate_limited");
    expect(refused.error.message).toContain("daily YouTube search budget (100 units)");
    expect((await g.call("POST", "/v1/detail", { platform: "youtube", id: YT.V1 })).status).toBe("ok");
  });

  it("the API's quotaExceeded drains the budget: that call and the next are rate_limited, the next without asking upstream", async () => {
    const g = live();
    upstream.override({ path: "/youtube/v3/videos", status: 403, body: youtubeError("403_quota_exceeded"), times: 1 });
    const first = await g.call("POST", "/v1/detail", { platform: "youtube", id: YT.V1 });
    expect(first.error.code).toBe("rate_limited");
    expect(first.error.retry_after).toBeGreaterThan(0);
    const from = upstream.requests.length;
    const next = await g.call("POST", "/v1/user_profile", { platform: "youtube", id: YT.C1 });
    expect(next.error.code).toBe("rate_limited");
    expect(upstream.requests.length).toBe(from);
    expect(g.logs.some((l) => l.includes("daily quota is exceeded"))).toBe(true);
    expect(g.balance()).toBe(1000);
  });
});

describe("upstream faults, honestly", () => {
  it("our key refused: upstream_error, not retryable, a loud log line without the key; the caller's key is fine", async () => {
    const g = live();
    upstream.override({ path: "/youtube/v3/channels", status: 400, body: youtubeError("400_key_invalid") });
    const a = await g.call("POST", "/v1/user_profile", { platform: "youtube", id: YT.C1 });
    expect([a.http, a.status, a.error.code, a.error.retryable]).toEqual([200, "error", "upstream_error", false]);
    expect(a.error.message).toContain("not with your key");
    expect(
      g.logs.filter((l) => l.startsWith("ERROR youtube: the platform refused the gateway's own credentials")),
    ).toHaveLength(1);
    expect(g.balance()).toBe(1000);
  });

  it("a link that names no video is invalid_target naming url, free and never sent upstream", async () => {
    const g = live();
    const from = upstream.requests.length;
    const a = await g.call("POST", "/v1/detail", { platform: "youtube", url: "https://www.youtube.com/feed/trending" });
    expect([a.error.code, a.error.fix.param, a.billing.cost]).toEqual(["invalid_target", "url", 0]);
    expect(upstream.requests.length).toBe(from);
  });

  it("an abandoned call cancels its upstream request: timeout, free, and the API sees the request go away", async () => {
    const g = live({}, { providerTimeoutMs: 800 });
    upstream.override({ path: "/youtube/v3/videos", hang: true });
    const from = upstream.requests.length;
    const a = await g.call("POST", "/v1/detail", { platform: "youtube", id: YT.V1 });
    expect([a.status, a.error.code, a.billing.cost]).toEqual(["timeout", "timeout", 0]);
    await until(() => upstream.requests.slice(from).some((r) => r.aborted));
  });

  it("youtube.video_transcript needs OAuth captions access: not_supported, not_available_yet, never simulated data", async () => {
    const g = live();
    const a = await g.call("POST", "/v1/call/youtube.video_transcript", { video_id: YT.V1 });
    expect([a.http, a.code, a.reason]).toEqual([400, "not_supported", "not_available_yet"]);
    expect(a.message).toContain("captions.download");
  });

  it("never shows the key: not in an answer, not in a log line", async () => {
    const g = live();
    upstream.override({ path: "/youtube/v3/videos", status: 503, body: youtubeError("503_backend_error") });
    await g.call("POST", "/v1/detail", { platform: "youtube", id: YT.V1 });
    await g.call("POST", "/v1/search", { platform: "youtube", query: "tide pools" });
    await g.call("GET", "/v1/capabilities");
    expect(g.logs.some((l) => l.includes("retrying in"))).toBe(true);
    for (const text of [...g.texts, ...g.logs]) expect(text).not.toContain(YT.KEY);
  });
});

describe("budgets and cache shared by instances in Redis (D121, D122)", () => {
  const prefix = `sdgw-yt-test-${process.pid}-${Date.now()}:`;
  afterAll(async () => {
    const { Redis } = await import("ioredis");
    const r = new Redis("redis://127.0.0.1:6379");
    const keys = await r.keys(`${prefix}*`);
    if (keys.length) await r.del(...keys);
    await r.quit();
  });

  it("two instances spend one budget and read one cache", async () => {
    const shared = { redisUrl: "redis://127.0.0.1:6379", redisKeyPrefix: prefix };
    const a = live({ dailyUnits: "2" }, shared);
    const b = live({ dailyUnits: "2" }, shared);
    const from = upstream.requests.length;
    const firstRead = await a.call("POST", "/v1/detail", { platform: "youtube", id: YT.V1 });
    expect(firstRead.status, JSON.stringify(firstRead.error) + a.logs.join("\n")).toBe("ok");
    const cached = await b.call("POST", "/v1/detail", { platform: "youtube", id: YT.V1 });
    expect(cached.warnings[0]).toMatch(/served from the gateway's cache/);
    expect(upstream.requests.length - from).toBe(1);
    expect((await b.call("POST", "/v1/user_profile", { platform: "youtube", id: YT.C1 })).status).toBe("ok");
    const refused = await a.call("POST", "/v1/detail", { platform: "youtube", id: YT.V4 });
    expect(refused.error.code).toBe("rate_limited");
    expect(await a.server.gateway.upstream.budget.used("youtube")).toEqual({ units: 2, search: 0 });
  });
});
