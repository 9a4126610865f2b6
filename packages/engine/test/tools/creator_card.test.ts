/** creator_card: a profile per account, its recent posts when include asks, metrics computed from them. */
import type { ContentItem, CreatorCardRequest } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import { engagementOf } from "../../src/tools/analysis.ts";
import { creatorCard } from "../../src/tools/creator_card.ts";
import { expectValidQuote, expectValidRun, ofKind, planned, simCtx } from "./helpers.ts";

const ACCOUNTS = [
  "https://space.bilibili.com/517730921",
  "https://www.xiaohongshu.com/user/profile/64a8d1e2000000001c00f3b6",
];
const REQ: CreatorCardRequest = { accounts: ACCOUNTS };
const many = (n: number) => Array.from({ length: n }, (_, i) => `kuaishou:3xabcdefgh${String(i).padStart(3, "0")}`);

describe("creator_card plan", () => {
  it("quotes a profile per account, and its posts when include has posts or metrics (both by default)", () => {
    const { ctx } = simCtx();
    const plan = planned(creatorCard.plan(REQ, ctx));
    const q = expectValidQuote("creator_card", plan);
    expect(q.plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["profiles", 2],
      ["posts", 2],
      ["aggregate", 0],
    ]);
    expect(plan.applied_params).toEqual({ accounts: ACCOUNTS, include: ["posts", "metrics"], confirm: true });
    const bare = expectValidQuote("creator_card", planned(creatorCard.plan({ accounts: ACCOUNTS, include: [] }, ctx)));
    expect(bare.plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["profiles", 2],
      ["aggregate", 0],
    ]);
  });

  it("runs inline up to 5 accounts with posts and 10 without", () => {
    const { ctx } = simCtx();
    expect(planned(creatorCard.plan({ accounts: many(5) }, ctx)).quote).toMatchObject({
      mode: "inline",
      quote_credits: 10,
    });
    expect(planned(creatorCard.plan({ accounts: many(6), include: ["metrics"] }, ctx)).quote).toMatchObject({
      mode: "background",
      quote_credits: 12,
    });
    expect(planned(creatorCard.plan({ accounts: many(10), include: [] }, ctx)).quote).toMatchObject({
      mode: "inline",
      quote_credits: 10,
    });
  });

  it("refuses include values it does not offer, and repeated ones", () => {
    const { ctx } = simCtx();
    const r = creatorCard.plan({ accounts: ACCOUNTS, include: ["comments"] } as unknown as CreatorCardRequest, ctx);
    expect(r).toEqual({
      ok: false,
      refusal: {
        code: "invalid_params",
        param: "include",
        message: "`include` does not offer comments for this call.",
        allowed: ["posts", "metrics"],
      },
    });
    expect(creatorCard.plan({ accounts: ACCOUNTS, include: ["posts", "posts"] }, ctx)).toMatchObject({
      ok: false,
      refusal: { param: "include" },
    });
  });

  it("refuses an account link it cannot tell, naming it", () => {
    const { ctx } = simCtx();
    const r = creatorCard.plan({ accounts: ["https://b23.tv/Ab12Cd3"] }, ctx);
    expect(r).toMatchObject({
      ok: false,
      refusal: {
        code: "invalid_params",
        param: "accounts",
        message: expect.stringContaining("https://b23.tv/Ab12Cd3"),
      },
    });
  });
});

