/**
 * D128: what one charged call costs the shared database, counted on the instance's pool: the key's read, one
 * statement that admits it (the pause, the claim and the hold), and one transaction that ends it — three committed
 * transactions, two of which write. A replay reads the answer after the admission found the key taken; a call the
 * account's daily limit concerns takes the full hold's transaction. Needs PostgreSQL (pg-helpers.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../src/config.ts";
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
    limits: { ...DEFAULT_LIMITS, workspaceConcurrency: 100 }, // the burst below runs at once
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
  it("costs the key's read, one admitting statement and one ending statement (D129), no transaction", async () => {
    const key = await account();
    take();
    const r = await search(key, "one");
    expect(r.status).toBe(200);
    expect(take()).toEqual(["SELECT k.id", "WITH p", "WITH h"]);
    const body = (await r.json()) as { billing: { cost: number; balance: number } };
    const me = await fetch(`${base}/v1/account`, { headers: { "X-API-Key": key } });
    const balance = ((await me.json()) as { billing: { balance_credits: number } }).billing.balance_credits;
    expect(body.billing.cost).toBeGreaterThan(0);
    expect(body.billing.balance, "the answer shows the balance the charge left").toBe(100 - body.billing.cost);
    expect(balance).toBe(body.billing.balance);
  });

  it("a replay: the key's read, the admission finding the key taken, and the answer read; nothing more written", async () => {
    const key = await account();
    const first = await (await search(key, "again")).text();
    take();
    const r = await search(key, "again");
    expect([r.status, r.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(take()).toEqual(["SELECT k.id", "WITH p", "SELECT fingerprint,"]);
    // The kept answer is the one sent, the balance PostgreSQL wrote put in at the place the answer left for it.
    expect(await r.text()).toBe(first);
    expect(first).not.toContain(String(Number.MAX_SAFE_INTEGER));
  });

  it("calls at once on one account: every answer's balance is one the ledger passed through, the last one the balance", async () => {
    const key = await account();
    const answers = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const r = await search(key, `burst-${i}`);
        expect(r.status).toBe(200);
        return ((await r.json()) as { billing: { cost: number; balance: number } }).billing;
      }),
    );
    const spent = answers.reduce((s, b) => s + b.cost, 0);
    const me = await fetch(`${base}/v1/account`, { headers: { "X-API-Key": key } });
    const balance = ((await me.json()) as { billing: { balance_credits: number } }).billing.balance_credits;
    expect(balance).toBe(100 - spent);
    // Each charge moved the balance once: ordered by balance, each answer's is the one before less its own cost.
    const ordered = [...answers].sort((a, b) => b.balance - a.balance);
    let before = 100;
    for (const b of ordered) {
      expect(b.balance).toBe(before - b.cost);
      before = b.balance;
    }
    expect(before).toBe(balance);
  });

  it("an account with a daily limit: the usual hold does not apply, the full hold's transaction decides", async () => {
    const key = await account({ dailyLimit: 50 });
    take();
    expect((await search(key, "limited")).status).toBe(200);
    expect(take()).toEqual(["SELECT k.id", "WITH p", "tx", "WITH h"]);
  });
});
