// @vitest-environment happy-dom
/**
 * D117: the mock's CORS under happy-dom, whose fetch enforces the same-origin policy as a browser does (a preflight
 * before every call to another origin; the call refused unless the preflight's `Access-Control-Allow-Origin` names
 * the page's origin or `*`). The page is vitest's default `http://localhost:3000`; the gateway is another origin.
 */
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../client/src/index.ts";
import { createMock, scenario } from "../src/index.ts";
import { CORS_ALLOW_HEADERS, CORS_EXPOSE_HEADERS } from "../src/cors.ts";

const GATEWAY = "https://gw.example.test";
const PAGE = "http://localhost:3000";
const KEY = "sdgw_test_key";

const anyOrigin = createMock({ baseUrl: GATEWAY, retryAfter: 1 });
const listed = createMock({ baseUrl: `${GATEWAY}/listed`, corsOrigins: [PAGE] });
const elsewhere = createMock({ baseUrl: `${GATEWAY}/elsewhere`, corsOrigins: ["https://app.example.com"] });
const off = createMock({ baseUrl: `${GATEWAY}/off`, corsOrigins: false });
// The mocks with a path are listed first: the first one's `unknownRoutes` answers every path of the origin.
const server = setupServer(...listed.handlers, ...elsewhere.handlers, ...off.handlers, ...anyOrigin.handlers);
const preflights: { url: string; status: number; headers: Headers }[] = [];
server.events.on("response:mocked", ({ request, response }) => {
  if (request.method === "OPTIONS")
    preflights.push({ url: request.url, status: response.status, headers: response.headers });
});
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterEach(() => {
  anyOrigin.reset();
  preflights.length = 0;
});
afterAll(() => server.close());

describe("under happy-dom, a page on another origin", () => {
  it("runs on happy-dom's page origin", () => {
    expect((globalThis as { location?: { origin: string } }).location?.origin).toBe(PAGE);
  });

  it("gets its preflight answered, then the answer with CORS headers it may read", async () => {
    const res = await fetch(`${GATEWAY}/v1/account`, { headers: { "X-API-Key": KEY } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { key: { permissions: string[] } }).key.permissions).toEqual(["read_data"]);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-expose-headers")).toBe(CORS_EXPOSE_HEADERS);
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    expect(preflights).toHaveLength(1);
    const [pre] = preflights;
    expect(pre!.status).toBe(204);
    expect(pre!.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre!.headers.get("access-control-allow-methods")).toBe("GET, POST, DELETE");
    expect(pre!.headers.get("access-control-allow-headers")).toBe(CORS_ALLOW_HEADERS);
    expect(pre!.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("the client's retry reads Retry-After across origins", async () => {
    anyOrigin.use(scenario("rate_limited", { times: 1 }));
    const retries: number[] = [];
    const sdgw = createClient({ baseUrl: GATEWAY, apiKey: KEY, onRetry: (r) => retries.push(r.delayMs) });
    const { data, headers } = await sdgw.search({ platform: "x", query: "cors" }).withResponse();
    expect(data.status).toBe("ok");
    expect(retries).toEqual([1000]); // the 429's Retry-After: 1, read by the client
    expect(headers.get("access-control-allow-origin")).toBe("*");
  });

  it("a preflight to a path the gateway does not have is answered too, and the call gets its 404", async () => {
    const res = await fetch(`${GATEWAY}/v2/search`, { headers: { "X-API-Key": KEY } });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { reason: string }).reason).toBe("no_such_route");
  });

  it("corsOrigins lists the origins let in: the page's is answered with its own name", async () => {
    const res = await fetch(`${GATEWAY}/listed/v1/capabilities`);
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe(PAGE);
    expect(res.headers.get("vary")).toBe("Origin");
  });

  it("an origin not listed is refused by the page's fetch, as a browser refuses it", async () => {
    const refused = await fetch(`${GATEWAY}/elsewhere/v1/capabilities`).catch((e: unknown) => e);
    expect(String(refused)).toMatch(/Cross-Origin Request Blocked/);
  });

  it("corsOrigins: false answers no preflight, so the page cannot call (the mock before D117)", async () => {
    const refused = await fetch(`${GATEWAY}/off/v1/capabilities`).catch((e: unknown) => e);
    expect(String(refused)).toMatch(/NetworkError|Cross-Origin Request Blocked/);
  });
});

describe("corsOrigins", () => {
  it("refuses what is not an origin, naming the option", () => {
    expect(() => createMock({ corsOrigins: ["http://localhost:5173/app"] })).toThrow(/corsOrigins/);
    expect(() => createMock({ corsOrigins: "localhost" as never })).toThrow(
      /corsOrigins must be "\*", false or a list/,
    );
    expect(() => createMock({ corsOrigins: [5173 as never] })).toThrow(/corsOrigins/);
    expect(() => createMock({ corsOrigins: ["http://localhost:5173/"], baseUrl: GATEWAY })).not.toThrow();
    expect(() => createMock({ corsOrigins: undefined })).not.toThrow();
  });
});
