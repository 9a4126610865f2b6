/**
 * D108: the charge path on PostgreSQL, shared by several instances (each its own pool, as each server process has):
 * versioned migrations applied once however many instances start together; one run per Idempotency-Key across
 * instances; holds that never overdraw; a hold settled exactly once; the ledger's identity after every test; and a
 * database that does not answer refusing the call with nothing charged. Needs PostgreSQL on 127.0.0.1:5432 (user
 * postgres, trust; CI's `.ci/run` installs and starts it): without it this file fails, it does not skip. It makes a
 * database of its own and drops it at the end.
 */
import { createServer as createNetServer } from "node:net";
import { chargeCall, type CallLimits, type ChargeOutcome } from "@sdgw/engine";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DatabaseUnavailable, Postgres } from "../src/pg/database.ts";
import { PgCalls } from "../src/pg/calls.ts";
import { migrate, MIGRATIONS, SchemaError } from "../src/pg/migrations.ts";
import type { HttpAnswer, RunContext } from "../src/systems/runs.ts";
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

/**
 * One charged call on instance `i`, as the server makes it: admitted by the engine over PostgreSQL, then its run
 * settles the hold (charging `credits`) and keeps its answer under the Idempotency-Key.
 */
async function call(
  i: number,
  ctx: RunContext,
  o: { credits: number; idem?: string; runs: string[]; params?: unknown },
) {
  const store = calls[i % calls.length]!;
  const runId = `run_${i}_${Math.random().toString(36).slice(2)}`;
  const idempotencyKey = o.idem;
  const price = { credits: o.credits, calls: 1, maxCost: undefined };
  return chargeCall<RunContext, HttpAnswer>(
    { store, limits: NO_LIMITS },
    {
      caller: ctx,
      keyId: ctx.key.id,
      runId,
      operationId: "search",
      params: o.params ?? { q: "露营" },
      idempotencyKey,
      price,
      async start() {
        o.runs.push(runId);
        await new Promise((r) => setTimeout(r, 5)); // the platforms' time, while others arrive
        const { charged, balance } = await store.settle(runId, o.credits, 1);
        const answer = {
          status: 200,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ runId, charged, balance }),
        };
        if (idempotencyKey) await store.complete({ keyId: ctx.key.id, idemKey: idempotencyKey }, answer);
        return answer;
      },
    },
  );
}

const kinds = (outs: ChargeOutcome<HttpAnswer>[]) => {
  const count: Record<string, number> = {};
  for (const o of outs) {
    const k =
      o.kind === "refused"
        ? o.refusal.kind === "hold"
          ? o.refusal.hold.code
          : o.refusal.kind === "claim"
            ? o.refusal.claim.kind
            : o.refusal.kind
        : o.kind;
    count[k] = (count[k] ?? 0) + 1;
  }
  return count;
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

describe("charged calls on PostgreSQL across three instances (D108)", () => {
  it("60 concurrent calls on one Idempotency-Key: one runs and is charged once; the rest 409, then the same bytes", async () => {
    const { id, ctx } = await account(50);
    const runs: string[] = [];
    const outs = await Promise.all(
      Array.from({ length: 60 }, (_, i) => call(i, ctx, { credits: 3, idem: "one-key", runs })),
    );
    expect(runs).toHaveLength(1);
    // One ran; the others came while it ran (409) or, on a busy machine, after its end (its answer again).
    const { answered, in_progress = 0, replayed = 0 } = kinds(outs);
    expect([answered, in_progress + replayed]).toEqual([1, 59]);
    const first = outs.find((o) => o.kind === "answered")!;
    for (const o of outs)
      if (o.kind === "replayed")
        expect(String(o.answer.body)).toBe(String((first as { answer: HttpAnswer }).answer.body));
    for (let i = 0; i < 3; i++) {
      const again = await call(i, ctx, { credits: 3, idem: "one-key", runs });
      expect(again.kind).toBe("replayed");
      const answer = (again as { answer: HttpAnswer }).answer;
      expect(String(answer.body)).toBe(String((first as { answer: HttpAnswer }).answer.body));
      expect(answer.headers["idempotent-replayed"]).toBe("true");
    }
    const other = await call(1, ctx, { credits: 3, idem: "one-key", runs, params: { q: "other" } });
    expect(other).toMatchObject({ kind: "refused", refusal: { kind: "claim", claim: { kind: "conflict" } } });
    expect(runs).toHaveLength(1);
    expect(await calls[2]!.audit(id)).toMatchObject({ balance: 47, charges: 3, held: 0 });
  });

  it("100 concurrent calls of 1 credit on a balance of 10: exactly 10 run and are charged, 90 are refused", async () => {
    const { id, ctx } = await account(10);
    const runs: string[] = [];
    const outs = await Promise.all(Array.from({ length: 100 }, (_, i) => call(i, ctx, { credits: 1, runs })));
    expect(kinds(outs)).toEqual({ answered: 10, insufficient_balance: 90 });
    expect(runs).toHaveLength(10);
    expect(await calls[1]!.audit(id)).toEqual({ balance: 0, grants: 10, charges: 10, held: 0, holdsHeld: 0 });
  });

  it("a key's daily limit holds across instances: 20 concurrent calls of 1 credit under a limit of 5 → 5 run", async () => {
    const { ctx } = await account(100, { keyDailyLimit: 5 });
    const runs: string[] = [];
    const outs = await Promise.all(Array.from({ length: 20 }, (_, i) => call(i, ctx, { credits: 1, runs })));
    expect(kinds(outs)).toEqual({ answered: 5, daily_limit_reached: 15 });
  });

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

  it("a pause set on one instance stops charged calls on all of them (D60); a quote still answers", async () => {
    const { ctx } = await account(10);
    await calls[0]!.pause("maintenance until 10:00");
    const runs: string[] = [];
    const refused = await call(1, ctx, { credits: 1, runs });
    expect(refused).toEqual({
      kind: "refused",
      refusal: { kind: "paused", message: "Calls are paused: maintenance until 10:00" },
    });
    expect(await calls[2]!.unpause()).toBe(true);
    expect(await calls[2]!.unpause()).toBe(false);
    expect((await call(2, ctx, { credits: 1, runs })).kind).toBe("answered");
  });

  it("the billing numbers count what every instance holds, under the key's daily limit when it has one", async () => {
    const { id, ctx } = await account(30, { keyDailyLimit: 12 });
    const plain = await account(30);
    expect(await calls[1]!.hold(ctx, { runId: `run_v1_${id}`, credits: 4, calls: 1 })).toBeNull();
    expect(await calls[2]!.hold(ctx, { runId: `run_v2_${id}`, credits: 3, calls: 1 })).toBeNull();
    await calls[0]!.settle(`run_v2_${id}`, 2, 1);
    expect(await calls[0]!.view(id, ctx.key.id)).toEqual({
      balance: 28,
      todaySpend: 6, // 2 charged + 4 held
      held: 4,
      dailyLimit: 12,
      dailyRemaining: 6,
    });
    expect(await calls[1]!.view(plain.id, plain.ctx.key.id)).toEqual({
      balance: 30,
      todaySpend: 0,
      held: 0,
      dailyLimit: null,
      dailyRemaining: null,
    });
    expect(await calls[2]!.dailyCharges(id, "2026-11-01")).toEqual([{ day: "2026-11-25", credits: 2 }]);
    await calls[0]!.settle(`run_v1_${id}`, 0, 0);
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
