import { readFileSync } from "node:fs";
import type { HandleAnswer } from "@sdgw/types";
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import {
  collectMore,
  createClient,
  isSdgwError,
  items,
  pages,
  SdgwError,
  SdgwPollTimeoutError,
  SdgwTransportError,
  type McpToolCaller,
} from "../src/index.ts";
import { startServer, type Handler, type LocalServer } from "./local-server.ts";

const fixture = (file: string) =>
  JSON.parse(readFileSync(new URL(`../../../fixtures/${file}`, import.meta.url), "utf8"));
const OK = fixture("search/ok-xiaohongshu.json");
const RUNNING: HandleAnswer = fixture("search/running-202.json");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let server: LocalServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
async function serve(handler: Handler, options: Partial<Parameters<typeof createClient>[0]> = {}) {
  server = await startServer(handler);
  return createClient({ baseUrl: server.url, apiKey: "sdgw_test_key", retryBaseMs: 20, ...options });
}
const err = (code: string, extra: object = {}) => ({
  request_id: "req_err",
  schema_version: "v1",
  code,
  message: `${code} happened`,
  ...extra,
});
const running = (seconds: number): HandleAnswer => ({ ...RUNNING, retry_after_seconds: seconds });

describe("typed calls", () => {
  it("sends the key in X-API-Key and a fresh UUID Idempotency-Key, and answers the typed envelope", async () => {
    const sdgw = await serve(() => ({ status: 200, body: OK }));
    const answer = await sdgw.search({ platform: "xiaohongshu", query: "露营装备", count: 3 });
    expect(answer).toEqual(OK);
    const req = server!.seen[0]!;
    expect(req.headers["x-api-key"]).toBe("sdgw_test_key");
    expect(req.headers["idempotency-key"]).toMatch(UUID);
    expect(Object.fromEntries(req.query)).toEqual({ platform: "xiaohongshu", query: "露营装备", count: "3" });
    expectTypeOf(answer.status).toEqualTypeOf<"ok" | "empty" | "error" | "not_supported" | "timeout">();
  });

  it("sends the key as a bearer token when asked, and repeats list parameters", async () => {
    const sdgw = await serve(() => ({ status: 200, body: fixture("search/fanout-ok-mixed.json") }), { auth: "bearer" });
    await sdgw.search({ platforms: ["x", "reddit"], query: "typescript" });
    expect(server!.seen[0]!.headers["authorization"]).toBe("Bearer sdgw_test_key");
    expect(server!.seen[0]!.query.getAll("platforms")).toEqual(["x", "reddit"]);
  });

  it("looks up globalThis.fetch at each request, so a fetch patched after the client was made (a mock) is used", async () => {
    const sdgw = createClient({ baseUrl: "https://api.example.test", apiKey: "sdgw_test_key" });
    const original = globalThis.fetch;
    const seen: string[] = [];
    globalThis.fetch = (async (url: string | URL | Request) => {
      seen.push(String(url));
      return new Response(JSON.stringify(OK), { status: 200, headers: { "content-type": "application/json" } });
    }) as typeof fetch;
    try {
      expect(await sdgw.search({ platform: "xiaohongshu", query: "q" })).toEqual(OK);
    } finally {
      globalThis.fetch = original;
    }
    expect(seen).toEqual(["https://api.example.test/v1/search?platform=xiaohongshu&query=q"]);
    // A fetch given in the options is kept: it wins over whatever globalThis.fetch is at call time.
    const own: string[] = [];
    const pinned = createClient({
      baseUrl: "https://api.example.test",
      fetch: (async (url: string | URL | Request) => {
        own.push(String(url));
        return new Response(JSON.stringify(OK), { status: 200 });
      }) as typeof fetch,
    });
    await pinned.search({ platform: "x", query: "q" });
    expect(own).toHaveLength(1);
  });

  it("refuses, before sending anything, to put a key in a URL", async () => {
    server = await startServer(() => ({ status: 200, body: OK }));
    expect(() => createClient({ baseUrl: `${server!.url}/?key=sdgw_leak` })).toThrow(/key in the URL/);
    const sdgw = createClient({ baseUrl: server.url, apiKey: "k" });
    await expect(sdgw.search({ platform: "x", query: "q", key: "sdgw_leak" } as never)).rejects.toThrow(
      /key in the URL/,
    );
    expect(server.seen).toHaveLength(0);
  });

  it("posts JSON bodies, with the client-wide budget and a per-call override", async () => {
    const sdgw = await serve(() => ({ status: 200, body: fixture("detail/ok-bilibili.json") }), { maxCostCredits: 5 });
    await sdgw.detail({ platform: "bilibili", url: "https://www.bilibili.com/video/BV1xK4y1a7Zq" });
    await sdgw.detail({ platform: "bilibili", id: "BV1xK4y1a7Zq" }, { maxCostCredits: 2, idempotencyKey: "mine-1" });
    await sdgw.search({ platform: "x", query: "q" });
    expect(server!.seen[0]!.body).toEqual({
      max_cost_credits: 5,
      platform: "bilibili",
      url: "https://www.bilibili.com/video/BV1xK4y1a7Zq",
    });
    expect(server!.seen[1]!.body).toMatchObject({ max_cost_credits: 2 });
    expect(server!.seen[1]!.headers["idempotency-key"]).toBe("mine-1");
    expect(server!.seen[2]!.query.get("max_cost_credits")).toBe("5");
  });

  it("sends no Idempotency-Key and no budget on free routes", async () => {
    const sdgw = await serve(() => ({ status: 200, body: fixture("getAccount/ok.json") }), { maxCostCredits: 5 });
    await sdgw.account();
    expect(server!.seen[0]!.headers["idempotency-key"]).toBeUndefined();
    expect([...server!.seen[0]!.query]).toEqual([]);
  });
});

