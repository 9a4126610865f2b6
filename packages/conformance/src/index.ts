/**
 * @sdgw/conformance: the Social Data Gateway contract as an executable suite, run against any base URL and key.
 * Each check sends a bounded number of requests, validates every answer against the contract
 * (`responseValidators[op](status, body)` of @sdgw/validators) and concludes passed, failed (what was sent, what came
 * back, which rule of the seed or decision Dn it breaks) or not applicable (and why).
 *
 * ```ts
 * import { formatReport, runConformance } from "@sdgw/conformance";
 * const report = await runConformance({ baseUrl: "http://127.0.0.1:8787", key: process.env.SDGW_KEY! });
 * console.log(formatReport(report));
 * process.exitCode = report.failed ? 1 : 0;
 * ```
 *
 * In vitest, `defineConformanceSuite` of `@sdgw/conformance/vitest` registers one test per check; on the command
 * line, `sdgw-conformance --base-url URL --key KEY`.
 *
 * @packageDocumentation
 */
export { CHECKS } from "./checks/index.ts";
export { formatReport, formatResult, formatSummary, formatSummaryLine, resolveOptions, runConformance, selectChecks } from "./run.ts";
export type { RunOptions } from "./run.ts";
export { contractProblems, schemaProblems } from "./contract.ts";
export { coverageOf, errorCodesOf, formatCoverage } from "./coverage.ts";
export type { Coverage } from "./coverage.ts";
export { toJUnit } from "./junit.ts";
export { Http, operationOf, retryAfterMs } from "./http.ts";
export type { Auth, Exchange, OperationKey, RequestSpec, Settled, TrackedRun } from "./http.ts";
export { DEFAULT_SLOW_TOOL } from "./types.ts";
export type { Check, CheckContext, CheckResult, ConformanceOptions, ConformanceReport, Outcome, ResolvedOptions, SlowTool, Verdict } from "./types.ts";
