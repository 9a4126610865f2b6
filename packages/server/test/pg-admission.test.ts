/**
 * D128, D186: what one charged call costs the shared database, counted on the instance's pool: one statement that
 * admits it (the key's row checked, the pause, the claim and the hold), and one that ends it — two committed
 * transactions (the key is read on its own only the first time this process sees it). A replay reads the answer
 * after the admission found the key taken; a call the account's daily limit concerns takes the full hold's
 * transaction. A key changed by another instance (another pool here) since this process read it answers exactly
 * as a process that reads it now: nothing claimed, held or replayed. Needs PostgreSQL (pg-helpers.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../src/config.ts";
import type { Postgres } from "../src/storage/postgres/database.ts";
import { PgAccounts } from "../src/storage/postgres/accounts.ts";
import { PgCalls } from "../src/storage/postgres/calls.ts";
import { createPgServer, type PgServer } from "../src/storage/postgres/server.ts";
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

const search = (key: string, idem: string, extra = "") =>
  fetch(`${base}/v1/search?platform=x&count=2&query=${idem}${extra}`, {
    headers: { "X-API-Key": key, "Idempotency-Key": idem },
  });

describe("a charged call on PostgreSQL (D128)", () => {
  it("costs one admitting statement, which checks the key, and one ending statement (D129, D186), no transaction", async () => {
    const key = await account();
    take();
    // The first call of a key this process never read reads it; then each call is two statements.
    const first = await search(key, "first");
    expect(first.status).toBe(200);
    expect(take()).toEqual(["SELECT k.id", "WITH p", "WITH h"]);
    const before = ((await first.json()) as { billing: { balance: number } }).billing.balance;
    const r = await search(key, "one");
    expect(r.status).toBe(200);
    expect(take()).toEqual(["WITH p", "WITH h"]);
    const body = (await r.json()) as { billing: { cost: number; balance: number } };
    const me = await fetch(`${base}/v1/account`, { headers: { "X-API-Key": key } });
    const balance = ((await me.json()) as { billing: { balance_credits: number } }).billing.balance_credits;
    expect(body.billing.cost).toBeGreaterThan(0);
    expect(body.billing.balance, "the answer shows the balance the charge left").toBe(before - body.billing.cost);
    expect(balance).toBe(body.billing.balance);
  });

  it("a replay: the key's read, the admission finding the key taken, and the answer read; nothing more written", async () => {
    const key = await account();
    const first = await (await search(key, "again")).text();
    take();
    const r = await search(key, "again");
    expect([r.status, r.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(take()).toEqual(["WITH p", "SELECT fingerprint,"]);
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
    expect((await search(key, "limited-again")).status).toBe(200);
    expect(take()).toEqual(["WITH p", "tx", "WITH h"]);
  });
});

describe("a key changed on another instance since this process read it (D186)", () => {
  /** A funded key this server has read (one call answered), and what changes it on another pool. */
  async function knownKey() {
    const { accounts } = server.gateway;
    const { account } = await accounts.createAccount({ name: "changed", plan: "paid" });
    await accounts.grant(account.id, 100);
    const created = await accounts.createKey({ accountId: account.id, name: "k" });
    expect((await search(created.secret, `${created.id}-known`)).status).toBe(200);
    const other = new PgAccounts({ db: t.instances[0]!, now: Date.now });
    return { accountId: account.id, keyId: created.id, secret: created.secret, other };
  }

  const audit = (accountId: string) =>
    new PgCalls({
      db: t.instances[0]!,
      now: Date.now,
      idempotencyTtlMs: 86_400_000,
      freeCalls: 100,
      owner: "own_test_audit",
    }).audit(accountId);

  /** An answer without what differs between two requests (their ids and dates). */
  async function refusal(r: Response) {
    const text = (await r.text()).replace(/req_[A-Za-z0-9_-]+/g, "req").replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "T");
    return { status: r.status, body: JSON.parse(text) as Record<string, unknown> };
  }

  const changes = [
    ["revoked", (o: PgAccounts, k: string) => o.revokeKey(k).then(() => undefined), 401, "revoked"],
    ["suspended", (o: PgAccounts, k: string) => o.setKeyStatus(k, "suspended"), 401, "suspended"],
    ["expired", (o: PgAccounts, k: string) => o.setKeyExpiry(k, "2020-01-01T00:00:00Z"), 401, "expired"],
    ["without read_data", (o: PgAccounts, k: string) => o.setKeyPermissions(k, []), 403, null],
  ] as const;

  for (const [what, change, status, reason] of changes)
    it(`${what}: the next charged call answers as a fresh read of the key does, nothing claimed or held`, async () => {
      const { accountId, keyId, secret, other } = await knownKey();
      await change(other, keyId);
      take();
      const first = await refusal(await search(secret, `${keyId}-after`));
      // The admission refused it (writing nothing), then the key was read as authentication reads it.
      expect(take()).toEqual(["WITH p", "SELECT k.id"]);
      expect(first.status).toBe(status);
      if (reason) expect(first.body["reason"]).toBe(reason);
      // The same request again is refused by authentication's own read (this process knows the key's state now).
      const again = await refusal(await search(secret, `${keyId}-after`));
      expect(take()).toEqual(["SELECT k.id"]);
      expect(first).toEqual(again);
      const rows = await t.instances[0]!.query("SELECT 1 FROM idempotency WHERE idem_key = $1", [`${keyId}-after`]);
      expect(rows).toHaveLength(0);
      expect(await audit(accountId)).toMatchObject({ held: 0, holdsHeld: 0, charges: 1 });
    });

  it("its account suspended: 401, reason suspended", async () => {
    const { accountId, keyId, secret, other } = await knownKey();
    await other.setAccountStatus(accountId, "suspended");
    const r = await refusal(await search(secret, `${keyId}-after`));
    expect([r.status, r.body["reason"]]).toEqual([401, "suspended"]);
  });

  it("exposed: 401 key_exposed, and no replay of an answer it had", async () => {
    const { keyId, secret, other } = await knownKey();
    await other.markExposed(secret);
    const r = await refusal(await search(secret, `${keyId}-known`)); // answered before: not replayed now
    expect(r.status).toBe(401);
    expect(r.body["reason"]).not.toBe(undefined);
  });

  it("revoked then a replay of its answered Idempotency-Key: refused, not replayed", async () => {
    const { keyId, secret, other } = await knownKey();
    await other.revokeKey(keyId);
    const r = await search(secret, `${keyId}-known`);
    expect([r.status, r.headers.get("idempotent-replayed")]).toEqual([401, null]);
  });

  it("revoked, and a call over its max_cost_credits (which skips the admitting statement): 401, not the cap's refusal", async () => {
    const { keyId, secret, other } = await knownKey();
    await other.revokeKey(keyId);
    const r = await refusal(await search(secret, `${keyId}-cap`, "&max_cost_credits=0"));
    expect([r.status, r.body["reason"]]).toEqual([401, "revoked"]);
  });

  it("suspended and made active again before the call: the call is admitted", async () => {
    const { keyId, secret, other } = await knownKey();
    await other.setKeyStatus(keyId, "suspended");
    await other.setKeyStatus(keyId, "active");
    take();
    expect((await search(secret, `${keyId}-back`)).status).toBe(200);
    expect(take()).toEqual(["WITH p", "WITH h"]);
  });

  it("the held credits and the ledger are untouched by refused calls", async () => {
    const { accountId, keyId, secret, other } = await knownKey();
    const before = await audit(accountId);
    await other.revokeKey(keyId);
    await Promise.all(Array.from({ length: 4 }, (_, i) => search(secret, `${keyId}-r${i}`)));
    expect(await audit(accountId)).toEqual(before);
  });
});
