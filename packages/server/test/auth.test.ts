/** Authentication (D25, D28), key states and the one permission (D26). */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { KEY_QUERY_NAMES, keysInQuery } from "@sdgw/validators";
import { harness, type Harness } from "./helpers.ts";

let h: Harness;
afterEach(async () => {
  h.audit();
  await h.server.close();
});

const search = "/v1/search?platform=x&query=a";

describe("key carriers", () => {
  it("accepts X-API-Key, Bearer, or both when they agree; refuses two different keys", async () => {
    h = harness();
    const other = h.server.gateway.accounts.createKey({ accountId: h.accountId }).secret;
    expect((await h.call("search", "GET", search)).status).toBe(200);
    expect(
      (await h.call("search", "GET", search, { key: null, headers: { authorization: `Bearer ${h.key}` } })).status,
    ).toBe(200);
    expect((await h.call("search", "GET", search, { headers: { authorization: `Bearer ${h.key}` } })).status).toBe(200);
    const two = await h.call("search", "GET", search, { headers: { authorization: `Bearer ${other}` } });
    expect(two.status).toBe(401);
    expect(two.json).toMatchObject({ reason: "invalid", fix: { note: expect.stringMatching(/one key/) } });
    const basic = await h.call("search", "GET", search, { key: null, headers: { authorization: "Basic abc" } });
    expect(basic.json.reason).toBe("invalid");
  });

  it("answers missing and invalid keys 401 with the console to act on", async () => {
    h = harness();
    const missing = await h.call("search", "GET", search, { key: null });
    expect(missing.json).toMatchObject({
      code: "unauthorized",
      reason: "missing",
      fix: { action_url: "https://console.sdgw.dev/keys" },
    });
    expect((await h.call("search", "GET", search, { key: "sdgw_wrong" })).json.reason).toBe("invalid");
  });

  it("refuses a key in the query whatever else came, marks it exposed, and keeps refusing it in headers", async () => {
    h = harness();
    const a = await h.call("search", "GET", `${search}&key=${h.key}`);
    expect(a.status).toBe(401);
    expect(a.json.reason).toBe("key_in_query");
    const later = await h.call("search", "GET", search);
    expect(later.json.reason).toBe("key_in_query");
    expect(h.server.gateway.accounts.keys(h.accountId)[0]!.exposed_at).not.toBeNull();
    // also on routes that need no key, and before any validation
    expect(
      (await h.call("listCapabilities", "GET", "/v1/capabilities?key=sdgw_other", { key: null })).json.reason,
    ).toBe("key_in_query");
    expect((await h.call("detail", "POST", "/v1/detail?key=x", { raw: "not json" })).json.reason).toBe("key_in_query");
    // a fresh key works
    const fresh = h.server.gateway.accounts.createKey({ accountId: h.accountId }).secret;
    expect((await h.call("search", "GET", search, { key: fresh })).status).toBe(200);
  });

  it("finds a key under any of its names in any case, however the name is encoded, and never elsewhere", () => {
    h = harness();
    const piece = fc.oneof(
      fc.constantFrom(
        "key",
        "KEY",
        "Api_Key",
        "apikey",
        "token",
        "access_token",
        "k",
        "ey",
        "_",
        "%6B",
        "%6b",
        "%65",
        "%79",
        "%5F",
        "%",
        "=",
        "&",
        "?",
        "+",
        "keys",
        "a",
        "%20",
        "露营",
      ),
      fc.string({ maxLength: 4 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 10 }), (pieces) => {
        const raw = pieces.join("");
        const named = [...new URLSearchParams(raw)]
          .filter(([n]) => KEY_QUERY_NAMES.includes(n.toLowerCase()))
          .map(([, v]) => v);
        expect(keysInQuery(raw), raw).toEqual(named.length ? named : null);
      }),
      { numRuns: 20_000 },
    );
    expect(keysInQuery("platform=x&query=%E9%9C%B2%E8%90%A5&count=10")).toBeNull();
    expect(keysInQuery("?key=sdgw_x")).toEqual(["sdgw_x"]);
    expect(keysInQuery("a=1&ACCESS_TOKEN=t&%61pi_key=k")).toEqual(["t", "k"]);
  });

  it("burns a key in the URL of any route, under any of its names, before any other refusal (D25, D50)", async () => {
    h = harness();
    const gw = h.server.gateway;
    const paths = [
      ["POST", "/mcp"],
      ["GET", "/no/such/route"],
      ["GET", "/v1/results/%ZZ"],
      ["GET", "/v1/schedules/%FF%FE"],
      ["POST", "/v1/tools/no_such_tool"],
      ["POST", "/v1/detail"],
      ["GET", "/openapi.json"],
    ] as const;
    // Every route kind, and every name (7 paths, 5 names: each name at least once).
    for (const [i, [method, path]] of paths.entries()) {
      const name = KEY_QUERY_NAMES[i % KEY_QUERY_NAMES.length]!;
      const victim = gw.accounts.createKey({ accountId: h.accountId }).secret;
      const res = await h.server.app.inject({
        method,
        url: `${path}?${name.toUpperCase()}=${victim}`,
        headers: { "content-type": "application/json", "x-api-key": h.key },
        payload: method === "POST" ? "x".repeat(gw.config.bodyLimit + 10) : undefined,
      });
      expect([res.statusCode, JSON.parse(res.body).reason], `${method} ${path}?${name}`).toEqual([401, "key_in_query"]);
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      const later = await h.call("getAccount", "GET", "/v1/account", { key: victim });
      expect(later.json.reason, `${name}: the key is burned`).toBe("key_in_query");
    }
    // The suite's own key, sent in a header beside them, was never burned.
    expect((await h.call("getAccount", "GET", "/v1/account")).status).toBe(200);
  });

  it("answers revoked, expired, suspended keys and suspended accounts by reason", async () => {
    h = harness();
    const gw = h.server.gateway;
    const make = () => gw.accounts.createKey({ accountId: h.accountId });
    const revoked = make();
    gw.accounts.revokeKey(revoked.id);
    expect((await h.call("search", "GET", search, { key: revoked.secret })).json.reason).toBe("revoked");
    const expired = make();
    gw.accounts.setKeyExpiry(expired.id, "2020-01-01T00:00:00Z");
    expect((await h.call("search", "GET", search, { key: expired.secret })).json.reason).toBe("expired");
    const paused = make();
    gw.accounts.setKeyStatus(paused.id, "suspended");
    const p = await h.call("getAccount", "GET", "/v1/account", { key: paused.secret });
    expect(p.json).toMatchObject({ reason: "suspended", message: expect.stringMatching(/paused by support/) });
    gw.accounts.setAccountStatus(h.accountId, "suspended");
    const s = await h.call("search", "GET", search);
    expect(s.json).toMatchObject({ reason: "suspended", message: expect.stringMatching(/account/) });
  });

  it("follows every change of a key or an account already used (cached): revoke, pause, expiry, permission, exposure, suspension, grant", async () => {
    h = harness();
    const gw = h.server.gateway;
    const used = async () => {
      const k = gw.accounts.createKey({ accountId: h.accountId });
      expect((await h.call("search", "GET", search, { key: k.secret })).status).toBe(200);
      return k;
    };
    const revoked = await used();
    gw.accounts.revokeKey(revoked.id);
    expect((await h.call("search", "GET", search, { key: revoked.secret })).json.reason).toBe("revoked");
    const paused = await used();
    gw.accounts.setKeyStatus(paused.id, "suspended");
    expect((await h.call("search", "GET", search, { key: paused.secret })).json.reason).toBe("suspended");
    gw.accounts.setKeyStatus(paused.id, "active");
    expect((await h.call("search", "GET", search, { key: paused.secret })).status).toBe(200);
    const expired = await used();
    gw.accounts.setKeyExpiry(expired.id, "2020-01-01T00:00:00Z");
    expect((await h.call("search", "GET", search, { key: expired.secret })).json.reason).toBe("expired");
    const stripped = await used();
    gw.accounts.setKeyPermissions(stripped.id, []);
    expect((await h.call("search", "GET", search, { key: stripped.secret })).status).toBe(403);
    const exposed = await used();
    expect((await h.call("getAccount", "GET", `/v1/account?key=${exposed.secret}`)).json.reason).toBe("key_in_query");
    expect((await h.call("search", "GET", search, { key: exposed.secret })).json.reason).toBe("key_in_query");
    const limited = await used();
    gw.accounts.setKeyDailyLimit(limited.id, 1);
    expect((await h.call("search", "GET", search, { key: limited.secret })).json).toMatchObject({
      code: "daily_limit_reached",
      reason: "key",
    });
    const before = (await h.call("getAccount", "GET", "/v1/account")).json.billing.balance_credits as number;
    gw.accounts.grant(h.accountId, 7);
    expect((await h.call("getAccount", "GET", "/v1/account")).json.billing.balance_credits).toBe(before + 7);
    gw.accounts.setAccountStatus(h.accountId, "suspended");
    expect((await h.call("search", "GET", search)).json).toMatchObject({
      reason: "suspended",
      message: expect.stringMatching(/account/),
    });
    gw.accounts.setAccountStatus(h.accountId, "active");
    gw.accounts.setAccountDailyLimit(h.accountId, 1);
    expect((await h.call("search", "GET", search)).json).toMatchObject({
      code: "daily_limit_reached",
      reason: "account",
    });
  });

  it("refuses data calls of a key without read_data (403, fix.allowed [read_data]) but lets it read its account", async () => {
    h = harness();
    const gw = h.server.gateway;
    const k = gw.accounts.createKey({ accountId: h.accountId, permissions: [] });
    const a = await h.call("search", "GET", search, { key: k.secret });
    expect(a.status).toBe(403);
    expect(a.json.fix.allowed).toEqual(["read_data"]);
    expect((await h.call("getAccount", "GET", "/v1/account", { key: k.secret })).status).toBe(200);
    expect((await h.call("listSchedules", "GET", "/v1/schedules", { key: k.secret })).status).toBe(200);
    gw.accounts.setKeyPermissions(k.id, ["read_data"]);
    expect((await h.call("search", "GET", search, { key: k.secret })).status).toBe(200);
  });

  it("stores keys as a SHA-256 hash and a short prefix only", async () => {
    h = harness();
    const row = h.server.gateway.store.get<{ hash: string; prefix: string }>("SELECT hash, prefix FROM keys");
    expect(row!.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.prefix).toBe(h.key.slice(0, 12));
    const all = JSON.stringify(h.server.gateway.store.all("SELECT * FROM keys"));
    expect(all).not.toContain(h.key);
  });
});
