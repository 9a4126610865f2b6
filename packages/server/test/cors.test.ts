/**
 * D130: CORS of the reference server, over the contract's route table (every route's preflight and answer), the
 * routes outside it (the console, `/mcp`, `/docs`, the operator's), the origins not let in, `*`, CORS off (the
 * default) and `SDGW_CORS_ORIGINS` as read from the environment.
 */
import { OPERATIONS } from "@sdgw/validators";
import { afterAll, describe, expect, it } from "vitest";
import { configFromEnv, ConfigError } from "../src/config.ts";
import {
  CORS_ALLOW_HEADERS,
  CORS_EXPOSE_HEADERS,
  checkCorsOrigins,
  corsMethods,
  parseCorsOrigins,
} from "../src/http/cors.ts";
import { createServer } from "../src/storage/sqlite/server.ts";
import { CORS_ALLOW_HEADERS as MOCK_ALLOW, CORS_EXPOSE_HEADERS as MOCK_EXPOSE } from "../../mock/src/cors.ts";
import { harness, newIdem } from "./helpers.ts";

const APP = "http://localhost:5173";
const OTHER = "http://evil.example";

const h = harness({ corsOrigins: [APP, "https://app.example.com"] });
const open = createServer({ dbPath: ":memory:", log: () => undefined, corsOrigins: "*" });
const off = createServer({ dbPath: ":memory:", log: () => undefined });
afterAll(async () => {
  await h.server.close({ drainMs: 0 });
  await open.close({ drainMs: 0 });
  await off.close({ drainMs: 0 });
});

/** A concrete URL of a contract path (`{handle}` → `h_x`). */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "x_1");

const preflight = (app: typeof open.app, url: string, origin: string, method: string, headers = "x-api-key") =>
  app.inject({
    method: "OPTIONS",
    url,
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers },
  });

