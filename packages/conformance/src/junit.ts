/**
 * A report as JUnit XML, for CI systems that show test results: one `testsuite` of one `testcase` per check, a
 * `failure` for a failed check, `skipped` for one not applicable, each with its message and its time.
 */
import { formatCoverage } from "./coverage.ts";
import type { ConformanceReport } from "./types.ts";

/** Text as XML character data or an attribute value: escaped, and without the characters XML 1.0 cannot hold. */
export function xmlText(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "\uFFFD")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

/**
 * The report as JUnit XML: `<testsuites>` holding one `<testsuite name="sdgw-conformance">` with `tests`,
 * `failures`, `skipped`, `errors` (always 0: a check that cannot finish is a failure) and `time` in seconds; one
 * `<testcase classname="area" name="id: title" time>` per check, with `<failure message type="failed">` (the
 * message again as its text) or `<skipped message>`; the coverage summary in the suite's `<system-out>`.
 */
export function toJUnit(report: ConformanceReport, timestamp = new Date()): string {
  const counts = `tests="${report.results.length}" failures="${report.failed}" errors="0" skipped="${report.notApplicable}" time="${seconds(report.ms)}"`;
  const cases = report.results.map((r) => {
    const open = `    <testcase classname="${xmlText(r.id.split(".")[0] ?? r.id)}" name="${xmlText(`${r.id}: ${r.title}`)}" time="${seconds(r.ms)}"`;
    if (r.outcome === "failed")
      return `${open}>\n      <failure message="${xmlText(r.message)}" type="failed">${xmlText(r.message)}</failure>\n    </testcase>`;
    if (r.outcome === "not_applicable")
      return `${open}>\n      <skipped message="${xmlText(r.message)}"/>\n    </testcase>`;
    return `${open}/>`;
  });
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="sdgw-conformance" ${counts}>`,
    `  <testsuite name="sdgw-conformance" ${counts} timestamp="${timestamp.toISOString().replace(/\.\d+Z$/, "")}" hostname="${xmlText(report.baseUrl)}">`,
    `    <properties>\n      <property name="baseUrl" value="${xmlText(report.baseUrl)}"/>\n    </properties>`,
    ...cases,
    `    <system-out>${xmlText(formatCoverage(report.coverage))}</system-out>`,
    `  </testsuite>`,
    `</testsuites>`,
    "",
  ].join("\n");
}
