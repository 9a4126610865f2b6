/**
 * Console sign-in sessions (D82–D85): users, sign-in and sign-out, cookies, CSRF, Origin, throttling, expiry, the
 * seed's 401 without a reason, and the admin CLI. Over `app.inject`, and once over a real socket with `fetch`.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpsServer, request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { validateErrorStructure } from "@sdgw/validators";
import fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ADMIN_USAGE, runAdmin } from "../src/admin.ts";
import { ConfigError, configFromEnv } from "../src/config.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { LAST_SEEN_EVERY_MS } from "../src/storage/sessions.ts";
import { hashPasswordSync, sessionIdOf, verifyPassword } from "../src/storage/sessions.ts";
import { sessionsOf } from "../src/http/console-session.ts";
import { GENEROUS, validateAnswer } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "sdgw-sessions-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PASSWORD = "correct horse battery staple";
const EMAIL = "Ada@Example.com";
const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);
const HOUR = 3600_000;

let server: SdgwServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

/** A server on `:memory:` with a movable clock, an account and one console user. */
function setup(options: { sessions?: Record<string, number> } = {}) {
  const clock = { now: T0 };
  server = createServer({
    dbPath: ":memory:",
    log: () => undefined,
    now: () => clock.now,
    limits: GENEROUS,
    ...options,
  });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "Console", plan: "paid" });
  const user = sessionsOf(gw).createUser({
    accountId: account.id,
    email: EMAIL,
    passwordHash: hashPasswordSync(PASSWORD),
  });
  const app = server.app;
  const inject = (
    method: "GET" | "POST" | "DELETE",
    o: { headers?: Record<string, string>; body?: unknown; raw?: string; ip?: string; url?: string } = {},
  ) =>
    app.inject({
      method,
      url: o.url ?? "/console/session",
      headers: { ...(o.body !== undefined ? { "content-type": "application/json" } : {}), ...o.headers },
      ...(o.body !== undefined ? { payload: JSON.stringify(o.body) } : o.raw !== undefined ? { payload: o.raw } : {}),
      remoteAddress: o.ip ?? "10.0.0.1",
    });
  const signIn = (email = EMAIL, password = PASSWORD, ip?: string) =>
    inject("POST", { body: { email, password }, ...(ip ? { ip } : {}) });
  return { gw, app, clock, account, user, inject, signIn };
}

/** D53's headers, and the contract's error structure on every error answer (a 401 through the helpers' check). */
function check(res: LightMyRequestResponse) {
  expect(res.headers["x-content-type-options"]).toBe("nosniff");
  expect(res.headers["cache-control"]).toBe("no-store");
  const json = JSON.parse(res.body);
  if (res.statusCode === 401) validateAnswer(null, res);
  else if (res.statusCode >= 400) {
    const v = validateErrorStructure(json);
    expect(v.ok, JSON.stringify(v.ok ? "" : v.errors)).toBe(true);
  }
  if (res.statusCode === 429) expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  return json;
}

const tokenOf = (res: LightMyRequestResponse) => /sdgw_session=([^;]*)/.exec(String(res.headers["set-cookie"]))![1]!;
const cookie = (token: string) => ({ cookie: `sdgw_session=${token}` });

/** The seed's 401 without a reason (D28). */
function expectSessionRequired(res: LightMyRequestResponse, signIn: string) {
  expect(res.statusCode).toBe(401);
  const json = check(res);
  expect(json.code).toBe("unauthorized");
  expect("reason" in json).toBe(false);
  expect(json.message).toBe("A valid session is required: sign in to the console.");
  expect(json.fix.action_url).toBe(signIn);
}

