/**
 * D108: schedules on PostgreSQL (`PgSchedules`), shared by several instances (each its own pool): the same answers
 * as the embedded store's `Schedules` for the same operations; each due schedule claimed by exactly one instance
 * once per period however many poll together; at most 20 schedules a workspace under concurrent creates. Needs
 * PostgreSQL on 127.0.0.1:5432 (user postgres, trust; CI's `.ci/run` installs and starts it): without it this file
 * fails, it does not skip. It makes a database of its own and drops it at the end.
 */
import { EVERY_MS, isoSeconds } from "@sdgw/engine";
import type { Schedule } from "@sdgw/types";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Postgres } from "../src/storage/postgres/database.ts";
import { migrate } from "../src/storage/postgres/migrations.ts";
import { nextRunAfter, PgSchedules, ScheduleLimitReached } from "../src/storage/postgres/schedules.ts";
import { Schedules } from "../src/storage/sqlite/schedules.ts";
import { SCHEDULES_PER_WORKSPACE, type ScheduleRecord } from "../src/storage/schedules.ts";
import { Store } from "../src/storage/sqlite/store.ts";

const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";
const DB = `sdgw_test_sch_${process.pid}_${Date.now()}`;
const URL_OF = (db: string) => `postgres://postgres@127.0.0.1:5432/${db}`;
const START = Date.parse("2026-11-25T09:00:00Z");

let admin: pg.Client;
/** Three instances on the test's database. */
let instances: Postgres[] = [];
/** The clock every instance (and the embedded store) reads. */
let now = START;
let schedules: PgSchedules[] = [];

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
  instances = [0, 1, 2].map((i) => new Postgres(URL_OF(DB), { max: 8, applicationName: `sdgw-test-${i}` }));
  await Promise.all(instances.map((db) => migrate(db)));
  schedules = instances.map((db) => new PgSchedules({ db, now: () => now }));
});

afterAll(async () => {
  await Promise.all(instances.map((db) => db.close()));
  await admin?.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin?.end();
});

/** Empties the tables and sets the clock back. */
async function fresh(): Promise<void> {
  await instances[0]!.query("TRUNCATE schedules, follower_readings");
  now = START;
}

const EVERY = ["1h", "6h", "1d"] as const;
const input = (workspaceId: string, every: Schedule["every"], n = 0) => ({
  workspaceId,
  accountId: `acc_${workspaceId}`,
  keyId: `key_${workspaceId}_${n % 2}`,
  body: { accounts: [`https://x.com/a${n}`], range: "7d" },
  params: { accounts: [`https://x.com/a${n}`], range: "7d" } as never,
  every,
});

// ---------------------------------------------------------------------------------------------------------------
// The same operations on both stores
// ---------------------------------------------------------------------------------------------------------------

type Op =
  | { k: "clock"; ms: number }
  | { k: "create"; ws: number; every: Schedule["every"]; times: number; n: number }
  | { k: "get"; pick: number }
  | { k: "list"; ws: number }
  | { k: "count"; ws: number }
  | { k: "remove"; ws: number; pick: number }
  | { k: "due" }
  | { k: "tick"; outcomes: Array<"start" | "pause" | "skip">; latencyMs: number; limit: number }
  | { k: "started"; pick: number }
  | { k: "ended"; pick: number; run: number; status: NonNullable<Schedule["last_run"]>["status"]; charged: number }
  | { k: "pause"; pick: number; reason: string }
  | { k: "recover"; runs: number[] }
  | { k: "record"; readings: Array<{ p: number; a: number; t: number; value: number }> }
  | { k: "bulk"; p: number; a: number; n: number; from: number; step: number }
  | { k: "history"; p: number; a: number };

