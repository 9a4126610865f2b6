/**
 * Capability gaps (D41), over fetch as an app sees them: a platform without the operation is refused with
 * `400 not_supported` (`no_such_capability`, `fix.allowed` the platforms that have it) before the key is looked at
 * (D50); a platform with the operation but not the parameter value answers an HTTP 200 `not_supported` that costs
 * nothing; in a fanout both are `not_supported` entries; `platforms=all` leaves both out and says so in a warning.
 * What the mock refuses is what its `GET /v1/capabilities` lists: both come from @sdgw/engine's catalog, as the
 * server's do.
 */
import { PLATFORMS } from "@sdgw/types";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Catalog, Simulator } from "@sdgw/engine";
import { createMock, FIXTURES, ROUTES } from "../src/index.ts";
import { BASE, idem, send } from "./helpers.ts";

const mock = createMock({ baseUrl: BASE });
const server = setupServer(...mock.handlers);
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterAll(() => server.close());
beforeEach(() => mock.reset());

const search = (query: Record<string, string>, key?: string) =>
  send({ path: "/v1/search", query, headers: { "Idempotency-Key": idem() }, ...(key ? { key } : {}) });
const post = (path: string, body: unknown, key?: string) =>
  send({ method: "POST", path, body, ...(key ? { key } : {}) });
const without = (...left: string[]) => PLATFORMS.filter((p) => !left.includes(p));

/** The platforms `GET /v1/capabilities` lists for an operation name. */
async function listed(name: string): Promise<string[]> {
  const caps = await send({ path: "/v1/capabilities", key: null });
  return (caps.body.operations as Array<{ platform: string; name: string }>)
    .filter((o) => o.name === name)
    .map((o) => o.platform);
}

describe("a platform without the operation (D41)", () => {
  it("is 400 not_supported no_such_capability with fix.allowed the platforms that have it, as GET /v1/capabilities lists them", async () => {
    for (const [path, body, name] of [
      ["/v1/trending", { platform: "wechat" }, "trending"],
      ["/v1/comments", { platform: "wechat", url: "https://mp.weixin.qq.com/s/AbCdEfGhIjKlMnOp" }, "comments"],
      ["/v1/call/wechat.trending", {}, "trending"],
    ] as const) {
      const got = await post(path, body);
      expect([got.status, got.body.code, got.body.reason], path).toEqual([400, "not_supported", "no_such_capability"]);
      expect(got.body.fix.allowed, path).toEqual(without("wechat"));
      expect(got.body.fix.allowed, path).toEqual(await listed(name));
      expect(got.body.fix.example_call).toEqual({ method: "GET", path: "/v1/capabilities" });
      expect(got.body.message).toMatch(
        /^(The catalog has no op wechat\.\w+: )?wechat does not offer \w+; xiaohongshu, douyin, .* do\. Nothing ran and nothing was charged\.$/,
      );
    }
    expect(mock.state.balance).toBe(100);
  });

  it("is decided from the request alone, before the key (D50): an unknown key still gets the 400", async () => {
    const got = await post("/v1/trending", { platform: "wechat" }, "sdgw_not_a_key");
    expect([got.status, got.body.reason]).toEqual([400, "no_such_capability"]);
    const inQuery = await send({
      method: "POST",
      path: "/v1/trending",
      query: { key: "leaked" },
      body: { platform: "wechat" },
    });
    expect([inQuery.status, inQuery.body.reason]).toEqual([401, "key_in_query"]); // D25 still first
  });

  it("the platforms that have it answer as usual", async () => {
    const got = await post("/v1/trending", { platform: "weibo" });
    expect([got.status, got.body.status, got.body.billing.cost]).toEqual([200, "ok", 1]);
    expect(await listed("trending")).not.toContain("wechat");
    expect(await listed("search")).toEqual([...PLATFORMS]);
  });
});

describe("a platform with the operation but not the parameter value (D41)", () => {
  it("answers HTTP 200 with status not_supported, the reason, no items, cost 0; nothing is charged", async () => {
    const video = await search({ platform: "wechat", query: "年终奖 个税", content_type: "video" });
    expect([video.status, video.body.status, video.body.items, video.body.billing.cost]).toEqual([
      200,
      "not_supported",
      [],
      0,
    ]);
    expect(video.body.error).toEqual({
      code: "not_supported",
      message: expect.stringMatching(/^wechat search .*does not offer content_type=video; .*douyin.* do\.$/),
      retryable: false,
      action_url: "https://console.sdgw.dev/capabilities?platform=wechat",
    });
    expect(video.body.applied_params).toMatchObject({ platform: "wechat", content_type: "video" });
    const collected = await post("/v1/search", { platform: "x", query: "typescript", sort: "most_collected" });
    expect([
      collected.status,
      collected.body.status,
      collected.body.billing.cost,
      collected.body.error.message,
    ]).toEqual([200, "not_supported", 0, expect.stringContaining("sort=most_collected")]);
    const byName = await post("/v1/call/wechat.search", { query: "年终奖", content_type: "video" });
    expect([byName.status, byName.body.status, byName.body.billing.cost]).toEqual([200, "not_supported", 0]);
    expect(mock.state.balance).toBe(100);
  });

  it("is quoted nothing: max_cost_credits 0 lets it through, and it never waits in the background", async () => {
    const zero = await search({ platform: "x", query: "typescript", sort: "most_collected", max_cost_credits: "0" });
    expect([zero.status, zero.body.status]).toEqual([200, "not_supported"]);
    const slow = await search({ platform: "wechat", query: "slow 年终奖", content_type: "video" });
    expect([slow.status, slow.body.status]).toEqual([200, "not_supported"]);
    expect(mock.state.runs).toEqual([]);
  });

  it("other values of the same parameter run as usual", async () => {
    const got = await search({ platform: "wechat", query: "年终奖", content_type: "text" });
    expect([got.status, got.body.status, got.body.billing.cost]).toEqual([200, "ok", 1]);
  });
});

