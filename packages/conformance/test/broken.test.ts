/** The suite against a deliberately broken server fails, with messages that say what was wrong and which rule it breaks. */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { formatReport, runConformance, type ConformanceReport } from "../src/index.ts";
import { startBrokenServer, type BrokenServer } from "./broken-server.ts";

let server: BrokenServer;
let report: ConformanceReport;

beforeAll(async () => {
  server = await startBrokenServer();
  // The report is not printed: its FAIL lines are what this test expects, and in a CI log they read as failures of
  // the test run. It is the message of an assertion that fails instead.
  report = await runConformance({
    baseUrl: server.baseUrl,
    key: "sdgw_test_key",
    secondKey: "sdgw_second_key",
    noscopeKey: "sdgw_noscope_key",
    mcpPath: false, // in front of the mock, which serves no MCP endpoint
    seed: 35,
  });
}, 60_000);
afterAll(() => server?.close());

const message = (id: string) => report.results.find((r) => r.id === id)?.message ?? "(no such check)";

/** Whether a function printed anything to the console (stdout or stderr) while it ran. */
async function printed(fn: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  const spies = (["log", "info", "warn", "error"] as const).map((m) =>
    vi.spyOn(console, m).mockImplementation((...a: unknown[]) => void lines.push(a.map(String).join(" "))),
  );
  const writes = [process.stdout, process.stderr].map((s) =>
    vi.spyOn(s, "write").mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }),
  );
  try {
    await fn();
  } finally {
    for (const s of [...spies, ...writes]) s.mockRestore();
  }
  return lines;
}

describe("the suite against a broken server", () => {
  it("fails exactly the checks its five faults touch", () => {
    expect(
      report.results.filter((r) => r.outcome === "failed").map((r) => r.id),
      formatReport(report),
    ).toEqual([
      "auth.bearer", // (2) its data call is an x search: ok with 0 items
      "auth.key-in-query", // (3)
      "auth.key-in-query-keyless", // (3)
      "search.single", // (2)
      "search.fanout", // (1)
      "params.count-21", // (5)
      "idempotency.key-255", // (2)
      "idempotency.replay", // (4) and (2)
      "idempotency.conflict", // (2)
      "runs.charged-once", // (4): the replay after the run was charged
      // (2): every valid x search answers ok with 0 items, so no real id to call the data routes and tools with
      "valid.search",
      "valid.searchPost",
      "valid.detail",
      "valid.comments",
      "valid.userProfile",
      "valid.userPosts",
      "valid.commentInsights",
      "valid.accountWatch",
      "valid.creatorCard",
      "valid.batchStats",
      "flows.pagination",
      "flows.quote-run",
      "flows.schedule",
    ]);
    expect(report.failed).toBe(23);
  });

  it("(1) names fix inside an envelope error and the rule (seed closed error objects, D36)", () => {
    expect(message("search.fanout")).toMatch(/\/fanout\/reddit\/error \(code upstream_error\) carries `fix`/);
    expect(message("search.fanout")).toMatch(/no other fields in error objects.*D36/);
  });

  it("(2) names ok with 0 items and the seed's rule by status", () => {
    expect(message("search.single")).toMatch(
      /GET \/v1\/search\?platform=x&query=conformance(%20|\+)single.*→ HTTP 200/,
    );
    expect(message("search.single")).toMatch(
      /status `ok` with 0 items: the seed's rules by status say `ok` has at least 1 item/,
    );
  });

  it("(3) names the key in the URL that was answered 200, and D25", () => {
    expect(message("auth.key-in-query")).toMatch(/&key=sdgw_conformance_not_a_real_key.*→ HTTP 200/);
    expect(message("auth.key-in-query")).toMatch(
      /expected HTTP 401 `unauthorized` reason `key_in_query` \(seed Authentication 2.*D25/,
    );
    expect(message("auth.key-in-query-keyless")).toMatch(/GET \/v1\/capabilities\?key=.*→ HTTP 200.*D25/);
  });

  it("(4) names the charged replay: the balance moved, and the seed's idempotency rule and D35", () => {
    expect(message("idempotency.replay")).toMatch(/charged again: the balance went (\d+) → (\d+)/);
    expect(message("idempotency.replay")).toMatch(/seed Idempotency.*cost 0; D35/);
    expect(message("runs.charged-once")).toMatch(
      /the balance moved by 2 .* billing\.cost is 1 \(seed States and transitions: charge applied once/,
    );
  });

  it("(5) names count=21 answered 200 and the seed's bound", () => {
    expect(message("params.count-21")).toMatch(
      /count=21 .*→ HTTP 200.*expected HTTP 400 `invalid_params` with fix\.param `count` \(seed: count is 1 to 20\)/,
    );
  });

  it("prints nothing while it runs: no FAIL line reaches the test output", async () => {
    const lines = await printed(() =>
      runConformance(
        { baseUrl: server.baseUrl, key: "sdgw_test_key", secondKey: "sdgw_second_key" },
        { only: ["params.count-21"] },
      ),
    );
    expect(lines).toEqual([]);
  });

  it("never prints a key it was given", () => {
    expect(JSON.stringify(report)).not.toMatch(/sdgw_test_key|sdgw_second_key|sdgw_noscope_key/);
  });
});
