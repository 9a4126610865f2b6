/**
 * @sdgw/mock: MSW 3 handlers for every operation of the Social Data Gateway contract. Realistic answers from the
 * contract's fixtures, every status and all 19 error codes on demand (scenarios, or the `x-sdgw-scenario`
 * header), and the gateway's stateful behaviour: keys and the `read_data` permission, credits, 202 runs read by
 * handle, idempotency keys, paging. Every JSON answer it gives is checked against the contract in development.
 *
 * ```ts
 * import { setupServer } from "msw/node";
 * import { createMock, scenario } from "@sdgw/mock";
 *
 * const mock = createMock({ baseUrl: "http://127.0.0.1:8787" });
 * const server = setupServer(...mock.handlers);
 * server.listen({ onUnhandledFrame: "error" });
 * mock.use(scenario("rate_limited", { times: 1 })); // the next call answers 429
 * ```
 *
 * @packageDocumentation
 */
export { createMock, DEFAULT_KEYS } from "./mock.ts";
export type { Mock, MockKey, MockOptions, SlowCall } from "./mock.ts";
export { isScenarioName, parseScenarioHeader, scenario, SCENARIO_HEADER, SCENARIO_NAMES, SKIPPED_HEADER, STATUS_SCENARIOS } from "./scenarios.ts";
export type { Scenario, ScenarioName, ScenarioOptions, StatusScenario } from "./scenarios.ts";
export type { MockState, RunInfo, RunStatus } from "./state.ts";
export { FIXTURES, ROUTES } from "./generated/routes.ts";
export type { FixtureBody, FixtureRef, FixtureShape, MockRoute } from "./route-types.ts";
