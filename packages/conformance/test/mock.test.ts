/** The suite against @sdgw/mock over HTTP: every applicable check passes; what is not applicable is known. */
import { DEFAULT_KEYS } from "@sdgw/mock";
import { afterAll, describe, expect, it } from "vitest";
import { runConformance } from "../src/index.ts";
import { defineConformanceSuite } from "../src/vitest.ts";
import { startMockHttp } from "./mock-http.ts";

const keys = { ...DEFAULT_KEYS, sdgw_second_key: { permissions: ["read_data"] as const } };
const mock = await startMockHttp({ keys, balance: 10_000 });
afterAll(() => mock.close());

defineConformanceSuite({
  name: "conformance of @sdgw/mock",
  baseUrl: mock.baseUrl,
  key: "sdgw_test_key",
  secondKey: "sdgw_second_key",
  noscopeKey: "sdgw_noscope_key",
  // The mock is MSW handlers of the HTTP routes: it serves no MCP endpoint.
  mcpPath: false,
  onReport(report) {
    expect(report.failed).toBe(0);
    expect(report.results.filter((r) => r.outcome === "not_applicable").map((r) => r.id)).toEqual([
      "mcp.flow",
      "mcp.more",
      "errors.insufficient-balance",
      "errors.daily-limit",
      "errors.rate-limited",
    ]);
  },
});

// When the server answers no 202 (and the tool fallback is off), every check of the run and its results is not
// applicable, with the reason.
defineConformanceSuite({
  name: "conformance of @sdgw/mock, without a 202",
  baseUrl: mock.baseUrl,
  key: "sdgw_test_key",
  only: ["runs.", "results.", "idempotency.in-progress", "idempotency.replay-after-run"],
  slowSearch: { platform: "x", query: "an ordinary call" },
  slowTool: false,
  printReport: false,
  onReport(report) {
    const na = report.results.filter((r) => r.outcome === "not_applicable");
    expect(report.results.filter((r) => r.outcome === "passed").map((r) => r.id)).toEqual([
      "results.format-invalid",
      "results.unknown-handle",
    ]);
    expect(na.map((r) => r.id)).toEqual([
      "runs.202-answer",
      "idempotency.in-progress",
      "runs.running-read",
      "runs.lifecycle",
      "runs.charged-once",
      "results.request-id",
      "results.json",
      "results.csv",
      "results.ndjson",
      "idempotency.replay-after-run",
      "results.other-key",
      "runs.all-ended",
    ]);
    expect(na.at(-1)!.message).toBe("no call answered 202: no background run to follow");
    for (const r of na.filter((r) => r.id !== "results.other-key" && r.id !== "runs.all-ended"))
      expect(r.message).toMatch(/answered HTTP 200, not 202, so no run to follow \(.*the tool fallback is off\)/);
  },
});

// When the slow search answers 200, the suite quotes the fallback tool (free), runs it (D51: more than 10 planned
// calls is a background run) and follows that 202 through every run and result check.
defineConformanceSuite({
  name: "conformance of @sdgw/mock, the 202 of the tool fallback",
  baseUrl: mock.baseUrl,
  key: "sdgw_test_key",
  secondKey: "sdgw_second_key",
  only: ["runs.", "results.", "idempotency.in-progress", "idempotency.replay-after-run"],
  slowSearch: { platform: "x", query: "an ordinary call" },
  printReport: false,
  onReport(report) {
    expect(report.results.filter((r) => r.outcome !== "passed")).toEqual([]);
    expect(report.results).toHaveLength(14);
    expect(report.results.find((r) => r.id === "runs.202-answer")?.message).toMatch(
      /^POST \/v1\/tools\/batch_stats .*the slow search answered 200; the batch_stats fallback, 11 planned calls, D51\): handle /,
    );
    expect(report.results.find((r) => r.id === "runs.charged-once")?.message).toMatch(
      /^batch_stats run: charged 11 once/,
    );
    const tool = report.coverage.operations.statuses.batchStats;
    expect(tool).toEqual([200, 202, 409]); // the free quote and the replay after the run, the run, the same call while it ran
    expect(report.coverage.runs).toEqual({ started: 1, ended: 1 });
  },
});

// A fallback tool whose plan is small runs inline (D51): nothing to follow, and the reason says so.
defineConformanceSuite({
  name: "conformance of @sdgw/mock, a fallback tool quoted inline",
  baseUrl: mock.baseUrl,
  key: "sdgw_test_key",
  only: ["runs.202-answer"],
  slowSearch: { platform: "x", query: "an ordinary call" },
  slowTool: { tool: "batch_stats", body: { targets: ["reddit:t3_conf000", "reddit:t3_conf001"] } },
  printReport: false,
  onReport(report) {
    expect(report.results.map((r) => r.outcome)).toEqual(["not_applicable"]);
    expect(report.results[0]!.message).toMatch(
      /the slow search answered HTTP 200, not 202 .*; the fallback batch_stats was quoted mode inline with 2 planned call\(s\), and only a plan of more than 10 provider calls is a background run that answers 202 \(D51\)/,
    );
  },
});