describe("in a fanout (D41)", () => {
  it("both kinds are not_supported entries, free; the others run and are charged", async () => {
    const got = await search({ platforms: "wechat,x", query: "vision pro", content_type: "video" });
    expect([
      got.status,
      got.body.status,
      got.body.fanout.wechat.status,
      got.body.fanout.x.status,
      got.body.billing.cost,
    ]).toEqual([200, "ok", "not_supported", "ok", 1]);
    expect(got.body.fanout.wechat.error.message).toMatch(/content_type=video/);
    const trending = await post("/v1/trending", { platforms: ["wechat", "weibo"] });
    expect([trending.body.fanout.wechat.status, trending.body.fanout.weibo.status, trending.body.billing.cost]).toEqual(
      ["not_supported", "ok", 1],
    );
    expect(trending.body.fanout.wechat.error.message).toMatch(/^wechat does not offer trending; /);
    expect(mock.state.balance).toBe(98);
  });

  it("every entry not supported: the answer's status is not_supported and it costs 0 (D4)", async () => {
    const got = await post("/v1/search", {
      platforms: ["x", "reddit"],
      query: "typescript",
      sort: "most_collected",
      max_cost_credits: 0,
    });
    expect([got.status, got.body.status, got.body.billing.cost, Object.keys(got.body.fanout)]).toEqual([
      200,
      "not_supported",
      0,
      ["x", "reddit"],
    ]);
  });
});

describe("platforms=all (D41)", () => {
  it("leaves out the platforms without the operation and those without the value, and says which it read in a warning", async () => {
    const video = await search({ platforms: "all", query: "露营", content_type: "video" });
    expect(Object.keys(video.body.fanout)).toEqual(without("wechat"));
    expect(video.body.warnings).toEqual([`platforms=all expanded to 9 platforms: ${without("wechat").join(", ")}`]);
    expect(video.body.billing.cost).toBe(9);
    const trending = await post("/v1/trending", { platforms: "all" });
    expect(Object.keys(trending.body.fanout)).toEqual(without("wechat"));
    expect(trending.body.warnings).toEqual([`platforms=all expanded to 9 platforms: ${without("wechat").join(", ")}`]);
    const both = await post("/v1/search", {
      platforms: "all",
      query: "装修",
      sort: "most_collected",
      content_type: "text",
    });
    expect(Object.keys(both.body.fanout)).toEqual(["wechat", "weibo", "bilibili", "zhihu"]);
    expect(both.body.warnings).toEqual(["platforms=all expanded to 4 platforms: wechat, weibo, bilibili, zhihu"]);
  });

  it("with no gap it is every platform", async () => {
    const got = await post("/v1/search", { platforms: "all", query: "咖啡" });
    expect([Object.keys(got.body.fanout), got.body.warnings]).toEqual([
      [...PLATFORMS],
      [`platforms=all expanded to 10 platforms: ${PLATFORMS.join(", ")}`],
    ]);
  });
});

describe("the fixtures agree with the engine's catalog (D41)", () => {
  const providers = new Catalog(new Simulator().providers).providers;
  const NAMES: Record<string, string> = {
    search: "search",
    searchPost: "search",
    trending: "trending",
    detail: "detail",
    comments: "comments",
    userProfile: "user_profile",
    userPosts: "user_posts",
  };
  const typedNameOf = (op: string): string | undefined => NAMES[op];
  const unsupported = (platform: string, name: string, applied: Record<string, unknown>) =>
    providers[platform as keyof typeof providers].operations.some((o) => o.name === name)
      ? (providers[platform as keyof typeof providers].unsupported(name, applied) ?? undefined)
      : "no such operation";

  /** Every result of a typed operation in the fixtures: the platform, its status and applied parameters. */
  function results(): Array<{
    file: string;
    op: string;
    platform: string;
    status: string;
    applied: Record<string, unknown>;
  }> {
    const out: Array<{ file: string; op: string; platform: string; status: string; applied: Record<string, unknown> }> =
      [];
    for (const route of Object.values(ROUTES)) {
      const name = typedNameOf(route.operationId);
      if (!name) continue;
      for (const f of route.fixtures) {
        const body = FIXTURES[f.file] as Record<string, any> | undefined;
        if (!body || typeof body !== "object") continue;
        const push = (platform: unknown, r: Record<string, any> | undefined) => {
          if (typeof platform === "string" && r && typeof r["status"] === "string")
            out.push({ file: f.file, op: name, platform, status: r["status"], applied: r["applied_params"] ?? {} });
        };
        push(body["platform"], body);
        for (const [p, entry] of Object.entries(body["fanout"] ?? {})) push(p, entry as Record<string, any>);
        for (const c of [...(body["targets"] ?? []), ...(body["cells"] ?? [])]) push(c["platform"], c["result"]);
      }
    }
    return out;
  }

  it("a not_supported result is a gap of the catalog (the platform lacks the operation or the value); every other result is on a platform that has it", () => {
    const all = results();
    expect(all.filter((r) => r.status === "not_supported").length).toBeGreaterThanOrEqual(3);
    for (const r of all) {
      const gap = unsupported(r.platform, r.op, r.applied);
      if (r.status === "not_supported")
        expect(gap, `${r.file}: ${r.platform} ${r.op} not_supported with ${JSON.stringify(r.applied)}`).toBeDefined();
      else if (["ok", "empty"].includes(r.status))
        expect(gap, `${r.file}: ${r.platform} ${r.op} ${r.status}`).toBeUndefined();
    }
  });
});
