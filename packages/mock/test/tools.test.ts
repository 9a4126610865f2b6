/**
 * The seven tools as the reference server plans them (D8, D11, D24, D41, D51, D52): a quote of 1 credit per planned
 * provider call with the server's waves, `inline` up to 10 calls and `background` (202 at once) above, a charge of
 * at most the quote, the refusals decided before the key (links, capability gaps), and schedules created by a
 * confirmed `account_watch` with `schedule` and announced in a warning. The conformance package's agreement test
 * checks the same bodies against the server itself.
 */
import { responseValidators } from "@sdgw/validators";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createMock, FIXTURES, ROUTES, scenario } from "../src/index.ts";
import { Simulator, TOOLS } from "@sdgw/engine";
import { searchPlatforms } from "@sdgw/engine/tools";
import type { ToolName } from "@sdgw/types";
import { BASE, send } from "./helpers.ts";

const mock = createMock({ baseUrl: BASE, balance: 1000 });
const server = setupServer(...mock.handlers);
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterAll(() => server.close());
beforeEach(() => mock.reset());

const tool = (name: string, body: unknown, key?: string | null) =>
  send({ method: "POST", path: `/v1/tools/${name}`, body, ...(key !== undefined ? { key } : {}) });
const steps = (list: Array<{ name: string; calls_planned: number }>) => list.map((s) => [s.name, s.calls_planned]);
const ctx = { providers: new Simulator().providers, accountPlan: "paid" as const };
const isToolName = (name: string): name is ToolName => name in TOOLS;
const planTool = (name: ToolName, body: object) => TOOLS[name].plan(body as never, ctx);
const NINE = ["xiaohongshu", "douyin", "x", "reddit", "weibo", "bilibili", "zhihu", "kuaishou", "youtube"];
const ALL = ["xiaohongshu", "douyin", "x", "reddit", "wechat", "weibo", "bilibili", "zhihu", "kuaishou", "youtube"];

