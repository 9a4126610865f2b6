/**
 * The connectors' HTTP helper (D116): what a connector's operator and callers notice — a flaky upstream retried
 * within the call's time, `Retry-After` honoured or, past the deadline, handed on; nothing retried that cannot help;
 * an abandoned call's request really cancelled; the budget taken before each attempt; the key never logged.
 */
import { describe, expect, it } from "vitest";
import type { ConnectorContext } from "../../src/connectors/context.ts";
import { upstreamGet, UpstreamReplayMiss, type UpstreamRequest } from "../../src/connectors/http.ts";
import { MemoryBudget, MemoryCache } from "../../src/connectors/memory.ts";

const KEY = "AIzaSyntheticHttpKey-000000000000000";
type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | "network" | "hang";

/** A context whose fetch answers from a script, one entry per attempt, recording what it was asked. */
function scripted(script: Answer[], o: { units?: number } = {}) {
  const seen: { url: string; signal: AbortSignal }[] = [];
  const logs: string[] = [];
  const fakeFetch = (async (url: string, init?: RequestInit) => {
    seen.push({ url, signal: init!.signal! });
    const next = script.shift() ?? { status: 200, body: {} };
    if (next === "network")
      throw new TypeError("fetch failed", { cause: new Error(`connect ECONNREFUSED (key=${KEY})`) });
    if (next === "hang")
      return new Promise<Response>((_, reject) =>
        init!.signal!.addEventListener("abort", () => reject(init!.signal!.reason)),
      );
    return new Response(JSON.stringify(next.body ?? {}), {
      status: next.status,
      headers: { "content-type": "application/json", ...next.headers },
    });
  }) as unknown as typeof globalThis.fetch;
  const ctx: ConnectorContext = {
    fetch: fakeFetch,
    budget: new MemoryBudget({
      buckets: { youtube: [{ name: "units", limit: o.units ?? 100, timeZone: "UTC", label: "test" }] },
      now: Date.now,
    }),
    cache: new MemoryCache({ now: Date.now }),
    now: Date.now,
    log: { info: (m) => logs.push(m), error: (m) => logs.push(m) },
    random: () => 0,
  };
  return { ctx, seen, logs };
}

const request = (o: Partial<UpstreamRequest> = {}): UpstreamRequest => ({
  platform: "youtube",
  method: "videos.list",
  url: "https://upstream.test/youtube/v3/videos",
  query: { id: "kY7bQ2xLm0A", key: KEY, part: undefined },
  cost: [{ bucket: "units", units: 1 }],
  signal: new AbortController().signal,
  deadline: Date.now() + 10_000,
  secrets: [KEY],
  ...o,
});

describe("upstreamGet", () => {
  it("retries a 503 and a network error, then answers; each attempt takes its units; the log never shows the key", async () => {
    const { ctx, seen, logs } = scripted([{ status: 503 }, "network", { status: 200, body: { items: [1] } }]);
    const r = await upstreamGet(ctx, request());
    expect(r).toMatchObject({ ok: true, status: 200, body: { items: [1] }, requests: 3, units: 3 });
    expect(seen[0]!.url).toBe(`https://upstream.test/youtube/v3/videos?id=kY7bQ2xLm0A&key=${KEY}`);
    expect(logs).toHaveLength(2);
    expect(logs[0]).toBe(
      "youtube videos.list: HTTP 503 from GET https://upstream.test/youtube/v3/videos?id=kY7bQ2xLm0A&key=REDACTED; retrying in 0 ms (attempt 2 of 3)",
    );
    expect(logs[1]).toContain("a network error (connect ECONNREFUSED (key=REDACTED))");
    for (const l of logs) expect(l).not.toContain(KEY);
  });

  it("does not retry what a retry cannot help: 400, 401, 403, 404", async () => {
    for (const status of [400, 401, 403, 404]) {
      const { ctx, seen } = scripted([{ status, body: { error: { code: status } } }]);
      const r = await upstreamGet(ctx, request());
      expect(r).toMatchObject({ ok: false, fault: { kind: "http", status }, requests: 1 });
      expect(seen).toHaveLength(1);
    }
  });

  it("waits what Retry-After asks when the call's time allows it, and hands it on when it does not", async () => {
    const slow = scripted([{ status: 429, headers: { "retry-after": "1" } }, { status: 200 }]);
    const started = Date.now();
    expect((await upstreamGet(slow.ctx, request())).ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    const late = scripted([{ status: 429, headers: { "retry-after": "120" } }]);
    const r = await upstreamGet(late.ctx, request({ deadline: Date.now() + 5000 }));
    expect(r).toMatchObject({ ok: false, fault: { kind: "http", status: 429, retryAfter: 120 }, requests: 1 });
    // A 429 that names only its window's reset (X, Reddit) is read as its Retry-After.
    const reset = scripted([
      { status: 429, headers: { "x-rate-limit-reset": String(Math.floor(Date.now() / 1000) + 90) } },
    ]);
    const rr = await upstreamGet(reset.ctx, request({ deadline: Date.now() + 2000 }));
    expect(rr.ok === false && rr.fault.kind === "http" && rr.fault.retryAfter).toBeGreaterThanOrEqual(88);
  });

  it("an aborted call cancels the request in flight: the signal reaches fetch, the answer is a timeout", async () => {
    const { ctx, seen } = scripted(["hang"]);
    const controller = new AbortController();
    const pending = upstreamGet(ctx, request({ signal: controller.signal }));
    setTimeout(() => controller.abort(new Error("the call's time ran out")), 20);
    expect(await pending).toMatchObject({ ok: false, fault: { kind: "timeout" } });
    expect(seen[0]!.signal.aborted).toBe(true);
  });

  it("a drained budget refuses before anything is sent", async () => {
    const { ctx, seen } = scripted([], { units: 0 });
    const r = await upstreamGet(ctx, request());
    expect(r).toMatchObject({
      ok: false,
      fault: { kind: "budget", refusal: { reason: "drained", bucket: "units", limit: 0 } },
      requests: 0,
    });
    expect(seen).toHaveLength(0);
  });

  it("a replay without a recording breaks the call loudly instead of answering", async () => {
    const { ctx } = scripted([]);
    ctx.fetch = (async () => {
      throw new UpstreamReplayMiss("replay: no recording answers GET /youtube/v3/videos");
    }) as unknown as typeof fetch;
    await expect(upstreamGet(ctx, request())).rejects.toThrow(UpstreamReplayMiss);
  });
});
