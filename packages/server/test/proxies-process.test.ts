/**
 * D111 as users run it: `pnpm start` (main.ts) in its own process with `SDGW_TRUST_PROXY`, called over real
 * sockets from 127.0.0.1 playing the proxy. Trusted (`loopback`), requests forwarded for different clients get
 * separate per-address limits and the proxy's own connections are not capped; off (unset), or from a peer the list
 * does not name, X-Forwarded-For is ignored: every request counts against 127.0.0.1, spoofed header or not, and the
 * cap holds. A console sign-in forwarded with `X-Forwarded-Proto: https` gets a `Secure` cookie only when trusted.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, stopAll, type Started } from "./processes.ts";

const PER_MINUTE = 3;
const CONNECTIONS = 2;
/** Servers by name: trusted loopback, off, a list that names another network, one proxy in front. */
const servers: Record<"loopback" | "off" | "other" | "hop", Started> = {} as never;

beforeAll(async () => {
  const env = { SDGW_ADDRESS_PER_MINUTE: String(PER_MINUTE), SDGW_CONNECTIONS_PER_ADDRESS: String(CONNECTIONS) };
  const settings = { loopback: "loopback", off: "", other: "10.0.0.0/8, fd00::/8", hop: "1" } as const;
  const started = await Promise.all(
    Object.entries(settings).map(([, trust]) => startServer(":memory:", { ...env, SDGW_TRUST_PROXY: trust })),
  );
  for (const [i, name] of Object.keys(settings).entries()) servers[name as keyof typeof servers] = started[i]!;
}, 60_000);

afterAll(() => stopAll());

/** The statuses of `n` keyless calls, each forwarded for `clientOf(i)` (no header when it gives null). */
async function keyless(s: Started, n: number, clientOf: (i: number) => string | null): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const client = clientOf(i);
    const res = await fetch(`${s.url}/v1/capabilities`, {
      headers: client === null ? {} : { "x-forwarded-for": client },
    });
    await res.arrayBuffer();
    out.push(res.status);
  }
  return out;
}

/**
 * Opens `n` connections at once, then sends a request on each: the status line each one got (the cap answers its
 * 429 as soon as the connection opens).
 */
async function atOnce(s: Started, n: number): Promise<string[]> {
  const { hostname, port } = new URL(s.url);
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(Number(port), hostname, () => resolve(socket));
          socket.once("error", reject);
        }),
    ),
  );
  const lines = await Promise.all(
    sockets.map(
      (socket, i) =>
        new Promise<string>((resolve) => {
          let text = "";
          socket.setEncoding("latin1");
          socket.on("error", () => undefined); // the refused one is closed under our request
          socket.on("data", (d: string) => {
            text += d;
            if (text.includes("\r\n")) resolve(text.slice(0, text.indexOf("\r\n")));
          });
          socket.on("close", () => resolve(text.split("\r\n")[0] || "closed without an answer"));
          socket.write(
            `GET /v1/account HTTP/1.1\r\nHost: ${hostname}\r\nX-Forwarded-For: 198.51.100.${100 + i}\r\n\r\n`,
          );
        }),
    ),
  );
  for (const s of sockets) s.destroy();
  return lines;
}

const DEMO_PASSWORD = /sign in as (\S+) with the password[^\n]*\n\n {2}(\S+)/;

async function signIn(s: Started, headers: Record<string, string>): Promise<string> {
  const [, email, password] = DEMO_PASSWORD.exec(s.banner)!;
  const res = await fetch(`${s.url}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ email, password }),
  });
  expect(res.status).toBe(200);
  return res.headers.get("set-cookie") ?? "";
}

describe("SDGW_TRUST_PROXY in a real process (D111)", () => {
  // First, before fetch keeps connections of its own open to these servers.
  it("the cap per address spares a listed proxy and, with a hop count, every peer; off and unlisted, it holds", async () => {
    const over = CONNECTIONS + 2;
    for (const name of ["loopback", "hop"] as const)
      expect(await atOnce(servers[name], over), name).toEqual(Array(over).fill("HTTP/1.1 401 Unauthorized"));
    for (const name of ["off", "other"] as const) {
      const lines = await atOnce(servers[name], over);
      expect(
        lines.filter((l) => l === "HTTP/1.1 429 Too Many Requests"),
        name,
      ).toHaveLength(over - CONNECTIONS);
      expect(
        lines.filter((l) => l === "HTTP/1.1 401 Unauthorized"),
        name,
      ).toHaveLength(CONNECTIONS);
    }
  });

  it("trusted: each forwarded client gets its own per-address limit", async () => {
    const s = servers.loopback;
    expect(await keyless(s, PER_MINUTE + 1, () => "198.51.100.1")).toEqual([200, 200, 200, 429]);
    expect(await keyless(s, PER_MINUTE + 1, () => "198.51.100.2")).toEqual([200, 200, 200, 429]);
    expect(await keyless(s, 1, () => "2001:db8::7")).toEqual([200]);
  });

  it("off: different X-Forwarded-For values share the one limit of 127.0.0.1", async () => {
    expect(await keyless(servers.off, PER_MINUTE + 1, (i) => `198.51.100.${i + 1}`)).toEqual([200, 200, 200, 429]);
  });

  it("from a peer the list does not name, the headers are spoofed and ignored", async () => {
    expect(await keyless(servers.other, PER_MINUTE + 1, (i) => `198.51.100.${i + 1}`)).toEqual([200, 200, 200, 429]);
    expect(await keyless(servers.other, 1, () => null)).toEqual([429]);
  });

  it("a hop count: the nearest entry of X-Forwarded-For is the client, whatever the client wrote before it", async () => {
    const s = servers.hop;
    expect(await keyless(s, PER_MINUTE + 1, (i) => `spoofed-${i}, 198.51.100.9`)).toEqual([200, 200, 200, 429]);
    expect(await keyless(s, 1, () => "198.51.100.10")).toEqual([200]);
  });

  it("a sign-in forwarded with X-Forwarded-Proto: https gets a Secure cookie, from a trusted proxy only", async () => {
    expect(await signIn(servers.loopback, { "x-forwarded-proto": "https" })).toMatch(/; Secure$/);
    expect(await signIn(servers.loopback, {})).not.toMatch(/Secure/);
    expect(await signIn(servers.other, { "x-forwarded-proto": "https" })).not.toMatch(/Secure/);
    expect(await signIn(servers.off, { "x-forwarded-proto": "https" })).not.toMatch(/Secure/);
  });
});
