/** account_watch: profiles then posts per account; followers and engagement per day over the range; best posts. */
import type { AccountWatchRequest, ContentItem } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import { accountWatch } from "../../src/tools/account_watch.ts";
import { engagementOf } from "../../src/tools/analysis.ts";
import {
  ANCHOR,
  expectDaily,
  expectRanked,
  expectValidQuote,
  expectValidRun,
  inDays,
  ofKind,
  planned,
  simCtx,
} from "./helpers.ts";

const ACCOUNTS = ["https://x.com/vercel", "https://www.youtube.com/@devbytes_daily"];
const REQ: AccountWatchRequest = { accounts: ACCOUNTS, range: "14d" };
const many = (n: number) => Array.from({ length: n }, (_, i) => `https://weibo.com/u/${1749127100 + i}`);

describe("account_watch plan", () => {
  it("quotes a profile and a posts call per account", () => {
    const { ctx } = simCtx();
    const plan = planned(accountWatch.plan({ accounts: ACCOUNTS, schedule: { every: "1d" } }, ctx));
    const q = expectValidQuote("account_watch", plan);
    expect(q.plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["profiles", 2],
      ["posts", 2],
      ["aggregate", 0],
    ]);
    expect(plan.applied_params).toEqual({ accounts: ACCOUNTS, range: "7d", "schedule.every": "1d", confirm: true });
  });

  it("runs inline up to 5 accounts (10 calls) and in the background from 6", () => {
    const { ctx } = simCtx();
    expect(planned(accountWatch.plan({ accounts: many(5) }, ctx)).quote).toMatchObject({
      mode: "inline",
      calls_planned: 10,
      quote_credits: 10,
    });
    expect(planned(accountWatch.plan({ accounts: many(6) }, ctx)).quote).toMatchObject({
      mode: "background",
      calls_planned: 12,
      quote_credits: 12,
    });
  });

  it("refuses a range it does not take, naming the allowed values", () => {
    const { ctx } = simCtx();
    const r = accountWatch.plan({ accounts: ACCOUNTS, range: "1d" } as unknown as AccountWatchRequest, ctx);
    expect(r).toMatchObject({
      ok: false,
      refusal: { code: "invalid_params", param: "range", allowed: ["today", "7d", "14d", "30d"] },
    });
    expect(!r.ok && r.refusal.message).toMatch(/range.*must be one of/);
    expect(
      accountWatch.plan({ accounts: ACCOUNTS, window: "7d" } as unknown as AccountWatchRequest, ctx),
    ).toMatchObject({ ok: false, refusal: { param: "window" } });
  });

  it.each([
    ["https://x.com/vercel/status/2122526005990306014", /link to a post on x, not an account/],
    ["https://www.youtube.com/c/devbytes", /no account page on youtube/],
    ["https://xhslink.com/a/Zx9", /short link/],
    ["mailto:someone@example.com", /platform of .* cannot be told/],
    ["weibo.com/u/1749127163", /accounts/],
  ])("refuses the account %s, naming it", (link, why) => {
    const { ctx } = simCtx();
    const r = accountWatch.plan({ accounts: [ACCOUNTS[0]!, link] }, ctx);
    expect(r).toMatchObject({ ok: false, refusal: { code: "invalid_params", param: "accounts" } });
    expect(!r.ok && r.refusal.message).toMatch(why);
  });
});

