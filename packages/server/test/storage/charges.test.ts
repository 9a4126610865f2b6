/**
 * The contract of the engine's storage port (`ChargePorts`: `CallStore` and its limits) on every engine: a charged
 * call's Idempotency-Key claimed by exactly one call, replays of its first answer, conflicts; holds that never
 * overdraw, under a key's daily limit too; a hold settled once, the rest released; the pause (D60); the billing
 * numbers; and the ledger's identity after every test. Written once, run on the embedded store (one gateway) and on
 * PostgreSQL (three gateways on one database, each call on one of them in turn: what the contract says holds
 * across instances there). PostgreSQL-only behaviour (migrations, a database that does not answer, a hold ended by
 * several instances at once) stays in pg-calls.test.ts.
 *
 * Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; CI's `.ci/run` starts it): without it this file fails,
 * it does not skip.
 */
import { chargeCall, type ChargeOutcome } from "@sdgw/engine";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HttpAnswer, RunContext } from "../../src/runs/types.ts";
import { adapters, NO_LIMITS, type Storage } from "./adapters.ts";

const NOW = Date.parse("2026-11-25T09:00:00Z");

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

describe.each(adapters)("charged calls through the storage port ($engine)", (adapter) => {
  let s: Storage;
  beforeAll(async () => {
    s = await adapter.open("charges", { now: NOW });
  });
  afterAll(() => s?.close());
  afterEach(() => s.expectLedgerIdentity());

  /**
   * One charged call on instance `i`, as the server makes it: admitted by the engine over the port, then its run
   * settles the hold (charging `credits`) and keeps its answer under the Idempotency-Key.
   */
  async function call(
    i: number,
    ctx: RunContext,
    o: { credits: number; idem?: string; runs: string[]; params?: unknown },
  ) {
    const at = s.on(i);
    const store = at.calls.store;
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
          const { charged, balance } = await at.settle(runId, o.credits, 1);
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

  it("60 concurrent calls on one Idempotency-Key: one runs and is charged once; the rest 409, then the same bytes", async () => {
    const { id, ctx } = await s.account(50);
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
    expect(await s.on(2).audit(id)).toMatchObject({ balance: 47, charges: 3, held: 0 });
  });

  it("100 concurrent calls of 1 credit on a balance of 10: exactly 10 run and are charged, 90 are refused", async () => {
    const { id, ctx } = await s.account(10);
    const runs: string[] = [];
    const outs = await Promise.all(Array.from({ length: 100 }, (_, i) => call(i, ctx, { credits: 1, runs })));
    expect(kinds(outs)).toEqual({ answered: 10, insufficient_balance: 90 });
    expect(runs).toHaveLength(10);
    expect(await s.on(1).audit(id)).toEqual({ balance: 0, grants: 10, charges: 10, held: 0, holdsHeld: 0 });
  });

  it("a key's daily limit holds across instances: 20 concurrent calls of 1 credit under a limit of 5 → 5 run", async () => {
    const { ctx } = await s.account(100, { keyDailyLimit: 5 });
    const runs: string[] = [];
    const outs = await Promise.all(Array.from({ length: 20 }, (_, i) => call(i, ctx, { credits: 1, runs })));
    expect(kinds(outs)).toEqual({ answered: 5, daily_limit_reached: 15 });
  });

  it("a pause set on one instance stops charged calls on all of them (D60); a quote still answers", async () => {
    const { ctx } = await s.account(10);
    await s.on(0).ports.service.pause("maintenance until 10:00");
    const runs: string[] = [];
    const refused = await call(1, ctx, { credits: 1, runs });
    expect(refused).toEqual({
      kind: "refused",
      refusal: { kind: "paused", message: "Calls are paused: maintenance until 10:00" },
    });
    expect(await s.on(2).ports.service.unpause()).toBe(true);
    expect(await s.on(2).ports.service.unpause()).toBe(false);
    expect((await call(2, ctx, { credits: 1, runs })).kind).toBe("answered");
  });

  it("the billing numbers count what every instance holds, under the key's daily limit when it has one", async () => {
    const { id, ctx } = await s.account(30, { keyDailyLimit: 12 });
    const plain = await s.account(30);
    expect(await s.on(1).calls.store.hold(ctx, { runId: `run_v1_${id}`, credits: 4, calls: 1 })).toBeNull();
    expect(await s.on(2).calls.store.hold(ctx, { runId: `run_v2_${id}`, credits: 3, calls: 1 })).toBeNull();
    await s.on(2).settle(`run_v2_${id}`, 2, 1);
    expect(await s.on(0).ports.ledger.view(id, ctx.key)).toEqual({
      balance: 28,
      todaySpend: 6, // 2 charged + 4 held
      held: 4,
      dailyLimit: 12,
      dailyRemaining: 6,
    });
    expect(await s.on(1).ports.ledger.view(plain.id, plain.ctx.key)).toEqual({
      balance: 30,
      todaySpend: 0,
      held: 0,
      dailyLimit: null,
      dailyRemaining: null,
    });
    expect(await s.on(2).ports.ledger.dailyCharges(id, "2026-11-01")).toEqual([{ day: "2026-11-25", credits: 2 }]);
    await s.on(1).settle(`run_v1_${id}`, 0, 0);
  });

  it("a hold settles once: it charges at most what was held, releases the rest; a second end charges nothing more", async () => {
    for (const [quote, charge] of [
      [5, 3],
      [5, 9],
      [7, 0],
    ] as const) {
      const { id, ctx } = await s.account(40);
      const runId = `run_settle_${id}`;
      expect(await s.on(0).calls.store.hold(ctx, { runId, credits: quote, calls: 1 })).toBeNull();
      const first = await s.on(1).settle(runId, charge, 1);
      expect(first).toEqual({ charged: Math.min(charge, quote), balance: 40 - Math.min(charge, quote) });
      await s.on(2).settle(runId, quote, 1);
      expect(await s.on(0).audit(id)).toMatchObject({
        balance: 40 - first.charged,
        charges: first.charged,
        held: 0,
      });
    }
  });
});
