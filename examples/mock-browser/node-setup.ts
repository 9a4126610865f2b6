// docs/guides/testing-with-the-mock.md — type-checked with examples/mock-browser/tsconfig.json.
// #region mock-setup
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll } from "vitest";
import { createClient } from "@sdgw/client";
import { createMock, scenario } from "@sdgw/mock";

const mock = createMock({ polls: 1, retryAfter: 1 }); // 202 → one running read → finished
const server = setupServer(...mock.handlers);
beforeAll(() => server.listen({ onUnhandledFrame: "error" })); // msw 3's name for onUnhandledRequest
afterEach(() => mock.reset()); // balance, runs, idempotency, scenarios
afterAll(() => server.close());

export const sdgw = createClient({ baseUrl: "https://api.example.test", apiKey: "sdgw_test_key" });

export function forceSomeAnswers(): void {
  mock.use(scenario("rate_limited", { times: 1 })); // the next call gets 429 once; the SDK retries it
  mock.use(scenario("timeout", { operation: "search" })); // every search answers status timeout until reset()
}
// #endregion
