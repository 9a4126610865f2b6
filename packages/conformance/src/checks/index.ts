/** Every check of the suite, in the order they run. */
import type { Check } from "../types.ts";
import { authChecks } from "./auth.ts";
import { capabilityChecks } from "./capabilities.ts";
import { errorChecks } from "./errors.ts";
import { idempotencyChecks } from "./idempotency.ts";
import { operationChecks } from "./operations.ts";
import { runChecks } from "./runs.ts";
import { searchChecks } from "./search.ts";

const rateLimited = errorChecks.filter((c) => c.id === "errors.rate-limited");

/**
 * Every check, in the order they run: keys, plain and fanout search, parameter bounds, capability gaps, idempotency, the 202 run
 * and its results, every operation both ways (valid and generated invalid requests), paging, schedules and MCP, error
 * codes and routes, and last the rate-limit burst (so that its refusals delay nothing else).
 */
export const CHECKS: readonly Check[] = Object.freeze([
  ...authChecks,
  ...searchChecks,
  ...capabilityChecks,
  ...idempotencyChecks,
  ...runChecks,
  ...operationChecks,
  ...errorChecks.filter((c) => !rateLimited.includes(c)),
  ...rateLimited,
]);
