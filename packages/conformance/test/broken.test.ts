/** The suite against a deliberately broken server fails, with messages that say what was wrong and which rule it breaks. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatReport, runConformance, type ConformanceReport } from "../src/index.ts";
import { startBrokenServer, type BrokenServer } from "./broken-server.ts";

let server: BrokenServer;
let report: ConformanceReport;

beforeAll(async () => {
  server = await startBrokenServer();
  report = await runConformance({ baseUrl: server.baseUrl, key: "sdgw_test_key", secondKey: "sdgw_second_key", noscopeKey: "sdgw_noscope_key" });
  console.log(formatReport(report));
}, 60_000);
afterAll(() => server?.close());

const message = (id: string) => report.results.find((r) => r.id === id)?.message ?? "(no such check)";

describe("the suite against a broken server", () => {
  it("fails exactly the checks its five faults touch", () => {
    expect(report.results.filter((r) => r.outcome === "failed").map((r) => r.id)).toEqual([
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
    ]);
    expect(report.failed).toBe(10);
  });

  it("(1) names fix inside an envelope error and the rule (seed closed error objects, D36)", () => {
    expect(message("search.fanout")).toMatch(/\/fanout\/reddit\/error \(code upstream_error\) carries `fix`/);
    expect(message("search.fanout")).toMatch(/no other fields in error objects.*D36/);
  });

  it("(2) names ok with 0 items and the seed's rule by status", () => {
    expect(message("search.single")).toMatch(/GET \/v1\/search\?platform=x&query=conformance(%20|\+)single.*→ HTTP 200/);
    expect(message("search.single")).toMatch(/status `ok` with 0 items: the seed's rules by status say `ok` has at least 1 item/);
  });

  it("(3) names the key in the URL that was answered 200, and D25", () => {
    expect(message("auth.key-in-query")).toMatch(/&key=sdgw_conformance_not_a_real_key.*→ HTTP 200/);
    expect(message("auth.key-in-query")).toMatch(/expected HTTP 401 `unauthorized` reason `key_in_query` \(seed Authentication 2.*D25/);
    expect(message("auth.key-in-query-keyless")).toMatch(/GET \/v1\/capabilities\?key=.*→ HTTP 200.*D25/);
  });

  it("(4) names the charged replay: the balance moved, and the seed's idempotency rule and D35", () => {
    expect(message("idempotency.replay")).toMatch(/charged again: the balance went (\d+) → (\d+)/);
    expect(message("idempotency.replay")).toMatch(/seed Idempotency.*cost 0; D35/);
    expect(message("runs.charged-once")).toMatch(/the balance moved by 2 .* billing\.cost is 1 \(seed States and transitions: charge applied once/);
  });

  it("(5) names count=21 answered 200 and the seed's bound", () => {
    expect(message("params.count-21")).toMatch(/count=21 .*→ HTTP 200.*expected HTTP 400 `invalid_params` with fix\.param `count` \(seed: count is 1 to 20\)/);
  });

  it("never prints a key it was given", () => {
    expect(JSON.stringify(report)).not.toMatch(/sdgw_test_key|sdgw_second_key|sdgw_noscope_key/);
  });
});
