/**
 * The kit tests itself (issue 35, D171): the suite against the reference server behind a faithful proxy fails
 * nothing, and against each mutant (the same server behind a proxy that breaks one rule, mutants.ts) it fails, in
 * the checks the mutant names. One reference server serves every run; each run gets keys of new accounts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatReport, runConformance, type ConformanceReport } from "../src/index.ts";
import { startMutantProxy, type Mutant } from "./mutant-proxy.ts";
import { MUTANTS } from "./mutants.ts";
import { startReferenceServer, type ReferenceServer } from "./reference-server.ts";

let server: ReferenceServer;
beforeAll(async () => {
  // Every run comes from 127.0.0.1, five at a time: the keyless routes' budget per address (60 a minute) would
  // make each run wait on the others' calls, so it is raised here; every other limit is the reference server's.
  server = await startReferenceServer({ limits: { addressPerMinute: 100_000 } });
}, 60_000);
afterAll(() => server?.close());

/** The options that keep a run short: the poll budget of a run that never ends is 8 s, not 90. */
async function runAgainst(mutant?: Mutant): Promise<ConformanceReport> {
  const keys = server.freshKeys!();
  const proxy = await startMutantProxy(server.baseUrl, keys, mutant);
  try {
    return await runConformance({
      baseUrl: proxy.baseUrl,
      ...keys,
      rateLimitBurst: 15,
      pollBudgetMs: 8_000,
      seed: 35,
    });
  } finally {
    await proxy.close();
  }
}

const failedIds = (r: ConformanceReport) => r.results.filter((x) => x.outcome === "failed").map((x) => x.id);

describe("the suite tests itself with mutants of the reference server", () => {
  it("passes the reference server behind a faithful proxy: 0 failures", async () => {
    const report = await runAgainst();
    expect(failedIds(report), formatReport(report)).toEqual([]);
    expect(report.notApplicable, formatReport(report)).toBe(0);
  }, 180_000);

  it("has at least 20 mutants, each with a unique name and the checks that catch it", () => {
    expect(MUTANTS.length).toBeGreaterThanOrEqual(20);
    expect(new Set(MUTANTS.map((m) => m.name)).size).toBe(MUTANTS.length);
    for (const m of MUTANTS) expect(m.caughtBy.length, m.name).toBeGreaterThan(0);
  });
});

// Five runs at a time: vitest's own bound for concurrent tests (`maxConcurrency`, 5). A run waits on polls and
// Retry-After most of its time: the 31 runs take ~27 s of CPU, 88 s five at a time.
describe.concurrent("each mutant fails the suite, in the checks it names", () => {
  for (const mutant of MUTANTS) {
    it(`fails ${mutant.name} (${mutant.breaks}) in ${mutant.caughtBy.join(", ")}`, async () => {
      const report = await runAgainst(mutant);
      const failed = failedIds(report);
      expect(failed.length, `${mutant.name} passed as clean:\n${formatReport(report)}`).toBeGreaterThan(0);
      expect(failed, `${mutant.name}: the checks that failed`).toEqual(expect.arrayContaining([...mutant.caughtBy]));
    }, 600_000);
  }
});
