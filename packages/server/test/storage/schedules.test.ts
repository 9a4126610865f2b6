/**
 * The schedules system's contract (`SchedulesPort`: schedules of `account_watch` and follower readings) on every
 * engine.
 *
 * - **Written once.** Through the port, on the embedded store and on PostgreSQL (three instances, each call on one
 *   of them in turn): making, listing, counting and removing schedules by workspace; due runs started, ended and
 *   paused; follower readings kept and read.
 * - **Differential.** Generated operations run on a fresh embedded store and on PostgreSQL (each operation on one of
 *   three instances in turn): the same answer from each and the same record of every schedule after each.
 *
 * PostgreSQL-only behaviour (several instances claiming at once, the cap of 20 under concurrent creates) is in
 * pg-schedules.test.ts. Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; CI's `.ci/run` installs and starts
 * it): without it this file fails, it does not skip. Its databases are its own, dropped at the end.
 */
import { isoSeconds } from "@sdgw/engine";
import type { Schedule } from "@sdgw/types";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Postgres } from "../../src/storage/postgres/database.ts";
import { PgSchedules, ScheduleLimitReached } from "../../src/storage/postgres/schedules.ts";
import { SCHEDULES_PER_WORKSPACE, type ScheduleRecord } from "../../src/storage/schedules.ts";
import { Schedules } from "../../src/storage/sqlite/schedules.ts";
import { Store } from "../../src/storage/sqlite/store.ts";
import { adapters, poolOf, postgres, type Storage } from "./adapters.ts";
import { EVERY, input } from "./schedule-fixtures.ts";

const START = Date.parse("2026-11-25T09:00:00Z");
const HOUR = 3_600_000;

/** The clock of the differential runs (every instance and the embedded store read it). */
let now = START;
/** Three PostgreSQL instances (gateways on one database, each its own pool) for the differential runs. */
let pgs: Storage;
let instances: Postgres[] = [];
let schedules: PgSchedules[] = [];

beforeAll(async () => {
  pgs = await postgres.open("sch", { time: () => now });
  instances = pgs.instances.map((i) => poolOf(i));
  schedules = instances.map((db) => new PgSchedules({ db, now: () => now }));
});

afterAll(() => pgs?.close());

/** Empties the tables and sets the clock back. */
async function fresh(): Promise<void> {
  await instances[0]!.query("TRUNCATE schedules, follower_readings");
  now = START;
}

// ---------------------------------------------------------------------------------------------------------------
// Written once
// ---------------------------------------------------------------------------------------------------------------

describe.each(adapters)("schedules through the port ($engine)", (adapter) => {
  let s: Storage;
  beforeAll(async () => {
    s = await adapter.open("schedules", { now: START });
  });
  afterAll(() => s?.close());
  const port = (i: number) => s.on(i).ports.schedules;

  it("a schedule made is listed and counted in its workspace only, and removed only from it", async () => {
    s.clock.now = START;
    const made = await port(0).create(input("ws_list", "6h", 1));
    expect(made).toEqual({
      id: made.id,
      tool: "account_watch",
      params: { accounts: ["https://x.com/a1"], range: "7d" },
      every: "6h",
      status: "active",
      created_at: isoSeconds(START),
      next_run_at: isoSeconds(START + 6 * HOUR),
      last_run: null,
    });
    expect(made.id).toMatch(/^sch_[0-9A-Za-z]{10}$/);
    expect(await port(1).count("ws_list")).toBe(1);
    expect(await port(2).list("ws_list")).toEqual([made]);
    expect(await port(0).list("ws_list_other")).toEqual([]);
    expect(await port(1).count("ws_list_other")).toBe(0);
    expect(await port(2).remove("ws_list_other", made.id)).toBe(false);
    expect(await port(0).remove("ws_list", made.id)).toBe(true);
    expect(await port(1).remove("ws_list", made.id)).toBe(false);
    expect(await port(2).count("ws_list")).toBe(0);
  });

  it("counts up to 20 a workspace (the routes refuse the 21st on that count)", async () => {
    for (let n = 0; n < SCHEDULES_PER_WORKSPACE; n++) await port(n).create(input("ws_twenty", "1d", n));
    expect(await port(0).count("ws_twenty")).toBe(SCHEDULES_PER_WORKSPACE);
    expect(await port(1).list("ws_twenty")).toHaveLength(SCHEDULES_PER_WORKSPACE);
  });

  it("due runs: started moves the next run a period on and is the last run; ended records it; a paused one waits with its reason", async () => {
    s.clock.now = START;
    for (const r of await port(0).due()) await port(0).pause(r.id, "insufficient_balance"); // what earlier tests left
    const a = await port(0).create(input("ws_due", "1h", 0));
    const b = await port(1).create(input("ws_due", "1h", 1));
    s.clock.now = START + HOUR + 500;
    const due = await port(2).due();
    expect(due.map((r) => r.id).sort()).toEqual([a.id, b.id].sort());
    const ra = due.find((r) => r.id === a.id)!;
    await port(0).started({ id: a.id, runId: "run_due_a", handle: "h_a", every: "1h", nextRunAt: ra.next_run_at });
    await port(1).pause(b.id, "key_unusable");
    const listed = await port(2).list("ws_due");
    const la = listed.find((r) => r.id === a.id)!;
    const lb = listed.find((r) => r.id === b.id)!;
    expect(la).toMatchObject({ status: "active", next_run_at: isoSeconds(START + 2 * HOUR) });
    expect(la.last_run).toMatchObject({ status: "running" });
    expect(lb).toMatchObject({ status: "paused" });
    await port(0).ended(a.id, "run_due_a", "ok", 3);
    const ended = (await port(1).list("ws_due")).find((r) => r.id === a.id)!;
    expect(ended.last_run).toMatchObject({ status: "ok" });
    expect(ended.next_run_at).toBe(isoSeconds(START + 2 * HOUR));
  });

  it("follower readings: read in time order, the newest 400 of an account, one reading an instant (the last written)", async () => {
    const readings = Array.from({ length: 450 }, (_, j) => ({
      platform: "x",
      accountId: "@port",
      t: START + j * 1000,
      value: (j * 7919) % 100_000,
    }));
    await port(0).recordFollowers(readings.toReversed());
    await port(1).recordFollowers([
      { platform: "x", accountId: "@port", t: START + 449_000, value: 1 },
      { platform: "x", accountId: "@port", t: START + 449_000, value: 2 },
    ]);
    const history = await port(2).followerHistory("x", "@port");
    expect(history).toHaveLength(400);
    expect(history[0]).toEqual({ t: START + 50_000, value: (50 * 7919) % 100_000 });
    expect(history.at(-1)).toEqual({ t: START + 449_000, value: 2 });
    const times = history.map((r) => Number(r.t));
    expect(times).toEqual(times.toSorted((x, y) => x - y));
    expect(await port(0).followerHistory("youtube", "@port")).toEqual([]);
  });
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
