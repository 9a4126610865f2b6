/** find_creators: authors of matching posts ranked by relevant reach, profiles read best first, min_followers applied. */
import type { ContentItem, FindCreatorsRequest, Platform } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import { engagementOf } from "../../src/tools/analysis.ts";
import { findCreators } from "../../src/tools/find_creators.ts";
import { expectRanked, expectValidQuote, expectValidRun, ofKind, planned, simCtx, type Recorded } from "./helpers.ts";

const REQ: FindCreatorsRequest = { query: "home espresso", platforms: ["youtube", "reddit", "x"], count: 5 };

/** Authors of the search results with their relevant reach, best first (ties by key). */
function reachOf(
  calls: readonly Recorded[],
): Array<{ key: string; platform: Platform; id: string; reach: number; followers: number | undefined }> {
  const m = new Map<
    string,
    { key: string; platform: Platform; id: string; reach: number; followers: number | undefined }
  >();
  const seen = new Set<string>();
  for (const c of calls.filter((c) => c.operation === "search")) {
    if (c.outcome.status !== "ok") continue;
    for (const it of c.outcome.items as ContentItem[]) {
      if (seen.has(`${c.platform}|${it.id}`)) continue;
      seen.add(`${c.platform}|${it.id}`);
      const key = `${c.platform}|${it.author!.id}`;
      const e = m.get(key) ?? {
        key,
        platform: c.platform,
        id: it.author!.id!,
        reach: 0,
        followers: it.author!.followers,
      };
      e.reach += engagementOf(it);
      m.set(key, e);
    }
  }
  return [...m.values()].sort((a, b) => b.reach - a.reach || (a.key < b.key ? -1 : 1));
}

describe("find_creators plan", () => {
  it("quotes a search per platform and a profile per creator asked for (twice that with min_followers)", () => {
    const { ctx } = simCtx();
    let q = expectValidQuote("find_creators", planned(findCreators.plan(REQ, ctx)));
    expect(q.plan.map((s) => [s.name, s.calls_planned])).toEqual([
      ["search", 3],
      ["profiles", 5],
      ["aggregate", 0],
    ]);
    q = expectValidQuote("find_creators", planned(findCreators.plan({ ...REQ, min_followers: 1000 }, ctx)));
    expect(q).toMatchObject({ calls_planned: 13, quote_credits: 13, mode: "background" });
  });

  it("switches to background above 10 calls", () => {
    const { ctx } = simCtx();
    expect(planned(findCreators.plan({ query: "q", platforms: ["x"], count: 9 }, ctx)).quote).toMatchObject({
      calls_planned: 10,
      mode: "inline",
    });
    expect(planned(findCreators.plan({ query: "q", platforms: ["x"] }, ctx)).quote).toMatchObject({
      calls_planned: 11,
      mode: "background",
    });
    expect(planned(findCreators.plan({ query: "q", platforms: ["x"] }, ctx)).applied_params).toEqual({
      query: "q",
      platforms: ["x"],
      count: 10,
      min_followers: 0,
      confirm: true,
    });
  });

  it.each([
    [{ ...REQ, count: 21 }, "count"],
    [{ ...REQ, min_followers: -1 }, "min_followers"],
    [{ ...REQ, platforms: ["tiktok"] }, "platforms"],
    [{ ...REQ, window: "7d" }, "window"],
  ])("refuses %j with invalid_params", (body, param) => {
    const { ctx } = simCtx();
    expect(findCreators.plan(body as FindCreatorsRequest, ctx)).toMatchObject({
      ok: false,
      refusal: { code: "invalid_params", param },
    });
  });
});

