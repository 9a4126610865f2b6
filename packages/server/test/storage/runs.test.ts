/**
 * The runs system's contract (`RunsPort` with the engine's storage port) on every engine: charged calls admitted by
 * the engine's `chargeCall` over the gateway's `calls` and run by its `runs` on the simulated platforms, as the HTTP
 * layer runs them: an answer within the wait, charged once and replayed on any instance; a 202 whose handle reads on
 * every instance (only with its key), running then finished, charged once; a provider that crashes (hold released,
 * 500, its key free); and answers kept under a handle. Written once, run on the embedded store (one gateway) and on
 * PostgreSQL (three gateways on one database). The ledger's identity holds after every test.
 *
 * Leases, written once too, on two instances of each (two gateways on one SQLite file; two on one PostgreSQL
 * database): an instance that closes with a run in flight ends its lease, and the other ends the run broken,
 * nothing charged, its late end writing nothing. What each engine does besides (a process killed, leases that lapse,
 * recovery at the same moment on several instances, a database made before owners) stays in pg-runs, pg-instances
 * and owners.test.ts. Needs
 * PostgreSQL on 127.0.0.1:5432 (user postgres, trust; CI's `.ci/run` starts it): without it this file fails, it
 * does not skip.
 */
import { chargeCall, planPlatforms, quoteOf, type CallPlan } from "@sdgw/engine";
import { validateSearchEnvelope } from "@sdgw/validators";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HttpAnswer, RunContext } from "../../src/runs/types.ts";
import { adapters, NO_LIMITS, type Instance, type Storage } from "./adapters.ts";

const NOW = Date.parse("2026-11-25T09:00:00Z");

const json = (a: HttpAnswer) => JSON.parse(String(a.body)) as Record<string, any>;

function plan(at: Instance, input: Record<string, unknown>): CallPlan {
  const planned = planPlatforms(at.ports.catalog, "search", { count: 5, ...input }, "search");
  if (!planned.ok) throw new Error(JSON.stringify(planned));
  return planned.plan;
}

/** `GET /v1/search` as the HTTP layer serves it on instance `at` (at once 202 with `respondNow`, D174). */
async function search(
  at: Instance,
  ctx: RunContext,
  input: Record<string, unknown>,
  idem?: string,
  o: { respondNow?: boolean } = {},
) {
  const p = plan(at, input);
  const quote = quoteOf(p);
  const runId = `run_${Math.random().toString(36).slice(2)}`;
  const withKey = {
    ...ctx,
    ...(idem === undefined ? {} : { idemKey: idem }),
    ...(o.respondNow ? { respondNow: true } : {}),
  };
  return chargeCall<RunContext, HttpAnswer>(
    { store: at.calls.store, limits: NO_LIMITS },
    {
      caller: withKey,
      keyId: ctx.key.id,
      runId,
      operationId: "search",
      params: input,
      idempotencyKey: idem,
      price: { credits: quote.credits, calls: quote.calls, maxCost: undefined },
      start: () => at.ports.runs.execute(runId, withKey, p, quote.credits),
    },
  );
}

const answered = (o: Awaited<ReturnType<typeof search>>) => {
  if (o.kind === "refused") throw new Error(JSON.stringify(o.refusal));
  return o.answer;
};

/** Reads `handle` on `at` until it no longer answers 202 (bounded). */
async function ended(at: Instance, handle: string, ctx: RunContext): Promise<HttpAnswer> {
  for (let tries = 0; tries < 500; tries++) {
    const a = await at.ports.runs.read({ handle, key: ctx.key, requestId: "req_wait" });
    if (a.status !== 202) return a;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`run ${handle} never ended`);
}

