/**
 * The mock's stateful behaviour, one rule at a time: keys (D25, D26), request validation through
 * @sdgw/validators, credits (never for failures; 402 before running), 202 runs read by handle, idempotency (D35),
 * paging (D19), schedules (D11), and the development check of every answer against the contract.
 */
import { responseValidators, toCsv, toNdjson, validateHandleAnswer } from "@sdgw/validators";
import { getResponse } from "msw";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createMock, FIXTURES, scenario } from "../src/index.ts";
import { BASE, idem, KEY, NOSCOPE, send, startRun } from "./helpers.ts";

let offset = 0;
const mock = createMock({ baseUrl: BASE, now: () => Date.now() + offset });
const server = setupServer(...mock.handlers);
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterAll(() => server.close());
beforeEach(() => {
  mock.reset();
  offset = 0;
});

const search = (query: Record<string, string>, headers: Record<string, string> = {}, key?: string | null) =>
  send({
    path: "/v1/search",
    query,
    headers: { "Idempotency-Key": idem(), ...headers },
    ...(key !== undefined ? { key } : {}),
  });
const post = (path: string, body: unknown, headers: Record<string, string> = {}, key?: string | null) =>
  send({ method: "POST", path, body, headers, ...(key !== undefined ? { key } : {}) });

describe("keys (seed: Authentication; D25, D26)", () => {
  it("no key: 401 unauthorized, reason missing", async () => {
    for (const got of [
      await search({ platform: "x", query: "a" }, {}, null),
      await send({ path: "/v1/account", key: null }),
    ]) {
      expect([got.status, got.body.code, got.body.reason]).toEqual([401, "unauthorized", "missing"]);
    }
  });

  it("a key in the query: 401 key_in_query, checked first whatever headers came, and the key is marked exposed", async () => {
    const got = await search({ platform: "x", query: "a", key: KEY }, { Authorization: `Bearer ${KEY}` });
    expect([got.status, got.body.reason]).toEqual([401, "key_in_query"]);
    const bad = await search({ platform: "x", query: "a", key: "leaked", count: "999" });
    expect([bad.status, bad.body.reason]).toEqual([401, "key_in_query"]); // before validation too
    const forced = await search({ platform: "x", query: "a", key: "leaked" }, { "x-sdgw-scenario": "rate_limited" });
    expect([forced.status, forced.body.reason]).toEqual([401, "key_in_query"]); // and before a forced scenario
    expect(mock.state.exposedKeys).toEqual([KEY, "leaked"]);
    const keyless = await send({ path: "/v1/capabilities", query: { key: "leaked" }, key: null });
    expect([keyless.status, keyless.body.reason]).toEqual([401, "key_in_query"]); // keyless routes refuse it too (D25)
  });

  it("an unknown key: 401 invalid", async () => {
    const got = await send({ path: "/v1/account", key: "sdgw_nope" });
    expect([got.status, got.body.reason]).toEqual([401, "invalid"]);
  });

  it("X-API-Key and Bearer both: the same key passes, two different keys are 401 invalid", async () => {
    expect((await send({ path: "/v1/account", key: null, headers: { Authorization: `Bearer ${KEY}` } })).status).toBe(
      200,
    );
    expect((await send({ path: "/v1/account", headers: { Authorization: `Bearer ${KEY}` } })).status).toBe(200);
    const two = await send({ path: "/v1/account", headers: { Authorization: `Bearer ${NOSCOPE}` } });
    expect([two.status, two.body.reason]).toEqual([401, "invalid"]);
    expect(two.body.fix.note).toMatch(/one key/);
    const basic = await send({ path: "/v1/account", key: null, headers: { Authorization: "Basic abc" } });
    expect([basic.status, basic.body.reason]).toEqual([401, "invalid"]);
  });

  it("a key without read_data: 403 key_scope_denied on data and tool routes, with fix.allowed [read_data]; the account still reads", async () => {
    for (const got of [
      await search({ platform: "x", query: "a" }, {}, NOSCOPE),
      await post("/v1/tools/brand_buzz", { query: "a" }, {}, NOSCOPE),
      await post("/v1/call/bilibili.video_danmaku", { bvid: "BV1xK4y1a7Zq" }, {}, NOSCOPE),
    ]) {
      expect([got.status, got.body.code, got.body.fix.allowed]).toEqual([403, "key_scope_denied", ["read_data"]]);
    }
    const account = await send({ path: "/v1/account", key: NOSCOPE });
    expect([account.status, account.body.key.permissions]).toEqual([200, []]);
  });

  it("capabilities, find and openapi.json need no key", async () => {
    expect((await send({ path: "/v1/capabilities", key: null })).status).toBe(200);
    expect((await post("/v1/find", { query: "弹幕" }, {}, null)).status).toBe(200);
    const doc = await send({ path: "/openapi.json", key: null });
    expect([doc.status, doc.body.info.version]).toEqual([200, "1.0.0"]);
  });

  it("takes keys of its own", async () => {
    const other = createMock({ baseUrl: "http://other.test", keys: { k_live: { permissions: ["read_data"] } } });
    server.use(...other.handlers);
    const got = await fetch("http://other.test/v1/account", { headers: { "X-API-Key": "k_live" } });
    expect(got.status).toBe(200);
    expect((await fetch("http://other.test/v1/account", { headers: { "X-API-Key": KEY } })).status).toBe(401);
    server.resetHandlers();
  });
});

