/**
 * D111: `SDGW_TRUST_PROXY` / `trustProxy`, in process. Its parsing (a hop count, or the proxies' addresses, CIDR
 * ranges and names; anything else stops the start naming the variable), which peers it trusts, and what follows from
 * it over `app.inject` (whose peer address is chosen per request): the per-address rate and the sign-in throttling
 * count the forwarded client, the console cookie is `Secure` behind an https proxy, and an untrusted peer's
 * X-Forwarded-* headers are ignored. The same over real sockets, with the connection cap: proxies-process.test.ts.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, configFromEnv, defaultConfig } from "../src/config.ts";
import { parseTrustProxy, proxyTrust } from "../src/http/proxies.ts";
import { createServer } from "../src/storage/sqlite/server.ts";
import { hashPasswordSync } from "../src/storage/sessions.ts";
import { GENEROUS } from "./helpers.ts";

describe("parsing SDGW_TRUST_PROXY", () => {
  it.each([
    ["1", 1],
    [" 2 ", 2],
    ["10.0.0.0/8", ["10.0.0.0/8"]],
    ["10.1.2.3, 2001:db8::/32 ,loopback", ["10.1.2.3", "2001:db8::/32", "loopback"]],
    ["LinkLocal,uniquelocal", ["LinkLocal", "uniquelocal"]],
    ["::1", ["::1"]],
    ["0.0.0.0/0", ["0.0.0.0/0"]],
  ])("%j → %j", (raw, parsed) => {
    expect(parseTrustProxy(raw)).toEqual(parsed);
    expect(configFromEnv({ SDGW_TRUST_PROXY: raw }).trustProxy).toEqual(parsed);
  });

  it.each([
    "0",
    "-1",
    "1.5",
    "true",
    "yes",
    "10.0.0.0/33",
    "::/129",
    "10.0.0",
    "300.1.1.1",
    "10.0.0.0/8,",
    ",10.0.0.1",
    "10.0.0.1,,10.0.0.2",
    "fe80::1%eth0",
    "10.0.0.0/8 192.168.0.0/16",
    "localhost",
    "99999999999999999999",
  ])("%j stops the start, naming the variable", (raw) => {
    let error: unknown;
    try {
      configFromEnv({ SDGW_TRUST_PROXY: raw });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      `SDGW_TRUST_PROXY must be the number of proxies in front (a whole number from 1) or a ` +
        `comma-separated list of the proxies' addresses or CIDR ranges (IPv4 or IPv6; loopback, linklocal, ` +
        `uniquelocal) (got ${JSON.stringify(raw)})`,
    ]);
  });

  it("unset or empty: off; in code, a bad value throws naming trustProxy", () => {
    expect(configFromEnv({}).trustProxy).toBeUndefined();
    expect(configFromEnv({ SDGW_TRUST_PROXY: "" }).trustProxy).toBeUndefined();
    expect(defaultConfig().trustProxy).toBeNull();
    expect(defaultConfig({ trustProxy: ["10.0.0.0/8"] }).trustProxy).toEqual(["10.0.0.0/8"]);
    expect(() => defaultConfig({ trustProxy: 0 })).toThrow(/^trustProxy must be/);
    expect(() => defaultConfig({ trustProxy: [] })).toThrow(/^trustProxy must be/);
    expect(() => defaultConfig({ trustProxy: ["10.0.0.0/8", "nope"] })).toThrow(/got "nope"/);
  });
});

describe("which peers are trusted", () => {
  it("a list: its addresses and ranges, IPv4 also as IPv4-mapped IPv6, the named ranges", () => {
    const t = proxyTrust(["10.0.0.0/8", "2001:db8::/32", "192.0.2.7", "loopback"])!;
    for (const a of ["10.9.8.7", "::ffff:10.1.1.1", "2001:db8::1", "192.0.2.7", "127.0.0.1", "::1", "::ffff:127.0.0.1"])
      expect([a, t.trusts(a, 0), t.exempts(a)]).toEqual([a, true, true]);
    for (const a of ["11.0.0.1", "192.0.2.8", "2001:db9::1", "fd00::1", "garbage", "", undefined])
      expect([a, t.exempts(a)]).toEqual([a, false]);
    const named = proxyTrust(["linklocal", "uniquelocal"])!;
    for (const a of ["169.254.1.1", "fe80::1", "10.0.0.1", "172.31.255.255", "192.168.1.1", "fd12::1"])
      expect([a, named.exempts(a)]).toEqual([a, true]);
    for (const a of ["172.32.0.1", "127.0.0.1", "8.8.8.8"]) expect([a, named.exempts(a)]).toEqual([a, false]);
  });

  it("a hop count: that many hops from the server whatever their address; every peer is exempt from the cap", () => {
    const t = proxyTrust(2)!;
    expect([t.trusts("8.8.8.8", 0), t.trusts("1.2.3.4", 1), t.trusts("1.2.3.4", 2)]).toEqual([true, true, false]);
    expect(t.exempts("203.0.113.9")).toBe(true);
    expect(proxyTrust(null)).toBeNull();
  });
});

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery staple";

/** A server with a console user; `peer` is the socket address `inject` claims. */
function serverWith(trustProxy: ReturnType<typeof parseTrustProxy>, limits = {}, sessions = {}) {
  const server = createServer({
    dbPath: ":memory:",
    log: () => undefined,
    trustProxy,
    limits: { ...GENEROUS, ...limits },
    sessions,
  });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "Proxied", plan: "paid" });
  gw.sessions.createUser({ accountId: account.id, email: EMAIL, passwordHash: hashPasswordSync(PASSWORD) });
  const get = (peer: string, headers: Record<string, string> = {}) =>
    server.app.inject({ method: "GET", url: "/v1/capabilities", remoteAddress: peer, headers });
  const signIn = (peer: string, headers: Record<string, string>, email = EMAIL, password = PASSWORD) =>
    server.app.inject({
      method: "POST",
      url: "/console/session",
      remoteAddress: peer,
      headers: { "content-type": "application/json", ...headers },
      payload: JSON.stringify({ email, password }),
    });
  return { server, get, signIn };
}

