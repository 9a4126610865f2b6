/** Every route of the contract, each answer validated by @sdgw/validators (the harness does it on every call). */
import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./helpers.ts";

let h: Harness;
afterEach(async () => {
  h.audit();
  await h.server.close();
});

describe("GET /v1/search", () => {
  it("answers one platform with the envelope, D20 defaults applied, charged 1", async () => {
    h = harness();
    const a = await h.call(
      "search",
      "GET",
      "/v1/search?platform=xiaohongshu&query=%E9%9C%B2%E8%90%A5%E8%A3%85%E5%A4%87&count=3",
    );
    expect(a.status).toBe(200);
    expect(a.json.status).toBe("ok");
    expect(a.json.platform).toBe("xiaohongshu");
    expect(a.json.items).toHaveLength(3);
    expect(a.json.applied_params).toEqual({
      platform: "xiaohongshu",
      query: "露营装备",
      type: "content",
      sort: "relevance",
      time_range: "all",
      content_type: "all",
      count: 3,
    });
    expect(a.json.billing).toEqual({ cost: 1, balance: 999, unit: "credits", pricing: "standard" });
    expect(a.json.page.has_more).toBe(true);
    expect(a.json.items[0].title).toMatch(/露营装备/);
  });

  it("pages with the cursor of the previous answer; a foreign cursor is invalid_params", async () => {
    h = harness();
    const first = await h.call("search", "GET", "/v1/search?platform=reddit&query=typescript&count=5");
    const next = await h.call(
      "search",
      "GET",
      `/v1/search?platform=reddit&query=typescript&count=5&cursor=${first.json.page.cursor}`,
    );
    expect(next.status).toBe(200);
    expect(next.json.items[0].id).not.toBe(first.json.items[0].id);
    const bad = await h.call(
      "search",
      "GET",
      `/v1/search?platform=x&query=typescript&cursor=${first.json.page.cursor}`,
    );
    expect(bad.status).toBe(400);
    expect(bad.json.fix.param).toBe("cursor");
  });

  it("answers `platforms` with the fanout answer; not_supported entries cost nothing (D4)", async () => {
    h = harness();
    const a = await h.call(
      "search",
      "GET",
      "/v1/search?platforms=x,reddit,wechat&query=typescript&count=2&content_type=video",
    );
    expect(a.json.status).toBe("ok");
    expect(a.json.fanout.wechat.status).toBe("not_supported");
    expect(a.json.fanout.wechat.error.action_url).toBe("https://console.sdgw.dev/capabilities?platform=wechat");
    expect(a.json.billing.cost).toBe(2);
    const one = await h.call("search", "GET", "/v1/search?platforms=douyin&query=x");
    expect(Object.keys(one.json.fanout)).toEqual(["douyin"]);
  });

  it("derives the fanout status by D4 when every platform fails", async () => {
    h = harness();
    const sim = h.server.gateway.simulator!;
    sim.setKnobs("x", { fault: "timeout" });
    sim.setKnobs("reddit", { fault: "timeout" });
    const t = await h.call("search", "GET", "/v1/search?platforms=x,reddit&query=ts");
    expect(t.json.status).toBe("timeout");
    expect(t.headers["x-should-retry"]).toBe("false");
    sim.setKnobs("reddit", { fault: "upstream_error" });
    const e = await h.call("search", "GET", "/v1/search?platforms=x,reddit&query=ts");
    expect(e.json.status).toBe("error");
    expect(e.json.billing.cost).toBe(0);
    sim.setKnobs("x", { fault: "empty" });
    const m = await h.call("search", "GET", "/v1/search?platforms=x,reddit&query=ts");
    expect(m.json.status).toBe("empty");
    expect(m.json.billing.cost).toBe(1);
    const ns = await h.call("search", "GET", "/v1/search?platforms=x,reddit&query=ts&sort=most_collected");
    expect(ns.json.status).toBe("not_supported");
  });

  it("expands platforms=all to the platforms that offer the call, with a warning", async () => {
    h = harness();
    const a = await h.call("search", "GET", "/v1/search?platforms=all&query=coffee&content_type=video");
    expect(Object.keys(a.json.fanout)).not.toContain("wechat");
    expect(a.json.warnings[0]).toMatch(/^platforms=all expanded to 9 platforms/);
  });

  it("refuses both or neither of platform and platforms (D17), and cursor with platforms (D19)", async () => {
    h = harness();
    expect((await h.call("search", "GET", "/v1/search?query=a")).json.fix.param).toBe("platform");
    expect((await h.call("search", "GET", "/v1/search?query=a&platform=x&platforms=x")).json.fix.param).toBe(
      "platforms",
    );
    expect((await h.call("search", "GET", "/v1/search?query=a&platforms=x&cursor=abc")).json.fix.param).toBe("cursor");
    const noKey = await h.call("search", "GET", "/v1/search?platform=x&query=a", {
      headers: { "idempotency-key": "" },
    });
    expect(noKey.json.fix.param).toBe("Idempotency-Key");
  });

  it("answers a sub-capability gap inside a 200 envelope; scope is a warning where it means nothing (D18)", async () => {
    h = harness();
    const a = await h.call(
      "search",
      "GET",
      "/v1/search?platform=wechat&query=%E5%B9%B4%E7%BB%88%E5%A5%96&content_type=video",
    );
    expect(a.status).toBe(200);
    expect(a.json.status).toBe("not_supported");
    expect(a.json.billing.cost).toBe(0);
    const s = await h.call("search", "GET", "/v1/search?platform=douyin&query=a&scope=food");
    expect(s.json.warnings).toEqual(["scope is ignored on douyin"]);
    const r = await h.call("search", "GET", "/v1/search?platform=reddit&query=a&scope=r%2Ftypescript&count=1");
    expect(r.json.items[0].platform_extra.subreddit).toBe("r/r/typescript".replace("r/r/", "r/"));
  });

  it("writes Chinese content for the Chinese platforms and English for x, reddit and youtube", async () => {
    h = harness();
    for (const p of ["xiaohongshu", "douyin", "wechat", "weibo", "bilibili", "zhihu", "kuaishou"]) {
      const a = await h.call("search", "GET", `/v1/search?platform=${p}&query=coffee&count=1`);
      expect(JSON.stringify(a.json.items[0]), p).toMatch(/\p{Script=Han}/u);
    }
    for (const p of ["x", "reddit", "youtube"]) {
      const a = await h.call("search", "GET", `/v1/search?platform=${p}&query=coffee&count=1&type=user`);
      expect(a.json.items[0].kind).toBe("profile_card");
      expect(JSON.stringify(a.json.items[0]), p).not.toMatch(/\p{Script=Han}/u);
    }
  });
});

