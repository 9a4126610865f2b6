/**
 * D108: accounts, workspaces and keys on PostgreSQL (`PgAccounts`), shared by several instances.
 *
 * - **Differential.** Generated sequences of operations (make accounts and keys, grant, revoke, suspend, set
 *   limits, plans, caps, permissions and expiry, mark exposed, charge, let time pass, and every read) run against
 *   the embedded store's `Accounts` (SQLite in memory) and `PgAccounts` on three instances in turn; every answer,
 *   every error and the rows after each step must be the same. Ids and secrets are made the same on both sides (the
 *   generators of `ids.ts` are replaced, during those runs only, by a sequence restarted for each side), so records
 *   are compared whole, with no masking.
 * - **Several instances.** Concurrent revocations and lookups, concurrent key creation, grants, and a key's daily
 *   limit set while other instances charge it.
 *
 * Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; CI's `.ci/run` installs and starts it): without it this
 * file fails, it does not skip. It makes a database of its own and drops it at the end.
 */
import { keyPrefix } from "@sdgw/engine";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { hashKey } from "../src/ids.ts";
import { PgAccounts } from "../src/storage/postgres/accounts.ts";
import { PgCalls } from "../src/storage/postgres/calls.ts";
import { DatabaseUnavailable, Postgres } from "../src/storage/postgres/database.ts";
import { migrate } from "../src/storage/postgres/migrations.ts";
import { Accounts } from "../src/storage/sqlite/accounts.ts";
import type { AccountRecord, KeyRecord } from "../src/storage/accounts.ts";
import type { RunContext } from "../src/runs/types.ts";
import { Store } from "../src/storage/sqlite/store.ts";

/** While `fixedIds` is set, ids and secrets come from it: the same sequence for each side of a step. */
let fixedIds: { step: number; n: number } | null = null;
vi.mock("../src/ids.ts", async (original) => {
  const real = await original<typeof import("../src/ids.ts")>();
  // Not in creation order, so that "made in the same second, by id" is not "in the order made".
  const part = () => {
    const f = fixedIds!;
    const n = f.n++;
    return `${((f.step * 7919 + n * 104_729) % 997).toString(36)}x${f.step}n${n}`;
  };
  return {
    ...real,
    newId: (prefix: string) => (fixedIds ? `${prefix}_${part()}` : real.newId(prefix)),
    newKeySecret: () => (fixedIds ? `sdgw_${part()}secretpart` : real.newKeySecret()),
  };
});

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
// The differential test's operations.

type Plan = "free" | "paid";
type Status = "active" | "suspended";
/** A reference to the n-th account or key made so far (modulo how many there are), or to one that does not exist. */
type Ref = number | "none";

type Op =
  | { k: "createAccount"; name: string; plan?: Plan; dailyLimit?: number | null; callCap?: number | null; id?: string }
  | {
      k: "createKey";
      acc: Ref;
      name?: string;
      permissions?: string[];
      dailyLimit?: number | null;
      expiresAt?: string | null;
      secret?: string;
    }
  | { k: "grant"; acc: Ref; amount: number; note?: string }
  | { k: "charge"; key: Ref; amount: number }
  | { k: "tick"; ms: number }
  | { k: "revokeKey" | "markExposed" | "keyBySecret" | "keyAndAccount" | "key"; key: Ref }
  | { k: "findKey"; key: Ref; by: "id" | "prefix" }
  | { k: "keys"; acc?: Ref }
  | { k: "setKeyStatus"; key: Ref; status: Status }
  | { k: "setKeyPermissions"; key: Ref; permissions: string[] }
  | { k: "setKeyDailyLimit"; key: Ref; limit: number | null }
  | { k: "setKeyExpiry"; key: Ref; expiresAt: string | null }
  | { k: "setAccountStatus"; acc: Ref; status: Status }
  | { k: "setAccountPlan"; acc: Ref; plan: Plan }
  | { k: "setAccountDailyLimit" | "setAccountCallCap"; acc: Ref; limit: number | null }
  | { k: "account" | "workspace" | "workspaceOf"; acc: Ref }
  | { k: "accounts" };