describe("quotes (D8, D51)", () => {
  it("brand_buzz: 3 platforms at scale small are 3 search + 6 comments calls, 9 credits inline; 4 are 12, background", async () => {
    const three = await tool("brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin"],
      confirm: false,
    });
    expect(three.status).toBe(200);
    expect(responseValidators.brandBuzz(200, three.body).ok).toBe(true);
    expect([
      three.body.quote.mode,
      three.body.quote.quote_credits,
      three.body.quote.waves_planned,
      three.body.quote.calls_planned,
    ]).toEqual(["inline", 9, 3, 9]);
    expect(steps(three.body.quote.plan)).toEqual([
      ["search", 3],
      ["comments", 6],
      ["aggregate", 0],
    ]);
    expect(
      three.body.quote.plan.every(
        (s: { status: string; calls_done: number }) => s.status === "pending" && s.calls_done === 0,
      ),
    ).toBe(true);
    expect(three.body.billing.cost_credits).toBe(0);
    const four = await tool("brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin", "bilibili"],
      confirm: false,
    });
    expect([four.body.quote.mode, four.body.quote.quote_credits]).toEqual(["background", 12]);
    expect(mock.state.balance).toBe(1000);
  });

  it("brand_buzz reads no comments on wechat; scale standard reads 3 pages and 5 posts per platform", async () => {
    const wechat = await tool("brand_buzz", { query: "公众号", platforms: ["wechat", "weibo"], confirm: false });
    expect(steps(wechat.body.quote.plan)).toEqual([
      ["search", 2],
      ["comments", 2],
      ["aggregate", 0],
    ]);
    const standard = await tool("brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin"],
      scale: "standard",
      window: "30d",
      confirm: false,
    });
    expect(steps(standard.body.quote.plan)).toEqual([
      ["search", 9],
      ["comments", 15],
      ["aggregate", 0],
    ]);
    expect(standard.body.applied_params).toEqual({
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin"],
      window: "30d",
      scale: "standard",
      confirm: false,
    });
  });

  it("every tool's waves", async () => {
    const cases: Array<[string, object, Array<[string, number]>]> = [
      [
        "comment_insights",
        { targets: ["https://www.bilibili.com/video/BV1xK4y1a7Zq", "reddit:t3_abc123"] },
        [
          ["comments", 2],
          ["aggregate", 0],
        ],
      ],
      [
        "account_watch",
        { accounts: ["https://x.com/vercel", "youtube:@vercel"] },
        [
          ["profiles", 2],
          ["posts", 2],
          ["aggregate", 0],
        ],
      ],
      [
        "find_creators",
        { query: "espresso", platforms: ["youtube", "reddit"], count: 3, min_followers: 1000 },
        [
          ["search", 2],
          ["profiles", 6],
          ["aggregate", 0],
        ],
      ],
      [
        "find_creators",
        { query: "espresso", platforms: ["youtube"], count: 3 },
        [
          ["search", 1],
          ["profiles", 3],
          ["aggregate", 0],
        ],
      ],
      [
        "creator_card",
        { accounts: ["https://space.bilibili.com/946974"] },
        [
          ["profiles", 1],
          ["posts", 1],
          ["aggregate", 0],
        ],
      ],
      [
        "creator_card",
        { accounts: ["https://space.bilibili.com/946974"], include: [] },
        [
          ["profiles", 1],
          ["aggregate", 0],
        ],
      ],
      [
        "batch_stats",
        { targets: ["https://www.douyin.com/video/7301234567890123456"] },
        [
          ["details", 1],
          ["aggregate", 0],
        ],
      ],
      [
        "batch_stats",
        { targets: ["https://www.douyin.com/video/7301234567890123456"], include: ["metrics", "comments"] },
        [
          ["details", 1],
          ["comments", 1],
          ["aggregate", 0],
        ],
      ],
      [
        "viral_finder",
        { query: "AI 绘画", platforms: ["douyin", "kuaishou"], count: 3 },
        [
          ["search", 2],
          ["posts", 6],
          ["aggregate", 0],
        ],
      ],
    ];
    for (const [name, body, want] of cases) {
      const got = await tool(name, { ...body, confirm: false });
      expect([name, got.status, steps(got.body.quote.plan)]).toEqual([name, 200, want]);
      const calls = want.reduce((n, [, c]) => n + c, 0);
      expect([
        got.body.quote.quote_credits,
        got.body.quote.calls_planned,
        got.body.quote.waves_planned,
        got.body.quote.mode,
      ]).toEqual([calls, calls, want.length, calls <= 10 ? "inline" : "background"]);
    }
  });

  it("platforms left out or all: every platform that offers search, and a warning in the answer", async () => {
    const quote = await tool("viral_finder", { query: "AI", count: 1, confirm: false });
    expect([quote.body.applied_params.platforms, steps(quote.body.quote.plan)]).toEqual([
      ALL,
      [
        ["search", 10],
        ["posts", 2],
        ["aggregate", 0],
      ],
    ]);
    const run = await tool("find_creators", { query: "AI", platforms: "all", count: 1 }); // 10 + 1 calls: background
    expect(run.status).toBe(202);
    let read = await send({ path: `/v1/results/${run.body.handle}` });
    while (read.status === 202) read = await send({ path: `/v1/results/${run.body.handle}` });
    expect(read.body.warnings).toContain(`platforms=all; expanded to 10 platforms: ${ALL.join(", ")}`);
  });
});

describe("runs and charges (D51)", () => {
  it("a background plan answers 202 at once with its steps; the finished run is charged at most its quote", async () => {
    const started = await tool("brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin", "bilibili"],
    });
    expect([started.status, started.body.charge, started.body.waves]).toEqual([
      202,
      { quote_credits: 12, charged_credits: 0 },
      { planned: 3, done: 0 },
    ]);
    expect(steps(started.body.steps)).toEqual([
      ["search", 4],
      ["comments", 8],
      ["aggregate", 0],
    ]);
    let read = await send({ path: `/v1/results/${started.body.handle}` });
    while (read.status === 202) read = await send({ path: `/v1/results/${started.body.handle}` });
    expect([read.status, read.body.status, read.body.quote.mode]).toEqual([200, "ok", "background"]);
    expect(read.body.charge.charged_credits).toBeLessThanOrEqual(12);
    expect(
      read.body.steps.every(
        (s: { status: string; calls_done: number; calls_planned: number }) =>
          s.status === "done" && s.calls_done <= s.calls_planned,
      ),
    ).toBe(true);
    expect(mock.state.balance).toBe(1000 - read.body.charge.charged_credits);
  });

  it("an inline plan answers at once, its steps done; max_cost_credits under the quote is 402 with the quote", async () => {
    const got = await tool("brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin"],
      max_cost_credits: 9,
    });
    expect([got.status, got.body.charge.quote_credits, got.body.billing.cost_credits]).toEqual([
      200,
      9,
      got.body.charge.charged_credits,
    ]);
    expect(got.body.charge.charged_credits).toBeLessThanOrEqual(9); // the calls made that answered, at most the quote
    const over = await tool("brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin"],
      max_cost_credits: 8,
    });
    expect([over.status, over.body.code, over.body.quote_credits]).toEqual([402, "max_cost_exceeded", 9]);
  });

  it("a run whose calls all failed charges nothing: its first wave and aggregate failed", async () => {
    mock.use(scenario("error", { times: 1 }));
    const got = await tool("creator_card", { accounts: ["https://space.bilibili.com/946974"] });
    expect([got.status, got.body.status, got.body.charge.charged_credits, got.body.billing.cost_credits]).toEqual([
      200,
      "error",
      0,
      0,
    ]);
    expect(got.body.steps.map((s: { name: string; status: string }) => [s.name, s.status])).toEqual([
      ["profiles", "failed"],
      ["posts", "done"],
      ["aggregate", "failed"],
    ]);
    expect(mock.state.balance).toBe(1000);
  });
});