describe("sign-in and sign-out", () => {
  it("round trip: sign in, read the session, sign out; the cookie then no longer works", async () => {
    const { gw, user, signIn, inject } = setup();
    const a = await signIn("  ada@EXAMPLE.com ");
    expect(a.statusCode).toBe(200);
    const body = check(a);
    expect(body.user).toEqual({ id: user.id, email: "ada@example.com", account_id: user.account_id });
    expect(body.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body.expires_at).toBe(new Date(T0 + 7 * 24 * HOUR).toISOString().replace(".000Z", "Z"));
    expect(body.idle_expires_at).toBe(new Date(T0 + 12 * HOUR).toISOString().replace(".000Z", "Z"));
    const token = tokenOf(a);
    const read = await inject("GET", { headers: cookie(token) });
    expect(read.statusCode).toBe(200);
    expect(check(read)).toMatchObject({ user: body.user, csrf_token: body.csrf_token });
    const out = await inject("DELETE", { headers: { ...cookie(token), "x-csrf-token": body.csrf_token } });
    expect(out.statusCode).toBe(200);
    expect(check(out).signed_out).toBe(true);
    expect(String(out.headers["set-cookie"])).toMatch(/^sdgw_session=; HttpOnly; SameSite=Strict; Path=\/; Max-Age=0$/);
    expectSessionRequired(await inject("GET", { headers: cookie(token) }), gw.config.urls.signIn);
    expectSessionRequired(
      await inject("DELETE", { headers: { ...cookie(token), "x-csrf-token": body.csrf_token } }),
      gw.config.urls.signIn,
    );
  });

  it("the cookie: HttpOnly, SameSite=Strict, Path=/, Max-Age of the lifetime; no Secure over http, whatever X-Forwarded-Proto says", async () => {
    const { signIn, inject } = setup();
    const a = await signIn();
    const set = String(a.headers["set-cookie"]);
    expect(set).toMatch(/^sdgw_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=604800$/);
    expect(set).not.toMatch(/Secure/);
    // The app trusts no proxy: a forwarded scheme does not make the request TLS.
    const forwarded = await inject("POST", {
      body: { email: EMAIL, password: PASSWORD },
      headers: { "x-forwarded-proto": "https" },
    });
    expect(forwarded.statusCode).toBe(200);
    expect(String(forwarded.headers["set-cookie"])).not.toMatch(/Secure/);
  });

  it("a wrong password and an unknown email get the same answer", async () => {
    const { signIn } = setup();
    const wrong = await signIn(EMAIL, "not the password at all");
    const unknown = await signIn("nobody@example.com", PASSWORD);
    for (const r of [wrong, unknown]) {
      expect(r.statusCode).toBe(401);
      expect(r.headers["set-cookie"]).toBeUndefined();
    }
    const [a, b] = [check(wrong), check(unknown)];
    expect(a.reason).toBe("invalid");
    expect({ ...a, request_id: "" }).toEqual({ ...b, request_id: "" });
    expect(Object.keys(wrong.headers).sort()).toEqual(Object.keys(unknown.headers).sort());
  });

  it("a bad body is 400 invalid_params naming the field", async () => {
    const { inject } = setup();
    const cases: Array<[{ body?: unknown; raw?: string; headers?: Record<string, string> }, string]> = [
      [{ body: { password: PASSWORD } }, "email"],
      [{ body: { email: "not-an-email", password: PASSWORD } }, "email"],
      [{ body: { email: 7, password: PASSWORD } }, "email"],
      [{ body: { email: EMAIL } }, "password"],
      [{ body: { email: EMAIL, password: "" } }, "password"],
      [{ body: { email: EMAIL, password: "x".repeat(1025) } }, "password"],
      [{ body: { email: EMAIL, password: PASSWORD, remember: true } }, "remember"],
      [{ body: [EMAIL, PASSWORD] }, "body"],
      [{ raw: "{", headers: { "content-type": "application/json" } }, "body"],
      [
        { raw: JSON.stringify({ email: EMAIL, password: PASSWORD }), headers: { "content-type": "text/plain" } },
        "body",
      ],
      [{}, "body"],
    ];
    for (const [o, param] of cases) {
      const r = await inject("POST", o);
      expect(r.statusCode, JSON.stringify(o)).toBe(400);
      const json = check(r);
      expect([json.code, json.fix.param]).toEqual(["invalid_params", param]);
    }
  });

  it("a disabled user cannot sign in (a right password says so: 401 suspended), and its sessions stop", async () => {
    const { gw, signIn, inject } = setup();
    const token = tokenOf(await signIn());
    expect(sessionsOf(gw).disableUser("ADA@example.com")?.sessionsEnded).toBe(1);
    expectSessionRequired(await inject("GET", { headers: cookie(token) }), gw.config.urls.signIn);
    const again = await signIn();
    expect(again.statusCode).toBe(401);
    expect(check(again).reason).toBe("suspended");
    const wrong = await signIn(EMAIL, "wrong password here");
    expect(check(wrong).reason).toBe("invalid");
  });
});

