/** batch_stats: one detail call per target (duplicates kept), rows in request order, comments when include asks. */
import type { BatchStatsRequest, ContentItem } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import { engagementOf } from "../../src/tools/analysis.ts";
import { batchStats } from "../../src/tools/batch_stats.ts";
import { expectValidQuote, expectValidRun, ofKind, planned, simCtx } from "./helpers.ts";

const TARGETS = [
  "https://www.douyin.com/video/7709876897014223310",
  "https://www.kuaishou.com/short-video/3xg9avuebhtfcku",
  "https://www.xiaohongshu.com/explore/6afbc401000000001f03c9d2",
  "https://www.bilibili.com/video/BV1Gz4y1k7Pe",
];
const REQ: BatchStatsRequest = { targets: TARGETS, include: ["metrics"], format: "csv" };
const many = (n: number) =>
  Array.from(
    { length: n },
    (_, i) => `https://www.reddit.com/r/espresso/comments/ab${String(i).padStart(4, "0")}/post/`,
  );

describe("batch_stats plan", () => {
  it("quotes a detail call per target, and a comments call per target when include has comments", () => {
    const { ctx } = simCtx();
    const plan = planned(batchStats.plan(REQ, ctx));
    expect(expectValidQuote("batch_stats", plan).plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["details", 4],
      ["aggregate", 0],
    ]);
    expect(plan.applied_params).toEqual({ targets: TARGETS, include: ["metrics"], format: "csv", confirm: true });
    const withComments = planned(batchStats.plan({ targets: TARGETS, include: ["metrics", "comments"] }, ctx));
    expect(expectValidQuote("batch_stats", withComments).plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["details", 4],
      ["comments", 4],
      ["aggregate", 0],
    ]);
    expect(withComments.applied_params["format"]).toBe("json");
  });

  it("runs inline up to 10 calls", () => {
    const { ctx } = simCtx();
    expect(planned(batchStats.plan({ targets: many(10) }, ctx)).quote).toMatchObject({
      mode: "inline",
      quote_credits: 10,
    });
    expect(planned(batchStats.plan({ targets: many(11) }, ctx)).quote).toMatchObject({
      mode: "background",
      quote_credits: 11,
    });
    expect(planned(batchStats.plan({ targets: many(5), include: ["comments"] }, ctx)).quote).toMatchObject({
      mode: "inline",
      quote_credits: 10,
    });
    expect(planned(batchStats.plan({ targets: many(6), include: ["comments"] }, ctx)).quote).toMatchObject({
      mode: "background",
      quote_credits: 12,
    });
  });

  it("refuses comments for a post whose platform has none (seed case 8), and include values it does not offer", () => {
    const { ctx } = simCtx();
    const r = batchStats.plan(
      { targets: [TARGETS[0]!, "https://mp.weixin.qq.com/s/Xy3kLm9QpR2sT7uV1wZ0aB"], include: ["comments"] },
      ctx,
    );
    expect(r).toMatchObject({ ok: false, refusal: { code: "invalid_params", param: "include", allowed: ["metrics"] } });
    expect(!r.ok && r.refusal.message).toMatch(/^`include` does not offer comments for this call/);
    expect(
      batchStats.plan({ targets: TARGETS, include: ["posts"] } as unknown as BatchStatsRequest, ctx),
    ).toMatchObject({
      ok: false,
      refusal: {
        code: "invalid_params",
        param: "include",
        message: "`include` does not offer posts for this call.",
        allowed: ["metrics", "comments"],
      },
    });
  });

  it.each([
    [{ targets: TARGETS, format: "xml" }, "format", "`format` is one of `json`, `csv`, `ndjson`."],
    [{ targets: [...TARGETS, "https://v.douyin.com/iRNBho6u/"] }, "targets", undefined],
    [
      { targets: ["https://www.douyin.com/user/MS4wLjABAAAAq3cW9rYkF2pXn8bLd5Hj0tVzS7mGe4aUo1iR6wKxQyE"] },
      "targets",
      undefined,
    ],
    [{ targets: many(21) }, "targets", "One request takes at most 20 platforms or targets."],
  ])("refuses %j with invalid_params", (body, param, message) => {
    const { ctx } = simCtx();
    const r = batchStats.plan(body as BatchStatsRequest, ctx);
    expect(r).toMatchObject({ ok: false, refusal: { code: "invalid_params", param } });
    if (message) expect(!r.ok && r.refusal.message).toBe(message);
  });
});