describe("refusals before the key (D41, D50, D51)", () => {
  it("a target on a platform without the operation: 400 not_supported no_such_capability, fix.param targets, fix.allowed", async () => {
    const got = await tool("comment_insights", { targets: ["https://mp.weixin.qq.com/s/AbCdEfGhIjKlMnOpQr"] }, null);
    expect([got.status, got.body.code, got.body.reason, got.body.fix.param, got.body.fix.allowed]).toEqual([
      400,
      "not_supported",
      "no_such_capability",
      "targets",
      NINE,
    ]);
    expect(got.body.message).toBe(
      "wechat does not offer comments, which this tool reads for " +
        "`https://mp.weixin.qq.com/s/AbCdEfGhIjKlMnOpQr`; xiaohongshu, douyin, x, reddit, weibo, bilibili, " +
        "zhihu, kuaishou, youtube do. Nothing ran and nothing was charged.",
    );
  });

  it(
    "a platform without the operation a search-based tool reads is no_such_capability on platforms " +
      "with fix.allowed (every platform offers search today)",
    () => {
      expect(searchPlatforms(["weibo", "wechat"], ctx, "comments")).toEqual({
        code: "not_supported",
        reason: "no_such_capability",
        param: "platforms",
        message: `wechat does not offer comments; ${NINE.join(", ")} do.`,
        allowed: NINE,
      });
      expect(searchPlatforms(["weibo", "wechat"], ctx)).toEqual({ platforms: ["weibo", "wechat"], warnings: [] });
    },
  );

  it("a link that cannot be told: 400 invalid_params naming targets or accounts", async () => {
    const short = await tool("comment_insights", { targets: ["https://b23.tv/abc123"] }, null);
    expect([short.status, short.body.code, short.body.fix.param]).toEqual([400, "invalid_params", "targets"]);
    expect(short.body.message).toMatch(/short link \(bilibili\)/);
    const nowhere = await tool("account_watch", { accounts: ["https://example.com/someone"] }, null);
    expect([nowhere.status, nowhere.body.code, nowhere.body.fix.param]).toEqual([400, "invalid_params", "accounts"]);
    const post = await tool("creator_card", { accounts: ["https://www.bilibili.com/video/BV1xK4y1a7Zq"] }, null);
    expect([post.status, post.body.fix.param, post.body.message]).toEqual([
      400,
      "accounts",
      "`https://www.bilibili.com/video/BV1xK4y1a7Zq` is a link to a post on bilibili, not an account; send the account's own link.",
    ]);
  });

  it("batch_stats comments of a platform without public comments: invalid_params include, allowed metrics", async () => {
    const got = await tool(
      "batch_stats",
      { targets: ["https://mp.weixin.qq.com/s/AbCdEfGhIjKlMnOpQr"], include: ["comments"] },
      null,
    );
    expect([got.status, got.body.code, got.body.fix.param, got.body.fix.allowed]).toEqual([
      400,
      "invalid_params",
      "include",
      ["metrics"],
    ]);
  });

  it("scale=large is judged after the key (its answer depends on the account): 401 without one", async () => {
    expect((await tool("brand_buzz", { query: "a", scale: "large" }, null)).status).toBe(401);
    const got = await tool("brand_buzz", { query: "a", scale: "large" });
    expect([got.status, got.body.reason, got.body.fix.param]).toEqual([400, "not_available_yet", "scale"]);
  });
});