describe("throttling (D84)", () => {
  it(
    "after 5 failures for one email, sign-in is refused (429, Retry-After) before the password is " +
      "checked, the right one too, until the window ends",
    async () => {
      const { clock, signIn, inject } = setup();
      for (let i = 0; i < 5; i++) {
        clock.now += 60_000;
        expect((await signIn(EMAIL, `wrong-${i}-password`, `10.0.1.${i}`)).statusCode).toBe(401);
      }
      const failuresAt = clock.now - 4 * 60_000; // the first of the five
      const refused = await signIn(EMAIL, PASSWORD, "10.0.2.1");
      expect(refused.statusCode).toBe(429);
      const json = check(refused);
      expect([json.code, json.reason]).toEqual(["rate_limited", "address"]);
      expect(Number(refused.headers["retry-after"])).toBe(Math.ceil((failuresAt + 15 * 60_000 - clock.now) / 1000));
      // Any case of the email is the same email; another email is not held back.
      expect((await signIn("ADA@example.COM", PASSWORD)).statusCode).toBe(429);
      // A bad body is still 400 first (D50's order).
      expect((await inject("POST", { body: { email: EMAIL } })).statusCode).toBe(400);
      // Once the oldest failure leaves the window, the count is under the limit again.
      clock.now = failuresAt + 15 * 60_000 - 1;
      expect((await signIn()).statusCode).toBe(429);
      clock.now = failuresAt + 15 * 60_000;
      const ok = await signIn();
      expect(ok.statusCode).toBe(200);
    },
  );

  it("after 20 failures from one address, its sign-ins are refused; another address is not", async () => {
    const { signIn } = setup();
    for (let i = 0; i < 20; i++)
      expect((await signIn(`user${i}@example.com`, "some wrong password", "10.9.9.9")).statusCode).toBe(401);
    const refused = await signIn(EMAIL, PASSWORD, "10.9.9.9");
    expect(refused.statusCode).toBe(429);
    expect(check(refused).message).toMatch(/network address/);
    expect((await signIn(EMAIL, PASSWORD, "10.9.9.8")).statusCode).toBe(200);
  }, 120_000);

  it("attempts sent together cannot pass the limit while their passwords are checked", async () => {
    const { signIn } = setup();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => signIn(EMAIL, i === 11 ? PASSWORD : `wrong password ${i}`, `10.0.3.${i}`)),
    );
    const statuses = answers.map((a) => a.statusCode);
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
  });

  it("a right password starts the email's count over", async () => {
    const { signIn } = setup();
    for (let i = 0; i < 4; i++) await signIn(EMAIL, "wrong password 1234");
    expect((await signIn()).statusCode).toBe(200);
    for (let i = 0; i < 4; i++) await signIn(EMAIL, "wrong password 1234");
    expect((await signIn()).statusCode).toBe(200);
  });
});

