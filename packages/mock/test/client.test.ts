/**
 * The SDK (@sdgw/client, from its sources) against the mock: a plain call, a polled call, a forced rate_limited
 * the client retries by itself under the same Idempotency-Key, and a forced invalid_params thrown as a typed
 * SdgwError.
 */
import { setupServer } from "msw/node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createClient, isSdgwError, SdgwError } from "../../client/src/index.ts";
import { createMock, scenario } from "../src/index.ts";
import { BASE, KEY } from "./helpers.ts";

const mock = createMock({ baseUrl: BASE, polls: 1, retryAfter: 1 });
const server = setupServer(...mock.handlers);
const seen: Array<{ path: string; key: string | null; status?: number }> = [];
server.events.on("response:mocked", ({ request, response }) => {
  seen.push({
    path: new URL(request.url).pathname,
    key: request.headers.get("idempotency-key"),
    status: response.status,
  });
});
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterAll(() => server.close());
beforeEach(() => {
  mock.reset();
  seen.length = 0;
});

const client = () => createClient({ baseUrl: BASE, apiKey: KEY, retryBaseMs: 10 });

describe("@sdgw/client against @sdgw/mock", () => {
  it("a plain call: the typed envelope, charged 1 credit", async () => {
    const answer = await client().search({ platform: "xiaohongshu", query: "露营装备", count: 2 });
    expect(answer.status).toBe("ok");
    if (answer.status === "ok") expect(answer.items).toHaveLength(2);
    expect(answer.billing).toMatchObject({ cost: 1, balance: 99 });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("a polled call: 202, one 202 read, then the finished answer", async () => {
    const progress: string[] = [];
    const answer = await client().tools.brandBuzz(
      { query: "slow 瑞幸咖啡", platforms: ["xiaohongshu", "weibo"] },
      { onProgress: (r) => progress.push(r.handle) },
    );
    expect(answer).toMatchObject({ tool: "brand_buzz", status: "ok", charge: { quote_credits: 6 } }); // 2 searches + 2 × 2 comments (D51)
    const charged = (answer as { charge: { charged_credits: number } }).charge.charged_credits; // the calls made, at most the quote
    expect(charged).toBeGreaterThanOrEqual(2);
    expect(charged).toBeLessThanOrEqual(6);
    expect(seen.map((s) => s.status)).toEqual([202, 202, 200]);
    expect(progress).toHaveLength(2);
    expect(mock.state.balance).toBe(100 - charged);
  }, 15_000);

  it("a forced rate_limited once: the client waits Retry-After and retries with the same Idempotency-Key", async () => {
    mock.use(scenario("rate_limited", { times: 1 }));
    const answer = await client().detail({ platform: "bilibili", url: "https://www.bilibili.com/video/BV1xK4y1a7Zq" });
    expect(answer.status).toBe("ok");
    expect(seen.map((s) => s.status)).toEqual([429, 200]);
    expect(seen[1]!.key).toBe(seen[0]!.key);
    expect(mock.state.balance).toBe(99);
  }, 15_000);

  it("a forced invalid_params is thrown as a typed SdgwError", async () => {
    mock.use(scenario("invalid_params", { operation: "trending" }));
    const error = await client()
      .trending({ platform: "weibo" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SdgwError);
    expect(isSdgwError(error, "invalid_params")).toBe(true);
    if (isSdgwError(error, "invalid_params")) {
      expect(error.status).toBe(400);
      expect(error.fix.param).toBeTruthy();
      expect(error.request_id).toMatch(/^req_/);
    }
    expect(seen).toHaveLength(1);
  });

  it("results in every format through the client", async () => {
    const started = await client().searchPost({ platform: "bilibili", query: "slow 装修" }, { wait: false });
    expect(started.status).toBe("running");
    const handle = (started as { handle: string }).handle;
    mock.state.finishRun(handle);
    const json = await client().results.get(handle);
    const rows = [];
    for await (const row of client().results.rows(handle)) rows.push(row);
    expect(rows.length).toBe((json as { items: unknown[] }).items.length);
    expect(await client().results.get(handle, { format: "csv" })).toMatch(/^kind,id/);
  });
});
