/**
 * D108: accounts, workspaces and keys on PostgreSQL (`PgAccounts`) in its own terms, shared by several instances:
 * concurrent revocations and lookups, concurrent key creation, grants, and a key's daily limit set while other
 * instances charge it. (What both engines do, the records' shapes and the differential test against the embedded
 * store, is the storage suite's: storage/accounts.test.ts.)
 *
 * Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; CI's `.ci/run` installs and starts it): without it this
 * file fails, it does not skip. It makes a database of its own and drops it at the end.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashKey } from "../src/ids.ts";
import { PgAccounts } from "../src/storage/postgres/accounts.ts";
import { PgCalls } from "../src/storage/postgres/calls.ts";
import { DatabaseUnavailable, Postgres } from "../src/storage/postgres/database.ts";
import { migrate } from "../src/storage/postgres/migrations.ts";
import type { RunContext } from "../src/runs/types.ts";

const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";
const DB = `sdgw_test_acc_${process.pid}_${Date.now()}`;
const URL_OF = (db: string) => `postgres://postgres@127.0.0.1:5432/${db}`;
/** Two seconds before a UTC midnight: a few steps of time cross it. */
const START = Date.parse("2026-11-25T23:59:58Z");

let admin: pg.Client;
/** Three instances on the test's database. */
let instances: Postgres[] = [];
let accounts: PgAccounts[] = [];
let clock = START;
const now = () => clock;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (e) {
    throw new Error(
      `PostgreSQL must answer on 127.0.0.1:5432 as user postgres without a password (CI's .ci/run starts it): ${String(e)}`,
    );
  }
  await admin.query(`CREATE DATABASE ${DB}`);
  instances = [0, 1, 2].map((i) => new Postgres(URL_OF(DB), { max: 8, applicationName: `sdgw-test-acc-${i}` }));
  await Promise.all(instances.map((db) => migrate(db)));
  accounts = instances.map((db) => new PgAccounts({ db, now }));
});

afterAll(async () => {
  await Promise.all(instances.map((db) => db.close()));
  await admin?.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin?.end();
});

// ---------------------------------------------------------------------------------------------------------------

