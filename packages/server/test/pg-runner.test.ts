/**
 * D108: charged calls run end to end on PostgreSQL with three instances — admitted by the engine's `chargeCall`
 * over `PgCalls`, run by `PgRunner` on the simulated platforms — as the HTTP layer will run them: an answer within
 * the wait, charged once and replayed on any instance; a 202 whose handle reads on every instance, running then
 * finished; a provider that crashes (hold released, 500, its key free); an instance that closes mid-run, whose run
 * another one ends broken with nothing charged. The ledger's identity holds after every test. Needs PostgreSQL.
 */
import { Catalog, chargeCall, planPlatforms, quoteOf, Simulator, type CallLimits, type CallPlan } from "@sdgw/engine";
import { DEFAULT_URLS, validateSearchEnvelope } from "@sdgw/validators";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PgCalls } from "../src/storage/postgres/calls.ts";
import { PgRunner } from "../src/storage/postgres/runner.ts";
import { PgRuns } from "../src/storage/postgres/runs.ts";
import type { RunContext } from "../src/runs/types.ts";
import type { HttpAnswer } from "../src/runs/types.ts";
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
  it("an answer within the wait: a valid envelope, charged once; its key replays the same bytes on any instance", async () => {
    const [a, b] = [instance(0, {}), instance(1, {})];
    const { id, ctx } = await account(10);
    const first = answered(await search(a, ctx, { platform: "x", query: "露营" }, "k-inline"));
    expect(first.status).toBe(200);
    const body = json(first);
    expect(validateSearchEnvelope(body)).toMatchObject({ ok: true });
    expect([body["status"], body["billing"]["cost"], body["billing"]["balance"]]).toEqual(["ok", 1, 9]);
    const again = await search(b, ctx, { platform: "x", query: "露营" }, "k-inline");
    expect(again.kind).toBe("replayed");
    expect(String((again as { answer: HttpAnswer }).answer.body)).toBe(String(first.body));
    expect(await a.calls.audit(id)).toMatchObject({ balance: 9, charges: 1, held: 0 });
  });

  it("a 202 on one instance: its handle reads on the others, running and then finished, charged once", async () => {
    const slow = instance(0, { waitMs: 0, latencyMs: 300 });
    const [b, c] = [instance(1, {}), instance(2, {})];
    await Promise.all([slow.runner.start(1500), b.runner.start(1500), c.runner.start(1500)]);
    const { id, ctx } = await account(10);
    const started = answered(await search(slow, ctx, { platforms: ["x", "reddit"], query: "slow" }, "k-202"));
    expect(started.status).toBe(202);
    const handle = json(started)["handle"] as string;
    const read = (at: Instance) => at.runner.read({ handle, key: ctx.key, requestId: "req_read" });
    expect((await read(b)).status).toBe(202); // its instance is live: it still runs
    expect((await search(c, ctx, { platforms: ["x", "reddit"], query: "slow" }, "k-202")).kind).toBe("refused"); // 409
    await slow.runner.drain();
    const [onB, onC] = [await read(b), await read(c)];
    expect([onB.status, onC.status]).toEqual([200, 200]);
    expect(String(onB.body)).toBe(String(onC.body));
    expect([json(onB)["request_id"], json(onB)["billing"]["cost"]]).toEqual([ctx.requestId, 2]);
    const replay = await search(b, ctx, { platforms: ["x", "reddit"], query: "slow" }, "k-202");
    expect(replay.kind).toBe("replayed");
    expect(await b.calls.audit(id)).toMatchObject({ balance: 8, charges: 2, held: 0 });
    expect((await b.runner.read({ handle, key: { ...ctx.key, id: "key_other" }, requestId: "r" })).status).toBe(404);
  });

  it("a provider that crashes: the run breaks, its hold is released, 500, and its key runs the call again", async () => {
    const crashing = instance(1, { crash: true });
    const { id, ctx } = await account(10);
    const broken = answered(await search(crashing, ctx, { platform: "x", query: "a" }, "k-crash"));
    expect([broken.status, json(broken)["code"]]).toEqual([500, "internal_error"]);
    expect(await crashing.calls.audit(id)).toMatchObject({ balance: 10, held: 0, charges: 0 });
    const healthy = instance(2, {});
    const again = answered(await search(healthy, ctx, { platform: "x", query: "a" }, "k-crash"));
    expect(again.status).toBe(200);
  });

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
