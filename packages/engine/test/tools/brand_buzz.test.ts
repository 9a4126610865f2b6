/** brand_buzz: quote by scale and platforms, refusals, and an analysis recomputed from the fetched posts. */
import type { BrandBuzzRequest, ContentItem, Platform, Step } from "@sdgw/types";
import { PLATFORMS } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import type { PlatformProvider, ProviderRequest } from "../../src/providers/port.ts";
import { engagementOf } from "../../src/tools/analysis.ts";
import { brandBuzz } from "../../src/tools/brand_buzz.ts";
import { keywordCounts, keywordsOf, sentimentOf } from "../../src/tools/text.ts";
import {
  ANCHOR,
  expectDaily,
  expectRanked,
  expectShares,
  expectValidQuote,
  expectValidRun,
  inDays,
  ofKind,
  planned,
  simCtx,
} from "./helpers.ts";

const REQ: BrandBuzzRequest = { query: "瑞幸咖啡", platforms: ["xiaohongshu", "weibo", "douyin"], window: "30d" };

describe("brand_buzz plan", () => {
  it("quotes a search page per platform and the comments of 2 posts per platform at scale small, 1 credit a call", () => {
    const { ctx } = simCtx();
    const plan = planned(brandBuzz.plan(REQ, ctx));
    const q = expectValidQuote("brand_buzz", plan);
    expect(q.plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["search", 3],
      ["comments", 6],
      ["aggregate", 0],
    ]);
    expect(q).toMatchObject({ mode: "inline", quote_credits: 9, calls_planned: 9, waves_planned: 3 });
    expect(plan.applied_params).toEqual({
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin"],
      window: "30d",
      scale: "small",
      confirm: true,
    });
  });

  it("scale standard reads 3 pages and 5 posts' comments per platform; wechat has no comments", () => {
    const { ctx } = simCtx();
    const q = expectValidQuote(
      "brand_buzz",
      planned(brandBuzz.plan({ query: 1, platforms: ["wechat", "x"], scale: "standard", max_cost_credits: 50 }, ctx)),
    );
    expect(q.plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["search", 6],
      ["comments", 5],
      ["aggregate", 0],
    ]);
    expect(q.mode).toBe("background");
  });

  it("reads every platform when platforms is absent or all, and says so", () => {
    const { ctx } = simCtx();
    for (const platforms of [undefined, "all" as const]) {
      const plan = planned(brandBuzz.plan({ query: "露营", ...(platforms ? { platforms } : {}) }, ctx));
      expectValidQuote("brand_buzz", plan);
      expect(plan.applied_params["platforms"]).toEqual([...PLATFORMS]);
      expect(plan.quote.calls_planned).toBe(10 + 9 * 2);
      expect(plan.warnings[0]).toMatch(
        platforms
          ? /^platforms=all; expanded to 10 platforms: xiaohongshu, douyin/
          : /^platforms not given: every platform that offers search is read; expanded to 10 platforms/,
      );
    }
  });

  it("switches from inline to background above the threshold", () => {
    const { ctx } = simCtx();
    expect(planned(brandBuzz.plan({ query: "q", platforms: ["x", "weibo", "reddit"] }, ctx)).quote).toMatchObject({
      calls_planned: 9,
      mode: "inline",
    });
    expect(
      planned(brandBuzz.plan({ query: "q", platforms: ["x", "weibo", "reddit", "zhihu"] }, ctx)).quote,
    ).toMatchObject({ calls_planned: 12, mode: "background" });
    expect(
      planned(
        brandBuzz.plan({ query: "q", platforms: ["x", "weibo", "reddit", "zhihu"] }, { ...ctx, inlineMaxCalls: 12 }),
      ).quote.mode,
    ).toBe("inline");
    expect(
      planned(
        brandBuzz.plan({ query: "q", platforms: ["x", "weibo", "reddit", "zhihu"] }, { ...ctx, inlineMaxCalls: 11 }),
      ).quote.mode,
    ).toBe("background");
  });

  it("refuses scale large: plan_limit on a free account, not_available_yet on a paid one (D24)", () => {
    const { ctx } = simCtx();
    expect(brandBuzz.plan({ ...REQ, scale: "large" }, { ...ctx, accountPlan: "free" })).toEqual({
      ok: false,
      refusal: {
        code: "plan_limit",
        reason: "scale_needs_purchase",
        param: "scale",
        message: expect.stringMatching(/purchase/),
      },
    });
    expect(brandBuzz.plan({ ...REQ, scale: "large" }, { providers: ctx.providers })).toMatchObject({
      ok: false,
      refusal: { code: "plan_limit" },
    });
    expect(brandBuzz.plan({ ...REQ, scale: "large" }, { ...ctx, accountPlan: "paid" })).toEqual({
      ok: false,
      refusal: {
        code: "not_supported",
        reason: "not_available_yet",
        param: "scale",
        message: expect.stringMatching(/not available yet/),
        allowed: ["small", "standard"],
      },
    });
    expect(brandBuzz.plan({ ...REQ, scale: "large", confirm: true }, { ...ctx, accountPlan: "paid" })).toMatchObject({
      ok: false,
      refusal: { reason: "not_available_yet", param: "confirm" },
    });
    // D73: the quote of scale=large is never refused, on either plan
    for (const accountPlan of ["free", "paid"] as const) {
      const quoted = brandBuzz.plan({ ...REQ, scale: "large", confirm: false }, { ...ctx, accountPlan });
      expect(quoted).toMatchObject({ ok: true, plan: { applied_params: { scale: "large" } } });
    }
  });

  it.each([
    [{ ...REQ, window: "14d" }, "window", ["7d", "30d"]],
    [{ ...REQ, scale: "huge" }, "scale", ["small", "standard", "large"]],
    [{ ...REQ, platforms: ["x", "weibo", "reddit", "zhihu", "douyin", "bilibili"] }, "platforms", undefined],
    [{ ...REQ, range: "7d" }, "range", undefined],
    [{ ...REQ, query: "" }, "query", undefined],
  ])("refuses %j with invalid_params naming the parameter", (body, param, allowed) => {
    const { ctx } = simCtx();
    const r = brandBuzz.plan(body as BrandBuzzRequest, ctx);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.refusal).toMatchObject({ code: "invalid_params", param });
      if (allowed) expect(r.refusal).toMatchObject({ allowed });
    }
    if (param === "window") expect(!r.ok && r.refusal.message).toMatch(/window.*not a value this tool takes/);
  });

  it("run rejects a request the plan refuses", async () => {
    const { ctx } = simCtx();
    await expect(brandBuzz.run({ ...REQ, scale: "large" }, ctx)).rejects.toMatchObject({
      name: "ToolRefusedError",
      refusal: { code: "not_supported" },
    });
  });
});