describe("POST data routes", () => {
  it("keeps fanout entries to the seed's four error codes: a paused platform is upstream_error, retryable", async () => {
    h = harness();
    h.server.gateway.simulator!.setKnobs("weibo", { fault: "unavailable" });
    const a = await h.call("trending", "POST", "/v1/trending", { body: { platforms: ["weibo", "zhihu"] } });
    expect(a.json.fanout.weibo.error).toMatchObject({ code: "upstream_error", retryable: true });
    const one = await h.call("trending", "POST", "/v1/trending", { body: { platform: "weibo" } });
    expect(one.json.error).toMatchObject({
      code: "temporarily_unavailable",
      fix: { action_url: "https://status.sdgw.dev" },
    });
  });

  it("searches with a JSON body, query as a whole number (D22)", async () => {
    h = harness();
    const a = await h.call("searchPost", "POST", "/v1/search", {
      body: { platforms: ["x", "reddit"], query: 2026, count: 2, sort: "latest" },
    });
    expect(a.json.status).toBe("ok");
    expect(a.json.fanout.x.applied_params.query).toBe("2026");
  });

  it("reads trending lists; a platform without one is not_supported with the platforms that have it", async () => {
    h = harness();
    const a = await h.call("trending", "POST", "/v1/trending", { body: { platform: "weibo", count: 5 } });
    expect(a.json.items.map((i: { rank: number }) => i.rank)).toEqual([1, 2, 3, 4, 5]);
    const no = await h.call("trending", "POST", "/v1/trending", { body: { platform: "wechat" } });
    expect(no.status).toBe(400);
    expect(no.json.reason).toBe("no_such_capability");
    expect(no.json.fix.allowed).not.toContain("wechat");
    expect(no.json.fix.allowed).toContain("weibo");
  });

  it("answers a list of targets with the targets answer, each value a call of its own", async () => {
    h = harness();
    const urls = [
      "https://www.xiaohongshu.com/explore/6734a1f2000000001d03b7c4",
      "https://www.xiaohongshu.com/user/profile/5f1c2a3b000000000101d2e3",
      "https://www.xiaohongshu.com/explore/6734a1f2000000001d03b7c4",
    ];
    const a = await h.call("detail", "POST", "/v1/detail", { body: { platform: "xiaohongshu", url: urls } });
    expect(a.json.targets.map((c: { target: string }) => c.target)).toEqual(urls);
    expect(a.json.targets.map((c: { result: { status: string } }) => c.result.status)).toEqual(["ok", "error", "ok"]);
    expect(a.json.targets[1].result.error.code).toBe("invalid_target");
    expect(a.json.billing.cost).toBe(2);
    const gone = await h.call("detail", "POST", "/v1/detail", { body: { platform: "zhihu", id: "deleted-123" } });
    expect(gone.json.status).toBe("error");
    expect(gone.json.error.code).toBe("not_found");
  });

  it("reads comments, profiles and posts of accounts", async () => {
    h = harness();
    const c = await h.call("comments", "POST", "/v1/comments", {
      body: { platform: "reddit", id: "t3_1gq8x2k", limit: 5, sort: "most_liked" },
    });
    expect(c.json.items.every((i: { parent_id: string }) => i.parent_id === "t3_1gq8x2k")).toBe(true);
    const p = await h.call("userProfile", "POST", "/v1/user_profile", {
      body: { platform: "x", id: ["vercel", "nodejs"] },
    });
    expect(p.json.targets.map((t: { result: { items: Array<{ id: string }> } }) => t.result.items[0]!.id)).toEqual([
      "vercel",
      "nodejs",
    ]);
    const u = await h.call("userPosts", "POST", "/v1/user_posts", {
      body: { platform: "bilibili", url: "https://space.bilibili.com/946974", limit: 3 },
    });
    expect(u.json.items).toHaveLength(3);
    expect(u.json.items[0].author.id).toBe("946974");
  });

  it("answers a body that is not one JSON object with invalid_params (case 1), and a too large body (case 16)", async () => {
    h = harness({ bodyLimit: 2000 });
    const bad = await h.call("detail", "POST", "/v1/detail", {
      raw: "{not json",
      headers: { "content-type": "application/json" },
    });
    expect(bad.json.fix.param).toBe("body");
    const text = await h.call("detail", "POST", "/v1/detail", {
      raw: '{"platform":"x","id":"1"}',
      headers: { "content-type": "text/plain" },
    });
    expect(text.json.fix.note).toMatch(/application\/json/);
    const array = await h.call("detail", "POST", "/v1/detail", { body: [1] });
    expect(array.json.fix.param).toBe("body");
    const big = await h.call("detail", "POST", "/v1/detail", { body: { platform: "x", id: "1".repeat(5000) } });
    expect(big.status).toBe(400);
    expect(big.json.message).toMatch(/too large/);
  });
});

