/**
 * The mock refuses what the reference server refuses (D25, text hygiene): bytes that are not text, prototype names,
 * a key under any of its names in any URL — named, before the key is looked at, and never charged.
 */
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { KEY_QUERY_NAMES } from "@sdgw/validators";
import { createMock } from "../src/index.ts";
import { BASE, idem, KEY } from "./helpers.ts";

const mock = createMock({ baseUrl: BASE });
const server = setupServer(...mock.handlers);
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterEach(() => mock.reset());
afterAll(() => server.close());

const get = async (pathAndQuery: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${BASE}${pathAndQuery}`, {
    headers: { "x-api-key": KEY, "idempotency-key": idem(), ...headers },
  });
  return {
    status: res.status,
    body: (await res.json()) as { code?: string; reason?: string; fix?: { param?: string } },
  };
};
const post = async (path: string, body: string | Uint8Array) => {
  const res = await fetch(`${BASE}${path}`, {
    method: "POST",
    headers: { "x-api-key": KEY, "content-type": "application/json", "idempotency-key": idem() },
    body,
  });
  return {
    status: res.status,
    body: (await res.json()) as { code?: string; fix?: { param?: string }; message?: string },
  };
};

describe("text hygiene, as the reference server", () => {
  it.each(["%ZZ", "%E9%9C", "%FF%FE", "%ED%A0%80", "a%00b"])(
    "query=%s → 400 naming query, uncharged",
    async (value) => {
      const before = mock.state.balance;
      const a = await get(`/v1/search?platform=x&query=${value}`);
      expect([a.status, a.body.code, a.body.fix?.param]).toEqual([400, "invalid_params", "query"]);
      expect(mock.state.balance).toBe(before);
    },
  );

  it.each(["__proto__", "constructor", "prototype"])("%s as a query parameter → 400 naming it", async (name) => {
    const a = await get(`/v1/search?platform=x&query=a&${name}=1`);
    expect([a.status, a.body.fix?.param]).toEqual([400, name]);
  });

  it("a body of bytes that are not UTF-8, a lone surrogate, a BOM → 400, uncharged", async () => {
    const before = mock.state.balance;
    const bytes = await post(
      "/v1/detail",
      new Uint8Array([...new TextEncoder().encode('{"platform":"douyin","id":"'), 0xff, 0x22, 0x7d]),
    );
    expect([bytes.status, bytes.body.fix?.param, bytes.body.message]).toEqual([
      400,
      "body",
      "The body is not UTF-8 text.",
    ]);
    const lone = await post("/v1/detail", '{"platform":"douyin","id":"7\\ud800"}');
    expect([lone.status, lone.body.fix?.param]).toEqual([400, "id"]);
    const bom = await post("/v1/detail", '\ufeff{"platform":"douyin","id":"7301234567890123456"}');
    expect([bom.status, bom.body.fix?.param]).toEqual([400, "body"]);
    expect(mock.state.balance).toBe(before);
  });
});

describe("a key in the URL (D25)", () => {
  it.each(
    KEY_QUERY_NAMES.map(
      (n, i) =>
        [
          n,
          [
            "/v1/search?platform=x&query=a",
            "/v1/capabilities",
            "/no/such/route",
            "/v1/account",
            "/v1/search?platform=x&query=%ZZ",
          ][i]!,
        ] as const,
    ),
  )("?%s= on %s → 401 key_in_query, first, and the key is exposed", async (name, path) => {
    const a = await get(`${path}${path.includes("?") ? "&" : "?"}${name.toUpperCase()}=sdgw_leaked_${name}`);
    expect([a.status, a.body.reason]).toEqual([401, "key_in_query"]);
    expect(mock.state.exposedKeys).toContain(`sdgw_leaked_${name}`);
  });
});
