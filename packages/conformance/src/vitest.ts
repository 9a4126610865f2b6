/**
 * `@sdgw/conformance/vitest`: the suite as vitest tests, one per check, in a team's own test run.
 *
 * ```ts
 * // test/conformance.test.ts
 * import { defineConformanceSuite } from "@sdgw/conformance/vitest";
 * defineConformanceSuite({ baseUrl: process.env.SDGW_URL!, key: process.env.SDGW_KEY! });
 * ```
 *
 * @packageDocumentation
 * @module @sdgw/conformance/vitest
 */
import { afterAll, describe, it } from "vitest";
import { CHECKS } from "./checks/index.ts";
import { createSession, formatReport, resolveOptions, selectChecks, type Session } from "./run.ts";
import type { Check, CheckResult, ConformanceOptions, ConformanceReport } from "./types.ts";

/** Options of {@link defineConformanceSuite}: the server's, plus how the tests are registered. */
export interface ConformanceSuiteOptions extends ConformanceOptions {
  /** The name of the `describe` block (default `Social Data Gateway conformance: <baseUrl>`). */
  name?: string;
  /** The checks to register (default every check). */
  checks?: readonly Check[];
  /** Only the checks with these ids (or `area.` prefixes). */
  only?: readonly string[];
  /** Print the text report after the last check (default true). */
  printReport?: boolean;
  /** Called with the report after the last check (an assertion here fails the suite's `afterAll`). */
  onReport?: (report: ConformanceReport) => void;
  /** Time limit of one check's test (default: the poll budget plus 60 s, as the 202 run waits that long). */
  testTimeoutMs?: number;
}

/**
 * Registers one vitest test per check, in a `describe` block, run one after another. A failed check fails its test
 * with the check's message. A check that is not applicable is skipped with the reason as the suffix of its name:
 * `… [n/a: no second key given (--second-key)]` when the options already say so, and vitest's skip note (shown
 * after the name, `[reason]`) when only the server's answers tell (e.g. no 202). Call it at the top level of a
 * test file; `baseUrl` and `key` must be known then.
 */
export function defineConformanceSuite(options: ConformanceSuiteOptions): void {
  const resolved = resolveOptions(options);
  const checks = selectChecks(options.checks ?? CHECKS, options.only);
  let session: Session | undefined;
  const results = new Map<string, CheckResult>();
  const start = Date.now();
  const timeout = options.testTimeoutMs ?? resolved.pollBudgetMs + 60_000;
  describe(options.name ?? `Social Data Gateway conformance: ${resolved.baseUrl}`, { concurrent: false }, () => {
    for (const check of checks) {
      const name = `${check.id}: ${check.title}`;
      const reason = check.notApplicable?.(resolved);
      if (reason !== undefined) {
        results.set(check.id, {
          id: check.id,
          title: check.title,
          outcome: "not_applicable",
          message: reason,
          ms: 0,
          requests: 0,
        });
        it.skip(`${name} [n/a: ${reason}]`, () => {});
        continue;
      }
      it(
        name,
        async (t) => {
          session ??= createSession(options);
          const result = await session.run(check);
          results.set(check.id, result);
          if (result.outcome === "failed") throw new Error(`${check.id}: ${result.message}`);
          if (result.outcome === "not_applicable") t.skip(`n/a: ${result.message}`);
        },
        timeout,
      );
    }
    afterAll(() => {
      const ran = checks.map((c) => results.get(c.id)).filter((r): r is CheckResult => r !== undefined);
      if (!ran.some((r) => r.requests > 0)) return; // nothing ran (filtered out, or every check skipped)
      const report = (session ?? createSession(options)).report(ran, Date.now() - start);
      if (options.printReport !== false) console.log(`\n${formatReport(report)}`);
      options.onReport?.(report);
    });
  });
}
