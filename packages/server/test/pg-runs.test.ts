/**
 * D108: runs that outlive an instance, on PostgreSQL with three instances: a handle made on one reads on the others;
 * a run ends exactly once; when an instance stops renewing its lease, the others end its runs broken, release its
 * holds and free its Idempotency-Keys exactly once, whichever recover at the same moment, and its late ends charge
 * nothing. The ledger's identity holds after every test. Needs PostgreSQL (see pg-helpers.ts).
 */
import { chargeCall, type CallLimits } from "@sdgw/engine";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PgCalls } from "../src/storage/postgres/calls.ts";
import { PgRuns, type RunEnding } from "../src/storage/postgres/runs.ts";
import type { RunContext } from "../src/runs/types.ts";
import { pgAccount, testDatabase, type TestDatabase } from "./pg-helpers.ts";

const NOW = Date.parse("2026-11-25T09:00:00Z");
/** Long enough that a loaded machine renews in time; the test waits it out once. */
const LEASE_MS = 1500;
const NO_LIMITS: CallLimits<RunContext> = {
  failureBlock: () => null,
  keyCall: () => null,
  startRun: () => null,
  endRun: () => undefined,
};

let t: TestDatabase;
/** One instance: its owner of runs, and its charged calls carrying that owner. */
interface Instance {
  runs: PgRuns;
  calls: PgCalls;
}
const made: string[] = [];

beforeAll(async () => {
  t = await testDatabase("runs");
});
afterAll(() => t?.drop());
afterEach(async () => {
  const audit = instance(0).calls;
  for (const id of made.splice(0)) {
    const a = await audit.audit(id);
    expect(a.balance, `balance of ${id} = grants − charges`).toBe(a.grants - a.charges);
    expect(a.held, `held of ${id} = Σ holds held`).toBe(a.holdsHeld);
  }
});

/** A new instance on pool `i` (a new owner each time, as a restarted process). */
function instance(i: number): Instance {
  const db = t.instances[i]!;
  const runs = new PgRuns({
    db,
    now: () => NOW,
    leaseMs: LEASE_MS,
    retentionMs: 86_400_000,
    idempotencyTtlMs: 86_400_000,
  });
  const calls = new PgCalls({ db, now: () => NOW, idempotencyTtlMs: 86_400_000, freeCalls: 100, owner: runs.owner });
  return { runs, calls };
}

async function account(credits: number) {
  const a = await pgAccount(t.instances[0]!, NOW);
  await instance(0).calls.grant(a.id, credits);
  made.push(a.id);
  return a;
}

/** Admits a charged call on `at` (claim and hold); the run is then the test's to persist, finish or leave. */
async function admit(at: Instance, ctx: RunContext, credits: number, idem?: string) {
  const runId = `run_${Math.random().toString(36).slice(2)}`;
  const out = await chargeCall<RunContext, string>(
    { store: at.calls as never, limits: NO_LIMITS },
    {
      caller: ctx,
      keyId: ctx.key.id,
      runId,
      operationId: "search",
      params: { q: idem ?? runId },
      idempotencyKey: idem,
      price: { credits, calls: 1, maxCost: undefined },
      start: () => runId,
    },
  );
  if (out.kind !== "answered") throw new Error(`not admitted: ${JSON.stringify(out)}`);
  return runId;
}

const ending =
  (runId: string) =>
  ({ charged, balance }: { charged: number; balance: number }): RunEnding => {
    const body = Buffer.from(JSON.stringify({ runId, charged, balance }));
    return {
      sent: { status: 200, headers: { "content-type": "application/json" }, body },
      kept: { headers: {}, answer: body },
    };
  };

const persisted = (runId: string, ctx: RunContext, handle: string) => ({
  id: runId,
  handle,
  keyId: ctx.key.id,
  accountId: ctx.account.id,
  workspaceId: ctx.key.workspace_id,
  operation: "search",
  requestId: ctx.requestId,
  shape: "single",
  quote: 4,
  waves: 1,
});

