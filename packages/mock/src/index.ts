/**
 * {@include ../README.md}
 *
 * @packageDocumentation
 * @module @sdgw/mock
 */
export { createMock, DEFAULT_KEYS } from "./mock.ts";
export type { Mock, MockKey, MockOptions, SlowCall } from "./mock.ts";
export {
  isScenarioName,
  parseScenarioHeader,
  scenario,
  SCENARIO_HEADER,
  SCENARIO_NAMES,
  SKIPPED_HEADER,
  STATUS_SCENARIOS,
} from "./scenarios.ts";
export type { Scenario, ScenarioName, ScenarioOptions, StatusScenario } from "./scenarios.ts";
export type { MockState, RunInfo, RunStatus } from "./state.ts";
export { FIXTURES, ROUTES } from "./generated/routes.ts";
export type { FixtureBody, FixtureRef, FixtureShape, MockRoute } from "./generated/route-types.ts";
