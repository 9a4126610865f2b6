/** comment_insights: one comments call per target; keywords, sentiment and top comments recomputed from the comments. */
import type { CommentInsightsRequest, ContentItem } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import { commentInsights } from "../../src/tools/comment_insights.ts";
import { keywordCounts, sentimentOf } from "../../src/tools/text.ts";
import { expectShares, expectValidQuote, expectValidRun, ofKind, planned, simCtx } from "./helpers.ts";

const TARGETS = [
  "https://www.bilibili.com/video/BV1xK4y1a7Zq",
  "https://www.xiaohongshu.com/explore/6afd23b0000000001d03b7c4",
  "https://x.com/vercel/status/2122526005990306014",
  "youtube:Qx7pL2mR9sA",
];
const REQ: CommentInsightsRequest = { targets: TARGETS, limit: 50 };
const ids = (n: number) => Array.from({ length: n }, (_, i) => `weibo:50${String(i).padStart(14, "0")}`);

describe("comment_insights plan", () => {
  it("quotes one comments call per target", () => {
    const { ctx } = simCtx();
    const plan = planned(commentInsights.plan(REQ, ctx));
    const q = expectValidQuote("comment_insights", plan);
    expect(q.plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["comments", 4],
      ["aggregate", 0],
    ]);
    expect(q).toMatchObject({ mode: "inline", quote_credits: 4 });
    expect(plan.applied_params).toEqual({ targets: TARGETS, limit: 50, confirm: true });
  });

  it("runs inline up to 10 targets and in the background from 11", () => {
    const { ctx } = simCtx();
    expect(planned(commentInsights.plan({ targets: ids(10) }, ctx)).quote).toMatchObject({
      mode: "inline",
      calls_planned: 10,
      quote_credits: 10,
    });
    expect(planned(commentInsights.plan({ targets: ids(11) }, ctx)).quote).toMatchObject({
      mode: "background",
      calls_planned: 11,
      quote_credits: 11,
    });
    expect(planned(commentInsights.plan({ targets: ids(20), confirm: false }, ctx)).applied_params["confirm"]).toBe(
      false,
    );
  });

  it.each([
    ["https://b23.tv/Ab12Cd3", "invalid_params", /short link \(bilibili\)/],
    ["https://www.bilibili.com/", "invalid_params", /no post page on bilibili/],
    ["https://space.bilibili.com/517730921", "invalid_params", /link to an account on bilibili, not a post/],
    ["https://news.example.com/a/1", "invalid_params", /platform of .* cannot be told/],
    ["https://mp.weixin.qq.com/s/Xy3kLm9QpR2sT7uV1wZ0aB", "not_supported", /wechat does not offer comments/],
  ])("refuses the target %s (%s), naming it", (link, code, why) => {
    const { ctx } = simCtx();
    const r = commentInsights.plan({ targets: [TARGETS[0]!, link] }, ctx);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.refusal).toMatchObject({ code, param: "targets" });
    expect(r.refusal.message).toMatch(why);
    expect(r.refusal.message).toContain(link);
    if (code === "not_supported")
      expect(r.refusal).toMatchObject({
        reason: "no_such_capability",
        allowed: expect.not.arrayContaining(["wechat"]),
      });
  });

  it.each([
    [{ targets: TARGETS, limit: 51 }, "limit"],
    [{ targets: ids(21) }, "targets"],
    [{ targets: [] }, "targets"],
    [{ targets: TARGETS, include: ["comments"] }, "include"],
  ])("refuses %j with invalid_params", (body, param) => {
    const { ctx } = simCtx();
    expect(commentInsights.plan(body as CommentInsightsRequest, ctx)).toMatchObject({
      ok: false,
      refusal: { code: "invalid_params", param },
    });
  });
});

