/**
 * The console's server side (D86–D89): its static pages at /console/ (or a clear 503 without a build), cookie
 * authentication of the API for the Playground (the user's console key; a key header wins; CSRF on charging and
 * state-changing calls; an invalid cookie is the 401 without a reason), the console's account routes under
 * /console/api/, and the demo user of a first start. Over `app.inject`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify from "fastify";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { DEMO_EMAIL, seedDemo, seedDemoUser } from "../src/demo.ts";
import { consoleStaticRoutes } from "../src/http/console-static.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { hashPasswordSync, verifyPassword } from "../src/storage/sessions.ts";
import { sessionsOf } from "../src/http/console-session.ts";
import { GENEROUS } from "./helpers.ts";

const PASSWORD = "correct horse battery staple";
const EMAIL = "ada@example.com";
const tmp = mkdtempSync(join(tmpdir(), "sdgw-console-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let server: SdgwServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function setup(options: Partial<Parameters<typeof createServer>[0]> = {}) {
  server = createServer({ dbPath: ":memory:", log: () => undefined, limits: GENEROUS, waitMs: 5000, ...options });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "Console", plan: "paid" });
  gw.accounts.grant(account.id, 1000, "test");
  sessionsOf(gw).createUser({ accountId: account.id, email: EMAIL, passwordHash: hashPasswordSync(PASSWORD) });
  const app = server.app;
  const signIn = await app.inject({
    method: "POST",
    url: "/console/session",
    headers: { "content-type": "application/json" },
    payload: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  expect(signIn.statusCode).toBe(200);
  const cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;
  const csrf = JSON.parse(signIn.body).csrf_token as string;
  const inject = (
    method: "GET" | "POST" | "DELETE",
    url: string,
    o: { headers?: Record<string, string>; body?: unknown } = {},
  ) =>
    app.inject({
      method,
      url,
      headers: { ...(o.body !== undefined ? { "content-type": "application/json" } : {}), ...o.headers },
      ...(o.body !== undefined ? { payload: JSON.stringify(o.body) } : {}),
    });
  return { gw, app, account, cookie, csrf, inject };
}

const SEARCH = { platform: "xiaohongshu", query: "露营", count: 2 };

describe("cookie authentication of the API (D87)", () => {
  it("runs a charging call under the user's console key with the cookie and the CSRF token, and lists it under the sign-in", async () => {
    const { gw, account, cookie, csrf, inject } = await setup();
    const res = await inject("POST", "/v1/search", { headers: { cookie, "x-csrf-token": csrf }, body: SEARCH });
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.billing.cost).toBeGreaterThan(0);
    const keys = gw.accounts.keys(account.id).filter((k) => k.name === `console:${EMAIL}`);
    expect(keys).toHaveLength(1);
    expect(JSON.parse(keys[0]!.permissions)).toEqual(["read_data"]);
    // A second call uses the same key, not a new one.
    await inject("POST", "/v1/search", {
      headers: { cookie, "x-csrf-token": csrf },
      body: { ...SEARCH, query: "咖啡" },
    });
    expect(gw.accounts.keys(account.id).filter((k) => k.name === `console:${EMAIL}`)).toHaveLength(1);
    // The calls are listed under the sign-in, with their handles, and read by handle with the cookie alone (a GET).
    const list = JSON.parse((await inject("GET", "/console/api/results", { headers: { cookie } })).body);
    expect(list.results).toHaveLength(2);
    expect(list.results.every((r: { charged_credits: number }) => r.charged_credits > 0)).toBe(true);
    // Answered at once, they have no handle (a 202's handle is read under the sign-in: the D105 test below).
    expect(list.results.map((r: { handle: string | null }) => r.handle)).toEqual([null, null]);
    // ... and keep their operation's name (the charge's note).
    expect(list.results.map((r: { operation: string | null }) => r.operation)).toEqual(["search", "search"]);
  });

  it("reads a result under the sign-in after the console key that started it was revoked (D105)", async () => {
    // weibo answers slower than waitMs: the search answers 202 with a handle.
    const { gw, account, cookie, csrf, inject } = await setup({
      waitMs: 50,
      simulator: { knobs: { weibo: { latencyMs: [300, 300] } } },
    });
    const started = await inject("POST", "/v1/search", {
      headers: { cookie, "x-csrf-token": csrf },
      body: { platform: "weibo", query: "露营", count: 2 },
    });
    expect(started.statusCode).toBe(202);
    const { handle } = JSON.parse(started.body) as { handle: string };
    let read = await inject("GET", `/v1/results/${handle}`, { headers: { cookie } });
    for (let i = 0; read.statusCode === 202 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 50));
      read = await inject("GET", `/v1/results/${handle}`, { headers: { cookie } });
    }
    expect(read.statusCode).toBe(200);
    const answer = JSON.parse(read.body);
    const first = gw.accounts.keys(account.id).find((k) => k.name === `console:${EMAIL}`)!;
    expect(
      (await inject("DELETE", `/console/api/keys/${first.id}`, { headers: { cookie, "x-csrf-token": csrf } }))
        .statusCode,
    ).toBe(200);
    // The next request under the session runs under a new console key, and still reads the handle, unchanged.
    const again = await inject("GET", `/v1/results/${handle}`, { headers: { cookie } });
    expect(again.statusCode).toBe(200);
    expect(JSON.parse(again.body).items).toEqual(answer.items);
    const consoleKeys = gw.accounts.keys(account.id).filter((k) => k.name === `console:${EMAIL}`);
    expect(consoleKeys.map((k) => k.status).sort()).toEqual(["active", "revoked"]);
    // Only the session reads it so: another key of the same account gets the contract's 404.
    const other = gw.accounts.createKey({ accountId: account.id, name: "other", permissions: ["read_data"] });
    const byOther = await inject("GET", `/v1/results/${handle}`, { headers: { "x-api-key": other.secret } });
    expect(byOther.statusCode).toBe(404);
    expect(JSON.parse(byOther.body).fix.param).toBe("handle");
  });

  it("refuses a charging call with the cookie but no or a wrong CSRF token (403, nothing charged)", async () => {
    const { gw, account, cookie, inject } = await setup();
    const before = gw.ledger.view(account.id, null).balance;
    expect(before).toBe(1000);
    for (const headers of [{ cookie }, { cookie, "x-csrf-token": "not-the-token" }] as Array<Record<string, string>>) {
      const res = await inject("POST", "/v1/search", { headers, body: SEARCH });
      expect(res.statusCode).toBe(403);
      expect(JSON.parse(res.body).fix.param).toBe("X-CSRF-Token");
    }
    // GET /v1/search charges too: it needs the token as well.
    expect(
      (await inject("GET", "/v1/search?platform=weibo&query=x", { headers: { cookie, "idempotency-key": "get-1" } }))
        .statusCode,
    ).toBe(403);
    expect(gw.ledger.view(account.id, null).balance).toBe(before);
  });

  it("reads free GET routes with the cookie alone; a DELETE needs the token", async () => {
    const { cookie, csrf, inject } = await setup();
    const account = await inject("GET", "/v1/account", { headers: { cookie } });
    expect(account.statusCode).toBe(200);
    expect(JSON.parse(account.body).key.name).toBe(`console:${EMAIL}`);
    expect((await inject("GET", "/v1/schedules", { headers: { cookie } })).statusCode).toBe(200);
    expect((await inject("DELETE", "/v1/schedules/sch_none", { headers: { cookie } })).statusCode).toBe(403);
    expect(
      (await inject("DELETE", "/v1/schedules/sch_none", { headers: { cookie, "x-csrf-token": csrf } })).statusCode,
    ).toBe(404);
  });

  it("answers an invalid or signed-out cookie with the 401 without a reason; no key and no cookie stays `missing`", async () => {
    const { cookie, csrf, inject } = await setup();
    const bad = await inject("GET", "/v1/account", {
      headers: { cookie: "sdgw_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
    });
    expect(bad.statusCode).toBe(401);
    expect(JSON.parse(bad.body).reason).toBeUndefined();
    expect(JSON.parse(bad.body).message).toMatch(/valid session is required/);
    expect(JSON.parse((await inject("GET", "/v1/account")).body).reason).toBe("missing");
    expect((await inject("DELETE", "/console/session", { headers: { cookie, "x-csrf-token": csrf } })).statusCode).toBe(
      200,
    );
    expect(
      (await inject("POST", "/v1/search", { headers: { cookie, "x-csrf-token": csrf }, body: SEARCH })).statusCode,
    ).toBe(401);
  });

  it("lets a key header win over the cookie", async () => {
    const { gw, account, cookie, inject } = await setup();
    const key = gw.accounts.createKey({ accountId: account.id, name: "mine" });
    const res = await inject("GET", "/v1/account", { headers: { cookie, "x-api-key": key.secret } });
    expect(JSON.parse(res.body).key.name).toBe("mine");
    const wrong = await inject("GET", "/v1/account", { headers: { cookie, "x-api-key": "sdgw_wrong" } });
    expect(JSON.parse(wrong.body).reason).toBe("invalid");
  });

  it("refuses a cross-site Origin with the cookie", async () => {
    const { cookie, csrf, inject } = await setup();
    const res = await inject("POST", "/v1/search", {
      headers: { cookie, "x-csrf-token": csrf, origin: "https://evil.example" },
      body: SEARCH,
    });
    expect(res.statusCode).toBe(403);
    expect(JSON.parse(res.body).fix.param).toBe("Origin");
  });
});

describe("the console's account routes (D88)", () => {
  it("creates a key shown once, lists it without its secret, changes its limit and revokes it", async () => {
    const { gw, cookie, csrf, inject } = await setup();
    const h = { cookie, "x-csrf-token": csrf };
    const created = await inject("POST", "/console/api/keys", {
      headers: h,
      body: { name: "ci", daily_limit: 50, read_data: true },
    });
    expect(created.statusCode).toBe(200);
    const { key, secret } = JSON.parse(created.body);
    expect(secret).toMatch(/^sdgw_/);
    expect(key.daily_limit).toBe(50);
    // The secret works as a key.
    expect((await inject("GET", "/v1/account", { headers: { "x-api-key": secret } })).statusCode).toBe(200);
    const list = await inject("GET", "/console/api/keys", { headers: { cookie } });
    expect(list.body).not.toContain(secret);
    expect(JSON.parse(list.body).keys.map((k: { name: string }) => k.name)).toContain("ci");
    const changed = await inject("POST", `/console/api/keys/${key.id}`, {
      headers: h,
      body: { daily_limit: null, read_data: false },
    });
    expect(JSON.parse(changed.body).key).toMatchObject({ daily_limit: null, permissions: [] });
    expect((await inject("DELETE", `/console/api/keys/${key.id}`, { headers: h })).statusCode).toBe(200);
    expect(JSON.parse((await inject("GET", "/v1/account", { headers: { "x-api-key": secret } })).body).reason).toBe(
      "revoked",
    );
    expect(gw.accounts.key(key.id)!.status).toBe("revoked");
  });

  it("refuses without a session, without the CSRF token, a bad body, and another account's key", async () => {
    const { gw, cookie, csrf, inject } = await setup();
    expect((await inject("GET", "/console/api/keys")).statusCode).toBe(401);
    expect((await inject("POST", "/console/api/keys", { headers: { cookie }, body: { name: "x" } })).statusCode).toBe(
      403,
    );
    const bad = await inject("POST", "/console/api/keys", {
      headers: { cookie, "x-csrf-token": csrf },
      body: { name: "x", daily_limit: -1 },
    });
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body).fix.param).toBe("daily_limit");
    const other = gw.accounts.createAccount({ name: "Other" });
    const theirs = gw.accounts.createKey({ accountId: other.account.id, name: "theirs" });
    expect(
      (await inject("DELETE", `/console/api/keys/${theirs.id}`, { headers: { cookie, "x-csrf-token": csrf } }))
        .statusCode,
    ).toBe(404);
    expect(gw.accounts.key(theirs.id)!.status).toBe("active");
  });

  it("answers 30 days of spend, today's charges included", async () => {
    const { cookie, csrf, inject } = await setup();
    await inject("POST", "/v1/search", { headers: { cookie, "x-csrf-token": csrf }, body: SEARCH });
    const days = JSON.parse((await inject("GET", "/console/api/spend", { headers: { cookie } })).body).days as Array<{
      day: string;
      credits: number;
    }>;
    expect(days).toHaveLength(30);
    expect(days.at(-1)!.credits).toBeGreaterThan(0);
  });
});

describe("the console's static pages (D86)", () => {
  it("serves the built files, a page path as index.html, and a 404 for a missing file", async () => {
    const dist = join(tmp, "dist");
    mkdirSync(join(dist, "assets"), { recursive: true });
    writeFileSync(join(dist, "index.html"), "<!doctype html><title>console</title>");
    writeFileSync(join(dist, "assets", "a.js"), "console.log(1)");
    const app = Fastify();
    consoleStaticRoutes(app, dist);
    const page = await app.inject({ method: "GET", url: "/console/keys" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/text\/html/);
    expect(page.headers["content-security-policy"]).toContain("default-src 'self'");
    expect(page.body).toContain("<title>console</title>");
    const js = await app.inject({ method: "GET", url: "/console/assets/a.js" });
    expect(js.headers["content-type"]).toMatch(/text\/javascript/);
    expect((await app.inject({ method: "GET", url: "/console/assets/none.js" })).statusCode).toBe(404);
    expect((await app.inject({ method: "GET", url: "/console/../../package.json" })).statusCode).not.toBe(200);
    expect((await app.inject({ method: "GET", url: "/console" })).headers["location"]).toBe("/console/");
    await app.close();
  });

  it("answers a clear 503 page when the console was not built", async () => {
    const app = Fastify();
    consoleStaticRoutes(app, join(tmp, "nowhere"));
    const res = await app.inject({ method: "GET", url: "/console/" });
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain("pnpm --filter @sdgw/console build");
    await app.close();
  });
});

describe("the demo user of a first start (D89)", () => {
  it("is created once with a password that signs in; later starts give no password", async () => {
    server = createServer({ dbPath: ":memory:", log: () => undefined, limits: GENEROUS });
    const demo = seedDemo(server.gateway);
    const user = seedDemoUser(server.gateway, demo.accountId);
    expect(user.email).toBe(DEMO_EMAIL);
    expect(user.password).toEqual(expect.any(String));
    const stored = sessionsOf(server.gateway).userByEmail(DEMO_EMAIL)!;
    expect(stored.account_id).toBe(demo.accountId);
    expect(await verifyPassword(user.password!, stored.password_hash)).toBe(true);
    expect(seedDemoUser(server.gateway, demo.accountId)).toEqual({ email: DEMO_EMAIL, password: null });
    const res = await server.app.inject({
      method: "POST",
      url: "/console/session",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ email: DEMO_EMAIL, password: user.password }),
    });
    expect(res.statusCode).toBe(200);
  });
});