describe("runs on PostgreSQL across instances (D108)", () => {
  it("a handle made on one instance reads on the others, running then finished; its end is charged once", async () => {
    const [a, b, c] = [instance(0), instance(1), instance(2)];
    await Promise.all([a.runs.register(), b.runs.register(), c.runs.register()]);
    const { id, ctx } = await account(20);
    const runId = await admit(a, ctx, 4, "k-handle");
    await a.runs.persist(persisted(runId, ctx, "h_cross_1"));
    const running = await b.runs.read("h_cross_1");
    expect([running?.state, running?.owner === a.runs.owner, await c.runs.isLive(running!.owner!)]).toEqual([
      "running",
      true,
      true,
    ]);
    const slot = { keyId: ctx.key.id, idemKey: "k-handle" };
    const ends = await Promise.all([
      a.runs.finish(runId, { amount: 3, calls: 1, slot, build: ending(runId) }),
      b.runs.finish(runId, { amount: 3, calls: 1, slot, build: ending(runId) }), // a second end of the same run
    ]);
    expect(ends.map((e) => e.kind).sort()).toEqual(["ended_elsewhere", "finished"]);
    const read = await c.runs.read("h_cross_1");
    expect([read?.state, read?.charged, JSON.parse(String(read?.answer))]).toEqual([
      "finished",
      3,
      { runId, charged: 3, balance: 17 },
    ]);
    // Its Idempotency-Key replays the answer on any instance.
    const again = await b.calls.claim(slot, { operationId: "search", params: { q: "k-handle" }, runId: "run_again" });
    expect(again.kind === "replay" && String(again.answer.body)).toBe(
      JSON.stringify({ runId, charged: 3, balance: 17 }),
    );
    expect(await a.calls.audit(id)).toMatchObject({ balance: 17, charges: 3, held: 0 });
  });

  it("D129: a run without a row ends in one statement, once; it writes nothing when the hold would charge otherwise", async () => {
    const [a, b] = [instance(0), instance(1)];
    await Promise.all([a.runs.register(), b.runs.register()]);
    const { id, ctx } = await account(20);
    const runId = await admit(a, ctx, 4, "k-once");
    const slot = { keyId: ctx.key.id, idemKey: "k-once" };
    const sent = (charged: number) => ({
      status: 200,
      headers: { "content-type": "application/json" },
      before: Buffer.from(`{"charged":${charged},"balance":`),
      after: Buffer.from("}"),
    });
    // More than the hold holds: the answer would say a charge the hold cannot give. Nothing is written.
    expect(
      await a.runs.finishAtOnce(runId, { charged: 5, calls: 1, operation: "search", slot, sent: sent(5) }),
    ).toBeNull();
    expect(await a.calls.audit(id)).toMatchObject({ balance: 20, held: 4, charges: 0 });
    // Two ends at once on two instances: one writes, the other finds the hold ended and writes nothing.
    const ends = await Promise.all([
      a.runs.finishAtOnce(runId, { charged: 3, calls: 1, operation: "search", slot, sent: sent(3) }),
      b.runs.finishAtOnce(runId, { charged: 3, calls: 1, operation: "search", slot, sent: sent(3) }),
    ]);
    expect(ends.filter((e) => e !== null)).toEqual([{ charged: 3, balance: 17 }]);
    expect(await a.calls.audit(id)).toMatchObject({ balance: 17, charges: 3, held: 0 });
    // The kept answer is the two parts around the balance PostgreSQL wrote, and replays on any instance.
    const again = await b.calls.claim(slot, { operationId: "search", params: { q: "k-once" }, runId: "run_again" });
    expect(again.kind === "replay" && String(again.answer.body)).toBe('{"charged":3,"balance":17}');
    // The usual end, asked after, finds the run ended elsewhere.
    expect((await a.runs.finish(runId, { amount: 3, calls: 1, slot, build: ending(runId) })).kind).toBe(
      "ended_elsewhere",
    );
  });

  it("an instance that stops renewing: one other ends its runs broken, releases its holds, frees its keys, once", async () => {
    const [dead, b, c] = [instance(0), instance(1), instance(2)];
    await Promise.all([dead.runs.register(), b.runs.register(), c.runs.register()]);
    const { id, ctx } = await account(50);
    // Five runs on the instance that dies: three answered 202 (rows), two inline (holds and claims only).
    const withRows = await Promise.all([1, 2, 3].map((n) => admit(dead, ctx, 4, `dead-${n}`)));
    for (const [n, runId] of withRows.entries()) await dead.runs.persist(persisted(runId, ctx, `h_dead_${n}`));
    const inline = await Promise.all([4, 5].map((n) => admit(dead, ctx, 4, `dead-${n}`)));
    expect(await b.calls.audit(id)).toMatchObject({ held: 20 });
    // The live ones renew; the dead one does not (after this last renewal). Until its lease runs out nothing is
    // recovered.
    await dead.runs.renew();
    expect(await b.runs.recover()).toEqual([]);
    await new Promise((r) => setTimeout(r, LEASE_MS + 150));
    await Promise.all([b.runs.renew(), c.runs.renew()]);
    const rounds = await Promise.all([b.runs.recover(), c.runs.recover(), b.runs.recover(), c.runs.recover()]);
    expect(rounds.flat().sort()).toEqual([...withRows].sort()); // each run ended once, by one of them
    for (const n of [0, 1, 2]) expect((await c.runs.read(`h_dead_${n}`))?.state).toBe("broken");
    expect(await b.calls.audit(id)).toMatchObject({ balance: 50, charges: 0, held: 0 });
    // Its keys are free: the same call starts anew on another instance.
    const fresh = await b.calls.claim(
      { keyId: ctx.key.id, idemKey: "dead-4" },
      { operationId: "search", params: { q: "dead-4" }, runId: "run_fresh" },
    );
    expect(fresh.kind).toBe("claimed");
    // The dead instance comes back: its lease is gone, and its late ends write and charge nothing.
    expect(await dead.runs.renew()).toBe(false);
    for (const runId of [...withRows, ...inline]) {
      const end = await dead.runs.finish(runId, { amount: 4, calls: 1, build: ending(runId) });
      expect(end.kind, runId).toBe("ended_elsewhere");
    }
    expect(await b.calls.audit(id)).toMatchObject({ balance: 50, charges: 0, held: 0 });
    await b.calls.release({ keyId: ctx.key.id, idemKey: "dead-4" });
  });

  it("the runs of a live instance are left alone by the others' recovery", async () => {
    const [a, b] = [instance(1), instance(2)];
    await Promise.all([a.runs.register(), b.runs.register()]);
    const { ctx } = await account(10);
    const runId = await admit(a, ctx, 2);
    await a.runs.persist(persisted(runId, ctx, "h_live"));
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, LEASE_MS / 3));
      expect(await a.runs.renew()).toBe(true);
      expect(await b.runs.recover()).toEqual([]);
    }
    const end = await a.runs.finish(runId, { amount: 2, calls: 1, build: ending(runId) });
    expect(end).toMatchObject({ kind: "finished", charged: 2 });
  });

  it("answers kept under a handle, the console's results and the lookups read the same on every instance", async () => {
    const [a, b] = [instance(0), instance(1)];
    await Promise.all([a.runs.register(), b.runs.register()]);
    const { ctx } = await account(10);
    const key = { id: ctx.key.id, account_id: ctx.account.id, workspace_id: ctx.key.workspace_id };
    const answer = JSON.stringify({ big: "答".repeat(10) });
    await a.runs.keep({ handle: "h_kept", key, requestId: "req_kept", operation: "search", headers: {}, answer });
    const kept = await b.runs.read("h_kept");
    expect([kept?.state, kept?.charged, String(kept?.answer)]).toEqual(["finished", 0, answer]);
    const runId = await admit(a, ctx, 3, "k-lookup");
    await a.runs.persist(persisted(runId, ctx, "h_lookup"));
    expect(await b.runs.operationOf("h_lookup", ctx.key.id)).toBe("search");
    expect(await b.runs.operationOf("h_lookup", "key_other")).toBeNull();
    expect(await b.runs.handleOfIdempotencyKey(ctx.key.id, "k-lookup")).toBe("h_lookup");
    await a.runs.finish(runId, { amount: 3, calls: 1, build: ending(runId) });
    const inline = await admit(b, ctx, 1);
    await b.runs.finish(inline, { amount: 1, calls: 1, operation: "detail", build: ending(inline) }); // answered at once: its charge only
    const results = await b.runs.consoleResults(ctx.account.id, ctx.key.id);
    // the charge of a call answered at once keeps its operation's name (the ledger row's note)
    expect(results.find((r) => r.handle === null)?.operation).toBe("detail");
    expect(results.map((r) => [r.handle, r.state, r.charged])).toEqual(
      expect.arrayContaining([
        ["h_kept", "finished", 0],
        ["h_lookup", "finished", 3],
        [null, "finished", 1],
      ]),
    );
    expect(results).toHaveLength(3);
    expect(results.every((r) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(r.started_at))).toBe(true);
  });

  it("a run broken on the server's side: hold released, its handle broken, its key free; nothing charged", async () => {
    const a = instance(0);
    await a.runs.register();
    const { id, ctx } = await account(10);
    const runId = await admit(a, ctx, 5, "k-broken");
    await a.runs.persist(persisted(runId, ctx, "h_broken"));
    await a.runs.breakRun(runId, { keyId: ctx.key.id, idemKey: "k-broken" });
    expect((await a.runs.read("h_broken"))?.state).toBe("broken");
    expect(await a.calls.audit(id)).toMatchObject({ balance: 10, held: 0, charges: 0 });
    const again = await a.calls.claim(
      { keyId: ctx.key.id, idemKey: "k-broken" },
      { operationId: "search", params: { q: "k-broken" }, runId: "run_b2" },
    );
    expect(again.kind).toBe("claimed");
    await a.calls.release({ keyId: ctx.key.id, idemKey: "k-broken" });
    await a.runs.retire();
  });
});
