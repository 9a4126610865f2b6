/**
 * The suite against the reference server on PostgreSQL (D108): the same 99 checks, the same accounts and keys, as
 * `server.test.ts` runs on the embedded store: every answer of the shared mode meets the contract alike. Needs
 * PostgreSQL on 127.0.0.1:5432 (CI's `.ci/run` starts it): without it this file fails, it does not skip.
 */
import { afterAll, expect } from "vitest";
import { defineConformanceSuite } from "../src/vitest.ts";
import { startPostgresReferenceServer } from "./reference-server.ts";

const server = await startPostgresReferenceServer();
afterAll(() => server.close());

defineConformanceSuite({
  name: "conformance of @sdgw/server on PostgreSQL",
  baseUrl: server.baseUrl,
  ...server.keys,
  rateLimitBurst: 15,
  onReport(report) {
    expect(report.failed).toBe(0);
    expect(report.notApplicable).toBe(0);
  },
});
