/**
 * The accounts system's contract (accounts, workspaces and keys: `AccountsPort`) on every engine.
 *
 * - **Written once.** The records' shapes, through the port, on the embedded store and on PostgreSQL.
 * - **Differential.** Generated sequences of operations (make accounts and keys, grant, revoke, suspend, set
 *   limits, plans, caps, permissions and expiry, mark exposed, charge, let time pass, and every read) run against
 *   the embedded store's `Accounts` (SQLite in memory) and `PgAccounts` on three instances in turn; every answer,
 *   every error and the rows after each step must be the same. Ids and secrets are made the same on both sides (the
 *   generators of `ids.ts` are replaced, during those runs only, by a sequence restarted for each side), so records
 *   are compared whole, with no masking.
 *
 * PostgreSQL-only behaviour (expiries it refuses, a database that does not answer, several instances at once) is in
 * pg-accounts.test.ts. Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; CI's `.ci/run` installs and starts
 * it): without it this file fails, it does not skip. Its databases are its own, dropped at the end.
 */
import { keyPrefix } from "@sdgw/engine";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { hashKey } from "../../src/ids.ts";
import type { PgAccounts } from "../../src/storage/postgres/accounts.ts";
import type { Postgres } from "../../src/storage/postgres/database.ts";
import type { AccountRecord, KeyRecord } from "../../src/storage/accounts.ts";
import { Accounts } from "../../src/storage/sqlite/accounts.ts";
import { Store } from "../../src/storage/sqlite/store.ts";
import { adapters, poolOf, postgres, type Storage } from "./adapters.ts";

/** While `fixedIds` is set, ids and secrets come from it: the same sequence for each side of a step. */
let fixedIds: { step: number; n: number } | null = null;
vi.mock("../../src/ids.ts", async (original) => {
  const real = await original<typeof import("../../src/ids.ts")>();
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

/** Two seconds before a UTC midnight: a few steps of time cross it. */
const START = Date.parse("2026-11-25T23:59:58Z");

let clock = START;
const now = () => clock;
/** Three PostgreSQL instances (gateways on one database, each its own pool) for the differential runs. */
let pgs: Storage;
let instances: Postgres[] = [];
let accounts: PgAccounts[] = [];

beforeAll(async () => {
  pgs = await postgres.open("acc", { time: now });
  instances = pgs.instances.map((i) => poolOf(i));
  accounts = pgs.instances.map((i) => i.ports.accounts as PgAccounts);
});

afterAll(() => pgs?.close());

// ---------------------------------------------------------------------------------------------------------------
// Written once

describe.each(adapters)("accounts and keys through the port ($engine)", (adapter) => {
  let s: Storage;
  beforeAll(async () => {
    s = await adapter.open("accounts", { now: Date.parse("2026-11-25T09:00:00.750Z") });
  });
  afterAll(() => s?.close());

  it("records have the same shapes on every engine: numbers, nulls, instants to the second in UTC", async () => {
    const { account, workspace } = await s.on(0).ports.accounts.createAccount({ name: "Shapes", dailyLimit: 9 });
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
    const made = await s.on(1).ports.accounts.createKey({ accountId: account.id, expiresAt: "2027-03-01T08:00:00Z" });
    expect(made.secret).toMatch(/^sdgw_[0-9A-Za-z]{32}$/);
    expect(made.prefix).toBe(made.secret.slice(0, 12));
    const key = (await s.on(2).ports.accounts.keyBySecret(made.secret))!;
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
      expires_at: "2027-03-01T08:00:00Z",
      revoked_at: null,
      exposed_at: null,
      spend_day: "",
      spend_today: 0,
    } satisfies KeyRecord);
    expect(await s.on(0).ports.accounts.grant(account.id, 12)).toBe(12);
    expect(typeof (await s.on(1).ports.accounts.account(account.id))!.balance).toBe("number");
  });
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