const ref = fc.oneof({ weight: 9, arbitrary: fc.nat(20) }, { weight: 1, arbitrary: fc.constant("none" as const) });
const limit = fc.option(fc.integer({ min: -1, max: 50 }), { nil: null });
const status = fc.constantFrom<Status>("active", "suspended");
const plan = fc.constantFrom<Plan>("free", "paid");
const permissions = fc.constantFrom<string[]>([], ["read_data"], ["read_data", "other"]);
/** Expiries the embedded store and PostgreSQL both give back as written (UTC, to the second or the millisecond). */
const expiresAt = fc.constantFrom(
  null,
  "2026-11-26T00:00:00Z",
  "2026-11-25T23:59:59Z",
  "2027-01-01T12:30:00.250Z",
  "2020-02-29T00:00:00Z",
);
/** Secrets of which two share a display prefix (`sdgw_Shared1`). */
const secret = fc.constantFrom("sdgw_Shared1xAAAAAA", "sdgw_Shared1yBBBBBB", "sdgw_Other12zCCCCCC");

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        k: fc.constant("createAccount" as const),
        name: fc.constantFrom("Acme", "Brand Buzz", "露营"),
        plan,
        dailyLimit: limit,
        callCap: limit,
        id: fc.constantFrom("acc_fixed", "acc_other"),
      },
      { requiredKeys: ["k", "name"] },
    ),
  },
  {
    weight: 6,
    arbitrary: fc.record(
      {
        k: fc.constant("createKey" as const),
        acc: ref,
        name: fc.constantFrom("ci", "default", "prod"),
        permissions,
        dailyLimit: limit,
        expiresAt,
        secret,
      },
      { requiredKeys: ["k", "acc"] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        k: fc.constant("grant" as const),
        acc: ref,
        amount: fc.constantFrom(1, 7, 1000, 0, -3, 1.5, 2 ** 53),
        note: fc.constantFrom("admin grant", "promo"),
      },
      { requiredKeys: ["k", "acc", "amount"] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record({ k: fc.constant("charge" as const), key: ref, amount: fc.integer({ min: 1, max: 9 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ k: fc.constant("tick" as const), ms: fc.constantFrom(0, 400, 1000, 86_400_000) }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constantFrom("revokeKey", "markExposed", "keyBySecret", "keyAndAccount", "key") as fc.Arbitrary<
        "revokeKey" | "markExposed" | "keyBySecret" | "keyAndAccount" | "key"
      >,
      key: ref,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ k: fc.constant("findKey" as const), key: ref, by: fc.constantFrom("id", "prefix") }),
  },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("keys" as const), acc: ref }, { requiredKeys: ["k"] }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("setKeyStatus" as const), key: ref, status }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("setKeyPermissions" as const), key: ref, permissions }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant("setKeyDailyLimit" as const), key: ref, limit }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("setKeyExpiry" as const), key: ref, expiresAt }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("setAccountStatus" as const), acc: ref, status }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("setAccountPlan" as const), acc: ref, plan }) },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constantFrom("setAccountDailyLimit", "setAccountCallCap") as fc.Arbitrary<
        "setAccountDailyLimit" | "setAccountCallCap"
      >,
      acc: ref,
      limit,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constantFrom("account", "workspace", "workspaceOf") as fc.Arbitrary<
        "account" | "workspace" | "workspaceOf"
      >,
      acc: ref,
    }),
  },
  { weight: 1, arbitrary: fc.constant({ k: "accounts" as const }) },
);

/** A sequence: a few accounts and keys first (so that most steps find something), then any steps. */
const sequence: fc.Arbitrary<Op[]> = fc
  .tuple(
    fc.array(
      fc.record(
        { k: fc.constant("createAccount" as const), name: fc.constant("First"), plan },
        { requiredKeys: ["k", "name"] },
      ),
      { minLength: 1, maxLength: 3 },
    ),
    fc.array(
      fc.record(
        { k: fc.constant("createKey" as const), acc: fc.nat(3), expiresAt, secret },
        { requiredKeys: ["k", "acc"] },
      ),
      { minLength: 1, maxLength: 4 },
    ),
    fc.array(op, { minLength: 5, maxLength: 40, size: "medium" }),
  )
  .map(([made, keys, rest]) => [...made, ...keys, ...rest]);