describe("account_watch run", () => {
  it("answers each account's card, followers and engagement per day, then the best posts, from the fetched data", async () => {
    const { ctx, calls } = simCtx();
    const plan = planned(accountWatch.plan(REQ, ctx));
    const r = await accountWatch.run(REQ, ctx);
    expectValidRun("account_watch", plan, r);
    expect(r.status).toBe("ok");
    expect(calls.map((c) => [c.platform, c.operation, c.params["id"]])).toEqual([
      ["x", "user_profile", "vercel"],
      ["youtube", "user_profile", "@devbytes_daily"],
      ["x", "user_posts", "vercel"],
      ["youtube", "user_posts", "@devbytes_daily"],
    ]);
    const cards = ofKind(r.items, "profile_card");
    expect(cards.map((c) => c.id)).toEqual(["vercel", "@devbytes_daily"]);
    const series = ofKind(r.items, "timeseries");
    const followers = series.filter((s) => s.metric === "followers");
    expect(followers.map((f) => f.points)).toEqual(
      cards.map((c) => [{ t: "2026-11-20T00:00:00Z", value: c.followers }]),
    );
    const engagement = series.filter((s) => s.metric === "engagement");
    expect(engagement).toHaveLength(2);
    const best: ContentItem[] = [];
    engagement.forEach((s, i) => {
      expectDaily(s, 14);
      const read = (calls[2 + i]!.outcome as { items: ContentItem[] }).items;
      const posts = read.filter((p) => inDays(p.published_at, 14));
      best.push(...posts);
      expect(s.points.reduce((a, p) => a + p.value, 0)).toBe(posts.reduce((a, p) => a + engagementOf(p), 0));
      expect(s.platform_extra).toMatchObject({
        account: ACCOUNTS[i],
        posts_in_range: posts.length,
        posts_read: read.length,
      });
    });
    const board = ofKind(r.items, "leaderboard");
    expectRanked(board);
    expect(board[0]!.heat).toBe(Math.max(...best.map(engagementOf)));
    expect(board.length).toBe(Math.min(10, best.length));
    expect(ofKind(r.items, "item")[0]!.id).toBe(board[0]!.platform_extra!["id"]);
  });

  it("draws followers from earlier readings in the range and this run's reading", async () => {
    const history = [
      { t: "2026-11-01T00:00:00Z", value: 1 },
      { t: ANCHOR - 3 * 86_400_000, value: 100 },
      { t: "2026-11-18T12:00:00Z", value: 120 },
      { t: "not a date", value: 5 },
    ];
    const { ctx } = simCtx({ ctx: { followerHistory: (p, id) => (p === "x" && id === "vercel" ? history : []) } });
    const r = await accountWatch.run({ accounts: ["https://x.com/vercel"], range: "7d" }, ctx);
    const f = ofKind(r.items, "timeseries").find((s) => s.metric === "followers")!;
    const now = ofKind(r.items, "profile_card")[0]!.followers!;
    expect(f.points).toEqual([
      { t: "2026-11-17T00:00:00Z", value: 100 },
      { t: "2026-11-18T12:00:00Z", value: 120 },
      { t: "2026-11-20T00:00:00Z", value: now },
    ]);
    expect(f.platform_extra).toMatchObject({ readings: 3, change: now - 100 });
  });

  it("range today is one day", async () => {
    const { ctx } = simCtx();
    const r = await accountWatch.run(
      {
        accounts: ["https://www.douyin.com/user/MS4wLjABAAAAq3cW9rYkF2pXn8bLd5Hj0tVzS7mGe4aUo1iR6wKxQyE"],
        range: "today",
      },
      ctx,
    );
    expectDaily(ofKind(r.items, "timeseries").find((s) => s.metric === "engagement")!, 1);
  });

  it("a missing account is a warning and its posts are not read; an account without follower counts has no follower series", async () => {
    const { ctx, calls } = simCtx();
    const req = {
      accounts: [
        "https://www.zhihu.com/people/deleted-user-8841",
        "https://mp.weixin.qq.com/mp/profile_ext?action=home&__biz=MzA5NjQ%3D%3D",
      ],
    };
    const r = await accountWatch.run(req, ctx);
    expectValidRun("account_watch", planned(accountWatch.plan(req, ctx)), r);
    expect(r.status).toBe("ok");
    expect(calls.map((c) => `${c.platform}.${c.operation}`)).toEqual([
      "zhihu.user_profile",
      "wechat.user_profile",
      "wechat.user_posts",
    ]);
    expect(r.calls_made).toBe(3);
    expect(r.warnings).toEqual([
      "zhihu user_profile (https://www.zhihu.com/people/deleted-user-8841): This zhihu account is missing, private or deleted.",
      `${req.accounts[1]}: wechat shows no follower count for this account; no follower series.`,
    ]);
    expect(ofKind(r.items, "timeseries").map((s) => s.metric)).toEqual(["engagement"]);
  });

  it("is deterministic", async () => {
    expect(await accountWatch.run(REQ, simCtx().ctx)).toEqual(
      await accountWatch.run(REQ, simCtx({ ctx: { concurrency: 1 } }).ctx),
    );
  });

  it("every profile failing is an error run; the posts wave makes no call", async () => {
    const { ctx, sim } = simCtx();
    sim.setKnobs("*", { fault: "rate_limited" });
    const r = await accountWatch.run(REQ, ctx);
    expectValidRun("account_watch", planned(accountWatch.plan(REQ, ctx)), r);
    expect(r).toMatchObject({ status: "error", calls_made: 2, error: { code: "rate_limited", retry_after: 30 } });
    expect(r.steps.map((s) => [s.name, s.status, s.calls_done])).toEqual([
      ["profiles", "failed", 2],
      ["posts", "done", 0],
      ["aggregate", "failed", 0],
    ]);
  });
});
