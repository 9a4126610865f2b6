/**
 * D112 in the mock, as in the reference server: a body nested deeper than MAX_BODY_DEPTH (arrays, objects or both;
 * the whole body or one parameter of an otherwise valid body) on any body route of the contract answers 400
 * `invalid_params` naming `body` — never a 5xx — and charges nothing. The mock checks bodies with the same
 * `admitRequest` as the server.
 */
import fc from "fast-check";
import { MAX_BODY_DEPTH } from "@sdgw/validators";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMock } from "../src/index.ts";
import { BODY_OPERATIONS, deepBody, pathOf } from "../../validators/test/deep-json.ts";
import { BASE, KEY, SAMPLES, idem } from "./helpers.ts";

const mock = createMock({ baseUrl: BASE });
const server = setupServer(...mock.handlers);
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterAll(() => server.close());

describe("a body nested deeper than MAX_BODY_DEPTH (D112)", () => {
  it.each(BODY_OPERATIONS.map((o) => [`POST ${o.path}`, o] as const))(
    "%s: 400 invalid_params naming body, never 5xx, nothing charged",
    async (_name, op) => {
      const sample = SAMPLES.find((s) => s.op === op.operationId && s.req.body !== undefined)!.req;
      const before = mock.state.balance;
      await fc.assert(
        fc.asyncProperty(deepBody(op, sample.body as Record<string, unknown>), async (deep) => {
          const res = await fetch(`${BASE}${sample.path ?? pathOf(op)}`, {
            method: "POST",
            headers: {
              ...(op.keyless ? {} : { "x-api-key": KEY }),
              "idempotency-key": idem(),
              "content-type": "application/json",
            },
            body: deep.text,
          });
          const body = (await res.json()) as { code?: string; message?: string; fix?: { param?: string } };
          expect([res.status, body.code, body.fix?.param], `${deep.where} ${deep.shape} ${deep.depth}`).toEqual([
            400,
            "invalid_params",
            "body",
          ]);
          expect(body.message).toContain(`at most ${MAX_BODY_DEPTH}`);
        }),
        { numRuns: 12 },
      );
      expect(mock.state.balance).toBe(before);
    },
  );
});