describe("brand_buzz run", () => {
  it("answers every item kind, computed from the fetched posts and comments", async () => {
    const { ctx, calls } = simCtx();
    const plan = planned(brandBuzz.plan(REQ, ctx));
    const steps: Step[][] = [];
    const r = await brandBuzz.run(REQ, ctx, (s) => steps.push(s));
    expectValidRun("brand_buzz", plan, r);
    expect(r.status).toBe("ok");
    expect(new Set(r.items.map((i) => i.kind))).toEqual(
      new Set(["distribution", "timeseries", "leaderboard", "profile_card", "item"]),
    );
    expect(steps.map((s) => s.map((x) => x.status))).toEqual([
      ["done", "pending", "pending"],
      ["done", "done", "pending"],
      ["done", "done", "done"],
    ]);

    // Recount from what the providers answered.
    const posts = new Map<string, { platform: Platform; item: ContentItem }>();
    for (const c of calls.filter((c) => c.operation === "search")) {
      expect(c.params).toMatchObject({
        query: "瑞幸咖啡",
        type: "content",
        sort: "latest",
        time_range: "30d",
        count: 20,
      });
      if (c.outcome.status !== "ok") continue;
      for (const it of c.outcome.items)
        if (it.kind === "item" && inDays(it.published_at, 30))
          posts.set(`${c.platform}|${it.id}`, { platform: c.platform, item: it });
    }
    const mentions = [...posts.values()];
    expect(mentions.length).toBeGreaterThan(10);

    const share = ofKind(r.items, "distribution").find((d) => d.dimension === "platform")!;
    expect(share.unit).toBe("ratio");
    expectShares(share.buckets);
    for (const b of share.buckets)
      expect(b.value).toBeCloseTo(mentions.filter((m) => m.platform === b.label).length / mentions.length, 12);
    expect(share.buckets.map((b) => b.label)).toEqual(REQ.platforms);

    const [perDay, engagement] = ofKind(r.items, "timeseries");
    expect(perDay!.metric).toBe("mentions");
    expectDaily(perDay!, 30);
    expectDaily(engagement!, 30);
    for (const p of perDay!.points)
      expect(p.value).toBe(
        mentions.filter(
          (m) =>
            Date.parse(m.item.published_at!) >= Date.parse(p.t) &&
            Date.parse(m.item.published_at!) < Date.parse(p.t) + 86_400_000,
        ).length,
      );
    expect(perDay!.points.reduce((a, p) => a + p.value, 0)).toBe(mentions.length);
    expect(engagement!.points.reduce((a, p) => a + p.value, 0)).toBe(
      mentions.reduce((a, m) => a + engagementOf(m.item), 0),
    );

    const keywords = ofKind(r.items, "distribution").find((d) => d.dimension === "keyword")!;
    expect(keywords.unit).toBe("count");
    const recount = keywordCounts(
      mentions.map((m) => [m.item.title, m.item.text].filter(Boolean).join(" ")),
      new Set(keywordsOf("瑞幸咖啡")),
    );
    for (const b of keywords.buckets) expect(b.value).toBe(recount.get(b.label));
    expect(keywords.buckets.some((b) => b.label === "咖啡")).toBe(false);

    const comments = calls
      .filter((c) => c.operation === "comments")
      .flatMap((c) => (c.outcome.status === "ok" ? c.outcome.items : []));
    const sentiment = ofKind(r.items, "distribution").find((d) => d.dimension === "sentiment")!;
    expectShares(sentiment.buckets);
    const texts = comments.map((c) => (c.kind === "item" ? c.text! : ""));
    expect(sentiment.platform_extra).toMatchObject({ basis: "comments", texts: texts.length });
    expect(sentiment.buckets.map((b) => b.value)).toEqual(
      ["positive", "neutral", "negative"].map((s) => texts.filter((t) => sentimentOf(t) === s).length / texts.length),
    );

    // The comments read are those of each platform's most engaging posts.
    for (const p of REQ.platforms as Platform[]) {
      const top2 = mentions
        .filter((m) => m.platform === p)
        .sort((a, b) => engagementOf(b.item) - engagementOf(a.item))
        .slice(0, 2)
        .map((m) => m.item.id);
      expect(calls.filter((c) => c.operation === "comments" && c.platform === p).map((c) => c.params["id"])).toEqual(
        top2,
      );
    }

    const board = ofKind(r.items, "leaderboard");
    expect(board).toHaveLength(10);
    expectRanked(board);
    for (const b of board) {
      const m = posts.get(`${b.platform_extra!["platform"]}|${b.platform_extra!["id"]}`)!;
      expect(b.heat).toBe(engagementOf(m.item));
      expect(b.url).toBe(m.item.url);
    }
    expect(board[0]!.heat).toBe(Math.max(...mentions.map((m) => engagementOf(m.item))));

    const voices = ofKind(r.items, "profile_card");
    expect(voices.length).toBeGreaterThan(0);
    const engagementOfVoice = (v: (typeof voices)[number]) =>
      mentions
        .filter(
          (m) => m.platform === v.platform_extra!["platform"] && (m.item.author!.id || m.item.author!.name) === v.id,
        )
        .reduce((a, m) => a + engagementOf(m.item), 0);
    for (const v of voices) expect(v.platform_extra!["engagement"]).toBe(engagementOfVoice(v));
    const top = ofKind(r.items, "item");
    expect(top).toHaveLength(3);
    expect(top[0]!.id).toBe(board[0]!.platform_extra!["id"]);
  });

  it("is deterministic: the same request gives the same answer", async () => {
    const a = await brandBuzz.run(REQ, simCtx().ctx);
    const b = await brandBuzz.run(REQ, simCtx({ ctx: { concurrency: 1 } }).ctx);
    expect(a).toEqual(b);
  });

  it("pages on while the posts stay in the window and stops at the first older one", async () => {
    const { ctx } = simCtx();
    const seen: Array<Record<string, unknown>> = [];
    const search: PlatformProvider = {
      ...ctx.providers.x,
      async call(req: ProviderRequest) {
        if (req.operation !== "search") return ctx.providers.x.call(req);
        seen.push(req.params);
        const page = seen.length;
        const age = page === 2 ? 40 * 86_400_000 : 3_600_000;
        const items = Array.from({ length: 20 }, (_, i) => ({
          kind: "item" as const,
          id: `p${page}-${i}`,
          text: `post ${i}`,
          published_at: new Date(ANCHOR - age - i * 1000).toISOString(),
          metrics: { likes: i },
        }));
        return { status: "ok", items, page: { has_more: true, cursor: `c${page}` } };
      },
    };
    const r = await brandBuzz.run(
      { query: "q", platforms: ["x"], window: "7d", scale: "standard" },
      { ...ctx, providers: { ...ctx.providers, x: search } },
    );
    expect(seen.map((p) => p["cursor"])).toEqual([undefined, "c1"]);
    expect(ofKind(r.items, "distribution").find((d) => d.dimension === "platform")!.platform_extra!["total"]).toBe(20);
    expect(r.warnings).toContain("20 of 40 posts found were outside the 7d window (or undated) and were left out.");
  });

  it("a failing platform is a warning; the others are analysed", async () => {
    const { ctx, sim } = simCtx();
    sim.setKnobs("weibo", { fault: "upstream_error" });
    const plan = planned(brandBuzz.plan(REQ, ctx));
    const r = await brandBuzz.run(REQ, ctx);
    expectValidRun("brand_buzz", plan, r);
    expect(r.status).toBe("ok");
    expect(r.warnings).toContain(
      "weibo search: weibo answered with a server error (502); nothing was charged. A retry later usually works.",
    );
    expect(
      ofKind(r.items, "distribution")
        .find((d) => d.dimension === "platform")!
        .buckets.find((b) => b.label === "weibo")!.value,
    ).toBe(0);
  });

  it("every call failed: status error with the envelope error", async () => {
    const { ctx, sim } = simCtx();
    sim.setKnobs("*", { fault: "upstream_error" });
    const plan = planned(brandBuzz.plan(REQ, ctx));
    const r = await brandBuzz.run(REQ, ctx);
    expectValidRun("brand_buzz", plan, r);
    expect(r).toMatchObject({
      status: "error",
      items: [],
      calls_made: 3,
      calls_charged: 0,
      error: { code: "upstream_error", retryable: true },
    });
    expect(r.steps.map((s) => s.status)).toEqual(["failed", "done", "failed"]);
  });

  it("nothing found: empty", async () => {
    const { ctx } = simCtx();
    const req: BrandBuzzRequest = { query: "zzz no such brand", platforms: ["x", "weibo"] };
    const r = await brandBuzz.run(req, ctx);
    expectValidRun("brand_buzz", planned(brandBuzz.plan(req, ctx)), r);
    expect(r).toMatchObject({ status: "empty", items: [], calls_made: 2, calls_charged: 2 });
  });
});
