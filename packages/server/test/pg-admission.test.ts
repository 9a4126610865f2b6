/**
 * D128: what one charged call costs the shared database, counted on the instance's pool: the key's read, one
 * statement that admits it (the pause, the claim and the hold), and one transaction that ends it — three committed
 * transactions, two of which write. A replay reads the answer after the admission found the key taken; a call the
 * account's daily limit concerns takes the full hold's transaction. Needs PostgreSQL (pg-helpers.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Postgres } from "../src/pg/database.ts";
import { createPgServer, type PgServer } from "../src/pg/server.ts";
import { pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";

let t: TestDatabase;
let server: PgServer;
let base: string;
/** What the pool was asked since the last `take()`: a statement's first words, or `tx` for a transaction. */
const seen: string[] = [];
const take = () => seen.splice(0);

beforeAll(async () => {
  t = await testDatabase("admission", 1);
  server = await createPgServer({
    databaseUrl: pgUrl(t.name),
    log: () => undefined,
    scheduleTickMs: 0,
    runLeaseMs: 600_000, // no heartbeat during a test
  });
  base = await server.listen({ port: 0 });
  const db: Postgres = server.gateway.db;
  const query = db.query.bind(db);
  const tx = db.tx.bind(db);
  db.query = ((text: string, params?: readonly unknown[]) => {
    seen.push(text.trim().split(/\s+/).slice(0, 2).join(" "));
    return query(text, params);
  }) as Postgres["query"];
  db.tx = ((fn: Parameters<Postgres["tx"]>[0]) => {
    seen.push("tx");
    return tx(fn);
  }) as Postgres["tx"];
});

afterAll(async () => {
  await server?.close({ drainMs: 100 });
  await t?.drop();
});

async function account(o: { dailyLimit?: number } = {}) {
  const { accounts } = server.gateway;
  const { account } = await accounts.createAccount({ name: "admission", plan: "paid", ...o });
  await accounts.grant(account.id, 100);
  const { secret } = await accounts.createKey({ accountId: account.id, name: "k" });
  return secret;
}

const search = (key: string, idem: string) =>
  fetch(`${base}/v1/search?platform=x&count=2&query=${idem}`, {
    headers: { "X-API-Key": key, "Idempotency-Key": idem },
  });

describe("a charged call on PostgreSQL (D128)", () => {
  it("costs the key's read, one admitting statement and one ending transaction", async () => {
    const key = await account();
    take();
    const r = await search(key, "one");
    expect(r.status).toBe(200);
    expect(take()).toEqual(["SELECT k.id", "WITH p", "tx"]);
  });

  it("a replay: the key's read, the admission finding the key taken, and the answer read; nothing more written", async () => {
    const key = await account();
    await search(key, "again");
    take();
    const r = await search(key, "again");
    expect([r.status, r.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(take()).toEqual(["SELECT k.id", "WITH p", "SELECT fingerprint,"]);
  });

  it("an account with a daily limit: the usual hold does not apply, the full hold's transaction decides", async () => {
    const key = await account({ dailyLimit: 50 });
    take();
    expect((await search(key, "limited")).status).toBe(200);
    expect(take()).toEqual(["SELECT k.id", "WITH p", "tx", "tx"]);
  });
});