describe.each(adapters)("runs through the port ($engine)", (adapter) => {
  let s: Storage;
  beforeAll(async () => {
    s = await adapter.open("runs", {
      now: NOW,
      gateway: { waitMs: 5000, providerTimeoutMs: 10_000, pollAfterSeconds: 1, simulator: { anchor: NOW } },
    });
  });
  afterAll(() => s?.close());
  afterEach(async () => {
    for (const i of s.instances) i.ports.simulator!.resetKnobs();
    await s.expectLedgerIdentity();
  });

  it("an answer within the wait: a valid envelope, charged once; its key replays the same bytes on any instance", async () => {
    const { id, ctx } = await s.account(10);
    const first = answered(await search(s.on(0), ctx, { platform: "x", query: "露营" }, "k-inline"));
    expect(first.status).toBe(200);
    const body = json(first);
    expect(validateSearchEnvelope(body)).toMatchObject({ ok: true });
    expect([body["status"], body["billing"]["cost"], body["billing"]["balance"]]).toEqual(["ok", 1, 9]);
    await s.on(0).ports.durable();
    const again = await search(s.on(1), ctx, { platform: "x", query: "露营" }, "k-inline");
    expect(again.kind).toBe("replayed");
    expect(String((again as { answer: HttpAnswer }).answer.body)).toBe(String(first.body));
    expect(await s.on(0).audit(id)).toMatchObject({ balance: 9, charges: 1, held: 0 });
  });

  it("a 202 on one instance: its handle reads on the others (only with its key), running and then finished, charged once", async () => {
    const [slow, b, c] = [s.on(0), s.on(1), s.on(2)];
    slow.ports.simulator!.setKnobs("*", { latencyMs: 300 });
    const { id, ctx } = await s.account(10);
    const input = { platforms: ["x", "reddit"], query: "slow" };
    const started = answered(await search(slow, ctx, input, "k-202", { respondNow: true }));
    expect(started.status).toBe(202);
    const handle = json(started)["handle"] as string;
    const read = (at: Instance) => at.ports.runs.read({ handle, key: ctx.key, requestId: "req_read" });
    expect((await read(b)).status).toBe(202); // its instance is live: it still runs
    expect((await search(c, ctx, input, "k-202")).kind).toBe("refused"); // 409
    expect(await b.ports.runs.handleOfIdempotencyKey(ctx.key.id, "k-202")).toBe(handle);
    expect(await c.ports.runs.operationOf(handle, ctx.key.id)).toBe("search");
    expect(await c.ports.runs.operationOf(handle, "key_other")).toBeNull();
    await ended(slow, handle, ctx);
    const [onB, onC] = [await read(b), await read(c)];
    expect([onB.status, onC.status]).toEqual([200, 200]);
    expect(String(onB.body)).toBe(String(onC.body));
    expect([json(onB)["request_id"], json(onB)["billing"]["cost"]]).toEqual([ctx.requestId, 2]);
    const replay = await search(b, ctx, input, "k-202");
    expect(replay.kind).toBe("replayed");
    expect(await b.audit(id)).toMatchObject({ balance: 8, charges: 2, held: 0 });
    const other = await b.ports.runs.read({ handle, key: { ...ctx.key, id: "key_other" }, requestId: "r" });
    expect([other.status, json(other)["code"]]).toEqual([404, "not_found"]);
  });

  it("a provider that crashes: the run breaks, its hold is released, 500, and its key runs the call again", async () => {
    const crashing = s.on(1);
    crashing.ports.simulator!.setKnobs("*", { fault: "crash" });
    const { id, ctx } = await s.account(10);
    const broken = answered(await search(crashing, ctx, { platform: "x", query: "a" }, "k-crash"));
    expect([broken.status, json(broken)["code"]]).toEqual([500, "internal_error"]);
    expect(await crashing.audit(id)).toMatchObject({ balance: 10, held: 0, charges: 0 });
    crashing.ports.simulator!.resetKnobs();
    const again = answered(await search(s.on(2), ctx, { platform: "x", query: "a" }, "k-crash"));
    expect(again.status).toBe(200);
  });

  it("an answer kept under a handle reads with its key on every instance, free and repeatable; the console lists it", async () => {
    const { id, ctx } = await s.account(10);
    const answer = JSON.stringify({ big: "答".repeat(10) });
    const handle = await s.on(0).ports.runs.keep({
      key: ctx.key,
      requestId: "req_kept",
      operation: "search",
      headers: { "content-type": "application/json" },
      answer,
    });
    expect(handle).toMatch(/^h_/);
    await s.on(0).ports.durable();
    for (const i of [0, 1, 2, 1]) {
      const read = await s.on(i).ports.runs.read({ handle, key: ctx.key, requestId: `req_${i}` });
      expect(read.status).toBe(200);
      expect(String(read.body)).toBe(answer);
    }
    expect(await s.on(1).ports.runs.operationOf(handle, ctx.key.id)).toBe("search");
    const results = await s.on(2).ports.runs.consoleResults(ctx.account.id, ctx.key.name);
    expect(results.map((r) => [r.handle, r.state, r.charged])).toEqual([[handle, "finished", 0]]);
    expect(await s.on(0).audit(id)).toMatchObject({ balance: 10, charges: 0, held: 0 });
  });
});

describe.each(adapters)("leases of runs ($engine)", (adapter) => {
  let s: Storage;
  beforeAll(async () => {
    s = await adapter.open("leases", {
      now: NOW,
      instances: 2,
      gateway: {
        waitMs: 5000,
        providerTimeoutMs: 10_000,
        pollAfterSeconds: 1,
        runLeaseMs: 600,
        simulator: { anchor: NOW },
      },
    });
  });
  afterAll(() => s?.close());
  afterEach(() => s.expectLedgerIdentity());

  it("an instance that closes mid-run ends its lease: the other ends its run broken, nothing charged; its late end writes nothing", async () => {
    const [going, stays] = [s.on(0), s.on(1)];
    going.ports.simulator!.setKnobs("*", { latencyMs: 600 });
    const { id, ctx } = await s.account(10);
    const input = { platform: "x", query: "slow close" };
    const started = answered(await search(going, ctx, input, "k-close", { respondNow: true }));
    expect(started.status).toBe(202);
    const handle = json(started)["handle"] as string;
    await going.ports.durable();
    expect((await stays.ports.runs.read({ handle, key: ctx.key, requestId: "req_r" })).status).toBe(202); // live
    await going.close(); // its lease ends now; its run still goes on in memory
    const read = await ended(stays, handle, ctx); // the other's heartbeat recovers it
    expect([read.status, json(read)["code"]]).toEqual([500, "internal_error"]);
    await going.drain(); // the run ends on the closed instance: it finds it ended elsewhere
    expect(await stays.audit(id)).toMatchObject({ balance: 10, held: 0, charges: 0 });
    const again = answered(await search(stays, ctx, input, "k-close"));
    expect([again.status, json(again)["billing"]["cost"]]).toEqual([200, 1]);
  }, 120_000);
});