// A server whose background quote is answered 200 within the request breaks D51: `runs.202-answer` fails and says
// so. Played by a fetch in front of the mock that waits for the run's end and answers its finished result at once.
describe("a fallback tool quoted background but answered 200 (D51)", () => {
  it("fails runs.202-answer naming D51, and leaves the other run checks not applicable", async () => {
    const inline: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      const response = await fetch(request.clone());
      if (!request.url.endsWith("/v1/tools/batch_stats") || response.status !== 202) return response;
      const { handle } = (await response.json()) as { handle: string };
      for (;;) {
        const read = await fetch(`${mock.baseUrl}/v1/results/${handle}`, {
          headers: { "X-API-Key": request.headers.get("x-api-key")! },
        });
        if (read.status !== 202) return read;
        await read.arrayBuffer();
      }
    };
    const report = await runConformance(
      {
        baseUrl: mock.baseUrl,
        key: "sdgw_test_key",
        slowSearch: { platform: "x", query: "an ordinary call" },
        fetch: inline,
      },
      { only: ["runs.202-answer", "runs.lifecycle", "runs.charged-once"] },
    );
    expect(report.results.map((r) => r.outcome)).toEqual(["failed", "not_applicable", "not_applicable"]);
    expect(report.results[0]!.message).toMatch(
      /^POST \/v1\/tools\/batch_stats .*→ HTTP 200 .*its quote said mode background with 11 planned calls, but the confirmed call answered HTTP 200 in the request \(D51: /,
    );
    expect(report.results[1]!.message).toMatch(
      /the fallback batch_stats \(quoted background, 11 calls\) answered HTTP 200 too, not 202 \(D51\): no run to follow/,
    );
  });
});

describe("keys of the suite's own, and the warning before the first request (D178–D180)", () => {
  it("calls keys before anything is sent, says the warning before the first request, and runs with those keys", async () => {
    const events: string[] = [];
    const recording: typeof fetch = (input, init) => {
      const request = new Request(input, init);
      events.push(`request ${request.headers.get("x-api-key") ?? ""} ${request.headers.get("authorization") ?? ""}`);
      return fetch(request);
    };
    const report = await runConformance(
      {
        baseUrl: mock.baseUrl,
        keys: async () => {
          events.push("keys");
          return { key: "sdgw_test_key", secondKey: "sdgw_second_key" };
        },
        fetch: recording,
      },
      { only: ["auth.x-api-key", "auth.both-differ"], onStart: (w) => events.push(`warning ${w}`) },
    );
    expect(report.failed).toBe(0);
    expect(events[0]).toBe("keys");
    expect(events[1]).toMatch(
      /^warning warning: this run spends about \d+ credits of the account of <key> .*<second-key>.*free_failure_limit, D45\).*keys came from the keys hook/,
    );
    expect(events.slice(2).length).toBeGreaterThan(0);
    expect(events.slice(2).every((e) => e.startsWith("request "))).toBe(true);
    expect(events.some((e) => e.includes("sdgw_second_key"))).toBe(true); // auth.both-differ sent the hook's second key
    expect(report.warning).toBe(events[1]!.slice("warning ".length));
  });

  it("without a second key, the warning says the main key takes the refusals; with one, that key", async () => {
    const one = await runConformance({ baseUrl: mock.baseUrl, key: "sdgw_test_key" }, { only: ["routes.unknown"] });
    expect(one.warning).toMatch(
      /can make a server hold <key> back for 5 minutes .* with --second-key they go to that key instead.*--keys-command "sdgw-admin conformance-keys"/,
    );
    const two = await runConformance(
      { baseUrl: mock.baseUrl, key: "sdgw_test_key", secondKey: "sdgw_second_key" },
      { only: ["routes.unknown"] },
    );
    expect(two.warning).toMatch(/hold <second-key> back for 5 minutes/);
  });

  it("refuses keys beside a key option (D179), and keys that give a bad field, naming it; nothing is sent", async () => {
    let sent = 0;
    const counting: typeof fetch = (input, init) => {
      sent++;
      return fetch(input, init);
    };
    await expect(
      runConformance({ baseUrl: mock.baseUrl, key: "sdgw_test_key", keys: () => ({ key: "k" }), fetch: counting }),
    ).rejects.toThrow(/keys gives every key of the run: leave out key, or leave out keys \(D179/);
    await expect(
      runConformance({
        baseUrl: mock.baseUrl,
        keys: async () => ({ key: "k", noscopeKey: 3 }) as never,
        fetch: counting,
      }),
    ).rejects.toThrow(/^keys\(\): field "noscopeKey" must be a key/);
    await expect(
      runConformance({ baseUrl: mock.baseUrl, keys: async () => ({ secondKey: "k" }) as never, fetch: counting }),
    ).rejects.toThrow(/^keys\(\): field "key" is missing/);
    await expect(
      runConformance({
        baseUrl: mock.baseUrl,
        keys: async () => ({ key: "k", second_key: "k" }) as never,
        fetch: counting,
      }),
    ).rejects.toThrow(/^keys\(\): unknown field "second_key"/);
    expect(sent).toBe(0);
  });
});