describe("PgAccounts on the PostgreSQL store, in its own terms", () => {
  it("an expiry with an offset is kept as its instant in UTC (the embedded store keeps the text as given)", async () => {
    clock = Date.parse("2026-11-25T09:00:00.750Z");
    const { account } = await accounts[0]!.createAccount({ name: "Shapes" });
    const made = await accounts[1]!.createKey({ accountId: account.id, expiresAt: "2027-03-01T10:00:00+02:00" });
    // an instant: the same one Date.parse reads from the text given, in UTC
    expect((await accounts[2]!.keyBySecret(made.secret))!.expires_at).toBe("2027-03-01T08:00:00Z");
  });

  it("an expiry that is not a date and time is refused (the embedded store would keep it and never expire the key)", async () => {
    const { account } = await accounts[0]!.createAccount({ name: "Expiry" });
    await expect(accounts[0]!.createKey({ accountId: account.id, expiresAt: "next week" })).rejects.toThrow(RangeError);
    expect(await accounts[0]!.keys(account.id)).toEqual([]);
    const { id } = await accounts[0]!.createKey({ accountId: account.id, expiresAt: "2027-01-01" });
    expect((await accounts[1]!.key(id))!.expires_at).toBe("2027-01-01T00:00:00Z"); // as Date.parse reads it: UTC
    await expect(accounts[2]!.setKeyExpiry(id, "")).rejects.toThrow(/not a date and time/);
    await accounts[2]!.setKeyExpiry(id, null);
    expect((await accounts[1]!.key(id))!.expires_at).toBeNull();
  });
  it("a database that does not answer: every read and write raises DatabaseUnavailable (the HTTP layer's 503)", async () => {
    const db = new Postgres("postgres://postgres@127.0.0.1:1/none", { connectTimeoutMs: 500 });
    const gone = new PgAccounts({ db, now });
    try {
      await expect(gone.keyAndAccount(hashKey("sdgw_x"))).rejects.toBeInstanceOf(DatabaseUnavailable);
      await expect(gone.revokeKey("key_x")).rejects.toBeInstanceOf(DatabaseUnavailable);
      await expect(gone.createAccount({ name: "x" })).rejects.toBeInstanceOf(DatabaseUnavailable);
    } finally {
      await db.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe("PgAccounts across three instances (D108)", () => {
  it("one key revoked on three instances at once while they look it up: revoked once, never half-revoked, seen at once everywhere", async () => {
    clock = START;
    const { account } = await accounts[0]!.createAccount({ name: "Revoke" });
    const { id, secret } = await accounts[1]!.createKey({ accountId: account.id });
    const hash = hashKey(secret);
    const lookups = Array.from({ length: 60 }, (_, i) => accounts[i % 3]!.keyAndAccount(hash));
    const revokes = Array.from({ length: 9 }, (_, i) => accounts[i % 3]!.revokeKey(id));
    const [seen, revoked] = await Promise.all([Promise.all(lookups), Promise.all(revokes)]);
    expect(revoked.filter(Boolean)).toHaveLength(1);
    for (const s of seen) {
      expect(s!.account.id).toBe(account.id);
      expect(s!.key.status === "revoked").toBe(s!.key.revoked_at !== null);
    }
    for (const a of accounts) {
      expect((await a.keyAndAccount(hash))!.key).toMatchObject({ status: "revoked", revoked_at: isoOf(START) });
      expect(await a.revokeKey(id)).toBe(false);
    }
    // and suspending the account on one instance is what the next lookup on another reads: no instance remembers
    await accounts[2]!.setAccountStatus(account.id, "suspended");
    expect((await accounts[0]!.keyAndAccount(hash))!.account.status).toBe("suspended");
  });

  it(
    "30 keys made at once on one account across instances: 30 keys, each found by its secret " +
      "everywhere; one secret made twice at once → one key",
    async () => {
      const { account, workspace } = await accounts[0]!.createAccount({ name: "Many keys" });
      const made = await Promise.all(
        Array.from({ length: 30 }, (_, i) => accounts[i % 3]!.createKey({ accountId: account.id, name: `k${i}` })),
      );
      expect(new Set(made.map((k) => k.id)).size).toBe(30);
      expect(made.every((k) => k.workspaceId === workspace.id)).toBe(true);
      const listed = await accounts[1]!.keys(account.id);
      expect(listed.map((k) => k.id).sort()).toEqual(made.map((k) => k.id).sort());
      for (const [i, k] of made.entries()) expect((await accounts[(i + 1) % 3]!.keyBySecret(k.secret))!.id).toBe(k.id);

      const same = "sdgw_SameSecretMadeTwiceAtOnce00000000";
      const twice = await Promise.allSettled(
        Array.from({ length: 6 }, (_, i) => accounts[i % 3]!.createKey({ accountId: account.id, secret: same })),
      );
      expect(twice.filter((t) => t.status === "fulfilled")).toHaveLength(1);
      for (const t of twice) if (t.status === "rejected") expect((t.reason as { code?: string }).code).toBe("23505"); // the unique hash
      expect((await accounts[2]!.keys(account.id)).filter((k) => k.hash === hashKey(same))).toHaveLength(1);
    },
  );

  it("concurrent grants on three instances add up, each with its ledger row", async () => {
    const { account } = await accounts[0]!.createAccount({ name: "Grants" });
    const balances = await Promise.all(Array.from({ length: 45 }, (_, i) => accounts[i % 3]!.grant(account.id, i + 1)));
    const total = (45 * 46) / 2;
    expect(Math.max(...balances)).toBe(total);
    expect(new Set(balances).size).toBe(45); // each saw its own grant on top of those committed before it
    expect((await accounts[2]!.account(account.id))!.balance).toBe(total);
    const rows = await instances[1]!.query<{ n: number; s: number }>(
      "SELECT count(*)::bigint AS n, SUM(amount) AS s FROM ledger WHERE account_id = $1 AND kind = 'grant'",
      [account.id],
    );
    expect(rows[0]).toEqual({ n: 45, s: total });
  });

  it("a key's daily limit set again and again while other instances charge it: its spend of today stays its charges of today", async () => {
    clock = Date.parse("2026-11-25T12:00:00Z");
    const { account } = await accounts[0]!.createAccount({ name: "Limit while charged" });
    await accounts[0]!.grant(account.id, 10_000);
    const { id } = await accounts[0]!.createKey({ accountId: account.id, dailyLimit: 1000 });
    const calls = instances.map(
      (db) => new PgCalls({ db, now, idempotencyTtlMs: 86_400_000, freeCalls: 100, owner: "own_test" }),
    );
    const ctx = { key: { id }, account: { id: account.id } } as RunContext;
    const charge = async (i: number) => {
      const runId = `run_limit_${i}`;
      expect(await calls[i % 3]!.hold(ctx, { runId, credits: 2, calls: 1 })).toBeNull();
      await calls[(i + 1) % 3]!.settle(runId, 1 + (i % 2), 1);
    };
    const set = (i: number) => accounts[i % 3]!.setKeyDailyLimit(id, i % 2 ? 1000 : 900);
    // Limits set while charges commit; then more charges, which add to whatever the limits left (a charge lost by a
    // limit's write would stay lost).
    for (let round = 0; round < 6; round++)
      await Promise.all([
        ...Array.from({ length: 40 }, (_, i) => charge(round * 40 + i)),
        ...Array.from({ length: 30 }, (_, i) => set(i)),
      ]);
    await Promise.all(Array.from({ length: 10 }, (_, i) => charge(240 + i)));
    const key = (await accounts[1]!.key(id))!;
    const ledger = await instances[2]!.one<{ s: number }>(
      "SELECT SUM(amount) AS s FROM ledger WHERE key_id = $1 AND kind = 'charge' AND day = '2026-11-25'",
      [id],
    );
    expect(ledger!.s).toBe(375); // 125 calls of 1 and 125 of 2
    expect(key).toMatchObject({ spend_day: "2026-11-25", spend_today: 375 });
  });

  it("a key's daily limit set while a charge of another instance is mid-transaction: the charge is counted once", async () => {
    clock = Date.parse("2026-11-25T12:00:00Z");
    const { account } = await accounts[0]!.createAccount({ name: "Limit during a charge" });
    await accounts[0]!.grant(account.id, 100);
    const { id } = await accounts[0]!.createKey({ accountId: account.id });
    const calls = instances.map(
      (db) => new PgCalls({ db, now, idempotencyTtlMs: 86_400_000, freeCalls: 100, owner: "own_test" }),
    );
    const ctx = { key: { id }, account: { id: account.id } } as RunContext;
    expect(await calls[0]!.hold(ctx, { runId: "run_mid_1", credits: 5, calls: 1 })).toBeNull();
    await calls[0]!.settle("run_mid_1", 2, 1);
    expect(await calls[0]!.hold(ctx, { runId: "run_mid_2", credits: 5, calls: 1 })).toBeNull();
    // Another connection holds the account's row: the settle below writes its ledger row and the key's spend, then
    // waits for the account, its transaction open; the limit is set meanwhile, then the settle commits.
    const blocker = new pg.Client({ connectionString: URL_OF(DB) });
    await blocker.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query("SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE", [account.id]);
      const settled = calls[1]!.settle("run_mid_2", 3, 1);
      await waiting(blocker, 1);
      const limited = accounts[2]!.setKeyDailyLimit(id, 50);
      // The limit waits for the charge's lock on the key, or (had the charge not reached the key yet) is set first
      // and the charge then adds to what it found: either way the charge is counted once.
      await Promise.race([waiting(blocker, 2), limited]);
      await blocker.query("COMMIT");
      await Promise.all([settled, limited]);
    } finally {
      await blocker.end();
    }
    expect(await accounts[1]!.key(id)).toMatchObject({ daily_limit: 50, spend_day: "2026-11-25", spend_today: 5 });
  });
});

/** Waits until `n` connections of the test's database wait for a lock. */
async function waiting(client: pg.Client, n: number): Promise<void> {
  for (let tries = 0; tries < 500; tries++) {
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    if (rows[0]!.n >= n) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${n} connections never waited for a lock`);
}

const isoOf = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