describe("behind trusted proxies (D111)", () => {
  it("the per-address rate counts each forwarded client; an untrusted peer's header is ignored", async () => {
    const { server, get } = serverWith(["10.0.0.0/8"], { addressPerMinute: 2 });
    const proxy = "10.0.0.5";
    const statuses = async (peer: string, xff?: string) => {
      const out: number[] = [];
      for (let i = 0; i < 3; i++) out.push((await get(peer, xff ? { "x-forwarded-for": xff } : {})).statusCode);
      return out;
    };
    expect(await statuses(proxy, "198.51.100.1")).toEqual([200, 200, 429]);
    expect(await statuses(proxy, "198.51.100.2")).toEqual([200, 200, 429]);
    // A client that spoofs the header, from an address that is not a proxy: counted as itself.
    expect(await statuses("203.0.113.50", "198.51.100.3")).toEqual([200, 200, 429]);
    expect((await get("203.0.113.50", { "x-forwarded-for": "198.51.100.4" })).statusCode).toBe(429);
    // The proxy's own address was never counted: each of its clients had two.
    expect((await get(proxy, { "x-forwarded-for": "198.51.100.5" })).statusCode).toBe(200);
    await server.close();
  });

  it("a hop count takes the address that many hops back: a client's own entries further left do not count", async () => {
    const { server, get } = serverWith(1, { addressPerMinute: 1 });
    expect((await get("10.0.0.5", { "x-forwarded-for": "spoofed-1, 198.51.100.7" })).statusCode).toBe(200);
    expect((await get("10.0.0.6", { "x-forwarded-for": "spoofed-2, 198.51.100.7" })).statusCode).toBe(429);
    expect((await get("10.0.0.5", { "x-forwarded-for": "198.51.100.8" })).statusCode).toBe(200);
    await server.close();
  });

  it("sign-in is throttled by the forwarded address", async () => {
    const { server, signIn } = serverWith(["loopback"], {}, { failuresPerAddress: 2 });
    const from = (ip: string, email: string) => signIn("127.0.0.1", { "x-forwarded-for": ip }, email, "wrong");
    expect((await from("198.51.100.1", "a@example.com")).statusCode).toBe(401);
    expect((await from("198.51.100.1", "b@example.com")).statusCode).toBe(401);
    const third = await from("198.51.100.1", "c@example.com");
    expect([third.statusCode, JSON.parse(third.body).reason]).toEqual([429, "address"]);
    expect((await from("198.51.100.2", "c@example.com")).statusCode).toBe(401);
    await server.close();
  });

  it("the session cookie is Secure when the trusted proxy says https, and only then", async () => {
    const trusted = serverWith(["loopback"]);
    const cookieOf = async (s: ReturnType<typeof serverWith>, peer: string, headers: Record<string, string>) =>
      String((await s.signIn(peer, headers)).headers["set-cookie"]);
    expect(await cookieOf(trusted, "127.0.0.1", { "x-forwarded-proto": "https" })).toMatch(/; Secure$/);
    expect(await cookieOf(trusted, "127.0.0.1", { "x-forwarded-proto": "http" })).not.toMatch(/Secure/);
    expect(await cookieOf(trusted, "127.0.0.1", {})).not.toMatch(/Secure/);
    expect(await cookieOf(trusted, "203.0.113.50", { "x-forwarded-proto": "https" })).not.toMatch(/Secure/);
    const off = serverWith(null);
    expect(await cookieOf(off, "127.0.0.1", { "x-forwarded-proto": "https" })).not.toMatch(/Secure/);
    await trusted.server.close();
    await off.server.close();
  });
});