const ws = fc.integer({ min: 0, max: 1 });
const pick = fc.nat(40);
const OP: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({ k: fc.constant("clock" as const), ms: fc.integer({ min: 0, max: 30 * 3_600_000 }) }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      k: fc.constant("create" as const),
      ws,
      every: fc.constantFrom(...EVERY),
      times: fc.oneof({ arbitrary: fc.constant(1), weight: 3 }, fc.integer({ min: 2, max: 22 })),
      n: fc.nat(9),
    }),
    weight: 5,
  },
  fc.record({ k: fc.constant("get" as const), pick }),
  fc.record({ k: fc.constant("list" as const), ws }),
  fc.record({ k: fc.constant("count" as const), ws }),
  fc.record({ k: fc.constant("remove" as const), ws, pick }),
  fc.record({ k: fc.constant("due" as const) }),
  {
    arbitrary: fc.record({
      k: fc.constant("tick" as const),
      outcomes: fc.array(fc.constantFrom("start" as const, "pause" as const, "skip" as const), {
        minLength: 1,
        maxLength: 4,
      }),
      latencyMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 5000 })),
      limit: fc.integer({ min: 1, max: 5 }),
    }),
    weight: 5,
  },
  fc.record({ k: fc.constant("started" as const), pick }),
  fc.record({
    k: fc.constant("ended" as const),
    pick,
    run: fc.nat(20),
    status: fc.constantFrom("ok" as const, "error" as const, "timeout" as const, "empty" as const),
    charged: fc.nat(50),
  }),
  fc.record({
    k: fc.constant("pause" as const),
    pick,
    reason: fc.constantFrom("insufficient_balance", "key_unusable"),
  }),
  fc.record({ k: fc.constant("recover" as const), runs: fc.array(fc.nat(20), { maxLength: 4 }) }),
  fc.record({
    k: fc.constant("record" as const),
    readings: fc.array(
      fc.record({ p: fc.nat(1), a: fc.nat(1), t: fc.nat(30), value: fc.integer({ min: 0, max: 2 ** 40 }) }),
      { maxLength: 12 },
    ),
  }),
  fc.record({
    k: fc.constant("bulk" as const),
    p: fc.nat(1),
    a: fc.nat(1),
    n: fc.integer({ min: 0, max: 450 }),
    from: fc.nat(200),
    step: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({ k: fc.constant("history" as const), p: fc.nat(1), a: fc.nat(1) }),
);

const PLATFORMS = ["x", "youtube"];
const HANDLES = ["@a", "@b"];

/**
 * Runs `ops` on a fresh embedded store and on PostgreSQL (each operation on one of the three instances in turn),
 * expecting the same answer from each and the same record of every schedule after each. A schedule created on
 * both gets the embedded store's id on PostgreSQL too (ids are random), so later answers compare whole.
 */
async function differential(ops: Op[]): Promise<void> {
  await fresh();
  const store = new Store(":memory:");
  try {
    const sq = new Schedules({ store, now: () => now });
    const ids: string[] = [];
    const runs: string[] = [];
    let runSeq = 0;
    let i = 0;
    const idOf = (n: number) => (n < ids.length ? ids[n]! : `sch_missing${n}`);
    const runOf = (n: number) => (n < runs.length ? runs[n]! : `run_missing${n}`);
    const newRun = () => {
      const runId = `run_${String(++runSeq).padStart(4, "0")}`;
      runs.push(runId);
      return { runId, handle: `h_${runSeq}` };
    };
    for (const op of ops) {
      const pgs = schedules[i++ % schedules.length]!;
      const step = `op ${i} ${JSON.stringify(op)}`;
      switch (op.k) {
        case "clock":
          now += op.ms;
          break;
        case "create":
          for (let t = 0; t < op.times; t++) {
            const inp = input(`ws_${op.ws}`, op.every, op.n + t);
            // the route's check first (D52); PostgreSQL decides again under the workspace's lock
            if (sq.count(inp.workspaceId) >= SCHEDULES_PER_WORKSPACE) {
              await expect(pgs.create(inp), step).rejects.toBeInstanceOf(ScheduleLimitReached);
              continue;
            }
            const a = sq.create(inp);
            const b = await pgs.create(inp);
            expect({ ...b, id: a.id }, step).toEqual(a);
            expect(b.id).toMatch(/^sch_[0-9A-Za-z]{10}$/);
            await instances[0]!.query("UPDATE schedules SET id = $1 WHERE id = $2", [a.id, b.id]);
            ids.push(a.id);
          }
          break;
        case "get":
          expect(await pgs.get(idOf(op.pick)), step).toEqual(sq.get(idOf(op.pick)));
          break;
        case "list":
          expect(await pgs.list(`ws_${op.ws}`), step).toEqual(sq.list(`ws_${op.ws}`));
          break;
        case "count":
          expect(await pgs.count(`ws_${op.ws}`), step).toBe(sq.count(`ws_${op.ws}`));
          break;
        case "remove":
          expect(await pgs.remove(`ws_${op.ws}`, idOf(op.pick)), step).toBe(sq.remove(`ws_${op.ws}`, idOf(op.pick)));
          break;
        case "due":
          expect(await pgs.due(), step).toEqual(sq.due());
          break;
        case "tick": {
          // as the scheduler: the embedded store reads due(); PostgreSQL claims (in batches of `limit`)
          const due = sq.due();
          const claimed: ScheduleRecord[] = [];
          for (;;) {
            const batch = await pgs.claimDue(op.limit);
            claimed.push(...batch);
            if (batch.length < op.limit) break;
          }
          expect(claimed, step).toEqual(due);
          now += op.latencyMs;
          for (const [j, row] of due.entries()) {
            const outcome = op.outcomes[j % op.outcomes.length];
            if (outcome === "start") {
              const { runId, handle } = newRun();
              const start = { id: row.id, runId, handle, every: row.every, nextRunAt: row.next_run_at };
              sq.started(start);
              await pgs.started(start);
            } else if (outcome === "pause") {
              sq.pause(row.id, "daily_limit_reached");
              await pgs.pause(row.id, "daily_limit_reached");
            } else {
              expect(await pgs.release(row.id), step).toBe(true);
            }
          }
          break;
        }
        case "started": {
          const row = sq.get(idOf(op.pick));
          if (!row) break;
          const { runId, handle } = newRun();
          const start = { id: row.id, runId, handle, every: row.every, nextRunAt: row.next_run_at };
          sq.started(start);
          await pgs.started(start);
          break;
        }
        case "ended":
          sq.ended(idOf(op.pick), runOf(op.run), op.status, op.charged);
          await pgs.ended(idOf(op.pick), runOf(op.run), op.status, op.charged);
          break;
        case "pause":
          sq.pause(idOf(op.pick), op.reason);
          await pgs.pause(idOf(op.pick), op.reason);
          break;
        case "recover": {
          const broken = new Set(op.runs.map(runOf));
          expect(await pgs.recover(broken), step).toBe(sq.recover(broken));
          break;
        }
        case "record": {
          const readings = op.readings.map((r) => ({
            platform: PLATFORMS[r.p]!,
            accountId: HANDLES[r.a]!,
            t: START + r.t * 1000,
            value: r.value,
          }));
          sq.recordFollowers(readings);
          await pgs.recordFollowers(readings);
          break;
        }
        case "bulk": {
          const readings = Array.from({ length: op.n }, (_, j) => ({
            platform: PLATFORMS[op.p]!,
            accountId: HANDLES[op.a]!,
            t: START + (op.from + j * op.step) * 1000,
            value: (j * 7919) % 100_000,
          }));
          sq.recordFollowers(readings);
          await pgs.recordFollowers(readings);
          break;
        }
        case "history":
          expect(await pgs.followerHistory(PLATFORMS[op.p]!, HANDLES[op.a]!), step).toEqual(
            sq.followerHistory(PLATFORMS[op.p]!, HANDLES[op.a]!),
          );
          break;
      }
      // every schedule ever made, as each store holds it now
      const pgRows = await Promise.all(ids.map((id) => pgs.get(id)));
      expect(pgRows, `records after ${step}`).toEqual(ids.map((id) => sq.get(id)));
    }
    for (const p of PLATFORMS)
      for (const a of HANDLES) expect(await schedules[0]!.followerHistory(p, a)).toEqual(sq.followerHistory(p, a));
    expect(await schedules[0]!.due()).toEqual(sq.due());
  } finally {
    await store.close();
  }
}

describe("PgSchedules answers as the embedded store's Schedules", () => {
  it("the same generated operations give the same answers and the same records", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(OP, { minLength: 1, maxLength: 60 }), (ops) => differential(ops)),
      { numRuns: 60 },
    );
  }, 180_000);

  it("a workspace full at 20 and a paused schedule due again at once, as there", async () => {
    const ops: Op[] = [
      { k: "create", ws: 0, every: "1h", times: 22, n: 0 },
      { k: "count", ws: 0 },
      { k: "list", ws: 0 },
      { k: "clock", ms: 3_600_000 },
      { k: "tick", outcomes: ["pause", "start", "skip"], latencyMs: 1500, limit: 7 },
      { k: "due" },
      { k: "clock", ms: 60_000 },
      { k: "tick", outcomes: ["start"], latencyMs: 0, limit: 100 },
      { k: "ended", pick: 0, run: 20, status: "ok", charged: 3 },
      { k: "ended", pick: 1, run: 0, status: "ok", charged: 3 },
      { k: "recover", runs: [1, 2, 3] },
      { k: "due" },
      { k: "remove", ws: 0, pick: 4 },
      { k: "remove", ws: 1, pick: 5 },
      { k: "bulk", p: 0, a: 0, n: 450, from: 0, step: 1 },
      {
        k: "record",
        readings: [
          { p: 0, a: 0, t: 449, value: 1 },
          { p: 0, a: 0, t: 449, value: 2 },
        ],
      },
      { k: "history", p: 0, a: 0 },
    ];
    await differential(ops);
    expect(await schedules[0]!.count("ws_0")).toBe(SCHEDULES_PER_WORKSPACE - 1);
    const history = await schedules[1]!.followerHistory("x", "@a");
    expect(history).toHaveLength(400);
    expect(history.at(-1)).toEqual({ t: START + 449_000, value: 2 });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Several instances
// ---------------------------------------------------------------------------------------------------------------

describe("several instances", () => {
  it("three instances claiming together, the clock moving: each due schedule is claimed exactly once per period", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 9 * 3_600_000 }), { minLength: 15, maxLength: 30 }),
        fc.integer({ min: 1, max: 6 }),
        async (steps, limit) => {
          await fresh();
          // 60 schedules over 6 workspaces, made at moments spread over a day, on the three instances
          const model = new Map<string, { every: Schedule["every"]; next: number }>();
          for (let n = 0; n < 60; n++) {
            now = START + n * 1_437_001;
            const every = EVERY[n % 3]!;
            const s = await schedules[n % 3]!.create(input(`ws_${n % 6}`, every, n));
            model.set(s.id, { every, next: Date.parse(s.next_run_at) });
          }
          let claims = 0;
          for (const step of steps) {
            now += step;
            const expected: string[] = [];
            for (const [id, m] of model)
              if (m.next <= now) {
                expected.push(`${id} ${isoSeconds(m.next)}`);
                m.next = nextRunAfter(isoSeconds(m.next), m.every, now);
              }
            // each instance claims until it finds nothing, starting each run it claimed, all at once
            const got = await Promise.all(
              schedules.map(async (s, i) => {
                const mine: string[] = [];
                for (;;) {
                  const batch = await s.claimDue(limit);
                  for (const r of batch) {
                    mine.push(`${r.id} ${r.next_run_at}`);
                    await s.started({
                      id: r.id,
                      runId: `run_${i}_${claims++}`,
                      handle: "h",
                      every: r.every,
                      nextRunAt: r.next_run_at,
                    });
                  }
                  if (batch.length === 0) return mine;
                }
              }),
            );
            const all = got.flat();
            expect(new Set(all).size, "no schedule claimed twice for one run").toBe(all.length);
            expect(all.sort(), "each due run claimed once, none missed").toEqual(expected.sort());
            expect(await schedules[0]!.due(), "nothing left due").toEqual([]);
          }
          for (const [id, m] of model) expect((await schedules[2]!.get(id))!.next_run_at).toBe(isoSeconds(m.next));
        },
      ),
      { numRuns: 8 },
    );
  }, 180_000);

  it("instances that claim at the very same moment never share a schedule", async () => {
    await fresh();
    const ids: string[] = [];
    for (let n = 0; n < 120; n++) ids.push((await schedules[0]!.create(input(`ws_${n}`, "1h", n))).id);
    now += 3_600_000;
    // 30 claims of 3 at once over 120 due schedules: 90 claimed, each by one claim
    const batches = await Promise.all(Array.from({ length: 30 }, (_, j) => schedules[j % 3]!.claimDue(3)));
    const claimed = batches.flat().map((r) => r.id);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed).toHaveLength(90);
    expect(await schedules[1]!.due()).toHaveLength(30);
  });

  it("20 a workspace: 12 creates at once from three instances on a workspace of 15 make 5", async () => {
    await fresh();
    for (let w = 0; w < 6; w++) {
      const workspace = `ws_full_${w}`;
      for (let n = 0; n < 15; n++) await schedules[0]!.create(input(workspace, "1d", n));
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, (_, j) => schedules[j % 3]!.create(input(workspace, "6h", j))),
      );
      const made = results.filter((r) => r.status === "fulfilled");
      const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
      expect(made).toHaveLength(5);
      expect(refused).toHaveLength(7);
      for (const e of refused) {
        expect(e).toBeInstanceOf(ScheduleLimitReached);
        expect(e).toMatchObject({ workspaceId: workspace, limit: SCHEDULES_PER_WORKSPACE });
      }
      expect(await schedules[1]!.count(workspace)).toBe(SCHEDULES_PER_WORKSPACE);
      expect(await schedules[2]!.list(workspace)).toHaveLength(SCHEDULES_PER_WORKSPACE);
    }
    // another workspace is not held up by a full one
    await expect(schedules[0]!.create(input("ws_other", "1h"))).resolves.toMatchObject({ status: "active" });
  });

  it("a claimed run refused or not tried is due again at the next tick, on any instance; one started is not", async () => {
    await fresh();
    const [a, b, c] = [0, 1, 2].map((n) => input("ws_t", "6h", n));
    const ids: string[] = [];
    for (const x of [a, b, c]) ids.push((await schedules[0]!.create(x!)).id);
    now += 6 * 3_600_000 + 500;
    const claimed = await schedules[0]!.claimDue();
    expect(claimed.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(await schedules[1]!.claimDue()).toEqual([]);
    await schedules[0]!.pause(ids[0]!, "insufficient_balance");
    expect(await schedules[0]!.release(ids[1]!)).toBe(true);
    expect(await schedules[0]!.release(ids[1]!)).toBe(false);
    const r2 = claimed.find((r) => r.id === ids[2])!;
    await schedules[0]!.started({ id: r2.id, runId: "run_x", handle: "h_x", every: "6h", nextRunAt: r2.next_run_at });
    const again = await schedules[2]!.claimDue();
    expect(again.map((r) => [r.id, r.status, r.paused_reason, r.next_run_at]).sort()).toEqual(
      [
        [ids[0], "paused", "insufficient_balance", isoSeconds(START + EVERY_MS["6h"])],
        [ids[1], "active", null, isoSeconds(START + EVERY_MS["6h"])],
      ].sort(),
    );
    expect((await schedules[1]!.get(ids[2]!))!.next_run_at).toBe(isoSeconds(START + 2 * EVERY_MS["6h"]));
  });
});
