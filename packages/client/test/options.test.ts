/**
 * Timeouts, withResponse(), per-call options (also through pages/items), the logger and onRetry, request ids of
 * transport errors, the retry headers (Retry-After, retry-after-ms, X-Should-Retry) and the retries of the MCP
 * `more` helper. Each runs a real node:http server on 127.0.0.1 (port 0) or a fake fetch / MCP caller.
 */
import { readFileSync } from "node:fs";
import type { HandleAnswer } from "@sdgw/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  collectMore,
  createClient,
  isSdgwError,
  items,
  pages,
  SdgwError,
  SdgwTimeoutError,
  SdgwTransportError,
  type McpToolCaller,
  type RetryInfo,
} from "../src/index.ts";
import { startServer, type Handler, type LocalServer, type Reply } from "./local-server.ts";

const fixture = (file: string) =>
  JSON.parse(readFileSync(new URL(`../../../fixtures/${file}`, import.meta.url), "utf8"));
const OK = fixture("search/ok-xiaohongshu.json");
const RUNNING: HandleAnswer = fixture("search/running-202.json");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const KEY = "sdgw_live_SECRET_4f7a9c";
const never = () => new Promise<never>(() => {});
const err = (code: string, extra: object = {}) => ({
  request_id: "req_err",
  schema_version: "v1",
  code,
  message: `${code} happened`,
  retryable: true,
  fix: { note: "n" },
  ...extra,
});

let server: LocalServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  vi.restoreAllMocks();
});
async function serve(handler: Handler, options: Partial<Parameters<typeof createClient>[0]> = {}) {
  server = await startServer(handler);
  return createClient({ baseUrl: server.url, apiKey: KEY, retryBaseMs: 20, ...options });
}

