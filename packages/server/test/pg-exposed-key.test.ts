/**
 * D25 with D108: a key sent in a URL is refused with 401 `key_in_query` and marked exposed, and the 401 is sent only
 * once the mark is committed. Two instances on one PostgreSQL database, over real sockets: a key sent in a URL to
 * instance A is, as soon as A's 401 arrives, refused by instance B in a header with the reason the embedded server
 * gives an exposed key (`key_in_query`). A mark that cannot be written (the database does not answer) is logged and
 * the 401 still sent. Needs PostgreSQL (see pg-helpers.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DatabaseUnavailable } from "../src/storage/postgres/database.ts";
import { createPgServer, type PgServer } from "../src/storage/postgres/server.ts";
import { createServer } from "../src/storage/sqlite/server.ts";
import { GENEROUS } from "./helpers.ts";
import { pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";

let t: TestDatabase;
const servers: PgServer[] = [];
const urls: string[] = [];
const logged: string[] = [];
let accountId = "";

beforeAll(async () => {
  t = await testDatabase("exposed", 1);
  const options = {
    databaseUrl: pgUrl(t.name),
    limits: GENEROUS,
    scheduleTickMs: 0,
    log: (message: string, e?: unknown) => logged.push(`${message}: ${String(e)}`),
  };
  for (let i = 0; i < 2; i++) {
    const s = await createPgServer(options);
    servers.push(s);
    urls.push(await s.listen({ host: "127.0.0.1", port: 0 }));
  }
  const { account } = await servers[0]!.gateway.accounts.createAccount({ name: "Leaky", plan: "paid" });
  await servers[0]!.gateway.accounts.grant(account.id, 100);
  accountId = account.id;
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close({ drainMs: 200 })));
  await t?.drop();
});

const reasonOf = async (res: Response) => [res.status, ((await res.json()) as { reason?: string }).reason];

describe("a key sent in a URL is refused on every instance before its 401 is sent (D25, D108)", () => {
  it("the embedded server's reason for an exposed key is key_in_query", async () => {
    const embedded = createServer({ dbPath: ":memory:", limits: GENEROUS, log: () => undefined });
    const { account } = embedded.gateway.accounts.createAccount({ name: "Leaky", plan: "paid" });
    const { secret } = embedded.gateway.accounts.createKey({ accountId: account.id });
    const inUrl = await embedded.app.inject({ method: "GET", url: `/v1/account?key=${secret}` });
    const inHeader = await embedded.app.inject({ method: "GET", url: "/v1/account", headers: { "x-api-key": secret } });
    expect([inUrl.statusCode, JSON.parse(inUrl.body).reason]).toEqual([401, "key_in_query"]);
    expect([inHeader.statusCode, JSON.parse(inHeader.body).reason]).toEqual([401, "key_in_query"]);
    await embedded.close();
  });

  it("sent in a URL to A, then at once in a header to B: refused 401 key_in_query, every time", async () => {
    const [a, b] = urls as [string, string];
    for (let i = 0; i < 25; i++) {
      const { secret } = await servers[0]!.gateway.accounts.createKey({ accountId, name: `leak ${i}` });
      // The key works on B before it leaks.
      expect((await fetch(`${b}/v1/account`, { headers: { "x-api-key": secret } })).status).toBe(200);
      const route = i % 2 === 0 ? "/v1/account" : "/v1/results/h%ZZ"; // a path the router refuses, too
      const leaked = await fetch(`${a}${route}?key=${encodeURIComponent(secret)}`);
      expect(await reasonOf(leaked), `try ${i}`).toEqual([401, "key_in_query"]);
      const onB = await fetch(`${b}/v1/account`, { headers: { "x-api-key": secret } });
      expect(await reasonOf(onB), `try ${i}: B still took the key after A's 401`).toEqual([401, "key_in_query"]);
    }
    expect(logged).toEqual([]);
  });

  it("a mark the database does not take is logged, and the 401 is still sent", async () => {
    const accounts = servers[0]!.gateway.accounts;
    const mark = accounts.markExposed;
    accounts.markExposed = () => Promise.reject(new DatabaseUnavailable("PostgreSQL does not answer: test"));
    try {
      const res = await fetch(`${urls[0]}/v1/account?key=sdgw_notmarked`);
      expect(await reasonOf(res)).toEqual([401, "key_in_query"]);
      expect(logged.splice(0)).toEqual([
        "could not mark a key sent in a URL as exposed: DatabaseUnavailable: PostgreSQL does not answer: test",
      ]);
    } finally {
      accounts.markExposed = mark;
    }
  });
});