describe("request validation through @sdgw/validators", () => {
  it("a bad parameter gets the seed's invalid_params answer naming it", async () => {
    const got = await search({ platform: "x", query: "a", count: "21" });
    expect([got.status, got.body.code, got.body.fix.param]).toEqual([400, "invalid_params", "count"]);
    expect(got.body.message).toBe("`count` must be a whole number from 1 to 20.");
    const sort = await post("/v1/comments", { platform: "reddit", id: "t3", sort: "oldest" });
    expect([sort.status, sort.body.fix.param, sort.body.fix.allowed]).toEqual([400, "sort", ["latest", "most_liked"]]);
  });

  it("GET /v1/search requires Idempotency-Key (the header validator names it)", async () => {
    const got = await send({ path: "/v1/search", query: { platform: "x", query: "a" } });
    expect([got.status, got.body.fix.param]).toEqual([400, "Idempotency-Key"]);
  });

  it("platform and platforms: exactly one (D17)", async () => {
    const none = await search({ query: "a" });
    expect([none.status, none.body.fix.param]).toEqual([400, "platform"]);
    expect(none.body.fix.allowed).toHaveLength(10);
    const both = await search({ platform: "x", platforms: "x,reddit", query: "a" });
    expect([both.status, both.body.fix.param]).toEqual([400, "platforms"]);
  });

  it("a body that is not one JSON object: invalid_params on body", async () => {
    for (const raw of ["[1, 2]", "not json", "", "null"]) {
      const got = await send({ method: "POST", path: "/v1/detail", raw });
      expect([got.status, got.body.fix.param, got.body.fix.note], raw).toEqual([
        400,
        "body",
        "Send one JSON object with `Content-Type: application/json`.",
      ]);
    }
  });

  it(
    "a JSON body sent without Content-Type: application/json: invalid_params on body (seed " +
      "invalid_params case 1), before the key is looked at (D50)",
    async () => {
      const body = JSON.stringify({ platform: "x", query: "typescript" });
      for (const headers of [
        {},
        { "Content-Type": "text/plain" },
        { "Content-Type": "application/x-www-form-urlencoded" },
      ] as Array<Record<string, string>>) {
        for (const key of [KEY, "sdgw_nope"]) {
          const res = await fetch(`${BASE}/v1/search`, {
            method: "POST",
            headers: { ...headers, "X-API-Key": key },
            body,
          });
          const got = (await res.json()) as { code: string; fix: { param: string; note: string } };
          expect([res.status, got.code, got.fix.param, got.fix.note], JSON.stringify(headers)).toEqual([
            400,
            "invalid_params",
            "body",
            "Send one JSON object with `Content-Type: application/json`.",
          ]);
        }
      }
      const find = await fetch(`${BASE}/v1/find`, { method: "POST", body: JSON.stringify({ query: "弹幕" }) });
      expect(find.status).toBe(400);
      const typed = await fetch(`${BASE}/v1/search`, {
        method: "POST",
        headers: { "X-API-Key": KEY, "Content-Type": "Application/JSON; charset=utf-8" },
        body,
      });
      expect(typed.status).toBe(200);
      expect(mock.state.balance).toBe(99);
    },
  );

  it("format of a result: json, csv or ndjson", async () => {
    const handle = await startRun();
    const got = await send({ path: `/v1/results/${handle}`, query: { format: "xlsx" } });
    expect([got.status, got.body.fix.param, got.body.fix.allowed]).toEqual([400, "format", ["json", "csv", "ndjson"]]);
  });

  it("POST /v1/call/{op}: an op the catalog lacks is not_supported, a parameter the op lacks is invalid_params (D23)", async () => {
    const op = await post("/v1/call/wechat.video_danmaku", {});
    expect([op.status, op.body.code, op.body.reason, op.body.fix.allowed]).toEqual([
      400,
      "not_supported",
      "no_such_capability",
      ["bilibili"],
    ]);
    const param = await post("/v1/call/bilibili.video_danmaku", { bvid: "BV1", colour: "red" });
    expect([param.status, param.body.fix.param]).toEqual([400, "colour"]);
    expect(param.body.fix.allowed).toContain("bvid");
  });

  it("brand_buzz scale=large is not available yet (D24)", async () => {
    const got = await post("/v1/tools/brand_buzz", { query: "瑞幸咖啡", scale: "large" });
    expect([got.status, got.body.code, got.body.reason, got.body.fix.param]).toEqual([
      400,
      "not_supported",
      "not_available_yet",
      "scale",
    ]);
    // D73: confirm: true names confirm; confirm: false answers the plan and price of scale=large, free
    const start = mock.state.balance;
    const confirmed = await post("/v1/tools/brand_buzz", { query: "瑞幸咖啡", scale: "large", confirm: true });
    expect([confirmed.status, confirmed.body.reason, confirmed.body.fix.param]).toEqual([
      400,
      "not_available_yet",
      "confirm",
    ]);
    expect(confirmed.body.fix.note).toMatch(/confirm: false/);
    const quote = await post("/v1/tools/brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["weibo", "x"],
      scale: "large",
      confirm: false,
    });
    expect(quote.body).toMatchObject({ tool: "brand_buzz" });
    expect([quote.status, quote.body.applied_params.scale, quote.body.quote.calls_planned, mock.state.balance]).toEqual(
      [200, "large", 30, start],
    );
  });
});

