/**
 * D108: the charge path on PostgreSQL, shared by several instances (each its own pool, as each server process has):
 * versioned migrations applied once however many instances start together; a hold settled exactly once whichever
 * instances end it; the ledger's identity after every test; and a database that does not answer refusing the call
 * with nothing charged. (What the embedded store does too, one run per Idempotency-Key, holds that never overdraw,
 * the pause and the billing numbers, is the storage suite's: storage/charges.test.ts.) Needs PostgreSQL on 127.0.0.1:5432 (user
 * postgres, trust; CI's `.ci/run` installs and starts it): without it this file fails, it does not skip. It makes a
 * database of its own and drops it at the end.
 */
import { createServer as createNetServer } from "node:net";
import { chargeCall, type CallLimits } from "@sdgw/engine";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DatabaseUnavailable, Postgres } from "../src/storage/postgres/database.ts";
import { PgCalls } from "../src/storage/postgres/calls.ts";
import { migrate, MIGRATIONS, SchemaError } from "../src/storage/postgres/migrations.ts";
import type { RunContext } from "../src/runs/types.ts";
import type { HttpAnswer } from "../src/runs/types.ts";
import { pgAccount, pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";

const NOW = Date.parse("2026-11-25T09:00:00Z");

let t: TestDatabase;
/** Three instances on the test's database. */
let instances: Postgres[] = [];
let calls: PgCalls[] = [];

beforeAll(async () => {
  t = await testDatabase("calls");
  // Instances starting together on a database one of them migrated: nothing left to apply.
  instances = t.instances;
  calls = instances.map(
    (db) => new PgCalls({ db, now: () => NOW, idempotencyTtlMs: 86_400_000, freeCalls: 100, owner: "own_test" }),
  );
});

afterAll(() => t?.drop());

/** Every account a test made keeps the ledger's identity. */
const made: string[] = [];
afterEach(async () => {
  for (const id of made.splice(0)) {
    const a = await calls[0]!.audit(id);
    expect(a.balance, `balance of ${id} = grants − charges`).toBe(a.grants - a.charges);
    expect(a.held, `held of ${id} = Σ holds held`).toBe(a.holdsHeld);
  }
});

/** An account with `credits`, its workspace and a key, as the server would find them. */
async function account(credits: number, o: { plan?: "free" | "paid"; keyDailyLimit?: number } = {}) {
  const made_ = await pgAccount(instances[0]!, NOW, o);
  if (credits > 0) await calls[0]!.grant(made_.id, credits);
  made.push(made_.id);
  return made_;
}

const NO_LIMITS: CallLimits<RunContext> = {
  failureBlock: () => null,
  keyCall: () => null,
  startRun: () => null,
  endRun: () => undefined,
};

describe("PostgreSQL migrations (D108)", () => {
  it("three instances starting together apply each version once; the database records it", async () => {
    const fresh = `${t.name}_fresh`;
    await t.admin.query(`CREATE DATABASE ${fresh}`);
    const pools = [0, 1, 2].map(() => new Postgres(pgUrl(fresh)));
    try {
      const reports = await Promise.all(pools.map((db) => migrate(db)));
      expect(reports.map((r) => r.applied.length).sort()).toEqual([0, 0, MIGRATIONS.length]);
    } finally {
      await Promise.all(pools.map((p) => p.close()));
      await t.admin.query(`DROP DATABASE IF EXISTS ${fresh} WITH (FORCE)`);
    }
    const rows = await instances[1]!.query<{ version: number }>(
      "SELECT version FROM schema_migrations ORDER BY version",
    );
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(await migrate(instances[2]!)).toEqual({ applied: [], version: MIGRATIONS.at(-1)!.version });
  });

  it("refuses a database migrated by a newer server, naming both versions", async () => {
    const newer = [...MIGRATIONS, { version: 99, name: "from the future", sql: "CREATE TABLE future_only (id int)" }];
    const other = `${t.name}_newer`;
    await t.admin.query(`CREATE DATABASE ${other}`);
    const db = new Postgres(pgUrl(other));
    try {
      expect((await migrate(db, newer)).applied).toEqual([...MIGRATIONS.map((m) => m.version), 99]);
      await expect(migrate(db)).rejects.toThrow(SchemaError);
      await expect(migrate(db)).rejects.toThrow(/version 99, newer than this server knows \(1\)/);
    } finally {
      await db.close();
      await t.admin.query(`DROP DATABASE IF EXISTS ${other} WITH (FORCE)`);
    }
  });
});

// The charged-call contract shared with the embedded store (one Idempotency-Key, holds that never overdraw, daily
// limits, the pause, the billing numbers) is in storage/charges.test.ts, run on both engines.
describe("charged calls on PostgreSQL across three instances (D108)", () => {
  it("a hold settles once whichever instances end it, whatever they charge; the rest is released", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 6 }),
        async (quote, charges) => {
          const { id, ctx } = await account(40);
          const runId = `run_settle_${id}`;
          expect(await calls[0]!.hold(ctx, { runId, credits: quote, calls: 1 })).toBeNull();
          const ends = await Promise.all(charges.map((c, i) => calls[i % 3]!.settle(runId, c, 1)));
          const charged = ends[0]!.charged;
          expect(new Set(ends.map((e) => e.charged)).size).toBe(1); // every instance reports the one ending
          expect(charges.map((c) => Math.min(c, quote))).toContain(charged);
          expect(await calls[2]!.audit(id)).toMatchObject({ balance: 40 - charged, charges: charged, held: 0 });
        },
      ),
      { numRuns: 15 },
    );
  });

  it("a database that does not answer refuses the call before anything runs (DatabaseUnavailable: 503, nothing charged)", async () => {
    const port = await closedPort();
    const db = new Postgres(`postgres://postgres@127.0.0.1:${port}/none`, { connectTimeoutMs: 500 });
    const gone = new PgCalls({ db, now: () => NOW, idempotencyTtlMs: 86_400_000, freeCalls: 100, owner: "own_test" });
    const { id, ctx } = await account(10);
    let ran = false;
    const attempt = chargeCall<RunContext, HttpAnswer>(
      { store: gone, limits: NO_LIMITS },
      {
        caller: ctx,
        keyId: ctx.key.id,
        runId: "run_gone",
        operationId: "search",
        params: {},
        idempotencyKey: "k-gone",
        price: { credits: 1, calls: 1, maxCost: undefined },
        start: () => {
          ran = true;
          return { status: 200, headers: {}, body: "" };
        },
      },
    );
    await expect(attempt).rejects.toBeInstanceOf(DatabaseUnavailable);
    await expect(attempt).rejects.toThrow(/PostgreSQL does not answer/);
    expect(ran).toBe(false);
    expect(await calls[0]!.audit(id)).toMatchObject({ balance: 10, charges: 0 });
    await db.close();
  });
});

/** A local port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