/** The accounts and keys one side made so far, in the order made. */
interface Made {
  accounts: { id: string; workspaceId: string }[];
  keys: { id: string; secret: string; accountId: string }[];
}

/** One side of the comparison: the same calls, synchronous (SQLite) or not (PostgreSQL). */
interface Side {
  accounts: (step: number) => Accounts | PgAccounts;
  /** Writes a charge row of the ledger, as settling a run does. */
  charge(accountId: string, keyId: string, amount: number, runId: string, day: string): Promise<void> | void;
  /** Every workspace and the ledger (without instants), to compare the rows after each step. */
  rows(): Promise<unknown> | unknown;
}

const pick = <T>(list: T[], r: Ref | undefined): T | undefined =>
  r === undefined || r === "none" || list.length === 0 ? undefined : list[r % list.length];

/** What a failed call says, in words both stores share (a constraint's own message differs by engine). */
function failure(e: unknown): { error: string } {
  const message = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: unknown }).code;
  if (/UNIQUE constraint failed/.test(message) || code === "23505") return { error: "unique" };
  if (/CHECK constraint failed/.test(message) || code === "23514") return { error: "check" };
  return { error: message };
}

/** Runs one step on one side; returns what the method returned (or its error) and updates `made`. */
async function step(side: Side, made: Made, o: Op, i: number): Promise<unknown> {
  const a = side.accounts(i);
  const acc = "acc" in o ? pick(made.accounts, o.acc) : undefined;
  const key = "key" in o ? pick(made.keys, o.key) : undefined;
  const accId = acc?.id ?? "acc_none";
  const keyId = key?.id ?? "key_none";
  const keySecret = key?.secret ?? "sdgw_NoSuchKey000000";
  fixedIds = { step: i, n: 0 };
  try {
    switch (o.k) {
      case "createAccount": {
        const { k: _, ...input } = o;
        const r = await a.createAccount(input);
        made.accounts.push({ id: r.account.id, workspaceId: r.workspace.id });
        return r;
      }
      case "createKey": {
        const { k: _, acc: __, ...input } = o;
        const r = await a.createKey({ ...input, accountId: accId });
        made.keys.push({ id: r.id, secret: r.secret, accountId: r.accountId });
        return r;
      }
      case "grant":
        return await a.grant(accId, o.amount, o.note);
      case "charge":
        if (key)
          await side.charge(key.accountId, key.id, o.amount, `run_${i}`, new Date(clock).toISOString().slice(0, 10));
        return null;
      case "tick":
        return null;
      case "revokeKey":
        return await a.revokeKey(keyId);
      case "markExposed":
        return await a.markExposed(keySecret);
      case "keyBySecret":
        return (await a.keyBySecret(keySecret)) ?? null;
      case "keyAndAccount":
        return (await a.keyAndAccount(hashKey(keySecret))) ?? null;
      case "key":
        return (await a.key(keyId)) ?? null;
      case "findKey":
        return (await a.findKey(o.by === "id" ? keyId : keyPrefix(keySecret))) ?? null;
      case "keys":
        return await a.keys(o.acc === undefined ? undefined : accId);
      case "setKeyStatus":
        return await a.setKeyStatus(keyId, o.status);
      case "setKeyPermissions":
        return await a.setKeyPermissions(keyId, o.permissions);
      case "setKeyDailyLimit":
        return await a.setKeyDailyLimit(keyId, o.limit);
      case "setKeyExpiry":
        return await a.setKeyExpiry(keyId, o.expiresAt);
      case "setAccountStatus":
        return await a.setAccountStatus(accId, o.status);
      case "setAccountPlan":
        return await a.setAccountPlan(accId, o.plan);
      case "setAccountDailyLimit":
        return await a.setAccountDailyLimit(accId, o.limit);
      case "setAccountCallCap":
        return await a.setAccountCallCap(accId, o.limit);
      case "account":
        return (await a.account(accId)) ?? null;
      case "workspace":
        return (await a.workspace(acc?.workspaceId ?? "ws_none")) ?? null;
      case "workspaceOf":
        return (await a.workspaceOf(accId)) ?? null;
      case "accounts":
        return await a.accounts();
    }
  } catch (e) {
    return failure(e);
  } finally {
    fixedIds = null;
  }
}

