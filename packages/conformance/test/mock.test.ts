/** The suite against @sdgw/mock over HTTP: every applicable check passes; what is not applicable is known. */
import { DEFAULT_KEYS } from "@sdgw/mock";
import { afterAll, expect } from "vitest";
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
  onReport(report) {
    expect(report.failed).toBe(0);
    expect(report.results.filter((r) => r.outcome === "not_applicable").map((r) => r.id)).toEqual(["errors.insufficient-balance", "errors.daily-limit", "errors.rate-limited"]);
  },
});

// When the server answers no 202, every check of the run and its results is not applicable, with the reason.
defineConformanceSuite({
  name: "conformance of @sdgw/mock, without a 202",
  baseUrl: mock.baseUrl,
  key: "sdgw_test_key",
  only: ["runs.", "results.", "idempotency.in-progress", "idempotency.replay-after-run"],
  slowSearch: { platform: "x", query: "an ordinary call" },
  printReport: false,
  onReport(report) {
    const na = report.results.filter((r) => r.outcome === "not_applicable");
    expect(report.results.filter((r) => r.outcome === "passed").map((r) => r.id)).toEqual(["results.format-invalid", "results.unknown-handle"]);
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
    ]);
    for (const r of na.filter((r) => r.id !== "results.other-key")) expect(r.message).toMatch(/answered HTTP 200, not 202/);
  },
});