describe("credits (seed: billing)", () => {
  it("ok and empty cost 1 credit per platform or target; the answer's billing shows cost and balance", async () => {
    const start = mock.state.balance;
    const one = await search({ platform: "xiaohongshu", query: "露营" });
    expect([one.body.billing.cost, one.body.billing.balance, mock.state.balance]).toEqual([1, start - 1, start - 1]);
    const fan = await search({ platforms: "x,reddit,youtube", query: "typescript" });
    expect([fan.body.status, fan.body.billing.cost, fan.body.billing.balance]).toEqual(["ok", 3, start - 4]);
    const targets = await post("/v1/detail", { platform: "bilibili", id: ["BV1", "BV2"] });
    expect([targets.body.status, targets.body.billing.cost, mock.state.balance]).toEqual(["ok", 2, start - 6]);
    expect(
      targets.body.targets.map((c: { result: { items: Array<{ id: string }> } }) => c.result.items[0]!.id),
    ).toEqual(["BV1", "BV2"]);
    mock.use(scenario("empty", { times: 1 }));
    const empty = await post("/v1/trending", { platforms: ["weibo", "zhihu"] });
    expect([empty.body.status, empty.body.billing.cost, mock.state.balance]).toEqual(["empty", 2, start - 8]);
    // D51: a tool is charged per provider call made that answered ok or empty, at most its quote (3 searches +
    // 3 × 2 comments); a post without comments is a call not made.
    const tool = await post("/v1/tools/brand_buzz", {
      query: "瑞幸咖啡",
      platforms: ["xiaohongshu", "weibo", "douyin"],
    });
    const charged = tool.body.charge.charged_credits as number;
    expect([tool.body.status, tool.body.charge.quote_credits, tool.body.billing.cost_credits]).toEqual([
      "ok",
      9,
      charged,
    ]);
    expect(charged).toBeGreaterThanOrEqual(3);
    expect(charged).toBeLessThanOrEqual(9);
    expect([tool.body.billing.balance_credits, mock.state.spentToday]).toEqual([start - 8 - charged, 8 + charged]);
  });

  it("errors never cost: failures inside 200 answers and every refusal", async () => {
    const start = mock.state.balance;
    for (const name of [
      "error",
      "timeout",
      "not_supported",
      "rate_limited",
      "internal_error",
      "invalid_target",
    ] as const) {
      mock.use(scenario(name, { times: 1 }));
      const got = await post("/v1/detail", { platform: "bilibili", id: "BV1" });
      if (got.status === 200) expect(got.body.billing.cost, name).toBe(0);
    }
    await search({ platform: "x", query: "a", count: "0" });
    expect(mock.state.balance).toBe(start);
  });

  it("a balance of 0 answers 402 insufficient_balance before running; so does a balance under the quote", async () => {
    mock.state.setBalance(0);
    const got = await search({ platform: "x", query: "a" });
    expect([got.status, got.body.code, got.body.quote_credits]).toEqual([402, "insufficient_balance", 1]);
    mock.state.setBalance(2);
    const fan = await search({ platforms: "x,reddit,weibo", query: "a" });
    expect([fan.status, fan.body.quote_credits]).toEqual([402, 3]);
    expect(mock.state.balance).toBe(2);
    expect(mock.state.runs).toEqual([]);
  });

  it("a run still going holds its quote: the next call sees only what is left, and gets it back when the run ends", async () => {
    mock.state.setBalance(3);
    const slow = await post(
      "/v1/search",
      { platforms: ["x", "reddit"], query: "slow a" },
      { "Idempotency-Key": idem() },
    );
    expect([slow.status, mock.state.runs[0]?.quoteCredits]).toEqual([202, 2]);
    const next = await search({ platforms: "x,reddit", query: "b" });
    expect([next.status, next.body.code, next.body.message]).toEqual([
      402,
      "insufficient_balance",
      "This call costs 2 credits and 1 are available; nothing ran.",
    ]);
    expect((await search({ platform: "x", query: "c" })).status).toBe(200); // 1 is still available
    mock.state.breakRun(slow.body.handle as string);
    const after = await search({ platforms: "x,reddit", query: "b" });
    expect([after.status, mock.state.balance]).toEqual([200, 0]); // the broken run held nothing any more
  });

  it("max_cost_credits under the quote answers 402 max_cost_exceeded with quote_credits", async () => {
    const got = await post("/v1/search", { platforms: ["x", "reddit", "weibo"], query: "a", max_cost_credits: 2 });
    expect([got.status, got.body.code, got.body.quote_credits, got.body.fix.param]).toEqual([
      402,
      "max_cost_exceeded",
      3,
      "max_cost_credits",
    ]);
    const q = await search({ platform: "x", query: "a", max_cost_credits: "0" });
    expect([q.status, q.body.quote_credits]).toEqual([402, 1]);
    expect(
      (await post("/v1/search", { platforms: ["x", "reddit", "weibo"], query: "a", max_cost_credits: 3 })).status,
    ).toBe(200);
  });

  it("confirm: false answers the tool's quote and charges nothing (D8)", async () => {
    const got = await post("/v1/tools/viral_finder", {
      query: "AI 绘画",
      platforms: ["douyin", "kuaishou"],
      confirm: false,
    });
    expect(got.status).toBe(200);
    // D51: 2 searches + the latest posts of 2 × count (10) authors = 22 calls, over 10: background.
    expect([
      got.body.quote.quote_credits,
      got.body.quote.calls_planned,
      got.body.billing.cost_credits,
      got.body.quote.mode,
    ]).toEqual([22, 22, 0, "background"]);
    expect(got.body.quote.plan.map((s: { name: string; calls_planned: number }) => [s.name, s.calls_planned])).toEqual([
      ["search", 2],
      ["posts", 20],
      ["aggregate", 0],
    ]);
    expect(mock.state.balance).toBe(100);
  });
});

