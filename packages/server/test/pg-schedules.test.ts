/**
 * D108: schedules on PostgreSQL (`PgSchedules`), shared by several instances (each its own pool): each due schedule
 * claimed by exactly one instance once per period however many poll together; at most 20 schedules a workspace
 * under concurrent creates. (What both engines do, and the differential test against the embedded store's
 * `Schedules`, is the storage suite's: storage/schedules.test.ts.) Needs
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
import { SCHEDULES_PER_WORKSPACE } from "../src/storage/schedules.ts";
import { EVERY, input } from "./storage/schedule-fixtures.ts";

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
