/** The suite against the reference server (in-process, temporary database, D27's default limits). */
import { afterAll, describe, expect, it } from "vitest";
import { runConformance } from "../src/index.ts";
import { defineConformanceSuite } from "../src/vitest.ts";
import { startReferenceServer } from "./reference-server.ts";

const server = await startReferenceServer();
afterAll(() => server.close());

defineConformanceSuite({
  name: "conformance of @sdgw/server",
  baseUrl: server.baseUrl,
  ...server.keys,
  rateLimitBurst: 15,
  onReport(report) {
    expect(report.failed).toBe(0);
    expect(report.notApplicable).toBe(0);
  },
});

describe("a server that holds a key back after 5 failed calls (D45)", () => {
  it("fails nothing: the checks the hold-back blocks are not applicable, with the reason", async () => {
    const strict = await startReferenceServer({ limits: { failureThreshold: 5 } });
    try {
      // Without a second key, every deliberate refusal lands on the main key.
      const report = await runConformance({
        baseUrl: strict.baseUrl,
        key: strict.keys.key,
        noscopeKey: strict.keys.noscopeKey,
      });
      expect(report.results.filter((r) => r.outcome === "failed")).toEqual([]);
      const held = report.results.filter((r) => r.outcome === "not_applicable" && /free_failure_limit/.test(r.message));
      expect(held.map((r) => r.id)).toEqual(
        expect.arrayContaining(["idempotency.replay", "runs.202-answer", "errors.max-cost"]),
      );
      for (const r of held)
        expect(r.message).toMatch(/held the key back with 429 free_failure_limit until \d{4}-\d\d-\d\dT[\d:]+Z .*D45/);
    } finally {
      await strict.close();
    }
  }, 120_000);
});

describe("MCP flow right after a burst on the same key", () => {
  it("calls the tool again after its retry_after instead of failing on rate_limited", async () => {
    const own = await startReferenceServer();
    let burst = 0;
    try {
      // Before the suite's first MCP tools/call, spend the key's per-second rate, as an earlier check's burst would.
      const fetchAfterBurst: typeof fetch = async (input, init) => {
        const request = new Request(input, init);
        if (burst === 0 && new URL(request.url).pathname === "/mcp") {
          const text = await request.clone().text();
          if (text.includes('"tools/call"')) {
            burst = 1;
            const answers = await Promise.all(
              Array.from({ length: 15 }, () =>
                fetch(`${own.baseUrl}/v1/account`, { headers: { "X-API-Key": own.keys.key } }),
              ),
            );
            burst = answers.filter((a) => a.status === 429).length;
          }
        }
        return fetch(request);
      };
      const report = await runConformance({ baseUrl: own.baseUrl, ...own.keys, fetch: fetchAfterBurst });
      expect(burst).toBeGreaterThan(0);
      const flow = report.results.find((r) => r.id === "mcp.flow");
      expect(flow?.outcome, flow?.message).toBe("passed");
    } finally {
      await own.close();
    }
  }, 120_000);
});