describe("creator_card run", () => {
  it("gives each account its card with metrics from its recent posts, then its latest posts", async () => {
    const { ctx, calls } = simCtx();
    const plan = planned(creatorCard.plan(REQ, ctx));
    const r = await creatorCard.run(REQ, ctx);
    expectValidRun("creator_card", plan, r);
    expect(r.items.map((i) => i.kind)).toEqual([
      "profile_card",
      "item",
      "item",
      "item",
      "item",
      "item",
      "profile_card",
      "item",
      "item",
      "item",
      "item",
      "item",
    ]);
    const cards = ofKind(r.items, "profile_card");
    cards.forEach((card, i) => {
      const posts = (
        calls.find(
          (c) => c.operation === "user_posts" && c.params["id"] === ["517730921", "64a8d1e2000000001c00f3b6"][i],
        )!.outcome as { items: ContentItem[] }
      ).items;
      const eng = posts.map(engagementOf);
      const metrics = card.platform_extra!["metrics"] as Record<string, number>;
      expect(metrics["posts_read"]).toBe(posts.length);
      expect(metrics["avg_engagement"]).toBeCloseTo(eng.reduce((a, b) => a + b, 0) / posts.length, 2);
      expect(metrics["avg_likes"]).toBeCloseTo(
        posts.reduce((a, p) => a + (p.metrics!.likes ?? 0), 0) / posts.length,
        2,
      );
      const sorted = [...eng].sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      expect(metrics["median_engagement"]).toBe(
        sorted.length % 2 ? sorted[mid] : (sorted[mid - 1]! + sorted[mid]!) / 2,
      );
      if (card.followers)
        expect(metrics["engagement_rate"]).toBeCloseTo(metrics["avg_engagement"]! / card.followers, 5);
      expect(card.platform_extra).toMatchObject({ account: ACCOUNTS[i] });
      const shown = r.items.slice(r.items.indexOf(card) + 1, r.items.indexOf(card) + 6) as ContentItem[];
      const latest = [...posts].sort((a, b) => Date.parse(b.published_at!) - Date.parse(a.published_at!)).slice(0, 5);
      expect(shown.map((p) => p.id)).toEqual(latest.map((p) => p.id));
    });
  });

  it("include metrics only: cards, no posts; include none: one call per account", async () => {
    const { ctx, calls } = simCtx();
    const r = await creatorCard.run({ accounts: ACCOUNTS, include: ["metrics"] }, ctx);
    expect(r.items.map((i) => i.kind)).toEqual(["profile_card", "profile_card"]);
    const bare = await creatorCard.run({ accounts: ACCOUNTS, include: [] }, ctx);
    expect(bare.calls_made).toBe(2);
    expect(ofKind(bare.items, "profile_card").every((c) => c.platform_extra!["metrics"] === undefined)).toBe(true);
    expect(calls).toHaveLength(6);
  });

  it("a missing account is left out with a warning, and its posts are not read; all missing is a not_found error run", async () => {
    const { ctx } = simCtx();
    const r = await creatorCard.run(
      { accounts: ["https://www.zhihu.com/people/deleted-user-8841", ACCOUNTS[0]!] },
      ctx,
    );
    expect(r).toMatchObject({ status: "ok", calls_made: 3 });
    expect(ofKind(r.items, "profile_card").map((c) => c.id)).toEqual(["517730921"]);
    const req: CreatorCardRequest = {
      accounts: ["https://www.zhihu.com/people/deleted-user-8841"],
      include: ["posts", "metrics"],
    };
    const gone = await creatorCard.run(req, ctx);
    expectValidRun("creator_card", planned(creatorCard.plan(req, ctx)), gone);
    expect(gone).toMatchObject({
      status: "error",
      calls_made: 1,
      error: {
        code: "not_found",
        retryable: false,
        fix: {
          param: "accounts",
          note: "Check https://www.zhihu.com/people/deleted-user-8841, or remove it from accounts; nothing was charged for it.",
        },
      },
    });
    expect(gone.steps.map((s) => [s.name, s.status, s.calls_done])).toEqual([
      ["profiles", "failed", 1],
      ["posts", "done", 0],
      ["aggregate", "failed", 0],
    ]);
  });

  it("is deterministic", async () => {
    expect(await creatorCard.run(REQ, simCtx().ctx)).toEqual(
      await creatorCard.run(REQ, simCtx({ ctx: { concurrency: 1 } }).ctx),
    );
  });
});
