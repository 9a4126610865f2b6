/** viral_finder: posts whose engagement is far above their author's median, recomputed from the fetched posts. */
import type { ContentItem, Platform, ViralFinderRequest } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import { engagementOf } from "../../src/tools/analysis.ts";
import { VIRAL_MIN_RATIO, viralFinder } from "../../src/tools/viral_finder.ts";
import { expectRanked, expectValidQuote, expectValidRun, inDays, ofKind, planned, simCtx } from "./helpers.ts";

const REQ: ViralFinderRequest = { query: "露营", platforms: ["douyin", "weibo", "bilibili"], window: "30d", count: 8 };

const med = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

describe("viral_finder plan", () => {
  it("quotes a search per platform and two authors' posts per post asked for", () => {
    const { ctx } = simCtx();
    const plan = planned(viralFinder.plan(REQ, ctx));
    expect(expectValidQuote("viral_finder", plan).plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["search", 3],
      ["posts", 16],
      ["aggregate", 0],
    ]);
    expect(plan.applied_params).toEqual({
      query: "露营",
      platforms: ["douyin", "weibo", "bilibili"],
      window: "30d",
      count: 8,
      confirm: true,
    });
  });

  it("switches to background above 10 calls", () => {
    const { ctx } = simCtx();
    expect(planned(viralFinder.plan({ query: "q", platforms: ["x"], count: 4 }, ctx)).quote).toMatchObject({
      calls_planned: 9,
      mode: "inline",
    });
    expect(planned(viralFinder.plan({ query: "q", platforms: ["x"], count: 5 }, ctx)).quote).toMatchObject({
      calls_planned: 11,
      mode: "background",
    });
    expect(planned(viralFinder.plan({ query: "q" }, ctx)).quote).toMatchObject({
      calls_planned: 30,
      quote_credits: 30,
    });
  });

  it.each([
    [{ ...REQ, window: "1d" }, "window"],
    [{ ...REQ, count: 0 }, "count"],
    [{ ...REQ, scale: "small" }, "scale"],
  ])("refuses %j with invalid_params", (body, param) => {
    const { ctx } = simCtx();
    expect(viralFinder.plan(body as ViralFinderRequest, ctx)).toMatchObject({
      ok: false,
      refusal: { code: "invalid_params", param },
    });
  });
});

describe("viral_finder run", () => {
  it("ranks the posts far above their author's median engagement, recomputed from the fetched posts", async () => {
    const { ctx, calls } = simCtx();
    const plan = planned(viralFinder.plan(REQ, ctx));
    const r = await viralFinder.run(REQ, ctx);
    expectValidRun("viral_finder", plan, r);
    expect(r.status).toBe("ok");

    const found: Array<{ platform: Platform; item: ContentItem }> = [];
    for (const c of calls.filter((c) => c.operation === "search")) {
      expect(c.params).toMatchObject({ sort: "most_liked", time_range: "30d", count: 20 });
      for (const it of (c.outcome as { items: ContentItem[] }).items)
        if (inDays(it.published_at, 30)) found.push({ platform: c.platform, item: it });
    }
    found.sort(
      (a, b) =>
        engagementOf(b.item) - engagementOf(a.item) ||
        (`${a.platform}|${a.item.id}` < `${b.platform}|${b.item.id}` ? -1 : 1),
    );
    const authors: string[] = [];
    for (const f of found) {
      const key = `${f.platform}|${f.item.author!.id}`;
      if (!authors.includes(key) && authors.length < 16) authors.push(key);
    }
    const read = calls.filter((c) => c.operation === "user_posts");
    expect(read.map((c) => `${c.platform}|${c.params["id"]}`)).toEqual(authors);

    // Every judged post, its ratio to the median of its author's other posts.
    const expected: Array<{ id: string; ratio: number }> = [];
    for (const c of read) {
      const mine = found.filter((f) => f.platform === c.platform && f.item.author!.id === c.params["id"]);
      const others = (c.outcome as { items: ContentItem[] }).items.filter((p) => !mine.some((m) => m.item.id === p.id));
      if (others.length < 3) continue;
      const m = med(others.map(engagementOf));
      for (const p of mine) {
        const ratio = engagementOf(p.item) / Math.max(m, 1);
        if (ratio >= VIRAL_MIN_RATIO) expected.push({ id: p.item.id, ratio });
      }
    }
    expected.sort((a, b) => b.ratio - a.ratio);
    const board = ofKind(r.items, "leaderboard");
    expect(board.length).toBe(Math.min(8, expected.length));
    expect(board.length).toBeGreaterThan(0);
    expectRanked(board);
    board.forEach((b, i) => {
      expect(b.platform_extra!["id"]).toBe(expected[i]!.id);
      expect(b.heat).toBe(Math.round(expected[i]!.ratio * 100) / 100);
      expect(b.heat!).toBeGreaterThanOrEqual(VIRAL_MIN_RATIO);
    });
    expect(ofKind(r.items, "item").map((i) => i.id)).toEqual(board.map((b) => b.platform_extra!["id"]));
  });

  it("is deterministic", async () => {
    expect(await viralFinder.run(REQ, simCtx().ctx)).toEqual(
      await viralFinder.run(REQ, simCtx({ ctx: { concurrency: 1 } }).ctx),
    );
  });

  it("nothing on the topic: empty; every search failing: an error run", async () => {
    const { ctx, sim } = simCtx();
    const empty = await viralFinder.run({ query: "无结果", platforms: ["weibo"] }, ctx);
    expectValidRun("viral_finder", planned(viralFinder.plan({ query: "无结果", platforms: ["weibo"] }, ctx)), empty);
    expect(empty).toMatchObject({ status: "empty", calls_made: 1 });
    sim.setKnobs("*", { fault: "unavailable" });
    const failed = await viralFinder.run(REQ, ctx);
    expectValidRun("viral_finder", planned(viralFinder.plan(REQ, ctx)), failed);
    expect(failed).toMatchObject({
      status: "error",
      calls_made: 3,
      error: { code: "temporarily_unavailable", fix: { action_url: "https://status.sdgw.dev" } },
    });
  });
});
