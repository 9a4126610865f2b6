/**
 * {@include ../README.md}
 *
 * @packageDocumentation
 * @module @sdgw/conformance
 */
export { CHECKS } from "./checks/index.ts";
export {
  formatReport,
  formatResult,
  formatSummary,
  formatSummaryLine,
  parseConformanceKeys,
  resolveOptions,
  runWarning,
  runConformance,
  selectChecks,
} from "./run.ts";
export type { RunOptions } from "./run.ts";
export { contractProblems, schemaProblems } from "./contract.ts";
export { coverageOf, errorCodesOf, formatCoverage } from "./coverage.ts";
export type { Coverage } from "./coverage.ts";
export { toJUnit } from "./junit.ts";
export { Http, operationOf, retryAfterMs } from "./http.ts";
export type { Auth, Exchange, OperationKey, RequestSpec, Settled, TrackedRun } from "./http.ts";
export { DEFAULT_SLOW_TOOL, KEY_FIELDS, RUN_CREDITS } from "./types.ts";
export type {
  Check,
  CheckContext,
  CheckResult,
  ConformanceKeys,
  ConformanceOptions,
  ConformanceReport,
  Outcome,
  ResolvedOptions,
  SlowTool,
  Verdict,
} from "./types.ts";
