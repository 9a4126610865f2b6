/** The seven tools together: the registry, and properties over open inputs (any body plans or is refused cleanly). */
import fc from "fast-check";
import { PLATFORMS, TOOL_NAMES, type ToolName } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import { TOOLS } from "../../src/tools/index.ts";
import type { ToolModule } from "../../src/tools/types.ts";
import { expectShares, expectValidQuote, expectValidRun, ofKind, planned, simCtx } from "./helpers.ts";

const link = fc.oneof(
  fc.constantFrom(
    "https://www.bilibili.com/video/BV1xK4y1a7Zq",
    "https://x.com/vercel",
    "https://x.com/vercel/status/2122526005990306014",
    "https://space.bilibili.com/517730921",
    "https://b23.tv/Ab12Cd3",
    "https://www.bilibili.com/",
    "https://mp.weixin.qq.com/s/Xy3kLm9QpR2sT7uV1wZ0aB",
    "https://www.zhihu.com/people/deleted-user-8841",
    "weibo:5236417809123457",
    "not a link",
  ),
  fc.webUrl(),
  fc.tuple(fc.constantFrom(...PLATFORMS), fc.stringMatching(/^[A-Za-z0-9_-]{1,16}$/)).map(([p, id]) => `${p}:${id}`),
);
const value = fc.oneof(
  fc.constantFrom(
    "7d",
    "30d",
    "14d",
    "today",
    "1d",
    "small",
    "standard",
    "large",
    "json",
    "csv",
    "xml",
    "all",
    "posts",
    "metrics",
    "comments",
    "1h",
  ),
  fc.integer({ min: -2, max: 60 }),
  fc.boolean(),
  fc.string({ maxLength: 8 }),
  fc.array(link, { minLength: 0, maxLength: 22 }),
  fc.uniqueArray(fc.constantFrom(...PLATFORMS), { minLength: 1, maxLength: 6 }),
  fc.array(fc.constantFrom("posts", "metrics", "comments"), { maxLength: 3 }),
  fc.constant({ every: "1d" }),
);
const names = fc.constantFrom(
  "query",
  "platforms",
  "window",
  "scale",
  "targets",
  "accounts",
  "range",
  "include",
  "format",
  "count",
  "min_followers",
  "limit",
  "confirm",
  "max_cost_credits",
  "schedule",
  "other",
);

/** Bodies of each tool drawn from its own parameters (mostly valid), sometimes with one foreign or wrong member. */
const platforms = fc.oneof(
  fc.uniqueArray(fc.constantFrom(...PLATFORMS), { minLength: 1, maxLength: 5 }),
  fc.constant("all" as const),
);
const query = fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), fc.nat(), fc.constantFrom("瑞幸咖啡", "露营"));
const pair = fc
  .tuple(fc.constantFrom(...PLATFORMS), fc.stringMatching(/^[A-Za-z0-9_-]{1,16}$/))
  .map(([p, id]) => `${p}:${id}`);
const links = fc.array(fc.oneof({ weight: 30, arbitrary: pair }, { weight: 1, arbitrary: link }), {
  minLength: 1,
  maxLength: 20,
});
const common = { confirm: fc.boolean(), max_cost_credits: fc.nat({ max: 100 }) };
const BODIES: Record<ToolName, fc.Arbitrary<Record<string, unknown>>> = {
  brand_buzz: fc.record(
    {
      query,
      platforms,
      window: fc.constantFrom("7d", "30d"),
      scale: fc.constantFrom("small", "standard", "large"),
      ...common,
    },
    { requiredKeys: ["query"] },
  ),
  comment_insights: fc.record(
    { targets: links, limit: fc.integer({ min: 1, max: 50 }), ...common },
    { requiredKeys: ["targets"] },
  ),
  account_watch: fc.record(
    {
      accounts: links,
      range: fc.constantFrom("today", "7d", "14d", "30d"),
      schedule: fc.record({ every: fc.constantFrom("1h", "6h", "1d") }),
      ...common,
    },
    { requiredKeys: ["accounts"] },
  ),
  find_creators: fc.record(
    { query, platforms, count: fc.integer({ min: 1, max: 20 }), min_followers: fc.nat(), ...common },
    { requiredKeys: ["query"] },
  ),
  creator_card: fc.record(
    { accounts: links, include: fc.subarray(["posts", "metrics"]), ...common },
    { requiredKeys: ["accounts"] },
  ),
  batch_stats: fc.record(
    {
      targets: links,
      include: fc.subarray(["metrics", "comments"]),
      format: fc.constantFrom("json", "csv", "ndjson"),
      ...common,
    },
    { requiredKeys: ["targets"] },
  ),
  viral_finder: fc.record(
    { query, platforms, window: fc.constantFrom("7d", "30d"), count: fc.integer({ min: 1, max: 20 }), ...common },
    { requiredKeys: ["query"] },
  ),
};
const toolBody = fc
  .constantFrom(...TOOL_NAMES)
  .chain((tool) =>
    fc
      .tuple(
        fc.constant(tool),
        BODIES[tool],
        fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.tuple(names, value) }),
      )
      .map(([t, body, extra]) => [t, extra ? { ...body, [extra[0]]: extra[1] } : body] as const),
  );