describe("POST /v1/call/{op}", () => {
  it("calls catalog-only ops and typed ops by name", async () => {
    h = harness();
    const d = await h.call("callOperation", "POST", "/v1/call/bilibili.video_danmaku", {
      body: { bvid: "BV1xK4y1a7Zq", limit: 4 },
    });
    expect(d.json.applied_params).toEqual({ op: "bilibili.video_danmaku", bvid: "BV1xK4y1a7Zq", limit: 4 });
    expect(d.json.items).toHaveLength(4);
    const s = await h.call("callOperation", "POST", "/v1/call/reddit.search", { body: { query: "rust", count: 2 } });
    expect(s.json.platform).toBe("reddit");
    expect(s.json.applied_params.op).toBe("reddit.search");
    const t = await h.call("callOperation", "POST", "/v1/call/youtube.video_transcript", {
      body: { video_id: "dQw4w9WgXcQ" },
    });
    expect(t.json.billing).toMatchObject({ cost: 2, pricing: "placeholder" });
  });

  it("refuses an op the catalog lacks (not_supported, fix.allowed the platforms that have it) and unknown parameters", async () => {
    h = harness();
    const no = await h.call("callOperation", "POST", "/v1/call/wechat.video_danmaku", { body: { bvid: "x" } });
    expect(no.status).toBe(400);
    expect(no.json).toMatchObject({
      code: "not_supported",
      reason: "no_such_capability",
      fix: { allowed: ["bilibili"] },
    });
    const none = await h.call("callOperation", "POST", "/v1/call/x.teleport", { body: {} });
    expect(none.json.fix.allowed).toEqual([]);
    const extra = await h.call("callOperation", "POST", "/v1/call/bilibili.video_danmaku", {
      body: { bvid: "BV1xK4y1a7Zq", colour: "red" },
    });
    expect(extra.json.fix).toEqual({ param: "colour", allowed: ["bvid", "limit", "cursor", "max_cost_credits"] });
    const typed = await h.call("callOperation", "POST", "/v1/call/x.search", { body: { query: "a", platform: "x" } });
    expect(typed.json.fix.param).toBe("platform");
    const malformed = await h.call("callOperation", "POST", "/v1/call/nonsense", { body: {} });
    expect(malformed.json.code).toBe("invalid_params");
  });
});