describe("find_creators run", () => {
  it("ranks the authors by the engagement of their matching posts and reads the profiles of the best", async () => {
    const { ctx, calls } = simCtx();
    const plan = planned(findCreators.plan(REQ, ctx));
    const r = await findCreators.run(REQ, ctx);
    expectValidRun("find_creators", plan, r);
    expect(r.status).toBe("ok");
    const authors = reachOf(calls);
    const top = authors.slice(0, 5);
    expect(calls.filter((c) => c.operation === "user_profile").map((c) => `${c.platform}|${c.params["id"]}`)).toEqual(
      top.map((a) => a.key),
    );
    const board = ofKind(r.items, "leaderboard");
    expectRanked(board);
    expect(board.map((b) => b.heat)).toEqual(top.map((a) => a.reach));
    const cards = ofKind(r.items, "profile_card");
    expect(cards.map((c) => `${c.platform_extra!["platform"]}|${c.id}`)).toEqual(top.map((a) => a.key));
    for (const [i, c] of cards.entries())
      expect(c.platform_extra).toMatchObject({ rank: i + 1, relevant_reach: top[i]!.reach });
    expect(board.map((b) => b.title)).toEqual(cards.map((c) => c.name));
  });

  it("leaves out creators under min_followers, without a call when the search already shows their followers", async () => {
    const req: FindCreatorsRequest = {
      query: "露营",
      platforms: ["douyin", "weibo", "bilibili"],
      count: 4,
      min_followers: 200_000,
    };
    const { ctx, calls } = simCtx();
    const plan = planned(findCreators.plan(req, ctx));
    const r = await findCreators.run(req, ctx);
    expectValidRun("find_creators", plan, r);
    const cards = ofKind(r.items, "profile_card");
    expect(cards.length).toBeGreaterThan(0);
    for (const c of cards) expect(c.followers).toBeGreaterThanOrEqual(200_000);
    const profiled = new Set(
      calls.filter((c) => c.operation === "user_profile").map((c) => `${c.platform}|${c.params["id"]}`),
    );
    expect(profiled.size).toBeLessThanOrEqual(8);
    for (const a of reachOf(calls))
      if (a.followers !== undefined && a.followers < 200_000) expect(profiled.has(a.key)).toBe(false);
    expectRanked(ofKind(r.items, "leaderboard"));
  });

  it("creators without a follower count cannot pass min_followers: a warning says so", async () => {
    const { ctx } = simCtx();
    const r = await findCreators.run({ query: "理财", platforms: ["wechat"], count: 2, min_followers: 1 }, ctx);
    expect(r.status).toBe("empty");
    expect(r.warnings.at(-1)).toMatch(/^4 authors show no follower count/);
  });

  it("is deterministic", async () => {
    expect(await findCreators.run(REQ, simCtx().ctx)).toEqual(
      await findCreators.run(REQ, simCtx({ ctx: { concurrency: 1 } }).ctx),
    );
  });

  it("a failed profile keeps the creator with what the search showed", async () => {
    const { ctx, calls } = simCtx();
    const inner = ctx.providers.x;
    ctx.providers = {
      ...ctx.providers,
      x: {
        ...inner,
        call: (req) =>
          req.operation === "user_profile"
            ? Promise.resolve({
                status: "error",
                failure: { code: "upstream_error", message: "x failed.", retryable: true },
              })
            : inner.call(req),
      },
    };
    const r = await findCreators.run({ query: "q", platforms: ["x"], count: 2 }, ctx);
    expect(r.status).toBe("ok");
    const search = calls.find((c) => c.operation === "search")!;
    const authors = (search.outcome as { items: ContentItem[] }).items.map((i) => i.author!.id);
    for (const c of ofKind(r.items, "profile_card")) expect(authors).toContain(c.id);
    expect(r.warnings.filter((w) => w.includes("x failed."))).toHaveLength(2);
  });

  it("nothing found: empty", async () => {
    const { ctx } = simCtx();
    const r = await findCreators.run({ query: "zzz", platforms: ["x", "reddit"] }, ctx);
    expectValidRun("find_creators", planned(findCreators.plan({ query: "zzz", platforms: ["x", "reddit"] }, ctx)), r);
    expect(r).toMatchObject({ status: "empty", calls_made: 2 });
  });
});