describe("tools", () => {
  it("TOOLS holds the seven tools under their names", () => {
    expect(Object.keys(TOOLS)).toEqual([...TOOL_NAMES]);
    for (const name of TOOL_NAMES) expect(TOOLS[name].tool).toBe(name);
  });

  it("property: any body plans to a valid quote (1 credit a call, inline up to 10) or a typed refusal naming a parameter", () => {
    const { ctx } = simCtx();
    let accepted = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          { weight: 4, arbitrary: toolBody },
          fc.tuple(fc.constantFrom(...TOOL_NAMES), fc.dictionary(names, value, { maxKeys: 6 })) as fc.Arbitrary<
            readonly [ToolName, Record<string, unknown>]
          >,
        ),
        fc.constantFrom("free" as const, "paid" as const),
        ([tool, body], accountPlan) => {
          const t = TOOLS[tool] as ToolModule<unknown>;
          const r = t.plan(body, { ...ctx, accountPlan });
          if (r.ok) {
            accepted++;
            expectValidQuote(tool, r.plan);
            expect(r.plan.quote.calls_planned).toBeGreaterThan(0);
          } else {
            expect(["invalid_params", "plan_limit", "not_supported"]).toContain(r.refusal.code);
            expect(r.refusal.param.length).toBeGreaterThan(0);
            expect(r.refusal.message.length).toBeGreaterThan(0);
            if (r.refusal.code === "plan_limit") expect(accountPlan).toBe("free");
          }
        },
      ),
      { numRuns: 1500 },
    );
    expect(accepted).toBeGreaterThan(500);
  });

  it("property: brand_buzz on any query answers a valid tool answer whose shares sum to 1", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), fc.constantFrom("瑞幸咖啡", "露营", "TypeScript", "zzz")),
        fc.uniqueArray(fc.constantFrom(...PLATFORMS), { minLength: 1, maxLength: 3 }),
        async (query, platforms) => {
          const { ctx } = simCtx();
          const req = { query, platforms };
          const r = await TOOLS.brand_buzz.run(req, ctx);
          expectValidRun("brand_buzz", planned(TOOLS.brand_buzz.plan(req, ctx)), r);
          for (const d of ofKind(r.items, "distribution")) if (d.unit === "ratio") expectShares(d.buckets);
        },
      ),
      { numRuns: 40 },
    );
  });

  it.each(TOOL_NAMES.map((t) => [t] as [ToolName]))(
    "%s: a fault on every platform never breaks the run: every call failed → a failure status",
    async (tool) => {
      const bodies: Record<ToolName, unknown> = {
        brand_buzz: { query: "q", platforms: ["x", "weibo"] },
        comment_insights: { targets: ["x:123456"] },
        account_watch: { accounts: ["x:vercel"] },
        find_creators: { query: "q", platforms: ["x"] },
        creator_card: { accounts: ["x:vercel"] },
        batch_stats: { targets: ["x:123456"] },
        viral_finder: { query: "q", platforms: ["x"] },
      };
      for (const fault of ["upstream_error", "timeout", "rate_limited", "unavailable"] as const) {
        const { ctx, sim } = simCtx();
        sim.setKnobs("*", { fault });
        const t = TOOLS[tool] as ToolModule<unknown>;
        const r = await t.run(bodies[tool], ctx);
        expectValidRun(tool, planned(t.plan(bodies[tool], ctx)), r);
        expect(r.status).toBe(fault === "timeout" ? "timeout" : "error");
        expect(r.calls_charged).toBe(0);
      }
    },
  );
});