describe("discovery, account, schedules, tools, unknown paths", () => {
  it("lists capabilities without a key, every op with its route, price and parameters", async () => {
    h = harness();
    const a = await h.call("listCapabilities", "GET", "/v1/capabilities", { key: null });
    expect(a.json.tools).toHaveLength(7);
    const reddit = a.json.operations.find((o: { op: string }) => o.op === "reddit.search");
    expect(reddit).toEqual({
      op: "reddit.search",
      platform: "reddit",
      name: "search",
      route: "/v1/search",
      description: "Search posts or users of reddit · 搜索Reddit内容或用户",
      charged: true,
      price_credits: 1,
      pricing: "standard",
      params: ["query", "type", "sort", "time_range", "content_type", "scope", "count", "cursor", "max_cost_credits"],
    });
    expect(a.json.operations.some((o: { op: string }) => o.op === "wechat.trending")).toBe(false);
  });

  it("finds operations in Chinese and English, best first, without a key", async () => {
    h = harness();
    const zh = await h.call("findOperation", "POST", "/v1/find", {
      body: { query: "B站视频弹幕", limit: 3 },
      key: null,
    });
    expect(zh.json.matches[0].op).toBe("bilibili.video_danmaku");
    const en = await h.call("findOperation", "POST", "/v1/find", { body: { query: "youtube transcript" }, key: null });
    expect(en.json.matches[0].op).toBe("youtube.video_transcript");
    const tool = await h.call("findOperation", "POST", "/v1/find", { body: { query: "品牌声量" }, key: null });
    expect(tool.json.matches[0]).toMatchObject({
      op: "brand_buzz",
      platform: null,
      example_call: { method: "POST", path: "/v1/tools/brand_buzz" },
    });
    const scoped = await h.call("findOperation", "POST", "/v1/find", {
      body: { query: "热榜", platform: "weibo" },
      key: null,
    });
    expect(scoped.json.matches.every((m: { platform: string }) => m.platform === "weibo")).toBe(true);
    const bad = await h.call("findOperation", "POST", "/v1/find", { body: { query: "" }, key: null });
    expect(bad.json.fix.param).toBe("query");
  });

  it("serves the spec as JSON at /openapi.json without a key", async () => {
    h = harness();
    const a = await h.call("getOpenApiDocument", "GET", "/openapi.json", { key: null });
    expect(a.json.info.version).toBe("1.0.0");
    expect(a.json["x-schema-version"]).toBe("v1");
    expect(Object.keys(a.json.paths)).toContain("/v1/results/{handle}");
  });

  it("reads the account (D10) and an empty schedule list; deleting an unknown schedule is 404", async () => {
    h = harness();
    await h.call("search", "GET", "/v1/search?platform=x&query=a");
    const a = await h.call("getAccount", "GET", "/v1/account");
    expect(a.json.billing).toMatchObject({ cost_credits: 0, balance_credits: 999, today_spend_credits: 1 });
    expect(a.json.key.prefix).toBe(h.key.slice(0, 12));
    expect(JSON.stringify(a.json)).not.toContain(h.key);
    const s = await h.call("listSchedules", "GET", "/v1/schedules");
    expect(s.json).toMatchObject({ schedules: [], limit: 20 });
    const d = await h.call("deleteSchedule", "DELETE", "/v1/schedules/sch_4Fw1");
    expect(d.status).toBe(404);
    expect(d.json.reason).toBe("no_such_schedule");
    expect((await h.call("getAccount", "GET", "/v1/account?verbose=1")).json.fix.param).toBe("verbose");
    expect((await h.call("deleteSchedule", "DELETE", `/v1/schedules/${"s".repeat(129)}`)).status).toBe(400);
  });

  it("answers an unknown path 404 no_such_route listing the routes, with an example call", async () => {
    h = harness();
    const a = await h.call(null, "GET", "/v2/search");
    expect(a.status).toBe(404);
    expect(a.json.reason).toBe("no_such_route");
    expect(a.json.fix.allowed).toContain("GET /v1/search");
    expect(a.json.fix.allowed).toHaveLength(22);
    expect(a.json.fix.example_call).toEqual({ method: "GET", path: "/v1/capabilities" });
    const bad = await h.call("getResult", "GET", "/v1/results/%E0%A4%A");
    expect(bad.status).toBe(400);
    expect(bad.json.fix.param).toBe("path");
  });
});