describe("the route table", () => {
  const byPath = new Map<string, Set<string>>();
  for (const o of Object.values(OPERATIONS)) {
    byPath.set(o.path, (byPath.get(o.path) ?? new Set()).add(o.method.toUpperCase()));
  }

  it("every path of the contract is in CORS scope with exactly the methods it answers", () => {
    expect(byPath.size).toBeGreaterThan(15);
    for (const [path, methods] of byPath) {
      expect(corsMethods(concrete(path))?.split(", ").sort(), path).toEqual([...methods].sort());
    }
    // an unknown path under /v1/ too, so that a page reads its 404; nothing outside the contract's paths
    expect(corsMethods("/v1/nope")).toBe("GET, POST, DELETE");
    for (const path of [
      "/",
      "/console/",
      "/console/session",
      "/console/api/keys",
      "/mcp",
      "/docs",
      "/healthz",
      "/metrics",
    ])
      expect(corsMethods(path), path).toBeNull();
  });

  it("a preflight of every route from an origin let in: 204, the origin, the route's methods, the API's headers", async () => {
    for (const [path, methods] of byPath) {
      for (const method of methods) {
        const res = await preflight(
          h.server.app,
          concrete(path),
          APP,
          method,
          "x-api-key,idempotency-key,content-type",
        );
        expect(res.statusCode, `${method} ${path}`).toBe(204);
        expect(res.headers["access-control-allow-origin"]).toBe(APP);
        expect(res.headers["vary"]).toBe("Origin");
        expect(String(res.headers["access-control-allow-methods"]).split(", ")).toContain(method);
        expect(res.headers["access-control-allow-headers"]).toBe(CORS_ALLOW_HEADERS);
        expect(res.headers["access-control-max-age"]).toBe("600");
        expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
        expect(res.body).toBe("");
      }
    }
  });

  it("the headers allowed are the API's: X-API-Key, Authorization, Idempotency-Key, Content-Type; not X-CSRF-Token", () => {
    const allowed = CORS_ALLOW_HEADERS.toLowerCase().split(", ");
    expect(allowed).toEqual(["x-api-key", "authorization", "idempotency-key", "content-type"]);
    expect(allowed).not.toContain("x-csrf-token");
    expect(CORS_EXPOSE_HEADERS.split(", ")).toEqual([
      "Retry-After",
      "Idempotent-Replayed",
      "X-Should-Retry",
      "X-Request-Id",
      "Content-Disposition",
    ]);
  });

  it("the mock's lists are the server's, plus its scenario headers (D117)", () => {
    expect(MOCK_EXPOSE.split(", ").filter((h) => h !== "X-Sdgw-Scenario-Skipped")).toEqual(
      CORS_EXPOSE_HEADERS.split(", "),
    );
    expect(MOCK_ALLOW.split(", ").filter((h) => h !== "X-Sdgw-Scenario")).toEqual(CORS_ALLOW_HEADERS.split(", "));
  });

  it("an origin not let in: the preflight is a bare 204 (Vary: Origin), which the browser refuses", async () => {
    for (const origin of [OTHER, "http://localhost:5174", "https://localhost:5173", "null"]) {
      const res = await preflight(h.server.app, "/v1/account", origin, "GET");
      expect(res.statusCode).toBe(204);
      expect(res.headers["access-control-allow-origin"], origin).toBeUndefined();
      expect(res.headers["access-control-allow-methods"]).toBeUndefined();
      expect(res.headers["vary"]).toBe("Origin");
    }
  });

  it("outside the contract's paths no preflight is answered: the console's cookie routes, /mcp, /docs", async () => {
    for (const [url, method] of [
      ["/console/session", "POST"],
      ["/console/session", "DELETE"],
      ["/console/api/keys", "POST"],
      ["/mcp", "POST"],
      ["/docs/", "GET"],
      ["/healthz", "GET"],
    ] as const) {
      const res = await preflight(h.server.app, url, APP, method, "x-csrf-token,content-type");
      expect(res.statusCode, url).toBe(404);
      expect(res.headers["access-control-allow-origin"], url).toBeUndefined();
      expect(res.headers["access-control-allow-headers"], url).toBeUndefined();
    }
  });

  it("an OPTIONS that is no preflight (no Access-Control-Request-Method) is not found, as before", async () => {
    const res = await h.server.app.inject({ method: "OPTIONS", url: "/v1/account", headers: { origin: APP } });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe("not_found");
  });
});

describe("answers", () => {
  it("a keyed 200 to an origin let in carries its origin, the exposed headers and Vary: Origin", async () => {
    const a = await h.call("getAccount", "GET", "/v1/account", { headers: { origin: APP } });
    expect(a.status).toBe(200);
    expect(a.headers["access-control-allow-origin"]).toBe(APP);
    expect(a.headers["access-control-expose-headers"]).toBe(CORS_EXPOSE_HEADERS);
    expect(a.headers["vary"]).toBe("Origin");
    expect(a.headers["access-control-allow-credentials"]).toBeUndefined();
  });

  it("refusals and unknown paths carry them too, so a page reads the error (401, 404, 400 of a bad path)", async () => {
    const unauth = await h.call(null, "GET", "/v1/account", { key: "sdgw_wrong", headers: { origin: APP } });
    expect(unauth.status).toBe(401);
    expect(unauth.headers["access-control-allow-origin"]).toBe(APP);
    const missing = await h.call(null, "GET", "/v1/nope", { headers: { origin: APP } });
    expect(missing.status).toBe(404);
    expect(missing.headers["access-control-allow-origin"]).toBe(APP);
    const badPath = await h.server.app.inject({ method: "GET", url: "/v1/results/%E0%A4%A", headers: { origin: APP } });
    expect(badPath.statusCode).toBe(400);
    expect(badPath.headers["access-control-allow-origin"]).toBe(APP);
  });

  it("a replay exposes Idempotent-Replayed", async () => {
    const idem = newIdem();
    const url = "/v1/search?platform=reddit&query=cors&count=1";
    const headers = { origin: APP, "idempotency-key": idem };
    await h.call("search", "GET", url, { headers });
    const again = await h.call("search", "GET", url, { headers });
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.headers["access-control-allow-origin"]).toBe(APP);
    expect(again.headers["access-control-expose-headers"]).toContain("Idempotent-Replayed");
  });

  it("an origin not let in gets no Access-Control-Allow-Origin; a request without Origin neither", async () => {
    const other = await h.call("getAccount", "GET", "/v1/account", { headers: { origin: OTHER } });
    expect(other.status).toBe(200);
    expect(other.headers["access-control-allow-origin"]).toBeUndefined();
    expect(other.headers["access-control-expose-headers"]).toBeUndefined();
    expect(other.headers["vary"]).toBe("Origin");
    const none = await h.call("getAccount", "GET", "/v1/account");
    expect(none.headers["access-control-allow-origin"]).toBeUndefined();
    expect(none.headers["vary"]).toBe("Origin");
  });

  it("the console's routes never carry CORS headers, even to an origin let in", async () => {
    for (const url of ["/console/session", "/console/api/keys", "/console/"]) {
      const res = await h.server.app.inject({ method: "GET", url, headers: { origin: APP } });
      expect(res.headers["access-control-allow-origin"], url).toBeUndefined();
      expect(res.headers["access-control-allow-credentials"], url).toBeUndefined();
    }
  });
});