describe("schedules (D11, D52)", () => {
  const listed = async () =>
    (await send({ path: "/v1/schedules" })).body.schedules as Array<{
      id: string;
      params: object;
      every: string;
      next_run_at: string;
    }>;

  it("a quote creates none; a confirmed call creates one with the call's params, and its answer says so", async () => {
    const before = await listed();
    await tool("account_watch", { accounts: ["https://x.com/vercel"], schedule: { every: "1h" }, confirm: false });
    expect(await listed()).toHaveLength(before.length);
    const got = await tool("account_watch", {
      accounts: ["https://x.com/vercel"],
      schedule: { every: "1h" },
      max_cost_credits: 10,
    });
    const after = await listed();
    expect(after).toHaveLength(before.length + 1);
    const made = after.at(-1)!;
    expect([made.every, made.params]).toEqual(["1h", { accounts: ["https://x.com/vercel"], range: "7d" }]);
    expect(got.body.warnings[0]).toBe(
      `Schedule ${made.id} created: this account_watch call runs again every 1h under this key, ` +
        `charged like this call (next at ${made.next_run_at}); GET /v1/schedules lists it, DELETE ` +
        `/v1/schedules/${made.id} stops it.`,
    );
    expect(got.body.applied_params["schedule.every"]).toBe("1h");
  });

  it("20 per workspace: the 21st is invalid_params naming schedule", async () => {
    const start = (await listed()).length;
    for (let i = start; i < 20; i++)
      expect((await tool("account_watch", { accounts: [`x:acct${i}`], schedule: { every: "1d" } })).status).toBe(200);
    const got = await tool("account_watch", { accounts: ["x:one_more"], schedule: { every: "1d" } });
    expect([got.status, got.body.code, got.body.fix.param, got.body.message]).toEqual([
      400,
      "invalid_params",
      "schedule",
      "A workspace has at most 20 schedules.",
    ]);
    expect(
      (await tool("account_watch", { accounts: ["x:one_more"], schedule: { every: "1d" }, confirm: false })).status,
    ).toBe(200); // a quote still answers
  });

  it("a free account's refusal is a scenario: plan_limit schedules_need_purchase naming schedule", async () => {
    mock.use(scenario("plan_limit", { operation: "accountWatch", times: 1 }));
    const got = await tool("account_watch", { accounts: ["https://x.com/vercel"], schedule: { every: "1d" } });
    expect([got.status, got.body.code, got.body.reason, got.body.fix.param]).toEqual([
      403,
      "plan_limit",
      "schedules_need_purchase",
      "schedule",
    ]);
    expect(mock.state.schedules).toHaveLength(2);
  });
});

describe("the tool fixtures the mock serves agree with the plans (D51)", () => {
  it("each fixture's quote and steps are the plan of its applied parameters; a charge is at most the quote", () => {
    let checked = 0;
    for (const route of Object.values(ROUTES)) {
      if (!route.tool || !isToolName(route.tool)) continue;
      for (const f of route.fixtures) {
        const body = FIXTURES[f.file] as Record<string, any>;
        if (!body || typeof body !== "object") continue;
        if (body["charge"])
          expect(body["charge"].charged_credits, f.file).toBeLessThanOrEqual(body["charge"].quote_credits);
        if (!body["quote"] || !body["applied_params"]) continue;
        const { "schedule.every": every, ...rest } = body["applied_params"];
        const planned = planTool(route.tool, { ...rest, ...(every ? { schedule: { every } } : {}) });
        expect(planned.ok, f.file).toBe(true);
        if (!planned.ok) continue;
        const { plan: _plan, ...numbers } = body["quote"];
        const { plan: _want, ...wantNumbers } = planned.plan.quote;
        expect([f.file, numbers]).toEqual([f.file, wantNumbers]);
        expect([f.file, steps(body["quote"].plan)]).toEqual([f.file, steps(planned.plan.quote.plan)]);
        if (body["steps"]) expect([f.file, steps(body["steps"])]).toEqual([f.file, steps(planned.plan.quote.plan)]);
        expect([f.file, body["applied_params"]]).toEqual([f.file, planned.plan.applied_params]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(7);
  });
});
