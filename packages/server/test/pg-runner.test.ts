/**
 * D108: charged calls run end to end on PostgreSQL with three instances — admitted by the engine's `chargeCall`
 * over `PgCalls`, run by `PgRunner` on the simulated platforms — as the HTTP layer will run them: an instance that
 * closes mid-run, whose run another one ends broken with nothing charged. The ledger's identity holds after every
 * test. (What the embedded store does too, an answer within the wait replayed on any instance, a 202 whose handle
 * reads on every instance, a provider that crashes, is the storage suite's: storage/runs.test.ts.) Needs PostgreSQL.
 */
import { Catalog, chargeCall, planPlatforms, quoteOf, Simulator, type CallLimits, type CallPlan } from "@sdgw/engine";
import { DEFAULT_URLS } from "@sdgw/validators";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PgCalls } from "../src/pg/calls.ts";
import { PgRunner } from "../src/pg/runner.ts";
import { PgRuns } from "../src/pg/runs.ts";
import type { HttpAnswer, RunContext } from "../src/systems/runs.ts";
import { pgAccount, testDatabase, type TestDatabase } from "./pg-helpers.ts";

const NOW = Date.parse("2026-11-25T09:00:00Z");
const NO_LIMITS: CallLimits<RunContext> = {
  failureBlock: () => null,
  keyCall: () => null,
  startRun: () => null,
  endRun: () => undefined,
};

let t: TestDatabase;
const made: string[] = [];
const runners: PgRunner[] = [];

beforeAll(async () => {
  t = await testDatabase("runner");
});
afterAll(async () => {
  await Promise.all(runners.map((r) => r.close().catch(() => undefined)));
  await t?.drop();
});
afterEach(async () => {
  const audit = instance(0, {}).calls;
  for (const id of made.splice(0)) {
    const a = await audit.audit(id);
    expect(a.balance, `balance of ${id} = grants − charges`).toBe(a.grants - a.charges);
    expect(a.held, `held of ${id} = Σ holds held`).toBe(a.holdsHeld);
  }
});

/** An instance on pool `i`: its simulator (with `knobs`), lease, charged calls and runner. */
function instance(i: number, o: { waitMs?: number; latencyMs?: number; crash?: boolean }) {
  const db = t.instances[i]!;
  const runs = new PgRuns({ db, now: () => NOW, leaseMs: 1500, retentionMs: 86_400_000, idempotencyTtlMs: 86_400_000 });
  const calls = new PgCalls({ db, now: () => NOW, idempotencyTtlMs: 86_400_000, freeCalls: 100, owner: runs.owner });
  const knobs = { "*": { latencyMs: o.latencyMs ?? 0, ...(o.crash ? { fault: "crash" as const } : {}) } };
  const simulator = new Simulator({ now: () => NOW, anchor: NOW, knobs });
  const runner = new PgRunner({
    calls,
    runs,
    limits: { endRun: () => undefined, recordFailure: () => undefined },
    providers: simulator.providers,
    config: { waitMs: o.waitMs ?? 5000, providerTimeoutMs: 10_000, pollAfterSeconds: 1, urls: DEFAULT_URLS },
    now: () => NOW,
    log: () => undefined,
  });
  runners.push(runner);
  return { runs, calls, runner, catalog: new Catalog(simulator.providers) };
}
type Instance = ReturnType<typeof instance>;

async function account(credits: number) {
  const a = await pgAccount(t.instances[0]!, NOW);
  await instance(0, {}).calls.grant(a.id, credits);
  made.push(a.id);
  return a;
}

function plan(at: Instance, input: Record<string, unknown>): CallPlan {
  const planned = planPlatforms(at.catalog, "search", { count: 5, ...input }, "search");
  if (!planned.ok) throw new Error(JSON.stringify(planned));
  return planned.plan;
}

/** `GET /v1/search` as the HTTP layer will serve it on instance `at`. */
async function search(at: Instance, ctx: RunContext, input: Record<string, unknown>, idem?: string) {
  const p = plan(at, input);
  const quote = quoteOf(p);
  const runId = `run_${Math.random().toString(36).slice(2)}`;
  const withKey = idem === undefined ? ctx : { ...ctx, idemKey: idem };
  return chargeCall<RunContext, HttpAnswer>(
    { store: at.calls, limits: NO_LIMITS },
    {
      caller: withKey,
      keyId: ctx.key.id,
      runId,
      operationId: "search",
      params: input,
      idempotencyKey: idem,
      price: { credits: quote.credits, calls: quote.calls, maxCost: undefined },
      start: () => at.runner.execute(runId, withKey, p, quote.credits),
    },
  );
}

const json = (a: HttpAnswer) => JSON.parse(String(a.body)) as Record<string, any>;
const answered = (o: Awaited<ReturnType<typeof search>>) => {
  if (o.kind === "refused") throw new Error(JSON.stringify(o.refusal));
  return o.answer;
};

describe("charged calls run on PostgreSQL (D108)", () => {
  it("an instance that closes mid-run: another ends its run broken, nothing charged; its late end writes nothing", async () => {
    const going = instance(0, { waitMs: 0, latencyMs: 600 });
    const stays = instance(2, {});
    await Promise.all([going.runner.start(1500), stays.runner.start(1500)]);
    const { id, ctx } = await account(10);
    const started = answered(await search(going, ctx, { platform: "x", query: "slow close" }, "k-close"));
    const handle = json(started)["handle"] as string;
    await going.runner.close(); // its lease ends now; its run still goes on in memory
    await stays.runs.recover();
    const read = await stays.runner.read({ handle, key: ctx.key, requestId: "req_r" });
    expect([read.status, json(read)["code"]]).toEqual([500, "internal_error"]);
    await going.runner.drain(); // the run ends on the closed instance: it finds it ended elsewhere
    expect(await stays.calls.audit(id)).toMatchObject({ balance: 10, held: 0, charges: 0 });
    const again = answered(await search(stays, ctx, { platform: "x", query: "slow close" }, "k-close"));
    expect([again.status, json(again)["billing"]["cost"]]).toEqual([200, 1]);
  });
});