/** Runs `ops` on a fresh SQLite store and on the emptied PostgreSQL database, comparing after every step. */
async function compare(ops: Op[]): Promise<void> {
  await instances[0]!.query("TRUNCATE accounts, workspaces, keys, ledger, holds CASCADE");
  const store = new Store(":memory:");
  const sqlite = new Accounts({ store, now });
  const lite: Side = {
    accounts: () => sqlite,
    charge: (acc, key, amount, run, day) => {
      store.run(
        "INSERT INTO ledger (account_id, kind, amount, key_id, run_id, day, created_at) VALUES (?, 'charge', ?, ?, ?, ?, ?)",
        acc,
        amount,
        key,
        run,
        day,
        new Date(clock).toISOString(),
      );
    },
    rows: () => ({
      workspaces: store.all("SELECT * FROM workspaces ORDER BY id"),
      ledger: store.all("SELECT account_id, kind, amount, key_id, run_id, note, day FROM ledger ORDER BY id"),
    }),
  };
  const db = instances[0]!;
  const postgres: Side = {
    accounts: (i) => accounts[i % accounts.length]!,
    charge: async (acc, key, amount, run, day) => {
      await db.query(
        "INSERT INTO ledger (account_id, kind, amount, key_id, run_id, day, created_at) VALUES ($1, 'charge', $2, $3, $4, $5, $6)",
        [acc, amount, key, run, day, new Date(clock).toISOString()],
      );
    },
    rows: async () => ({
      workspaces: (
        await db.query<{ id: string; created_at: Date }>(
          'SELECT id, account_id, name, created_at FROM workspaces ORDER BY id COLLATE "C"',
        )
      ).map((w) => ({ ...w, created_at: w.created_at.toISOString().replace(".000Z", "Z") })),
      ledger: await db.query("SELECT account_id, kind, amount, key_id, run_id, note, day FROM ledger ORDER BY id"),
    }),
  };
  const made = { lite: { accounts: [], keys: [] } as Made, pg: { accounts: [], keys: [] } as Made };
  clock = START;
  try {
    for (const [i, o] of ops.entries()) {
      if (o.k === "tick") clock += o.ms;
      const expected = await step(lite, made.lite, o, i);
      const actual = await step(postgres, made.pg, o, i);
      const what = `step ${i}: ${JSON.stringify(o)}`;
      expect(plain(actual), what).toEqual(plain(expected));
      expect(plain(await accounts[(i + 1) % 3]!.accounts()), `${what}: accounts after`).toEqual(
        plain(sqlite.accounts()),
      );
      expect(plain(await accounts[(i + 2) % 3]!.keys()), `${what}: keys after`).toEqual(plain(sqlite.keys()));
      expect(plain(await postgres.rows()), `${what}: workspaces and ledger after`).toEqual(plain(lite.rows()));
    }
  } finally {
    await store.close();
  }
}

/** A value as plain JSON data (SQLite's rows have no prototype; `undefined` results become absent). */
const plain = (v: unknown): unknown => (v === undefined ? "undefined" : JSON.parse(JSON.stringify(v)));