describe("automatic 202 polling", () => {
  it("polls every Retry-After seconds, never early, about T/r times, and answers the finished answer", async () => {
    const started = Date.now();
    const progress: HandleAnswer[] = [];
    const sdgw = await serve((req) => {
      if (req.path === "/v1/search") return { status: 202, body: running(1), headers: { "retry-after": "1" } };
      return Date.now() - started < 2900
        ? { status: 202, body: running(1), headers: { "retry-after": "1" } }
        : { status: 200, body: OK };
    });
    const answer = await sdgw.search({ platform: "xiaohongshu", query: "q" }, { onProgress: (r) => progress.push(r) });
    expect(answer).toEqual(OK);
    const [call, ...polls] = server!.seen;
    expect(call!.path).toBe("/v1/search");
    expect(polls.map((p) => p.path)).toEqual(Array(polls.length).fill(`/v1/results/${RUNNING.handle}`));
    expect(polls.length).toBe(3); // a run of ~3 s polled every 1 s
    const times = [call!.at, ...polls.map((p) => p.at)];
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(995);
    for (const p of polls) expect(p.headers["x-api-key"]).toBe("sdgw_test_key");
    expect(server!.seen.filter((r) => r.path === "/v1/search")).toHaveLength(1); // the call is never repeated
    expect(progress).toHaveLength(3);
  }, 10_000);

  it("waits the larger of the Retry-After header and retry_after_seconds", async () => {
    const sdgw = await serve((req) =>
      req.path === "/v1/search"
        ? { status: 202, body: running(1), headers: { "retry-after": "2" } }
        : { status: 200, body: OK },
    );
    await sdgw.search({ platform: "x", query: "q" });
    expect(server!.seen[1]!.at - server!.seen[0]!.at).toBeGreaterThanOrEqual(1995);
  }, 10_000);

  it("stops at once when the signal aborts during a wait", async () => {
    const sdgw = await serve(() => ({ status: 202, body: running(5), headers: { "retry-after": "5" } }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user left")), 200);
    const t0 = Date.now();
    await expect(sdgw.search({ platform: "x", query: "q" }, { signal: controller.signal })).rejects.toThrow(
      "user left",
    );
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(server!.seen).toHaveLength(1);
  });

  it("gives up at maxWaitMs with the handle to read later", async () => {
    const sdgw = await serve(() => ({ status: 202, body: running(1), headers: { "retry-after": "1" } }));
    const error = await sdgw.search({ platform: "x", query: "q" }, { maxWaitMs: 1500 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SdgwPollTimeoutError);
    expect((error as SdgwPollTimeoutError).handle).toBe(RUNNING.handle);
    // the call, a poll after Retry-After (1 s) and a last poll at the deadline (1.5 s), never past it
    expect(server!.seen).toHaveLength(3);
    expect(server!.seen[2]!.at - server!.seen[0]!.at).toBeGreaterThanOrEqual(1490);
    expect(server!.seen[2]!.at - server!.seen[0]!.at).toBeLessThan(1900);
  }, 10_000);

  it("polls once at the deadline when maxWaitMs is shorter than Retry-After, instead of giving up unpolled", async () => {
    const sdgw = await serve((req) =>
      req.path === "/v1/search"
        ? { status: 202, body: running(30), headers: { "retry-after": "30" } }
        : { status: 200, body: OK },
    );
    expect(await sdgw.search({ platform: "x", query: "q" }, { maxWaitMs: 300 })).toEqual(OK);
    expect(server!.seen).toHaveLength(2);
    expect(server!.seen[1]!.at - server!.seen[0]!.at).toBeGreaterThanOrEqual(290);
    server!.seen.length = 0;
    const stuck = createClient({
      baseUrl: server!.url,
      apiKey: "k",
      fetch: (async () =>
        new Response(JSON.stringify(running(30)), { status: 202, headers: { "retry-after": "30" } })) as typeof fetch,
    });
    const t0 = Date.now();
    await expect(stuck.search({ platform: "x", query: "q" }, { maxWaitMs: 200 })).rejects.toBeInstanceOf(
      SdgwPollTimeoutError,
    );
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it("answers the handle with { wait: false }", async () => {
    const sdgw = await serve(() => ({ status: 202, body: running(3), headers: { "retry-after": "3" } }));
    const answer = await sdgw.search({ platform: "x", query: "q" }, { wait: false });
    expect(answer).toMatchObject({ status: "running", handle: RUNNING.handle });
    expect(server!.seen).toHaveLength(1);
  });

  it.each([
    [410, "handle_expired", { fix: { note: "Send the call again." } }],
    [404, "not_found", { reason: "no_such_handle", fix: { param: "handle" } }],
    [500, "internal_error", { fix: { note: "The run broke; nothing was charged." } }],
  ] as const)(
    "surfaces a %i read as a typed %s error, read once",
    async (status, code, extra) => {
      const sdgw = await serve((req) =>
        req.path === "/v1/search"
          ? { status: 202, body: running(1), headers: { "retry-after": "1" } }
          : { status, body: err(code, { retryable: code === "internal_error", ...extra }) },
      );
      const error = await sdgw.search({ platform: "x", query: "q" }).catch((e: unknown) => e);
      expect(isSdgwError(error, code)).toBe(true);
      expect(error).toMatchObject({ code, status, request_id: "req_err" });
      expect(server!.seen).toHaveLength(2);
    },
    10_000,
  );
});

describe("retries", () => {
  it.each([
    [429, "rate_limited", { reason: "key_qps", retry_after: 1, retryable: true, fix: { note: "n" } }],
    [409, "idempotency_in_progress", { retry_after: 1, retryable: true, fix: { note: "n" } }],
  ] as const)("retries %i %s after Retry-After with the same Idempotency-Key", async (status, code, extra) => {
    const sdgw = await serve((_r, i) =>
      i === 0 ? { status, body: err(code, extra), headers: { "retry-after": "1" } } : { status: 200, body: OK },
    );
    expect(await sdgw.search({ platform: "x", query: "q" })).toEqual(OK);
    const [a, b] = server!.seen;
    expect(b!.headers["idempotency-key"]).toBe(a!.headers["idempotency-key"]);
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(995);
  });

  it.each([
    [500, "internal_error", {}],
    [503, "temporarily_unavailable", { reason: "paused", headers: { "retry-after": "1" } }],
  ] as const)(
    "retries %i %s with backoff, same key, up to maxRetries",
    async (status, code, extra) => {
      const sdgw = await serve(
        () => ({
          status,
          body: err(code, {
            retryable: true,
            fix: { note: "n" },
            ...("reason" in extra ? { reason: extra.reason } : {}),
          }),
          ...("headers" in extra ? { headers: extra.headers } : {}),
        }),
        { maxRetries: 2 },
      );
      const error = await sdgw.search({ platform: "x", query: "q" }).catch((e: unknown) => e);
      expect(isSdgwError(error, code)).toBe(true);
      expect(server!.seen).toHaveLength(3);
      expect(new Set(server!.seen.map((r) => r.headers["idempotency-key"])).size).toBe(1);
    },
    10_000,
  );

  it("never retries a timeout answer (X-Should-Retry: false): it is returned as the answer", async () => {
    const timeout = fixture("search/timeout-zhihu.json");
    const sdgw = await serve(() => ({ status: 200, body: timeout, headers: { "x-should-retry": "false" } }));
    const answer = await sdgw.search({ platform: "zhihu", query: "q" });
    expect(answer.status).toBe("timeout");
    if (answer.status === "timeout") expect(answer.error.code).toBe("timeout");
    expect(server!.seen).toHaveLength(1);
  });

  it.each([
    [400, "invalid_params", { retryable: false, fix: { param: "count" } }],
    [402, "insufficient_balance", { retryable: false, fix: { action_url: "https://console.sdgw.dev/billing" } }],
    [422, "idempotency_conflict", { retryable: false, fix: { param: "Idempotency-Key" } }],
    [
      429,
      "daily_limit_reached",
      {
        retryable: false,
        reason: "key",
        resets_at: "2026-11-22T00:00:00Z",
        fix: { action_url: "https://console.sdgw.dev/keys" },
      },
    ],
  ] as const)("does not retry %i %s, which the seed marks not retryable", async (status, code, extra) => {
    const sdgw = await serve(() => ({ status, body: err(code, extra), headers: { "retry-after": "1" } }));
    const error = await sdgw.search({ platform: "x", query: "q" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SdgwError);
    expect(error).toMatchObject({ code, status, fix: extra.fix });
    expect(server!.seen).toHaveLength(1);
  });

  it("does not wait for a free_failure_limit longer than maxRetryDelayMs", async () => {
    const sdgw = await serve(() => ({
      status: 429,
      body: err("free_failure_limit", { retryable: true, retry_at: "2026-11-21T09:00:00Z", fix: { note: "n" } }),
      headers: { "retry-after": "300" },
    }));
    await expect(sdgw.search({ platform: "x", query: "q" })).rejects.toMatchObject({ code: "free_failure_limit" });
    expect(server!.seen).toHaveLength(1);
  });

  it("retries a network failure with the same key, then reports a transport error", async () => {
    const sdgw = await serve(() => ({ status: 0, drop: true }), { maxRetries: 2 });
    await expect(sdgw.search({ platform: "x", query: "q" })).rejects.toBeInstanceOf(SdgwTransportError);
    expect(server!.seen).toHaveLength(3);
    expect(new Set(server!.seen.map((r) => r.headers["idempotency-key"])).size).toBe(1);
  });

  it("narrows errors by code to their own fields", async () => {
    const sdgw = await serve(() => ({
      status: 402,
      body: err("max_cost_exceeded", { retryable: false, quote_credits: 33, fix: { param: "max_cost_credits" } }),
    }));
    const error = await sdgw.tools.brandBuzz({ query: "瑞幸" }).catch((e: unknown) => e);
    if (!isSdgwError(error)) throw new Error("expected an SdgwError");
    if (error.code === "max_cost_exceeded") {
      expectTypeOf(error.quote_credits).toEqualTypeOf<number>();
      expect(error.quote_credits).toBe(33);
    } else throw new Error(`unexpected ${error.code}`);
  });
});

describe("results, pages and more", () => {
  it("reads results as JSON, CSV text and NDJSON rows", async () => {
    const csv = readFileSync(new URL("../../../fixtures/getResult/ok-search.csv", import.meta.url), "utf8");
    const ndjson = readFileSync(new URL("../../../fixtures/getResult/ok-search.ndjson", import.meta.url), "utf8");
    const sdgw = await serve((req) => {
      const format = req.query.get("format");
      return format === "csv"
        ? { status: 200, body: csv }
        : format === "ndjson"
          ? { status: 200, body: ndjson }
          : { status: 200, body: OK };
    });
    expect(await sdgw.results.get("h_1")).toEqual(OK);
    expect(await sdgw.results.get("h_1", { format: "csv" })).toBe(csv);
    const rows = [];
    for await (const row of sdgw.results.rows("h_1")) rows.push(row);
    expect(rows).toEqual(
      ndjson
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    );
    expect(server!.seen.every((r) => r.path === "/v1/results/h_1")).toBe(true);
  });

  it("walks pages while has_more, passing page.cursor on", async () => {
    const page = (n: number, more: boolean) => ({
      ...OK,
      items: [{ kind: "item", id: `p${n}` }],
      page: more ? { has_more: true, cursor: `c${n}` } : { has_more: false },
    });
    const sdgw = await serve((req) => {
      const c = req.query.get("cursor");
      return { status: 200, body: c === null ? page(1, true) : c === "c1" ? page(2, true) : page(3, false) };
    });
    const ids = [];
    for await (const item of items(sdgw.search, { platform: "xiaohongshu", query: "q" }))
      ids.push((item as { id: string }).id);
    expect(ids).toEqual(["p1", "p2", "p3"]);
    expect(server!.seen.map((r) => r.query.get("cursor"))).toEqual([null, "c1", "c2"]);
    let count = 0;
    for await (const _ of pages(sdgw.search, { platform: "xiaohongshu", query: "q" })) count++;
    expect(count).toBe(3);
  });

  it("collects every row of an MCP answer across more, passing more.handle back (free, never re-running)", async () => {
    const calls: Array<Record<string, unknown> | undefined> = [];
    const mcp: McpToolCaller = {
      async callTool({ arguments: args }) {
        calls.push(args);
        const position = args?.["handle"] ? Number(String(args["handle"]).split(".")[1]) : 0;
        const rows = Array.from({ length: 100 }, (_, i) => ({ kind: "item", id: `r${position + i}` }));
        const more =
          position + 100 < 250
            ? { handle: `h_abc.${position + 100}`, rows_left: 250 - position - 100, note: "Pass more.handle." }
            : undefined;
        return {
          structuredContent: { ...OK, items: rows.slice(0, Math.min(100, 250 - position)), ...(more ? { more } : {}) },
        };
      },
    };
    const rows = await collectMore(mcp, "search", { platform: "weibo", query: "双十一" });
    expect(rows).toHaveLength(250);
    expect(calls).toEqual([
      { platform: "weibo", query: "双十一", idempotency_key: expect.stringMatching(UUID) },
      { handle: "h_abc.100" },
      { handle: "h_abc.200" },
    ]);
  });

  it("reads a running MCP answer again after retry_after_seconds, then walks more; gives up after maxPolls", async () => {
    const calls: Array<Record<string, unknown> | undefined> = [];
    const waits: number[] = [];
    const running = {
      request_id: "req_1",
      schema_version: "v1",
      status: "running",
      handle: "h_run",
      retry_after_seconds: 3,
    };
    const mcp: McpToolCaller = {
      async callTool({ arguments: args }) {
        calls.push(args);
        if (calls.length <= 2) return { structuredContent: running };
        if (args?.["handle"] === "h_run")
          return {
            structuredContent: {
              ...OK,
              items: [{ kind: "item", id: "a" }],
              more: { handle: "h_run.1", rows_left: 1, note: "Pass more.handle." },
            },
          };
        return { structuredContent: { ...OK, items: [{ kind: "item", id: "b" }] } };
      },
    };
    const sleep = async (s: number) => void waits.push(s);
    const rows = await collectMore(mcp, "brand_buzz", { query: "瑞幸" }, { sleep });
    expect(rows.map((r) => (r as { id: string }).id)).toEqual(["a", "b"]);
    expect(calls).toEqual([
      { query: "瑞幸", idempotency_key: expect.stringMatching(UUID) },
      { handle: "h_run" },
      { handle: "h_run" },
      { handle: "h_run.1" },
    ]);
    expect(waits).toEqual([3, 3]);
    const stuck: McpToolCaller = { callTool: async () => ({ structuredContent: running }) };
    await expect(collectMore(stuck, "brand_buzz", { query: "q" }, { sleep, maxPolls: 2 })).rejects.toThrow(
      /h_run still runs after 2 reads/,
    );
  });
});
