/**
 * The mock and the reference server plan the seven tools alike (D8, D24, D41, D51, D52), seen from outside over
 * HTTP: the same `confirm: false` bodies get the same quote (mode, price, waves, calls, steps) and the same applied
 * parameters; the refusals decided before the key (a wrong link, a capability gap) are the same answers; a confirmed
 * `account_watch` with `schedule` creates a schedule both ways and says so in the same words. The mock plans from
 * its own code and catalog (it never depends on @sdgw/server); this keeps the two from drifting apart.
 */
import { afterAll, describe, expect, it } from "vitest";
import { startMockHttp } from "./mock-http.ts";
import { startReferenceServer } from "./reference-server.ts";

const mock = await startMockHttp({ balance: 10_000 });
// No slow platform (every call answers at once), and limits no test here reaches: the calls come in bursts.
const server = await startReferenceServer({
  simulator: {},
  limits: { keyQps: 10_000, workspaceConcurrency: 100, failureThreshold: 10_000 },
});
afterAll(async () => {
  await mock.close();
  await server.close();
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are free-form JSON

const sides = [
  { name: "mock", baseUrl: mock.baseUrl, key: "sdgw_test_key" },
  { name: "server", baseUrl: server.baseUrl, key: server.keys.key },
] as const;

async function call(
  side: (typeof sides)[number],
  method: "GET" | "POST" | "DELETE",
  path: string,
  body?: unknown,
  withKey = true,
): Promise<{ status: number; body: Json }> {
  const headers: Record<string, string> = {
    ...(withKey ? { "X-API-Key": side.key } : {}),
    ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
  };
  const res = await fetch(`${side.baseUrl}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

/** Both sides' answers to the same request. */
async function both(
  method: "GET" | "POST",
  path: string,
  body?: unknown,
  withKey = true,
): Promise<[{ status: number; body: Json }, { status: number; body: Json }]> {
  return [await call(sides[0], method, path, body, withKey), await call(sides[1], method, path, body, withKey)];
}

/** What must agree in a tool quote answer. */
function quoteOf(a: { status: number; body: Json }) {
  const q = a.body["quote"] ?? {};
  return {
    http: a.status,
    tool: a.body["tool"],
    applied_params: a.body["applied_params"],
    mode: q.mode,
    quote_credits: q.quote_credits,
    waves_planned: q.waves_planned,
    calls_planned: q.calls_planned,
    plan: (q.plan ?? []).map((s: Json) => ({
      wave: s["wave"],
      name: s["name"],
      status: s["status"],
      calls_planned: s["calls_planned"],
    })),
    cost_credits: a.body["billing"]?.cost_credits,
  };
}

/** An error answer without its request id. */
function refusalOf(a: { status: number; body: Json }) {
  const { request_id: _id, ...rest } = a.body;
  return { http: a.status, ...rest };
}

const BILI = "https://www.bilibili.com/video/BV1xK4y1a7Zq";
const XHS_NOTE = "https://www.xiaohongshu.com/explore/6b001f4d0000000013004a7e";
const DOUYIN = "https://www.douyin.com/video/7301234567890123456";
const WECHAT_POST = "https://mp.weixin.qq.com/s/AbCdEfGhIjKlMnOpQr";
const posts = (n: number) => Array.from({ length: n }, (_, i) => `reddit:t3_abc${String(i).padStart(3, "0")}`);
const accounts = (n: number) => Array.from({ length: n }, (_, i) => `x:account${i}`);

/** Bodies of every tool, sent with `confirm: false`: inline and background plans, defaults, `platforms: "all"` and absent. */
const QUOTES: ReadonlyArray<[tool: string, body: Json]> = [
  ["brand_buzz", { query: "瑞幸咖啡", platforms: ["xiaohongshu", "weibo", "douyin"] }],
  ["brand_buzz", { query: "瑞幸咖啡", platforms: ["xiaohongshu", "weibo", "douyin", "bilibili"] }],
  ["brand_buzz", { query: "公众号 运营", platforms: ["wechat", "weibo", "x"], window: "30d" }],
  [
    "brand_buzz",
    {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin"],
      window: "30d",
      scale: "standard",
      max_cost_credits: 500,
    },
  ],
  ["brand_buzz", { query: "luckin", platforms: "all" }],
  ["brand_buzz", { query: 2025 }],
  ["comment_insights", { targets: [BILI, XHS_NOTE] }],
  ["comment_insights", { targets: posts(11), limit: 50 }],
  ["account_watch", { accounts: ["https://x.com/vercel", "https://www.youtube.com/@vercel"], range: "30d" }],
  ["account_watch", { accounts: accounts(6) }],
  ["account_watch", { accounts: ["https://x.com/vercel"], schedule: { every: "1d" } }],
  ["find_creators", { query: "home espresso", platforms: ["youtube", "reddit"], count: 3, min_followers: 1000 }],
  ["find_creators", { query: "home espresso", platforms: ["youtube", "reddit"] }],
  ["find_creators", { query: "home espresso", platforms: "all", count: 1 }],
  ["creator_card", { accounts: ["https://space.bilibili.com/946974"], include: ["metrics"] }],
  ["creator_card", { accounts: ["https://space.bilibili.com/946974", "https://x.com/vercel"], include: [] }],
  ["creator_card", { accounts: accounts(6) }],
  ["batch_stats", { targets: [DOUYIN, BILI, XHS_NOTE, "https://www.kuaishou.com/short-video/3xabcdefgh"] }],
  ["batch_stats", { targets: [DOUYIN, BILI], include: ["metrics", "comments"], format: "csv" }],
  ["batch_stats", { targets: posts(11) }],
  ["viral_finder", { query: "AI 绘画", platforms: ["douyin", "kuaishou"], count: 2 }],
  ["viral_finder", { query: "AI 绘画", platforms: ["douyin", "kuaishou"] }],
  ["viral_finder", { query: "AI 绘画", platforms: "all", count: 1, window: "30d" }],
];

/** Requests every tool refuses before the key (D50, D51): links that cannot be told, targets without the operation. */
const REFUSALS: ReadonlyArray<[label: string, tool: string, body: Json]> = [
  [
    "a wechat post has no comments (no_such_capability, fix.param targets)",
    "comment_insights",
    { targets: [BILI, WECHAT_POST] },
  ],
  [
    "comments of a wechat post in batch_stats (invalid_params include)",
    "batch_stats",
    { targets: [WECHAT_POST], include: ["comments"] },
  ],
  ["a short link (invalid_params targets)", "comment_insights", { targets: ["https://b23.tv/abc123"] }],
  ["a link of no platform (invalid_params accounts)", "account_watch", { accounts: ["https://example.com/someone"] }],
  ["a post link given as an account (invalid_params accounts)", "creator_card", { accounts: [BILI] }],
  ["an account link given as a post (invalid_params targets)", "batch_stats", { targets: ["https://x.com/vercel"] }],
  [
    "a search page (invalid_params targets)",
    "comment_insights",
    { targets: ["https://www.bilibili.com/search?keyword=a"] },
  ],
];

describe("@sdgw/mock and @sdgw/server quote the seven tools alike (D8, D51)", () => {
  it.each(QUOTES.map(([tool, body]) => [`${tool} ${JSON.stringify(body).slice(0, 120)}`, tool, body] as const))(
    "%s",
    async (_label, tool, body) => {
      const [m, s] = await both("POST", `/v1/tools/${tool}`, { ...body, confirm: false });
      expect(s.status, JSON.stringify(s.body)).toBe(200);
      expect(quoteOf(m)).toEqual(quoteOf(s));
      const q = m.body["quote"];
      expect(q.quote_credits).toBe(q.calls_planned);
      expect(q.mode).toBe(q.calls_planned <= 10 ? "inline" : "background");
    },
  );

  it("brand_buzz of 3 platforms at scale small is 3 search + 6 comments calls, 9 credits inline; 4 platforms are 12, background", async () => {
    const [three] = await both("POST", "/v1/tools/brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin"],
      confirm: false,
    });
    expect(quoteOf(three)).toMatchObject({
      mode: "inline",
      quote_credits: 9,
      plan: [
        { name: "search", calls_planned: 3 },
        { name: "comments", calls_planned: 6 },
        { name: "aggregate", calls_planned: 0 },
      ],
    });
    const [four] = await both("POST", "/v1/tools/brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin", "bilibili"],
      confirm: false,
    });
    expect(quoteOf(four)).toMatchObject({ mode: "background", quote_credits: 12 });
  });

  it("a confirmed background plan answers 202 at once; an inline one charges at most its quote", async () => {
    for (const side of sides) {
      const bg = await call(side, "POST", "/v1/tools/brand_buzz", {
        query: "瑞幸咖啡",
        platforms: ["xiaohongshu", "weibo", "douyin", "bilibili"],
      });
      expect([side.name, bg.status, bg.body["charge"]]).toEqual([
        side.name,
        202,
        { quote_credits: 12, charged_credits: 0 },
      ]);
      const inline = await call(side, "POST", "/v1/tools/brand_buzz", {
        query: "瑞幸咖啡",
        platforms: ["xiaohongshu", "weibo", "douyin"],
      });
      expect([side.name, inline.status, inline.body["quote"].quote_credits]).toEqual([side.name, 200, 9]);
      expect(inline.body["charge"].charged_credits).toBeLessThanOrEqual(9);
      expect(inline.body["billing"].cost_credits).toBe(inline.body["charge"].charged_credits);
      expect(inline.body["steps"].map((s: Json) => [s["name"], s["calls_planned"]])).toEqual([
        ["search", 3],
        ["comments", 6],
        ["aggregate", 0],
      ]);
    }
  });
});

describe("@sdgw/mock and @sdgw/server refuse the same tool requests before the key (D41, D50, D51)", () => {
  it.each(REFUSALS)("%s", async (_label, tool, body) => {
    const [m, s] = await both("POST", `/v1/tools/${tool}`, body, false);
    expect(s.status, JSON.stringify(s.body)).toBe(400);
    expect(refusalOf(m)).toEqual(refusalOf(s));
  });

  it("the same with a key", async () => {
    const [m, s] = await both("POST", "/v1/tools/comment_insights", { targets: [WECHAT_POST] });
    expect(refusalOf(m)).toEqual(refusalOf(s));
    expect([s.body["code"], s.body["reason"], s.body["fix"].param]).toEqual([
      "not_supported",
      "no_such_capability",
      "targets",
    ]);
  });

  it("scale=large on a paid account is not_supported not_available_yet naming scale (after the key)", async () => {
    const [m, s] = await both("POST", "/v1/tools/brand_buzz", { query: "瑞幸咖啡", scale: "large" });
    for (const a of [m, s])
      expect([a.status, a.body["code"], a.body["reason"], a.body["fix"].param]).toEqual([
        400,
        "not_supported",
        "not_available_yet",
        "scale",
      ]);
  });
});

describe("@sdgw/mock and @sdgw/server create schedules alike (D11, D52)", () => {
  it("a quote creates none; a confirmed account_watch with schedule creates one, says so in a warning, and lists it with the call's params", async () => {
    for (const side of sides) {
      const before = (await call(side, "GET", "/v1/schedules")).body["schedules"] as Json[];
      await call(side, "POST", "/v1/tools/account_watch", {
        accounts: ["https://x.com/vercel"],
        schedule: { every: "6h" },
        confirm: false,
      });
      expect(
        (await call(side, "GET", "/v1/schedules")).body["schedules"],
        `${side.name}: a quote creates no schedule`,
      ).toHaveLength(before.length);

      const made = await call(side, "POST", "/v1/tools/account_watch", {
        accounts: ["https://x.com/vercel"],
        schedule: { every: "6h" },
        max_cost_credits: 50,
      });
      expect(made.status, side.name).toBe(200);
      const after = (await call(side, "GET", "/v1/schedules")).body["schedules"] as Json[];
      expect(after, side.name).toHaveLength(before.length + 1);
      const created = after.find((x) => !before.some((b) => b["id"] === x["id"]))!;
      expect([side.name, created["every"], created["status"], created["params"]]).toEqual([
        side.name,
        "6h",
        "active",
        { accounts: ["https://x.com/vercel"], range: "7d" },
      ]);
      expect(made.body["warnings"][0]).toBe(
        `Schedule ${created["id"]} created: this account_watch call runs again every 6h under this ` +
          `key, charged like this call (next at ${created["next_run_at"]}); GET /v1/schedules lists it, ` +
          `DELETE /v1/schedules/${created["id"]} stops it.`,
      );
      expect(made.body["applied_params"]["schedule.every"]).toBe("6h");
      expect((await call(side, "DELETE", `/v1/schedules/${created["id"]}`)).body["deleted"]).toBe(true);
    }
  });
});