describe("comment_insights run", () => {
  it("counts keywords and sentiment of the comments fetched and keeps the most liked", async () => {
    const { ctx, calls } = simCtx();
    const plan = planned(commentInsights.plan(REQ, ctx));
    const r = await commentInsights.run(REQ, ctx);
    expectValidRun("comment_insights", plan, r);
    expect(r.status).toBe("ok");
    expect(calls.map((c) => [c.platform, c.operation, c.params])).toEqual([
      ["bilibili", "comments", { id: "BV1xK4y1a7Zq", limit: 50, sort: "most_liked" }],
      ["xiaohongshu", "comments", { id: "6afd23b0000000001d03b7c4", limit: 50, sort: "most_liked" }],
      ["x", "comments", { id: "2122526005990306014", limit: 50, sort: "most_liked" }],
      ["youtube", "comments", { id: "Qx7pL2mR9sA", limit: 50, sort: "most_liked" }],
    ]);
    const comments = calls.flatMap((c) => (c.outcome.status === "ok" ? (c.outcome.items as ContentItem[]) : []));
    const texts = comments.map((c) => c.text!);
    expect(texts.length).toBeGreaterThan(20);

    const [keywords, sentiment] = ofKind(r.items, "distribution");
    expect(keywords).toMatchObject({ dimension: "keyword", unit: "count" });
    const recount = keywordCounts(texts);
    for (const b of keywords!.buckets) expect(b.value).toBe(recount.get(b.label));
    const max = Math.max(...recount.values());
    expect(keywords!.buckets[0]!.value).toBe(max);
    expect(keywords!.platform_extra!["comments_read"]).toBe(comments.length);

    expect(sentiment).toMatchObject({ dimension: "sentiment", unit: "ratio" });
    expectShares(sentiment!.buckets);
    for (const b of sentiment!.buckets)
      expect(b.value).toBeCloseTo(texts.filter((t) => sentimentOf(t) === b.label).length / texts.length, 12);

    const top = ofKind(r.items, "item");
    expect(top).toHaveLength(10);
    const likes = top.map((c) => c.metrics!.likes!);
    expect(likes).toEqual([...likes].sort((a, b) => b - a));
    expect(likes[0]).toBe(Math.max(...comments.map((c) => c.metrics!.likes!)));
    for (const c of top) {
      expect(c.parent_id).toBeDefined();
      expect(c.platform_extra).toMatchObject({ sentiment: sentimentOf(c.text!) });
      expect(TARGETS).toContain(c.platform_extra!["target"]);
    }
  });

  it("is deterministic", async () => {
    expect(await commentInsights.run(REQ, simCtx().ctx)).toEqual(
      await commentInsights.run(REQ, simCtx({ ctx: { concurrency: 1 } }).ctx),
    );
  });

  it("a missing post is a warning; every target missing is an error run with not_found", async () => {
    const { ctx } = simCtx();
    const some = await commentInsights.run({ targets: ["zhihu:deleted-1", TARGETS[0]!] }, ctx);
    expect(some.status).toBe("ok");
    expect(some.warnings).toEqual([
      "zhihu comments (zhihu:deleted-1): This zhihu post is missing, private or deleted.",
    ]);
    const req = { targets: ["zhihu:deleted-1", "weibo:missing-2"] };
    const all = await commentInsights.run(req, ctx);
    expectValidRun("comment_insights", planned(commentInsights.plan(req, ctx)), all);
    expect(all).toMatchObject({
      status: "error",
      error: { code: "not_found", retryable: false, fix: { param: "targets" } },
      calls_made: 2,
      calls_charged: 0,
    });
  });

  it("no comments at all: empty", async () => {
    const { ctx, sim } = simCtx();
    sim.setKnobs("*", { fault: "empty" });
    const r = await commentInsights.run(REQ, ctx);
    expectValidRun("comment_insights", planned(commentInsights.plan(REQ, ctx)), r);
    expect(r).toMatchObject({ status: "empty", items: [], calls_charged: 4 });
  });

  it("a platform that does not answer in time is a timeout warning; all of them a timeout run", async () => {
    const { ctx, sim } = simCtx({ ctx: { callTimeoutMs: 30 } });
    sim.setKnobs("*", { latencyMs: 500 });
    const r = await commentInsights.run({ targets: TARGETS.slice(0, 2) }, ctx);
    expectValidRun("comment_insights", planned(commentInsights.plan({ targets: TARGETS.slice(0, 2) }, ctx)), r);
    expect(r).toMatchObject({ status: "timeout", error: { code: "timeout" } });
    expect(r.warnings).toHaveLength(2);
  });
});