describe('"*" and CORS off', () => {
  it('"*": any origin, Access-Control-Allow-Origin: *, no Vary, never credentials', async () => {
    const pre = await preflight(open.app, "/v1/find", OTHER, "POST", "content-type");
    expect(pre.statusCode).toBe(204);
    expect(pre.headers["access-control-allow-origin"]).toBe("*");
    expect(pre.headers["access-control-allow-methods"]).toBe("POST");
    expect(pre.headers["vary"]).toBeUndefined();
    const caps = await open.app.inject({ method: "GET", url: "/v1/capabilities", headers: { origin: OTHER } });
    expect(caps.statusCode).toBe(200);
    expect(caps.headers["access-control-allow-origin"]).toBe("*");
    expect(caps.headers["access-control-allow-credentials"]).toBeUndefined();
  });

  it("off (the default): preflights are not found and answers carry no CORS header, as before", async () => {
    const pre = await preflight(off.app, "/v1/capabilities", APP, "GET");
    expect(pre.statusCode).toBe(404);
    expect(pre.headers["access-control-allow-origin"]).toBeUndefined();
    const caps = await off.app.inject({ method: "GET", url: "/v1/capabilities", headers: { origin: APP } });
    expect(caps.headers["access-control-allow-origin"]).toBeUndefined();
    expect(caps.headers["vary"]).toBeUndefined();
  });
});

describe("SDGW_CORS_ORIGINS", () => {
  it("reads *, or a comma list of exact origins (spaces, a trailing slash, upper case and repeats tolerated)", () => {
    expect(configFromEnv({ SDGW_CORS_ORIGINS: "*" }).corsOrigins).toBe("*");
    expect(
      configFromEnv({ SDGW_CORS_ORIGINS: " http://localhost:5173 , HTTPS://App.Example.com/,http://localhost:5173" })
        .corsOrigins,
    ).toEqual(["http://localhost:5173", "https://app.example.com"]);
    expect(configFromEnv({}).corsOrigins).toBeUndefined();
    expect(checkCorsOrigins(undefined)).toEqual([]);
  });

  it("refuses what is no origin, naming the variable", () => {
    for (const bad of [
      "localhost:5173",
      "http://a.example/app",
      "ftp://a.example",
      "*,http://a.example",
      "http://a.example?x",
    ]) {
      expect(() => configFromEnv({ SDGW_CORS_ORIGINS: bad }), bad).toThrow(ConfigError);
      expect(() => configFromEnv({ SDGW_CORS_ORIGINS: bad }), bad).toThrow(/SDGW_CORS_ORIGINS must be "\*" or a list/);
    }
    expect(() => parseCorsOrigins("http://a.example/x")).toThrow(/is not an origin/);
    expect(() => createServer({ dbPath: ":memory:", corsOrigins: ["a.example"] })).toThrow(/corsOrigins must be/);
  });
});
