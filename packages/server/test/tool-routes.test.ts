/**
 * `POST /v1/tools/{tool}` over HTTP (in-process): for each of the seven tools the quote (`confirm: false`, free),
 * an inline run (200, charged once, replayed free), a background run (202 with waves and steps, read to its end,
 * charged once) and `max_cost_credits`; the refusals of the parameters the seed names; every answer validated by
 * @sdgw/validators (the harness), and the ledger audited after each test.
 */
import type { ToolName } from "@sdgw/types";
import { afterEach, describe, expect, it } from "vitest";
import { harness, newIdem, type Answer, type Harness } from "./helpers.ts";
import { BODIES, redditPosts } from "./tool-bodies.ts";

const OP = {
  brand_buzz: "brandBuzz",
  comment_insights: "commentInsights",
  account_watch: "accountWatch",
  find_creators: "findCreators",
  creator_card: "creatorCard",
  batch_stats: "batchStats",
  viral_finder: "viralFinder",
} as const;

let h: Harness;
afterEach(async () => {
  h.audit();
  await h.server.close({ drainMs: 3000 });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const balance = () => h.server.gateway.ledger.view(h.accountId, null).balance;
const charges = () =>
  h.server.gateway.store.all<{ run_id: string; amount: number }>(
    "SELECT run_id, amount FROM ledger WHERE kind = 'charge' AND account_id = ?",
    h.accountId,
  );

async function tool(
  name: ToolName,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
  key?: string,
): Promise<Answer> {
  return h.call(OP[name], "POST", `/v1/tools/${name}`, { body, headers, ...(key ? { key } : {}) });
}

/** Reads a handle until the run has ended; every 202 on the way keeps the call's request id and shows the steps. */
async function readToEnd(handle: string, requestId: string): Promise<Answer> {
  for (let i = 0; i < 400; i++) {
    const r = await h.call("getResult", "GET", `/v1/results/${handle}`);
    if (r.status !== 202) return r;
    expect(r.json.request_id).toBe(requestId);
    expect(r.json.steps.length).toBe(r.json.waves.planned);
    await sleep(10);
  }
  throw new Error(`${handle} did not end`);
}

describe.each(Object.keys(BODIES) as ToolName[])("%s over HTTP", (name) => {
  it("quotes with confirm: false: the plan and price, nothing run and nothing charged", async () => {
    h = harness();
    for (const [mode, body] of [
      ["inline", BODIES[name].inline],
      ["background", BODIES[name].background],
    ] as const) {
      const q = await tool(name, { ...body, confirm: false });
      expect(q.status).toBe(200);
      expect(q.json).toMatchObject({
        tool: name,
        quote: { mode },
        billing: { cost_credits: 0, balance_credits: 1000 },
      });
      expect(q.json.quote.quote_credits).toBe(q.json.quote.calls_planned);
      expect(q.json.applied_params.confirm).toBe(false);
      expect(q.json.items).toBeUndefined();
    }
    expect(charges()).toEqual([]);
    expect(balance()).toBe(1000);
  });

  it("runs an inline quote in the request: the tool answer, charged once (at most the quote), replayed free", async () => {
    h = harness();
    const idem = newIdem();
    const a = await tool(name, BODIES[name].inline, { "idempotency-key": idem });
    expect(a.status).toBe(200);
    expect(a.json.quote.mode).toBe("inline");
    const charged = a.json.charge.charged_credits;
    if (a.json.status === "ok") expect(a.json.items.length).toBeGreaterThan(0);
    expect(["ok", "empty"]).toContain(a.json.status);
    expect(charged).toBeGreaterThan(0);
    expect(charged).toBeLessThanOrEqual(a.json.quote.quote_credits);
    expect(a.json.billing.cost_credits).toBe(charged);
    expect(a.json.steps.every((s: { status: string }) => s.status === "done" || s.status === "failed")).toBe(true);
    expect(a.json.steps.reduce((n: number, s: { calls_done: number }) => n + s.calls_done, 0)).toBeLessThanOrEqual(
      a.json.quote.calls_planned,
    );
    expect(balance()).toBe(1000 - charged);
    expect(charges().map((c) => c.amount)).toEqual([charged]);
    const again = await tool(name, BODIES[name].inline, { "idempotency-key": idem });
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.text).toBe(a.text);
    expect(balance()).toBe(1000 - charged);
    expect(charges()).toHaveLength(1);
  });

  it("answers a background quote 202 with waves and steps, and the read at its end is charged once", async () => {
    h = harness({ simulator: { knobs: { "*": { latencyMs: [2, 6] } } } });
    const a = await tool(name, BODIES[name].background);
    expect(a.status).toBe(202);
    expect(a.headers["retry-after"]).toBe("5");
    expect(a.json).toMatchObject({ status: "running", charge: { charged_credits: 0 }, billing: { cost_credits: 0 } });
    const quote = a.json.charge.quote_credits;
    expect(quote).toBeGreaterThan(10);
    expect(a.json.waves.planned).toBe(a.json.steps.length);
    expect(a.json.billing.today_spend_credits).toBe(quote);
    const done = await readToEnd(a.json.handle, a.json.request_id);
    expect(done.status).toBe(200);
    expect(done.json).toMatchObject({
      request_id: a.json.request_id,
      tool: name,
      quote: { mode: "background", quote_credits: quote },
    });
    const charged = done.json.charge.charged_credits;
    expect(charged).toBeGreaterThan(0);
    expect(charged).toBeLessThanOrEqual(quote);
    expect(balance()).toBe(1000 - charged);
    const read2 = await h.call("getResult", "GET", `/v1/results/${a.json.handle}`);
    expect(read2.json.charge).toEqual(done.json.charge);
    expect(read2.json.items).toEqual(done.json.items);
    expect(charges().map((c) => c.amount)).toEqual([charged]);
  });

  it("refuses a quote over max_cost_credits with 402 and the quote, charging nothing", async () => {
    h = harness();
    const q = await tool(name, { ...BODIES[name].inline, confirm: false });
    const quote = q.json.quote.quote_credits;
    const a = await tool(name, { ...BODIES[name].inline, max_cost_credits: quote - 1 });
    expect(a.status).toBe(402);
    expect(a.json).toMatchObject({
      code: "max_cost_exceeded",
      quote_credits: quote,
      fix: { param: "max_cost_credits" },
    });
    const ok = await tool(name, { ...BODIES[name].inline, max_cost_credits: quote });
    expect(ok.status).toBe(200);
    expect(charges()).toHaveLength(1);
  });
});

describe("tool refusals: the parameters the seed names, before anything runs", () => {
  it("invalid_params names confirm, window, range, platforms, targets, accounts, include and format", async () => {
    h = harness();
    const cases: Array<[ToolName, Record<string, unknown>, string]> = [
      ["brand_buzz", { query: "a", confirm: "no" }, "confirm"],
      ["brand_buzz", { query: "a", window: "1y" }, "window"],
      ["viral_finder", { query: "a", window: "90d" }, "window"],
      ["account_watch", { accounts: ["https://x.com/vercel"], range: "1d" }, "range"],
      [
        "find_creators",
        { query: "a", platforms: ["x", "weibo", "reddit", "zhihu", "douyin", "bilibili"] },
        "platforms",
      ],
      ["brand_buzz", { query: "a", platforms: ["myspace"] }, "platforms"],
      ["comment_insights", { targets: ["https://t.co/abc123"] }, "targets"],
      ["batch_stats", { targets: ["https://www.xiaohongshu.com/user/profile/5a1b2c3d"] }, "targets"],
      ["creator_card", { accounts: ["https://example.com/someone"] }, "accounts"],
      ["account_watch", { accounts: ["https://x.com/vercel/status/2122526005990306014"] }, "accounts"],
      ["creator_card", { accounts: ["https://x.com/vercel"], include: ["comments"] }, "include"],
      ["batch_stats", { targets: redditPosts(1), format: "xlsx" }, "format"],
      ["brand_buzz", { query: "a", max_cost_credits: -1 }, "max_cost_credits"],
      ["account_watch", { accounts: ["https://x.com/vercel"], schedule: { every: "5m" } }, "schedule"],
      [
        "batch_stats",
        { targets: ["https://mp.weixin.qq.com/s/Xy3kLm9QpR2sT7uV1wZ0aB"], include: ["comments"] },
        "include",
      ],
    ];
    for (const [name, body, param] of cases) {
      const a = await tool(name, body);
      expect(a.status, `${name} ${JSON.stringify(body)}`).toBe(400);
      expect(a.json.code).toBe("invalid_params");
      expect(a.json.fix.param, `${name} ${JSON.stringify(body)}: ${a.json.message}`).toBe(param);
    }
    expect(charges()).toEqual([]);
  });

  it("a wrong body is invalid_params before the key is looked at (D50); unknown tools are 404 no_such_tool", async () => {
    h = harness();
    const noKey = await h.call("brandBuzz", "POST", "/v1/tools/brand_buzz", {
      body: { query: "a", window: "1y" },
      key: null,
    });
    expect(noKey.status).toBe(400);
    const link = await h.call("commentInsights", "POST", "/v1/tools/comment_insights", {
      body: { targets: ["https://t.co/abc"] },
      key: null,
    });
    expect(link.json.fix.param).toBe("targets");
    const unauth = await h.call("brandBuzz", "POST", "/v1/tools/brand_buzz", { body: { query: "a" }, key: null });
    expect(unauth.status).toBe(401);
    const none = await h.call(null, "POST", "/v1/tools/mind_reader", { body: {} });
    expect(none.status).toBe(404);
    expect(none.json).toMatchObject({ reason: "no_such_tool", fix: { allowed: Object.keys(OP) } });
    const proto = await h.call(null, "POST", "/v1/tools/__proto__", { body: {} });
    expect(proto.status).toBe(404);
  });

  it("scale large: plan_limit on a free account, not_supported not_available_yet on a paid one", async () => {
    h = harness();
    const paid = await tool("brand_buzz", { query: "露营", scale: "large" });
    expect(paid.status).toBe(400);
    expect(paid.json).toMatchObject({ code: "not_supported", reason: "not_available_yet", fix: { param: "scale" } });
    const gw = h.server.gateway;
    const { account } = gw.accounts.createAccount({ name: "free", plan: "free" });
    const freeKey = gw.accounts.createKey({ accountId: account.id }).secret;
    const free = await tool("brand_buzz", { query: "露营", scale: "large" }, {}, freeKey);
    expect(free.status).toBe(403);
    expect(free.json).toMatchObject({ code: "plan_limit", reason: "scale_needs_purchase", fix: { param: "scale" } });
    const small = await tool(
      "brand_buzz",
      { query: "露营", platforms: ["weibo"], scale: "small", confirm: false },
      {},
      freeKey,
    );
    expect(small.status).toBe(200);
  });

  it("scale large names confirm when confirm: true was sent, and its quote answers the plan and price, free (D73)", async () => {
    h = harness();
    const before = (await h.call("getAccount", "GET", "/v1/account")).json as { billing: { balance_credits: number } };
    const confirmed = await tool("brand_buzz", { query: "露营", scale: "large", confirm: true });
    expect(confirmed.status).toBe(400);
    expect(confirmed.json).toMatchObject({
      code: "not_supported",
      reason: "not_available_yet",
      fix: { param: "confirm", note: expect.stringMatching(/confirm: false/) },
    });
    const quote = await tool("brand_buzz", {
      query: "露营",
      platforms: ["weibo", "x"],
      scale: "large",
      confirm: false,
    });
    expect(quote.status).toBe(200);
    const q = quote.json as {
      quote: { calls_planned: number; quote_credits: number };
      applied_params: Record<string, unknown>;
    };
    // large reads 5 pages per platform and the comments of 10 posts per platform with comments (both have them)
    expect(q.quote).toMatchObject({ calls_planned: 30, quote_credits: 30 });
    expect(q.applied_params).toMatchObject({ scale: "large", confirm: false });
    const gw = h.server.gateway;
    const { account } = gw.accounts.createAccount({ name: "free", plan: "free" });
    const freeKey = gw.accounts.createKey({ accountId: account.id }).secret;
    expect(
      (await tool("brand_buzz", { query: "露营", platforms: ["weibo"], scale: "large", confirm: false }, {}, freeKey))
        .status,
    ).toBe(200);
    const after = (await h.call("getAccount", "GET", "/v1/account")).json as { billing: { balance_credits: number } };
    expect(after.billing.balance_credits).toBe(before.billing.balance_credits);
  });

  it("batch_stats on a free account: plan_limit batches_need_purchase, uncharged; the quote stays free to see; a paid account runs it (D58)", async () => {
    h = harness();
    const gw = h.server.gateway;
    const { account } = gw.accounts.createAccount({ name: "free", plan: "free" });
    gw.accounts.grant(account.id, 50, "signup credits");
    const freeKey = gw.accounts.createKey({ accountId: account.id }).secret;
    const used = () => gw.accounts.account(account.id)!.free_calls_used;
    const refused = await tool("batch_stats", { targets: redditPosts(2) }, {}, freeKey);
    expect([refused.status, refused.json.code, refused.json.reason, refused.json.fix.param]).toEqual([
      403,
      "plan_limit",
      "batches_need_purchase",
      "targets",
    ]);
    expect(used()).toBe(0);
    const quote = await tool("batch_stats", { targets: redditPosts(2), confirm: false }, {}, freeKey);
    expect([quote.status, quote.json.quote.quote_credits]).toEqual([200, 2]);
    // A list in a data call is not a batch: each value is a call of its own.
    const list = await h.call("detail", "POST", "/v1/detail", {
      key: freeKey,
      body: { platform: "douyin", id: ["7301234567890123456", "7301234567890123457"] },
    });
    expect(list.status).toBe(200);
    expect(used()).toBe(2);
    expect((await tool("batch_stats", { targets: redditPosts(2) })).status).toBe(200);
  });

  it("a target on a platform without the operation is not_supported no_such_capability with the platforms that have it", async () => {
    h = harness();
    const a = await tool("comment_insights", {
      targets: ["https://www.bilibili.com/video/BV1xK4y1a7Zq", "https://mp.weixin.qq.com/s/Xy3kLm9QpR2sT7uV1wZ0aB"],
    });
    expect(a.status).toBe(400);
    expect(a.json).toMatchObject({ code: "not_supported", reason: "no_such_capability", fix: { param: "targets" } });
    expect(a.json.fix.allowed.length).toBeGreaterThan(0);
    expect(a.json.fix.allowed).not.toContain("wechat");
  });

  it("insufficient balance and a key without read_data refuse the run and charge nothing", async () => {
    h = harness({ credits: 3 });
    const a = await tool("brand_buzz", BODIES.brand_buzz.inline);
    expect(a.status).toBe(402);
    expect(a.json).toMatchObject({ code: "insufficient_balance", quote_credits: 9 });
    const gw = h.server.gateway;
    const readOnly = gw.accounts.createKey({ accountId: h.accountId, permissions: [] }).secret;
    const b = await tool("brand_buzz", BODIES.brand_buzz.inline, {}, readOnly);
    expect(b.status).toBe(403);
    expect(b.json.code).toBe("key_scope_denied");
    expect(balance()).toBe(3);
  });
});

describe("batch_stats format", () => {
  it("answers a finished run as csv or ndjson rows of its items; a handle reads in the run's format unless format is asked", async () => {
    h = harness({ simulator: { knobs: { "*": { latencyMs: [2, 4] } } } });
    const csv = await tool("batch_stats", { targets: redditPosts(3), format: "csv" });
    expect(csv.status).toBe(200);
    expect(csv.headers["content-type"]).toMatch(/^text\/csv/);
    const lines = csv.text.trim().split(/\r?\n/);
    expect(lines[0]).toMatch(/^kind,/);
    expect(lines.length).toBeGreaterThan(1);
    const nd = await tool("batch_stats", { targets: redditPosts(12), format: "ndjson" });
    expect(nd.status).toBe(202);
    const done = await readToEnd(nd.json.handle, nd.json.request_id);
    expect(done.headers["content-type"]).toMatch(/^application\/x-ndjson/);
    const rows = done.text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rows.length).toBeGreaterThan(0);
    const asJson = await h.call("getResult", "GET", `/v1/results/${nd.json.handle}?format=json`);
    expect(asJson.json.items).toEqual(rows);
  });
});