describe("202 runs and GET /v1/results/{handle}", () => {
  it("a slow call answers 202 with a handle, reads answer 202 `polls` times, then the finished answer charged once, then the same for free", async () => {
    const started = await post(
      "/v1/search",
      { platforms: ["x", "reddit"], query: "slow typescript" },
      { "Idempotency-Key": idem() },
    );
    expect(started.status).toBe(202);
    expect(validateHandleAnswer(started.body).ok).toBe(true);
    expect(started.headers.get("retry-after")).toBe("1");
    expect([started.body.charge, started.body.billing.cost_credits]).toEqual([
      { quote_credits: 2, charged_credits: 0 },
      0,
    ]);
    expect(mock.state.balance).toBe(100);
    const handle = started.body.handle as string;

    const reads = [];
    for (let i = 0; i < 5; i++) reads.push(await send({ path: `/v1/results/${handle}` }));
    expect(reads.map((r) => r.status)).toEqual([202, 202, 200, 200, 200]);
    expect(reads[0]!.body.cells.length).toBeLessThan(reads[1]!.body.cells.length);
    for (const r of reads) expect(responseValidators.getResult(r.status, r.body).ok).toBe(true);
    expect([reads[2]!.body.billing.cost, reads[2]!.body.billing.balance, mock.state.balance]).toEqual([2, 98, 98]);
    expect(reads[4]!.body).toEqual(reads[2]!.body);
    expect(mock.state.run(handle)).toMatchObject({ status: "finished", chargedCredits: 2, reads: 2 });
  });

  it("every running and finished read keeps the request_id of the call that started the run; refusals get their own (D47)", async () => {
    const started = await post(
      "/v1/search",
      { platforms: ["x", "reddit"], query: "slow typescript" },
      { "Idempotency-Key": idem() },
    );
    const id = started.body.request_id as string;
    const handle = started.body.handle as string;
    const reads = [];
    for (let i = 0; i < 4; i++) reads.push(await send({ path: `/v1/results/${handle}` }));
    expect(reads.map((r) => [r.status, r.body.request_id])).toEqual([
      [202, id],
      [202, id],
      [200, id],
      [200, id],
    ]);
    const other = await send({ path: `/v1/results/${handle}`, key: NOSCOPE });
    expect(other.status).toBe(404);
    expect(other.body.request_id).not.toBe(id);
    expect(other.body.request_id).toMatch(/^req_[0-9A-Z]{26}$/);
  });

  it("csv and ndjson of a finished result are toCsv and toNdjson of it; a run still going answers 202 whatever the format", async () => {
    const handle = await startRun();
    const early = await send({ path: `/v1/results/${handle}`, query: { format: "csv" } });
    expect([early.status, early.body.status]).toEqual([202, "running"]);
    mock.state.finishRun(handle);
    const json = await send({ path: `/v1/results/${handle}` });
    const csv = await send({ path: `/v1/results/${handle}`, query: { format: "csv" } });
    const ndjson = await send({ path: `/v1/results/${handle}`, query: { format: "ndjson" } });
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(ndjson.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
    expect(csv.text).toBe(toCsv(json.body));
    expect(ndjson.text).toBe(toNdjson(json.body));
    expect(ndjson.text.trim().split("\n")).toHaveLength(json.body.items.length);
    // D53: files are downloads named by their handle; nothing is cached or sniffed.
    expect(csv.headers.get("content-disposition")).toBe(`attachment; filename="${handle}.csv"`);
    expect(ndjson.headers.get("content-disposition")).toBe(`attachment; filename="${handle}.ndjson"`);
    for (const r of [json, csv, ndjson, early]) {
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(r.headers.get("cache-control")).toBe("no-store");
    }
    expect(json.headers.get("content-disposition")).toBeNull();
    const caps = await send({ path: "/v1/capabilities" });
    expect([caps.headers.get("x-content-type-options"), caps.headers.get("cache-control")]).toEqual(["nosniff", null]);
  });

  it("another key reads 404 not_found (no_such_handle); an unknown handle too", async () => {
    const handle = await startRun();
    const other = await send({ path: `/v1/results/${handle}`, key: NOSCOPE });
    expect([other.status, other.body.code, other.body.reason, other.body.fix.param]).toEqual([
      404,
      "not_found",
      "no_such_handle",
      "handle",
    ]);
    const unknown = await send({ path: "/v1/results/h_nothing_here" });
    expect([unknown.status, unknown.body.reason]).toEqual([404, "no_such_handle"]);
  });

  it("expiry: state.expire, or 24 hours after the run ended, answers 410 handle_expired", async () => {
    const a = await startRun();
    mock.state.finishRun(a);
    expect((await send({ path: `/v1/results/${a}` })).status).toBe(200);
    mock.state.expire(a);
    const gone = await send({ path: `/v1/results/${a}` });
    expect([gone.status, gone.body.code]).toEqual([410, "handle_expired"]);

    const b = await startRun();
    mock.state.finishRun(b);
    expect((await send({ path: `/v1/results/${b}` })).status).toBe(200);
    offset = 23 * 3_600_000;
    expect((await send({ path: `/v1/results/${b}` })).status).toBe(200);
    offset = 24 * 3_600_000 + 1000;
    expect((await send({ path: `/v1/results/${b}` })).status).toBe(410);
  });

  it("a broken run answers 500 internal_error and is never charged (state.breakRun or a forced internal_error on getResult)", async () => {
    const a = await startRun();
    mock.state.breakRun(a);
    for (let i = 0; i < 4; i++) expect((await send({ path: `/v1/results/${a}` })).body.code).toBe("internal_error");

    const b = await startRun();
    mock.use(scenario("internal_error", { operation: "getResult", times: 1 }));
    expect((await send({ path: `/v1/results/${b}` })).status).toBe(500);
    const again = await send({ path: `/v1/results/${b}` });
    expect([again.status, mock.state.run(b)!.status]).toEqual([500, "broken"]);
    expect(mock.state.balance).toBe(100);
  });

  it("a forced running scenario goes 202; a forced status on getResult ends the run with it", async () => {
    mock.use(scenario("running", { times: 1 }));
    const got = await post("/v1/detail", { platform: "bilibili", id: "BV1" });
    expect(got.status).toBe(202);
    mock.use(scenario("timeout", { operation: "getResult", times: 1 }));
    const read = await send({ path: `/v1/results/${got.body.handle}` });
    expect([read.status, read.body.status, read.headers.get("x-should-retry")]).toEqual([200, "timeout", "false"]);
    expect(mock.state.balance).toBe(100);
  });

  it("a tool run shows its steps while it runs; polls and retry-after are options", async () => {
    const quick = createMock({ baseUrl: "http://quick.test", polls: 0, retryAfter: 3 });
    server.use(...quick.handlers);
    const r = await fetch("http://quick.test/v1/tools/account_watch", {
      method: "POST",
      headers: { "X-API-Key": KEY, "Content-Type": "application/json" },
      body: JSON.stringify({ accounts: ["https://x.com/slow"] }),
    });
    const body = (await r.json()) as { handle: string; retry_after_seconds: number; steps: unknown[] };
    expect([r.status, r.headers.get("retry-after"), body.retry_after_seconds, body.steps.length > 0]).toEqual([
      202,
      "3",
      3,
      true,
    ]);
    const read = await fetch(`http://quick.test/v1/results/${body.handle}`, { headers: { "X-API-Key": KEY } });
    expect([read.status, ((await read.json()) as { tool: string }).tool]).toEqual([200, "account_watch"]);
    server.resetHandlers();
  });

  it("with the default baseUrl (*) it answers any origin, handles included", async () => {
    const anywhere = createMock();
    server.use(...anywhere.handlers);
    const headers = { "X-API-Key": KEY, "Idempotency-Key": idem() };
    const started = await fetch("http://any.test/v1/search?platform=x&query=slow", { headers });
    const { handle } = (await started.json()) as { handle: string };
    anywhere.state.finishRun(handle);
    const read = await fetch(`https://elsewhere.test/v1/results/${handle}`, { headers: { "X-API-Key": KEY } });
    expect([started.status, read.status]).toEqual([202, 200]);
    server.resetHandlers();
  });

  it("slow is an option: a pattern or a predicate", async () => {
    const custom = createMock({ baseUrl: "http://slow.test", slow: (call) => call.operationId === "trending" });
    server.use(...custom.handlers);
    const t = await fetch("http://slow.test/v1/trending", {
      method: "POST",
      headers: { "X-API-Key": KEY, "Content-Type": "application/json" },
      body: JSON.stringify({ platform: "weibo" }),
    });
    const d = await fetch("http://slow.test/v1/detail", {
      method: "POST",
      headers: { "X-API-Key": KEY, "Content-Type": "application/json" },
      body: JSON.stringify({ platform: "weibo", id: "slow" }),
    });
    expect([t.status, d.status]).toEqual([202, 200]);
    server.resetHandlers();
  });
});

describe("idempotency (seed: Idempotency; D35)", () => {
  it(
    "same key and parameters while running: 409 with Retry-After; after the run ended: the first " +
      "answer again, Idempotent-Replayed, no new charge",
    async () => {
      const key = idem();
      const body = { platform: "bilibili", query: "slow 装修" };
      const first = await post("/v1/search", body, { "Idempotency-Key": key });
      expect(first.status).toBe(202);
      const busy = await post("/v1/search", body, { "Idempotency-Key": key });
      expect([busy.status, busy.body.code, busy.headers.get("retry-after")]).toEqual([
        409,
        "idempotency_in_progress",
        "1",
      ]);
      await send({ path: `/v1/results/${first.body.handle}` });
      const finished = await send({ path: `/v1/results/${first.body.handle}` });
      expect([finished.status, mock.state.balance]).toEqual([200, 99]);
      const replay = await post("/v1/search", body, { "Idempotency-Key": key });
      expect([
        replay.status,
        replay.headers.get("idempotent-replayed"),
        replay.body.billing.cost,
        mock.state.balance,
      ]).toEqual([200, "true", 1, 99]);
      expect(replay.body.request_id).toBe(finished.body.request_id);
    },
  );

  it("an answered call replays unchanged (cost as charged, balance unmoved); other parameters under the key are 422", async () => {
    const key = idem();
    const first = await search({ platform: "x", query: "a" }, { "Idempotency-Key": key });
    const again = await search({ platform: "x", query: "a" }, { "Idempotency-Key": key });
    expect(again.body).toEqual(first.body);
    expect([
      again.headers.get("idempotent-replayed"),
      first.headers.get("idempotent-replayed"),
      mock.state.balance,
    ]).toEqual(["true", null, 99]);
    const other = await search({ platform: "x", query: "b" }, { "Idempotency-Key": key });
    expect([other.status, other.body.code, other.body.fix.param]).toEqual([
      422,
      "idempotency_conflict",
      "Idempotency-Key",
    ]);
  });

  it("calls sent at once under one key run once: the others get 409 while it runs, the first answer after", async () => {
    const key = idem();
    const body = { platform: "x", query: "at once" };
    const all = await Promise.all(
      Array.from({ length: 8 }, () => post("/v1/search", body, { "Idempotency-Key": key })),
    );
    const statuses = all.map((g) => g.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    expect(mock.state.balance).toBe(99);
    const after = await post("/v1/search", body, { "Idempotency-Key": key });
    expect([after.status, after.headers.get("idempotent-replayed"), mock.state.balance]).toEqual([200, "true", 99]);
  });

  it("a refusal is not kept under the key: the same key runs once the refusal is gone", async () => {
    const key = idem();
    mock.use(scenario("rate_limited", { times: 1 }));
    expect((await search({ platform: "x", query: "a" }, { "Idempotency-Key": key })).status).toBe(429);
    const got = await search({ platform: "x", query: "a" }, { "Idempotency-Key": key });
    expect([got.status, got.headers.get("idempotent-replayed"), mock.state.balance]).toEqual([200, null, 99]);
  });
});

describe("paging (D19)", () => {
  it("a single-platform search pages until has_more is false; the cursor says where; every page is a charged call", async () => {
    const ids = new Set<string>();
    let got = await search({ platform: "xiaohongshu", query: "露营", count: "2" });
    const seen = [];
    for (;;) {
      expect(got.status).toBe(200);
      seen.push(got.body.page.has_more);
      for (const item of got.body.items) ids.add(item.id);
      if (!got.body.page.has_more) break;
      expect(JSON.parse(Buffer.from(got.body.page.cursor, "base64url").toString())).toMatchObject({
        p: "xiaohongshu",
        op: "search",
      });
      got = await search({ platform: "xiaohongshu", query: "露营", count: "2", cursor: got.body.page.cursor });
    }
    expect(seen).toEqual([true, true, false]);
    expect(ids.size).toBe(6);
    expect(mock.state.balance).toBe(97);
  });

  it("comments and user posts page too", async () => {
    for (const path of ["/v1/comments", "/v1/user_posts"]) {
      const first = await post(path, { platform: "reddit", id: "t3_1gq8x2k", limit: 2 });
      expect(first.body.page.has_more, path).toBe(true);
      const second = await post(path, {
        platform: "reddit",
        id: "t3_1gq8x2k",
        limit: 2,
        cursor: first.body.page.cursor,
      });
      expect([second.status, second.body.page.has_more]).toEqual([200, true]);
    }
  });

  it("a fanout entry's cursor goes on with that platform", async () => {
    const fan = await search({ platforms: "x,reddit", query: "a" });
    const cursor = fan.body.fanout.reddit.page.cursor;
    expect((await search({ platform: "reddit", query: "a", cursor })).status).toBe(200);
    const wrong = await search({ platform: "x", query: "a", cursor });
    expect([wrong.status, wrong.body.fix.param]).toEqual([400, "cursor"]);
  });

  it("a cursor the mock did not give out is invalid_params naming cursor", async () => {
    const made = Buffer.from(JSON.stringify({ v: 1, op: "search", platform: "x", page: 2 })).toString("base64url");
    for (const cursor of ["nope", made]) {
      const got = await search({ platform: "x", query: "a", cursor });
      expect([got.status, got.body.code, got.body.fix.param, got.body.message]).toEqual([
        400,
        "invalid_params",
        "cursor",
        "`cursor` is invalid or expired; restart without `cursor`.",
      ]);
    }
  });
});

describe("schedules (D11) and the account", () => {
  it("account_watch with schedule adds a schedule; DELETE removes it; an unknown one is 404", async () => {
    const before = (await send({ path: "/v1/schedules" })).body.schedules.length;
    await post("/v1/tools/account_watch", { accounts: ["https://x.com/vercel"], schedule: { every: "6h" } });
    const list = (await send({ path: "/v1/schedules" })).body.schedules;
    expect(list).toHaveLength(before + 1);
    const id = list.at(-1).id;
    expect((await send({ path: "/v1/account" })).body.workspace.schedules_count).toBe(before + 1);
    expect((await send({ method: "DELETE", path: `/v1/schedules/${id}` })).body).toMatchObject({
      deleted: true,
      schedule_id: id,
    });
    const gone = await send({ method: "DELETE", path: `/v1/schedules/${id}` });
    expect([gone.status, gone.body.reason]).toEqual([404, "no_such_schedule"]);
  });

  it("the account shows this key and the credits now", async () => {
    await search({ platform: "x", query: "a" });
    const got = await send({ path: "/v1/account" });
    expect(got.body.key.permissions).toEqual(["read_data"]);
    expect([got.body.billing.balance_credits, got.body.billing.today_spend_credits]).toEqual([99, 1]);
  });
});

describe("routes", () => {
  it("an unknown tool is 404 no_such_tool; with a base address any other /v1/ path is 404 no_such_route", async () => {
    const tool = await post("/v1/tools/sentiment", {});
    expect([tool.status, tool.body.reason, tool.body.fix.allowed]).toEqual([
      404,
      "no_such_tool",
      [
        "brand_buzz",
        "comment_insights",
        "account_watch",
        "find_creators",
        "creator_card",
        "batch_stats",
        "viral_finder",
      ],
    ]);
    const route = await send({ path: "/v1/nothing" });
    expect([route.status, route.body.reason, route.body.fix.example_call]).toEqual([
      404,
      "no_such_route",
      { method: "GET", path: "/v1/capabilities" },
    ]);
  });

  it(
    "with a base address, any path under it outside the contract answers as the gateway: 404 " +
      "no_such_route with the routes and GET /v1/capabilities",
    async () => {
      for (const [method, path] of [
        ["GET", "/v2/search"],
        ["GET", "/nothing"],
        ["GET", "/"],
        ["POST", "/v2/search"],
        ["DELETE", "/v1/search"],
      ] as const) {
        const got = await send({ method, path, ...(method === "POST" ? { body: {} } : {}) });
        expect([got.status, got.body.code, got.body.reason, got.body.fix.example_call], `${method} ${path}`).toEqual([
          404,
          "not_found",
          "no_such_route",
          { method: "GET", path: "/v1/capabilities" },
        ]);
        expect(got.body.fix.allowed).toContain("GET /v1/search");
        expect(got.body.fix.allowed).toHaveLength(22);
        expect(got.body.message).toBe(`There is no route ${method} ${path}.`);
      }
    },
  );

  it("never answers other origins, nor, under a base with a path, what is outside that path; with the base * only /v1/ paths when asked", async () => {
    const answered = async (handlers: Parameters<typeof getResponse>[0], url: string) =>
      (await getResponse(handlers, new Request(url)))?.status;
    expect(await answered(mock.handlers, "http://elsewhere.test/nothing")).toBeUndefined();
    expect(await answered(mock.handlers, "http://elsewhere.test/v1/search")).toBeUndefined();
    const prefixed = createMock({ baseUrl: "https://api.example.test/gateway/" });
    expect(await answered(prefixed.handlers, "https://api.example.test/gateway/v2/search")).toBe(404);
    expect(await answered(prefixed.handlers, "https://api.example.test/gateway")).toBe(404);
    expect(await answered(prefixed.handlers, "https://api.example.test/gateway/v1/capabilities")).toBe(200);
    expect(await answered(prefixed.handlers, "https://api.example.test/app.js")).toBeUndefined();
    expect(await answered(prefixed.handlers, "https://api.example.test/gatewayx/v1/search")).toBeUndefined();
    const anywhere = createMock();
    expect(await answered(anywhere.handlers, "http://any.test/v1/nothing")).toBeUndefined();
    expect(await answered(createMock({ unknownRoutes: true }).handlers, "http://any.test/v1/nothing")).toBe(404);
    expect(await answered(createMock({ unknownRoutes: true }).handlers, "http://any.test/nothing")).toBeUndefined();
    expect(
      await answered(createMock({ baseUrl: BASE, unknownRoutes: false }).handlers, `${BASE}/nothing`),
    ).toBeUndefined();
  });

  it("reset() turns scenarios off and restores the state", async () => {
    mock.use(scenario("rate_limited"));
    mock.state.setBalance(3);
    await startRun().catch(() => undefined);
    mock.reset();
    expect([mock.state.balance, mock.state.runs.length, (await send({ path: "/v1/account" })).status]).toEqual([
      100, 0, 200,
    ]);
  });
});

describe("the development check of every answer", () => {
  it("throws a clear error instead of serving a broken fixture; validate: false serves it", async () => {
    const fixture = FIXTURES["getAccount/ok.json"] as { account: { plan: string } };
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    fixture.account.plan = "gold";
    try {
      const got = await fetch(`${BASE}/v1/account`, { headers: { "X-API-Key": KEY } }).then(
        async (r) => `${r.status} ${await r.text()}`,
        (e: unknown) => String(e),
      );
      expect(got).toMatch(
        /@sdgw\/mock: the answer to GET \/v1\/account \(getAccount\) under HTTP 200 does not match the contract: \/account\/plan/,
      );
      const loose = createMock({ baseUrl: "http://loose.test", validate: false });
      server.use(...loose.handlers);
      const served = await fetch("http://loose.test/v1/account", { headers: { "X-API-Key": KEY } });
      expect([served.status, ((await served.json()) as { account: { plan: string } }).account.plan]).toEqual([
        200,
        "gold",
      ]);
    } finally {
      fixture.account.plan = "paid";
      errors.mockRestore();
      server.resetHandlers();
    }
  });
});