describe("timeout", () => {
  it("settles a hung request with SdgwTimeoutError carrying the Idempotency-Key and the attempts, retried with the same key", async () => {
    const sdgw = await serve(never, { timeout: 150, maxRetries: 2 });
    const t0 = Date.now();
    const error = await sdgw
      .search({ platform: "x", query: "q" }, { idempotencyKey: "idem-1" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SdgwTimeoutError);
    expect(error).toBeInstanceOf(SdgwTransportError);
    expect(error).toMatchObject({ name: "SdgwTimeoutError", requestId: "idem-1", attempts: 3, timeoutMs: 150 });
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(server!.seen).toHaveLength(3);
    expect(server!.seen.map((r) => r.headers["idempotency-key"])).toEqual(["idem-1", "idem-1", "idem-1"]);
  });

  it("takes the call's timeout over the client's, and answers when the server is faster than it", async () => {
    const sdgw = await serve(
      async () => {
        await new Promise((r) => setTimeout(r, 300));
        return { status: 200, body: OK };
      },
      {
        timeout: 100,
        maxRetries: 0,
      },
    );
    await expect(sdgw.search({ platform: "x", query: "q" })).rejects.toBeInstanceOf(SdgwTimeoutError);
    expect(await sdgw.search({ platform: "x", query: "q" }, { timeout: 2000 })).toEqual(OK);
  });

  it("times out a body that never ends, not only the headers", async () => {
    const fetch = (async (_url: string, init: RequestInit) =>
      new Response(
        new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode("{"));
            init.signal!.addEventListener("abort", () => c.error(init.signal!.reason));
          },
        }),
        { status: 200 },
      )) as unknown as typeof globalThis.fetch;
    const sdgw = createClient({ baseUrl: "http://127.0.0.1:1", apiKey: KEY, fetch, timeout: 100, maxRetries: 0 });
    await expect(sdgw.account()).rejects.toBeInstanceOf(SdgwTimeoutError);
  });

  it("does not time out a results.rows stream after its headers, and the caller's signal still stops it", async () => {
    const fetch = (async (_url: string, init: RequestInit) =>
      new Response(
        new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode('{"id":"a"}\n'));
            init.signal!.addEventListener("abort", () => c.error(init.signal!.reason));
          },
        }),
        { status: 200 },
      )) as unknown as typeof globalThis.fetch;
    const sdgw = createClient({ baseUrl: "http://127.0.0.1:1", apiKey: KEY, fetch, timeout: 50 });
    const controller = new AbortController();
    const rows = sdgw.results.rows("h_1", { signal: controller.signal });
    expect((await rows.next()).value).toEqual({ id: "a" });
    await new Promise((r) => setTimeout(r, 150)); // past the timeout: the stream is not cut
    setTimeout(() => controller.abort(new Error("enough")), 20);
    await expect(rows.next()).rejects.toThrow("enough");
  });

  it("does not send a DELETE again after it timed out (it may have run), but retries a free read", async () => {
    // 1 s: long enough for each attempt to reach the server on a busy machine (the server never answers).
    const sdgw = await serve(never, { timeout: 1000, maxRetries: 2 });
    const error = await sdgw.schedules.delete("sch_1").catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "SdgwTimeoutError", attempts: 1, requestId: undefined });
    expect(server!.seen).toHaveLength(1);
    await expect(sdgw.account()).rejects.toBeInstanceOf(SdgwTimeoutError);
    expect(server!.seen).toHaveLength(4);
  });

  it("takes Infinity, or more than a timer can wait, as no timeout: a slow answer arrives, and fetch gets no signal but the caller's (D106)", async () => {
    const sdgw = await serve(
      async () => {
        await new Promise((r) => setTimeout(r, 200));
        return { status: 200, body: OK };
      },
      {
        timeout: Infinity,
      },
    );
    expect(await sdgw.search({ platform: "x", query: "q" })).toEqual(OK);
    // 2^31 ms and more would fire a Node timer at once (clamped to 1 ms): it means no timeout instead.
    expect(await sdgw.search({ platform: "x", query: "q" }, { timeout: 3_000_000_000 })).toEqual(OK);
    const signals: Array<AbortSignal | null | undefined> = [];
    const fetch = (async (_url: string, init: RequestInit) => {
      signals.push(init.signal);
      return Response.json(OK);
    }) as unknown as typeof globalThis.fetch;
    const quick = createClient({ baseUrl: "http://127.0.0.1:1", apiKey: KEY, fetch, timeout: Infinity });
    const caller = new AbortController();
    await quick.search({ platform: "x", query: "q" });
    await quick.search({ platform: "x", query: "q" }, { signal: caller.signal });
    await quick.search({ platform: "x", query: "q" }, { timeout: 5000 });
    expect(signals[0]).toBeNull();
    expect(signals[1]).toBe(caller.signal);
    expect(signals[2]).toBeInstanceOf(AbortSignal); // a finite timeout: the attempt's own controller
    expect(signals[2]).not.toBe(caller.signal);
  });

  it("refuses a timeout that is not a number above 0, naming it (client option and per call)", async () => {
    for (const bad of [0, -1, Number.NaN, "5000" as unknown as number]) {
      expect(() => createClient({ baseUrl: "http://127.0.0.1:1", apiKey: KEY, timeout: bad })).toThrow(
        /^timeout: ms above 0, or Infinity \(got /,
      );
    }
    const fetch = vi.fn(async () => Response.json(OK)) as unknown as typeof globalThis.fetch;
    const sdgw = createClient({ baseUrl: "http://127.0.0.1:1", apiKey: KEY, fetch });
    await expect(sdgw.search({ platform: "x", query: "q" }, { timeout: 0 })).rejects.toThrow(/^timeout: .*\(got 0\)$/);
    expect(fetch).not.toHaveBeenCalled();
  });

  it("still stops at once on the caller's signal, with its reason, not a timeout", async () => {
    const sdgw = await serve(never, { timeout: 5000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user left")), 100);
    await expect(sdgw.search({ platform: "x", query: "q" }, { signal: controller.signal })).rejects.toThrow(
      "user left",
    );
    expect(server!.seen).toHaveLength(1);
  });
});

describe("withResponse", () => {
  it("answers the data with status, headers and request id, without sending the call again", async () => {
    const sdgw = await serve(() => ({ status: 200, body: OK, headers: { "x-ratelimit-remaining": "9" } }));
    const promise = sdgw.search({ platform: "xiaohongshu", query: "q" });
    const { data, status, headers, requestId, response } = await promise.withResponse();
    expect(data).toEqual(OK);
    expect(await promise).toEqual(OK);
    expect(status).toBe(200);
    expect(headers.get("x-ratelimit-remaining")).toBe("9");
    expect(requestId).toBe(OK.request_id);
    expect(response.bodyUsed).toBe(true);
    expect(server!.seen).toHaveLength(1);
  });

  it("gives the read that finished a polled call, and the header request id of a text result", async () => {
    const sdgw = await serve(
      (req): Reply =>
        req.path === "/v1/search"
          ? { status: 202, body: { ...RUNNING, retry_after_seconds: 0 }, headers: { "retry-after-ms": "10" } }
          : req.query.get("format") === "csv"
            ? { status: 200, body: "a,b\n", headers: { "x-request-id": "req_csv" } }
            : { status: 200, body: OK, headers: { "x-poll": "yes" } },
    );
    const polled = await sdgw.search({ platform: "x", query: "q" }).withResponse();
    expect(polled.headers.get("x-poll")).toBe("yes");
    expect(polled.status).toBe(200);
    const csv = await sdgw.results.get("h_1", { format: "csv" }).withResponse();
    expect(csv).toMatchObject({ data: "a,b\n", requestId: "req_csv" });
  });

  it("rejects with the call's error", async () => {
    const sdgw = await serve(() => ({ status: 402, body: err("insufficient_balance", { retryable: false }) }));
    const error = await sdgw
      .account()
      .withResponse()
      .catch((e: unknown) => e);
    expect(isSdgwError(error, "insufficient_balance")).toBe(true);
  });
});

describe("per-call options", () => {
  it("takes maxRetries per call (0: one attempt) over the client's", async () => {
    const sdgw = await serve(() => ({ status: 503, body: err("temporarily_unavailable", { reason: "paused" }) }), {
      maxRetries: 3,
    });
    await expect(sdgw.search({ platform: "x", query: "q" }, { maxRetries: 0 })).rejects.toBeInstanceOf(SdgwError);
    expect(server!.seen).toHaveLength(1);
    await expect(sdgw.search({ platform: "x", query: "q" }, { maxRetries: 1 })).rejects.toBeInstanceOf(SdgwError);
    expect(server!.seen).toHaveLength(3);
  });

  it("passes signal, onProgress, maxRetries and a per-page idempotencyKey to every page of pages() and items()", async () => {
    const page = (n: number, more: boolean) => ({
      ...OK,
      items: [{ kind: "item", id: `p${n}` }],
      page: more ? { has_more: true, cursor: `c${n}` } : { has_more: false },
    });
    let failed = false;
    const sdgw = await serve(
      (req) => {
        if (req.path.startsWith("/v1/results/")) return { status: 200, body: page(2, true) };
        const c = req.query.get("cursor");
        if (c === "c1")
          return { status: 202, body: { ...RUNNING, retry_after_seconds: 0 }, headers: { "retry-after-ms": "5" } };
        if (c === "c2" && !failed) {
          failed = true;
          return { status: 500, body: err("internal_error") };
        }
        return { status: 200, body: c === null ? page(1, true) : page(3, false) };
      },
      { maxRetries: 0 },
    );
    const progress: string[] = [];
    const ids: string[] = [];
    for await (const item of items(
      sdgw.search,
      { platform: "x", query: "q" },
      { idempotencyKey: "walk-1", maxRetries: 1, onProgress: (r) => progress.push(r.handle) },
    ))
      ids.push((item as { id: string }).id);
    expect(ids).toEqual(["p1", "p2", "p3"]);
    expect(progress).toEqual([RUNNING.handle]);
    const keys = server!.seen.filter((r) => r.path === "/v1/search").map((r) => r.headers["idempotency-key"]);
    expect(keys).toEqual(["walk-1", "walk-1.p2", "walk-1.p3", "walk-1.p3"]); // page 3 was retried once, same key
    const controller = new AbortController();
    controller.abort(new Error("stopped"));
    const walk = pages(sdgw.search, { platform: "x", query: "q" }, { signal: controller.signal });
    await expect(walk.next()).rejects.toThrow("stopped");
  });
});

describe("logger and onRetry", () => {
  it("logs attempts, polls, retries and failures by level, and never the key", async () => {
    const lines: Array<[string, unknown[]]> = [];
    const logger = {
      debug: (...a: unknown[]) => lines.push(["debug", a]),
      info: (...a: unknown[]) => lines.push(["info", a]),
      warn: (...a: unknown[]) => lines.push(["warn", a]),
      error: (...a: unknown[]) => lines.push(["error", a]),
    };
    const sdgw = await serve(
      (req, i) => {
        if (i === 0)
          return {
            status: 429,
            body: err("rate_limited", { reason: "key_qps", retry_after: 0.01 }),
            headers: { "retry-after-ms": "10" },
          };
        if (req.path === "/v1/search")
          return { status: 202, body: { ...RUNNING, retry_after_seconds: 0 }, headers: { "retry-after-ms": "10" } };
        return { status: 401, body: err("unauthorized", { retryable: false, reason: "invalid" }) };
      },
      { logger, logLevel: "debug", headers: { "X-Extra": KEY } },
    );
    await expect(
      sdgw.search({ platform: "x", query: KEY.slice(0, 4) }, { idempotencyKey: "idem-log" }),
    ).rejects.toBeInstanceOf(SdgwError);
    expect(new Set(lines.map(([l]) => l))).toEqual(new Set(["debug", "info", "warn", "error"]));
    for (const [, args] of lines)
      expect(
        JSON.stringify(args, (_k, v) => (v instanceof Error ? { ...v, message: v.message, stack: v.stack } : v)),
      ).not.toContain(KEY);
    expect(lines.find(([l]) => l === "warn")![1][0]).toMatch(/retrying GET \/v1\/search in \d+ ms \(rate_limited\)/);
    expect(lines.find(([l]) => l === "error")![1]).toEqual([
      "[sdgw] GET /v1/results/{handle} failed: unauthorized",
      { attempt: 1, requestId: "idem-log" },
    ]);
    // Only warn and above with logLevel "warn".
    lines.length = 0;
    const quiet = createClient({ baseUrl: server!.url, apiKey: KEY, logger, logLevel: "warn", retryBaseMs: 10 });
    await quiet.capabilities().catch(() => undefined);
    expect(lines.map(([l]) => l)).toEqual(["error"]);
  });

  it("is silent by default", async () => {
    const spies = (["debug", "info", "warn", "error", "log"] as const).map((m) =>
      vi.spyOn(console, m).mockImplementation(() => {}),
    );
    const sdgw = await serve((_r, i) =>
      i === 0 ? { status: 500, body: err("internal_error") } : { status: 200, body: OK },
    );
    await sdgw.search({ platform: "x", query: "q" });
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
  });

  it("calls onRetry (client and call) with the attempt, delay and reason of each retry", async () => {
    const seenByClient: RetryInfo[] = [];
    const seenByCall: RetryInfo[] = [];
    const sdgw = await serve(
      (_r, i) =>
        i === 0
          ? { status: 500, body: err("internal_error") }
          : i === 1
            ? { status: 0, drop: true }
            : { status: 200, body: OK },
      { onRetry: (r) => seenByClient.push(r) },
    );
    await sdgw.search({ platform: "x", query: "q" }, { idempotencyKey: "k-1", onRetry: (r) => seenByCall.push(r) });
    expect(seenByCall).toEqual(seenByClient);
    expect(seenByCall.map((r) => [r.attempt, r.reason, r.requestId])).toEqual([
      [2, "internal_error", "k-1"],
      [3, "network", "k-1"],
    ]);
    expect(seenByCall[0]!.delayMs).toBeGreaterThanOrEqual(10); // half to all of retryBaseMs (20)
    expect(seenByCall[1]!.delayMs).toBeGreaterThanOrEqual(20); // then doubled
    expect(seenByCall[1]!.error).toBeInstanceOf(SdgwTransportError);
  });
});

describe("transport errors carry the request id and the attempts", () => {
  it("the generated Idempotency-Key", async () => {
    const sdgw = await serve(() => ({ status: 0, drop: true }), { maxRetries: 1 });
    const error = (await sdgw.search({ platform: "x", query: "q" }).catch((e: unknown) => e)) as SdgwTransportError;
    expect(error).toBeInstanceOf(SdgwTransportError);
    expect(error.requestId).toMatch(UUID);
    expect(error.requestId).toBe(server!.seen[0]!.headers["idempotency-key"]);
    expect(error.attempts).toBe(2);
  });

  it("the X-Request-Id the client sends, also for an answer that is not the API's", async () => {
    const sdgw = await serve(() => ({ status: 502, body: "<html>bad gateway</html>" }), {
      maxRetries: 1,
      headers: { "x-request-id": "trace-7" },
    });
    const error = (await sdgw.account().catch((e: unknown) => e)) as SdgwTransportError;
    expect(error).toMatchObject({ name: "SdgwTransportError", status: 502, requestId: "trace-7", attempts: 2 });
    expect(server!.seen[0]!.headers["x-request-id"]).toBe("trace-7");
  });
});

describe("retry headers", () => {
  it("waits retry-after-ms (milliseconds), before Retry-After", async () => {
    const sdgw = await serve((_r, i) =>
      i === 0
        ? {
            status: 429,
            body: err("rate_limited", { reason: "key_qps", retry_after: 0.001 }),
            headers: { "retry-after-ms": "300", "retry-after": "5" },
          }
        : { status: 200, body: OK },
    );
    await sdgw.search({ platform: "x", query: "q" });
    const gap = server!.seen[1]!.at - server!.seen[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(295);
    expect(gap).toBeLessThan(2000);
  });

  it("reads a Retry-After given as an HTTP date", async () => {
    const sdgw = await serve((_r, i) =>
      i === 0
        ? {
            status: 503,
            body: err("temporarily_unavailable", { reason: "paused" }),
            headers: { "retry-after": new Date(Date.now() + 2000).toUTCString() },
          }
        : { status: 200, body: OK },
    );
    await sdgw.search({ platform: "x", query: "q" });
    expect(server!.seen[1]!.at - server!.seen[0]!.at).toBeGreaterThanOrEqual(900); // the date has 1 s precision
  });

  it("X-Should-Retry: false stops a retry the code would allow; true retries one it would not", async () => {
    const sdgw = await serve((_r, i) =>
      i === 0
        ? {
            status: 503,
            body: err("temporarily_unavailable", { reason: "paused" }),
            headers: { "x-should-retry": "false" },
          }
        : i === 1
          ? {
              status: 409,
              body: err("idempotency_conflict", { retryable: false }),
              headers: { "x-should-retry": "true" },
            }
          : { status: 200, body: OK },
    );
    await expect(sdgw.search({ platform: "x", query: "q" })).rejects.toMatchObject({ code: "temporarily_unavailable" });
    expect(server!.seen).toHaveLength(1);
    expect(await sdgw.search({ platform: "x", query: "q" })).toEqual(OK);
    expect(server!.seen).toHaveLength(3);
  });
});

describe("MCP more: retries", () => {
  it("retries rate_limited, temporarily_unavailable and internal_error results and transport failures with the same idempotency_key", async () => {
    const calls: Array<Record<string, unknown> | undefined> = [];
    const waits: number[] = [];
    const retries: RetryInfo[] = [];
    const script: Array<() => unknown> = [
      () => ({ isError: true, structuredContent: err("rate_limited", { reason: "key_qps", retry_after: 2 }) }),
      () => ({ isError: true, structuredContent: err("temporarily_unavailable", { reason: "paused" }) }),
      () => {
        throw new TypeError("fetch failed");
      },
      () => ({ isError: true, structuredContent: err("internal_error") }),
      () => ({
        structuredContent: {
          ...OK,
          items: [{ kind: "item", id: "a" }],
          more: { handle: "h_m.1", rows_left: 1, note: "n" },
        },
      }),
      () => {
        throw Object.assign(new Error("Request timed out"), { code: -32001 });
      },
      () => ({ structuredContent: { ...OK, items: [{ kind: "item", id: "b" }] } }),
    ];
    const mcp: McpToolCaller = {
      async callTool({ arguments: args }) {
        calls.push(args);
        return script[calls.length - 1]!() as never;
      },
    };
    const rows = await collectMore(
      mcp,
      "search",
      { platform: "weibo", query: "q" },
      { sleep: async (s) => void waits.push(s), retryBaseMs: 100, maxRetries: 4, onRetry: (r) => retries.push(r) },
    );
    expect(rows.map((r) => (r as { id: string }).id)).toEqual(["a", "b"]);
    const key = calls[0]!["idempotency_key"];
    expect(key).toMatch(UUID);
    expect(calls.slice(0, 5)).toEqual(Array(5).fill({ platform: "weibo", query: "q", idempotency_key: key }));
    expect(calls.slice(5)).toEqual([{ handle: "h_m.1" }, { handle: "h_m.1" }]);
    expect(retries.map((r) => r.reason)).toEqual([
      "rate_limited",
      "temporarily_unavailable",
      "network",
      "internal_error",
      "timeout",
    ]);
    expect(waits).toEqual([2, 0.2, 0.4, 0.8, 0.1]); // retry_after 2 s beats the 0.1 s backoff; then doubling
  });

  it("gives up after maxRetries, and never retries a final error or a JSON-RPC error answer", async () => {
    const down: McpToolCaller = {
      callTool: async () => {
        throw new TypeError("fetch failed");
      },
    };
    const error = await collectMore(
      down,
      "trending",
      { platform: "weibo" },
      { idempotencyKey: "mine", sleep: async () => {}, maxRetries: 2 },
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "SdgwTransportError", requestId: "mine", attempts: 3 });
    let n = 0;
    const refused: McpToolCaller = {
      callTool: async () => {
        n++;
        return { isError: true, structuredContent: err("insufficient_balance", { retryable: false }) };
      },
    };
    await expect(collectMore(refused, "search", { query: "q" }, { sleep: async () => {} })).rejects.toMatchObject({
      code: "insufficient_balance",
    });
    expect(n).toBe(1);
    const invalid: McpToolCaller = {
      callTool: async () => {
        n++;
        throw Object.assign(new Error("Invalid params"), { code: -32602 });
      },
    };
    await expect(collectMore(invalid, "search", { query: "q" }, { sleep: async () => {} })).rejects.toThrow(
      "Invalid params",
    );
    expect(n).toBe(2);
    const free: Array<Record<string, unknown> | undefined> = [];
    await collectMore(
      {
        callTool: async ({ arguments: a }) => {
          free.push(a);
          return { structuredContent: { ...OK, items: [] } };
        },
      },
      "find",
      { query: "q" },
    );
    expect(free).toEqual([{ query: "q" }]); // free tools get no idempotency_key
  });
});