describe("batch_stats run", () => {
  it("answers one row per target in request order with its current metrics", async () => {
    const { ctx, calls } = simCtx();
    const plan = planned(batchStats.plan(REQ, ctx));
    const r = await batchStats.run(REQ, ctx);
    expectValidRun("batch_stats", plan, r);
    const rows = ofKind(r.items, "item");
    expect(rows.map((i) => i.id)).toEqual([
      "7709876897014223310",
      "3xg9avuebhtfcku",
      "6afbc401000000001f03c9d2",
      "BV1Gz4y1k7Pe",
    ]);
    rows.forEach((row, i) => {
      const fetched = (calls[i]!.outcome as { items: ContentItem[] }).items[0]!;
      expect(row.metrics).toEqual(fetched.metrics);
      expect(row.platform_extra).toMatchObject({
        platform: calls[i]!.platform,
        target: TARGETS[i],
        engagement: engagementOf(fetched),
      });
    });
  });

  it("keeps duplicates (each a call), leaves metrics out unless asked, adds comments after the rows", async () => {
    const { ctx, calls } = simCtx();
    const req: BatchStatsRequest = { targets: [TARGETS[3]!, TARGETS[3]!, TARGETS[0]!], include: ["comments"] };
    const r = await batchStats.run(req, ctx);
    expectValidRun("batch_stats", planned(batchStats.plan(req, ctx)), r);
    expect(calls.map((c) => c.operation)).toEqual(["detail", "detail", "detail", "comments", "comments", "comments"]);
    const items = ofKind(r.items, "item");
    expect(items.slice(0, 3).map((i) => i.id)).toEqual(["BV1Gz4y1k7Pe", "BV1Gz4y1k7Pe", "7709876897014223310"]);
    expect(items.slice(0, 3).every((i) => i.metrics === undefined && i.parent_id === undefined)).toBe(true);
    const comments = items.slice(3);
    const fetched = calls
      .filter((c) => c.operation === "comments")
      .flatMap((c) => (c.outcome as { items: ContentItem[] }).items);
    expect(comments.map((c) => c.id)).toEqual(fetched.map((c) => c.id));
    expect(comments.every((c) => c.parent_id !== undefined && typeof c.platform_extra!["target"] === "string")).toBe(
      true,
    );
    expect(comments.length).toBeLessThanOrEqual(30);
  });

  it("a missing post is a warning; all missing is an error run", async () => {
    const { ctx } = simCtx();
    const r = await batchStats.run({ targets: ["douyin:deleted-77", TARGETS[0]!] }, ctx);
    expect(r).toMatchObject({
      status: "ok",
      warnings: ["douyin detail (douyin:deleted-77): This douyin post is missing, private or deleted."],
    });
    expect(ofKind(r.items, "item")).toHaveLength(1);
    const req = { targets: ["douyin:deleted-77"] };
    const gone = await batchStats.run(req, ctx);
    expectValidRun("batch_stats", planned(batchStats.plan(req, ctx)), gone);
    expect(gone).toMatchObject({ status: "error", error: { code: "not_found" } });
  });

  it("is deterministic", async () => {
    expect(await batchStats.run(REQ, simCtx().ctx)).toEqual(
      await batchStats.run(REQ, simCtx({ ctx: { concurrency: 1 } }).ctx),
    );
  });
});