describe("the seed's 401 without a reason (D28)", () => {
  it("no cookie, a cookie that is no token, an unknown token: unauthorized without reason, pointing to sign-in", async () => {
    const { gw, inject } = setup();
    for (const headers of [
      {},
      { cookie: "other=1" },
      { cookie: "sdgw_session=" },
      { cookie: "sdgw_session=abc" },
      cookie("A".repeat(43)),
      { cookie: `sdgw_session=${"é".repeat(43)}` },
    ]) {
      expectSessionRequired(await inject("GET", { headers }), gw.config.urls.signIn);
      expectSessionRequired(
        await inject("DELETE", { headers: { ...headers, "x-csrf-token": "x" } }),
        gw.config.urls.signIn,
      );
    }
  });

  it("a key is not a session: X-API-Key at the console is 401 without reason", async () => {
    const { gw, account, inject } = setup();
    const key = gw.accounts.createKey({ accountId: account.id, name: "k" }).secret;
    expectSessionRequired(await inject("GET", { headers: { "x-api-key": key } }), gw.config.urls.signIn);
  });

  it("any cookie value never authenticates and never answers 5xx (property)", async () => {
    const { gw, inject, signIn } = setup();
    await signIn(); // a session exists: a random value must not find it
    const printable = fc.constantFrom(..."abcXYZ019-_=;., \"'%$!~+/\\".split(""));
    const value = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      fc.string({ unit: printable, maxLength: 80 }),
      fc.string({ unit: "grapheme-ascii", maxLength: 60 }),
    );
    await fc.assert(
      fc.asyncProperty(
        value,
        fc.boolean(),
        fc.constantFrom("GET", "DELETE") as fc.Arbitrary<"GET" | "DELETE">,
        async (v, named, method) => {
          // biome-ignore lint/suspicious/noControlCharactersInRegex: a header may not carry CR, LF or NUL
          const header = (named ? `sdgw_session=${v}` : v).replace(/[\r\n\u0000]/g, "");
          const res = await inject(method, {
            headers: { cookie: header, "x-csrf-token": v.replace(/[^\x21-\x7e]/g, "") || "x" },
          });
          expect(res.statusCode, header).toBe(401);
          expectSessionRequired(res, gw.config.urls.signIn);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("CSRF and Origin (D84)", () => {
  it("sign-out without or with a wrong X-CSRF-Token is refused (403 naming it) and the session stays; with it, it ends", async () => {
    const { signIn, inject } = setup();
    const a = await signIn();
    const token = tokenOf(a);
    const csrf = check(a).csrf_token as string;
    for (const extra of [
      {} as Record<string, string>,
      { "x-csrf-token": "" },
      { "x-csrf-token": "nope" },
      { "x-csrf-token": csrf.slice(0, -1) + (csrf.endsWith("A") ? "B" : "A") },
    ]) {
      const r = await inject("DELETE", { headers: { ...cookie(token), ...extra } });
      expect(r.statusCode).toBe(403);
      const json = check(r);
      expect([json.code, json.fix.param]).toEqual(["invalid_params", "X-CSRF-Token"]);
      expect(r.headers["set-cookie"]).toBeUndefined();
    }
    expect((await inject("GET", { headers: cookie(token) })).statusCode).toBe(200);
    expect((await inject("DELETE", { headers: { ...cookie(token), "x-csrf-token": csrf } })).statusCode).toBe(200);
    expect((await inject("GET", { headers: cookie(token) })).statusCode).toBe(401);
  });

  it("a cross-site Origin is refused (403 naming Origin) before anything; the server's own origin passes", async () => {
    const { signIn, inject } = setup();
    const a = await signIn();
    const token = tokenOf(a);
    const csrf = check(a).csrf_token as string;
    for (const origin of [
      "https://evil.example",
      "null",
      "http://localhost.evil.example",
      "http://localhost:81",
      "file://",
      "http://localhost/path",
    ]) {
      for (const [method, o] of [
        ["POST", { body: { email: EMAIL, password: PASSWORD } }],
        ["DELETE", { headers: { ...cookie(token), "x-csrf-token": csrf } }],
        ["GET", { headers: cookie(token) }],
      ] as const) {
        const r = await inject(method, {
          ...o,
          headers: { ...("headers" in o ? o.headers : {}), origin, host: "localhost:80" },
        });
        expect(r.statusCode, `${method} ${origin}`).toBe(403);
        expect(check(r).fix.param).toBe("Origin");
      }
    }
    expect(
      (await inject("GET", { headers: { ...cookie(token), origin: "http://localhost", host: "localhost:80" } }))
        .statusCode,
    ).toBe(200);
    expect(
      (
        await inject("GET", {
          headers: { ...cookie(token), origin: "https://console.example:8443", host: "console.example:8443" },
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await inject("DELETE", {
          headers: { ...cookie(token), "x-csrf-token": csrf, origin: "http://localhost", host: "localhost" },
        })
      ).statusCode,
    ).toBe(200);
  });

  it("a key in the URL of a console route is refused and burned first (D25)", async () => {
    const { gw, account, inject } = setup();
    const key = gw.accounts.createKey({ accountId: account.id, name: "k" }).secret;
    for (const method of ["POST", "GET", "DELETE"] as const) {
      const r = await inject(method, {
        url: `/console/session?key=${key}`,
        body: { email: EMAIL, password: PASSWORD },
        headers: { origin: "https://evil.example" },
      });
      expect(r.statusCode).toBe(401);
      expect(check(r).reason).toBe("key_in_query");
      expect(r.headers["set-cookie"]).toBeUndefined();
    }
    const later = await server!.app.inject({ method: "GET", url: "/v1/account", headers: { "x-api-key": key } });
    expect(JSON.parse(later.body).reason).toBe("key_in_query");
  });
});

describe("expiry (D83)", () => {
  it("idle timeout: a session used within 12 h lives on; 12 h unused ends it; last_seen_at written at most once a minute", async () => {
    const { gw, clock, signIn, inject } = setup();
    const token = tokenOf(await signIn());
    const id = sessionIdOf(token);
    const lastSeen = () =>
      (
        gw.store.get<{ last_seen_at: number }>("SELECT last_seen_at FROM sessions WHERE id = ?", id) ?? {
          last_seen_at: -1,
        }
      ).last_seen_at;
    clock.now += LAST_SEEN_EVERY_MS - 1;
    expect((await inject("GET", { headers: cookie(token) })).statusCode).toBe(200);
    expect(lastSeen()).toBe(T0); // not written: less than a minute
    clock.now = T0 + 6 * HOUR;
    const mid = await inject("GET", { headers: cookie(token) });
    expect(check(mid).idle_expires_at).toBe(new Date(T0 + 18 * HOUR).toISOString().replace(".000Z", "Z"));
    expect(lastSeen()).toBe(T0 + 6 * HOUR);
    clock.now = T0 + 18 * HOUR - 1;
    expect((await inject("GET", { headers: cookie(token) })).statusCode).toBe(200);
    clock.now = T0 + 18 * HOUR - 1 + 12 * HOUR;
    expectSessionRequired(await inject("GET", { headers: cookie(token) }), gw.config.urls.signIn);
    expect(lastSeen()).toBe(-1); // an ended session found is deleted
  });

  it("absolute lifetime: 7 days after sign-in the session ends, however often it is used", async () => {
    const { gw, clock, signIn, inject } = setup();
    const token = tokenOf(await signIn());
    for (let t = T0 + 10 * HOUR; t < T0 + 7 * 24 * HOUR; t += 10 * HOUR) {
      clock.now = t;
      expect((await inject("GET", { headers: cookie(token) })).statusCode, `at +${(t - T0) / HOUR} h`).toBe(200);
    }
    clock.now = T0 + 7 * 24 * HOUR - 1;
    expect((await inject("GET", { headers: cookie(token) })).statusCode).toBe(200);
    clock.now = T0 + 7 * 24 * HOUR;
    expectSessionRequired(await inject("GET", { headers: cookie(token) }), gw.config.urls.signIn);
  });

  it("the lifetimes are configurable (options and SDGW_SESSION_IDLE_MS / SDGW_SESSION_LIFETIME_MS)", async () => {
    const { clock, signIn, inject } = setup({ sessions: { idleMs: 5 * 60_000, lifetimeMs: 3600_000 } });
    const a = await signIn();
    expect(String(a.headers["set-cookie"])).toMatch(/Max-Age=3600$/);
    clock.now += 5 * 60_000;
    expect((await inject("GET", { headers: cookie(tokenOf(a)) })).statusCode).toBe(401);
    expect(configFromEnv({ SDGW_SESSION_IDLE_MS: "600000", SDGW_SESSION_LIFETIME_MS: "86400000" }).sessions).toEqual({
      idleMs: 600_000,
      lifetimeMs: 86_400_000,
    });
    expect(() => configFromEnv({ SDGW_SESSION_IDLE_MS: "soon" })).toThrow(ConfigError);
    expect(() => configFromEnv({ SDGW_SESSION_LIFETIME_MS: "5" })).toThrow(/SDGW_SESSION_LIFETIME_MS/);
  });
});

describe("secrets at rest", () => {
  it("the password is stored only as a scrypt hash; the session token only as its SHA-256", async () => {
    const { gw, signIn, user } = setup();
    const a = await signIn();
    const token = tokenOf(a);
    const row = gw.store.get<{ password_hash: string }>("SELECT password_hash FROM users WHERE id = ?", user.id)!;
    expect(row.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    const everything = JSON.stringify([
      gw.store.all("SELECT * FROM users"),
      gw.store.all("SELECT * FROM sessions"),
      gw.store.all("SELECT * FROM sign_in_failures"),
    ]);
    expect(everything).not.toContain(PASSWORD);
    expect(everything).not.toContain(token);
    expect(everything).toContain(sessionIdOf(token));
    // Two hashes of one password differ (a random salt) and both verify.
    const other = hashPasswordSync(PASSWORD);
    expect(other).not.toBe(row.password_hash);
    expect(await verifyPassword(PASSWORD, other)).toBe(true);
    expect(await verifyPassword(`${PASSWORD}!`, other)).toBe(false);
    expect(await verifyPassword(PASSWORD, "plain text")).toBe(false);
  });
});

describe("sdgw-admin create-user / disable-user", () => {
  const bin = join(import.meta.dirname, "..", "src", "bin", "sdgw-admin.ts");

  it("--help lists them; a password on the command line is refused; stdin or a made password; a disabled user's sessions stop", async () => {
    expect(ADMIN_USAGE).toContain("create-user --account acc_… --email a@b.c [--password-stdin]");
    expect(ADMIN_USAGE).toContain("disable-user --email a@b.c");
    const db = join(dir, "users.sqlite");
    const acc = (await runAdmin(["create-account", "--db", db, "--name", "Acme"])) as { account: string };
    for (const args of [["--password", PASSWORD], [`--password=${PASSWORD}`]]) {
      await expect(
        runAdmin(["create-user", "--db", db, "--account", acc.account, "--email", "x@example.com", ...args]),
      ).rejects.toThrow(/never taken from the command line/);
    }
    // From standard input (the real command, the password piped): it is not printed back.
    const out = execFileSync(
      process.execPath,
      [
        "--conditions=source",
        bin,
        "create-user",
        "--db",
        db,
        "--account",
        acc.account,
        "--email",
        "Grace@Example.com",
        "--password-stdin",
      ],
      { encoding: "utf8", input: `${PASSWORD}\n` },
    );
    const made = JSON.parse(out) as { user: string; email: string; password?: string };
    expect(made).toMatchObject({ account: acc.account, email: "grace@example.com" });
    expect(out).not.toContain(PASSWORD);
    await expect(
      runAdmin(
        ["create-user", "--db", db, "--account", acc.account, "--email", "GRACE@example.com", "--password-stdin"],
        {},
        { readStdin: () => PASSWORD },
      ),
    ).rejects.toThrow(/exists/);
    await expect(
      runAdmin(
        ["create-user", "--db", db, "--account", acc.account, "--email", "short@example.com", "--password-stdin"],
        {},
        { readStdin: () => "short" },
      ),
    ).rejects.toThrow(/at least|characters/);
    await expect(
      runAdmin(["create-user", "--db", db, "--account", "acc_nope", "--email", "n@example.com"]),
    ).rejects.toThrow(/no account/);
    // Without --password-stdin a password is made and printed once.
    const generated = (await runAdmin([
      "create-user",
      "--db",
      db,
      "--account",
      acc.account,
      "--email",
      "linus@example.com",
    ])) as { password: string; note: string };
    expect(generated.password).toMatch(/^[A-Za-z0-9_-]{24}$/);

    server = createServer({ dbPath: db, log: () => undefined, limits: GENEROUS });
    const post = (email: string, password: string) =>
      server!.app.inject({
        method: "POST",
        url: "/console/session",
        headers: { "content-type": "application/json" },
        payload: JSON.stringify({ email, password }),
      });
    const grace = await post("grace@example.com", PASSWORD);
    expect(grace.statusCode).toBe(200);
    expect((await post("linus@example.com", generated.password)).statusCode).toBe(200);
    const token = tokenOf(grace);
    const read = () => server!.app.inject({ method: "GET", url: "/console/session", headers: cookie(token) });
    expect((await read()).statusCode).toBe(200);
    await server.gateway.store.durable();
    // Disabled by another process on the same database: seen from the server's next turn.
    expect(await runAdmin(["disable-user", "--db", db, "--email", "GRACE@example.com"])).toEqual({
      user: made.user,
      email: "grace@example.com",
      disabled: true,
      sessions_ended: 1,
    });
    await new Promise((r) => setImmediate(r));
    expect((await read()).statusCode).toBe(401);
    expect(JSON.parse((await post("grace@example.com", PASSWORD)).body).reason).toBe("suspended");
    await expect(runAdmin(["disable-user", "--db", db, "--email", "nobody@example.com"])).rejects.toThrow(/no user/);
  }, 120_000);
});

describe("over a real socket", () => {
  it("fetch with the cookie: sign in, read, sign out, refused after", async () => {
    const { gw } = setup();
    const base = await server!.listen({ host: "127.0.0.1", port: 0 });
    const signIn = await fetch(`${base}/console/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: base },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    expect(signIn.status).toBe(200);
    const setCookies = signIn.headers.getSetCookie();
    expect(setCookies).toHaveLength(1);
    expect(setCookies[0]).toMatch(/HttpOnly; SameSite=Strict; Path=\/; Max-Age=604800$/);
    expect(signIn.headers.get("cache-control")).toBe("no-store");
    expect(signIn.headers.get("x-content-type-options")).toBe("nosniff");
    const jar = setCookies[0]!.split(";")[0]!;
    const { csrf_token } = (await signIn.json()) as { csrf_token: string };
    const read = await fetch(`${base}/console/session`, { headers: { cookie: jar } });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { user: { email: string } }).user.email).toBe("ada@example.com");
    const noCsrf = await fetch(`${base}/console/session`, { method: "DELETE", headers: { cookie: jar } });
    expect(noCsrf.status).toBe(403);
    const out = await fetch(`${base}/console/session`, {
      method: "DELETE",
      headers: { cookie: jar, "x-csrf-token": csrf_token, origin: base },
    });
    expect(out.status).toBe(200);
    expect(out.headers.getSetCookie()[0]).toMatch(/Max-Age=0$/);
    const after = await fetch(`${base}/console/session`, { headers: { cookie: jar } });
    expect(after.status).toBe(401);
    const json = (await after.json()) as { reason?: string; fix: { action_url: string } };
    expect(json.reason).toBeUndefined();
    expect(json.fix.action_url).toBe(gw.config.urls.signIn);
  });

  it.skipIf(!hasOpenssl())("over TLS the cookie is Secure (the app served by an https server)", async () => {
    setup();
    const key = join(dir, "tls.key");
    const cert = join(dir, "tls.crt");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        key,
        "-out",
        cert,
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
      ],
      { stdio: "ignore" },
    );
    await server!.app.ready();
    const tls = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) =>
      server!.app.routing(req, res),
    );
    await new Promise<void>((r) => tls.listen(0, "127.0.0.1", r));
    try {
      const port = (tls.address() as AddressInfo).port;
      const payload = JSON.stringify({ email: EMAIL, password: PASSWORD });
      const setCookie = await new Promise<string[]>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: "127.0.0.1",
            port,
            path: "/console/session",
            method: "POST",
            rejectUnauthorized: false,
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
          },
          (res) => {
            res.resume();
            res.on("end", () =>
              res.statusCode === 200
                ? resolve(res.headers["set-cookie"] ?? [])
                : reject(new Error(`status ${res.statusCode}`)),
            );
          },
        );
        req.on("error", reject);
        req.end(payload);
      });
      expect(setCookie[0]).toMatch(
        /^sdgw_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=604800; Secure$/,
      );
    } finally {
      await new Promise((r) => tls.close(r));
    }
  });
});

function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