describe("PgAccounts does what the embedded store's Accounts does (differential)", () => {
  it("generated sequences of writes and reads: the same answers, errors and rows after every step", async () => {
    await fc.assert(
      fc.asyncProperty(sequence, (ops) => compare(ops)),
      { numRuns: 60 },
    );
  }, 180_000);

  it("a hand-written sequence: keys made in one second, shared prefixes, revoke, expose, today's spend", async () => {
    const ops: Op[] = [
      { k: "createAccount", name: "Acme", id: "acc_fixed", dailyLimit: 100, callCap: 3 },
      { k: "createAccount", name: "Free", plan: "free" },
      { k: "createKey", acc: 0, secret: "sdgw_Shared1yBBBBBB", expiresAt: "2027-01-01T12:30:00.250Z" },
      { k: "createKey", acc: 0, secret: "sdgw_Shared1xAAAAAA", dailyLimit: 5 },
      { k: "createKey", acc: 1, permissions: [] },
      { k: "createKey", acc: 0, secret: "sdgw_Shared1xAAAAAA" }, // taken: refused
      { k: "createKey", acc: "none" },
      { k: "keys" },
      { k: "keys", acc: 0 },
      { k: "findKey", key: 0, by: "prefix" }, // two keys share it: the first made
      { k: "findKey", key: 1, by: "id" },
      { k: "grant", acc: 0, amount: 50, note: "admin grant" },
      { k: "grant", acc: 0, amount: 0 },
      { k: "grant", acc: "none", amount: 5 },
      { k: "charge", key: 1, amount: 4 },
      { k: "tick", ms: 1000 }, // past midnight: yesterday's charge is not today's spend
      { k: "charge", key: 1, amount: 2 },
      { k: "setKeyDailyLimit", key: 1, limit: 10 },
      { k: "key", key: 1 },
      { k: "revokeKey", key: 0 },
      { k: "revokeKey", key: 0 },
      { k: "setKeyStatus", key: 0, status: "active" }, // a revoked key stays revoked
      { k: "setKeyStatus", key: 1, status: "suspended" },
      { k: "markExposed", key: 2 },
      { k: "markExposed", key: 2 },
      { k: "setAccountStatus", acc: 0, status: "suspended" },
      { k: "setAccountPlan", acc: 1, plan: "paid" },
      { k: "setAccountCallCap", acc: 0, limit: null },
      { k: "setKeyExpiry", key: 2, expiresAt: "2026-11-26T00:00:00Z" },
      { k: "keyAndAccount", key: 1 },
      { k: "keyBySecret", key: 2 },
      { k: "workspaceOf", acc: 0 },
      { k: "accounts" },
    ];
    await compare(ops);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe("PgAccounts on the PostgreSQL store, in its own terms", () => {
  it("records have the shapes the embedded store gives: numbers, nulls, instants to the second in UTC", async () => {
    clock = Date.parse("2026-11-25T09:00:00.750Z");
    const { account, workspace } = await accounts[0]!.createAccount({ name: "Shapes", dailyLimit: 9 });
    expect(account).toEqual({
      id: account.id,
      name: "Shapes",
      plan: "paid",
      status: "active",
      balance: 0,
      held: 0,
      daily_limit: 9,
      free_calls_used: 0,
      free_calls_held: 0,
      spend_day: "",
      spend_today: 0,
      created_at: "2026-11-25T09:00:00Z",
      call_cap: null,
      calls_day: "",
      calls_today: 0,
    } satisfies AccountRecord);
    expect(workspace).toEqual({
      id: workspace.id,
      account_id: account.id,
      name: "Default",
      created_at: account.created_at,
    });
    const made = await accounts[1]!.createKey({ accountId: account.id, expiresAt: "2027-03-01T10:00:00+02:00" });
    expect(made.secret).toMatch(/^sdgw_[0-9A-Za-z]{32}$/);
    expect(made.prefix).toBe(made.secret.slice(0, 12));
    const key = (await accounts[2]!.keyBySecret(made.secret))!;
    expect(key).toEqual({
      id: made.id,
      account_id: account.id,
      workspace_id: workspace.id,
      hash: hashKey(made.secret),
      prefix: made.prefix,
      name: "default",
      permissions: '["read_data"]',
      status: "active",
      daily_limit: null,
      created_at: "2026-11-25T09:00:00Z",
      // an instant: the same one Date.parse reads from the text given, in UTC
      expires_at: "2027-03-01T08:00:00Z",
      revoked_at: null,
      exposed_at: null,
      spend_day: "",
      spend_today: 0,
    } satisfies KeyRecord);
    expect(await accounts[0]!.grant(account.id, 12)).toBe(12);
    expect(typeof (await accounts[1]!.account(account.id))!.balance).toBe("number");
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
