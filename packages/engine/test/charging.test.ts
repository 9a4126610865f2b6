/**
 * The life of a charged call (`chargeCall`) over a storage port kept in memory here: whatever stage refuses, and in
 * whatever order concurrent calls on one Idempotency-Key arrive, no claim, running slot or hold is left behind by a
 * refused call, only one call runs per key, and every refusal has words a client can act on.
 */
import { errorAnswer, type ServiceUrls } from "@sdgw/validators";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chargeCall, chargeRefusalAnswer, type ChargeCall, type ChargeRefusal, type Price } from "../src/charging.ts";
import type { CallLimits, CallStore, Claim, HoldRefusal, LimitRefusal } from "../src/storage.ts";

const URLS: ServiceUrls = {
  console: "https://console.example/keys",
  billing: "https://console.example/billing",
  signIn: "https://console.example/sign-in",
  status: "https://status.example",
};

/** Which stage refuses (if any), and whether the store answers with promises. */
interface Script {
  paused: boolean;
  full: boolean;
  failureBlock: boolean;
  keyRate: boolean;
  slots: number;
  available: number;
  async: boolean;
  /** The store offers `admit`: the pause, the claim, the answer log and the hold in one atomic step (D128). */
  oneStep?: boolean;
}

/** A storage port and limits in memory that count what they hand out. */
function world(script: Script) {
  const claims = new Map<string, { print: string; answer?: string }>();
  const holds = new Map<string, number>();
  let slotsTaken = 0;
  const later = <T>(v: T): T | Promise<T> => (script.async ? new Promise((r) => setTimeout(() => r(v), 0)) : v);
  const rate: LimitRefusal = { code: "rate_limited", reason: "key_qps", retryAfter: 1, most: 5 };
  const store: CallStore<string, string> = {
    paused: () => later(script.paused ? "maintenance" : null),
    full: () => later(script.full ? "the answer log is full" : null),
    claim(slot, call): Claim<string> | Promise<Claim<string>> {
      const key = `${slot.keyId}/${slot.idemKey}`;
      const print = JSON.stringify([call.operationId, call.params]);
      const found = claims.get(key);
      if (!found) {
        claims.set(key, { print }); // taken at once: concurrent claims see it
        return later({ kind: "claimed" });
      }
      if (found.print !== print) return later({ kind: "conflict" });
      return later(found.answer === undefined ? { kind: "in_progress" } : { kind: "replay", answer: found.answer });
    },
    release: (slot) => void claims.delete(`${slot.keyId}/${slot.idemKey}`),
    complete(slot, answer) {
      const found = claims.get(`${slot.keyId}/${slot.idemKey}`);
      if (found) found.answer = answer;
    },
    hold(_caller, run): HoldRefusal | null | Promise<HoldRefusal | null> {
      let held = 0;
      for (const h of holds.values()) held += h;
      const available = script.available - held;
      if (run.credits > available) return later({ code: "insufficient_balance", balance: script.available, available });
      holds.set(run.runId, run.credits);
      return later(null);
    },
  };
  if (script.oneStep) {
    // One atomic step, as one statement of a database: what the steps would answer, in their order, undone on a
    // refusal.
    store.admit = (r) => {
      if (r.pausable && script.paused) return later({ kind: "paused" as const, message: "maintenance" });
      const key = r.slot && `${r.slot.keyId}/${r.slot.idemKey}`;
      if (key) {
        const print = JSON.stringify([r.call.operationId, r.call.params]);
        const found = claims.get(key);
        if (found && found.print !== print)
          return later({ kind: "claim" as const, claim: { kind: "conflict" as const } });
        if (found)
          return later({
            kind: "claim" as const,
            claim:
              found.answer === undefined
                ? { kind: "in_progress" as const }
                : { kind: "replay" as const, answer: found.answer },
          });
        if (r.hold && script.full) return later({ kind: "full" as const, message: "the answer log is full" });
      }
      if (r.hold) {
        let held = 0;
        for (const h of holds.values()) held += h;
        const available = script.available - held;
        if (r.hold.credits > available)
          return later({
            kind: "hold" as const,
            refusal: { code: "insufficient_balance" as const, balance: script.available, available },
          });
        holds.set(r.call.runId, r.hold.credits);
      }
      if (key) claims.set(key, { print: JSON.stringify([r.call.operationId, r.call.params]) });
      return later({ kind: "admitted" as const });
    };
  }
  const limits: CallLimits<string> = {
    failureBlock: () => later(script.failureBlock ? { code: "free_failure_limit", retryAt: 0 } : null),
    keyCall: () => later(script.keyRate ? rate : null),
    startRun() {
      if (slotsTaken >= script.slots) return later({ ...rate, reason: "workspace_concurrency" as const });
      slotsTaken += 1;
      return later(null);
    },
    endRun: () => {
      slotsTaken -= 1;
    },
  };
  return { ports: { store, limits }, claims, holds, slots: () => slotsTaken };
}

const SCRIPT: fc.Arbitrary<Script> = fc.record({
  paused: fc.boolean(),
  full: fc.boolean(),
  failureBlock: fc.boolean(),
  keyRate: fc.boolean(),
  slots: fc.integer({ min: 0, max: 3 }),
  available: fc.integer({ min: 0, max: 30 }),
  async: fc.boolean(),
  oneStep: fc.boolean(),
});

const PRICE: fc.Arbitrary<Price> = fc.oneof(
  fc.constant("free" as const),
  fc.record({
    credits: fc.integer({ min: 1, max: 20 }),
    calls: fc.integer({ min: 1, max: 5 }),
    maxCost: fc.option(fc.integer({ min: 0, max: 25 }), { nil: undefined }),
  }),
);

function callOf(price: Price, idempotencyKey: string | undefined, runId: string, params: unknown = { q: "a" }) {
  const started: string[] = [];
  const call: ChargeCall<string, string> = {
    caller: "key_1",
    keyId: "key_1",
    runId,
    operationId: "search",
    params,
    idempotencyKey,
    price,
    start: () => {
      started.push(runId);
      return `answer of ${runId}`;
    },
  };
  return { call, started };
}

describe("chargeCall", () => {
  it("answers the same, and leaves the same claims, holds and slots, whether the store admits in one step or in steps (D128)", async () => {
    const PRIOR = fc.constantFrom("none", "running", "answered", "other-params");
    await fc.assert(
      fc.asyncProperty(SCRIPT, PRICE, fc.boolean(), PRIOR, async (script, price, keyed, prior) => {
        const run = async (oneStep: boolean) => {
          const w = world({ ...script, oneStep });
          if (keyed && prior !== "none")
            w.claims.set("key_1/idem-1", {
              print: JSON.stringify(["search", prior === "other-params" ? { q: "b" } : { q: "a" }]),
              ...(prior === "answered" ? { answer: "the first answer" } : {}),
            });
          const { call, started } = callOf(price, keyed ? "idem-1" : undefined, "run_1");
          const out = await chargeCall(w.ports, call);
          return { out, started, claims: [...w.claims], holds: [...w.holds], slots: w.slots() };
        };
        expect(await run(true)).toEqual(await run(false));
      }),
      { numRuns: 600 },
    );
  });

  it("a refused call leaves no claim, running slot or hold, and never runs; an admitted one runs once", async () => {
    await fc.assert(
      fc.asyncProperty(SCRIPT, PRICE, fc.boolean(), async (script, price, keyed) => {
        const w = world(script);
        const { call, started } = callOf(price, keyed ? "idem-1" : undefined, "run_1");
        const out = await chargeCall(w.ports, call);
        if (out.kind === "refused") {
          expect(started).toEqual([]);
          expect(w.claims.size).toBe(0);
          expect(w.slots()).toBe(0);
          expect(w.holds.size).toBe(0);
          return;
        }
        expect(out).toEqual({ kind: "answered", answer: "answer of run_1" });
        expect(started).toEqual(["run_1"]);
        // The run owns what it was given: the claim (a free call's completed with its answer), slot and hold.
        expect(w.claims.size).toBe(keyed ? 1 : 0);
        if (keyed && price === "free") expect(w.claims.get("key_1/idem-1")?.answer).toBe("answer of run_1");
        expect(w.slots()).toBe(price === "free" ? 0 : 1);
        expect(w.holds.size).toBe(price === "free" ? 0 : 1);
        if (price !== "free") expect(w.holds.get("run_1")).toBe(price.credits);
      }),
      { numRuns: 400 },
    );
  });

  it("refuses in D50's order of stages: pause, key, answer log, limits, max_cost_credits, balance", async () => {
    const open: Script = {
      paused: false,
      full: false,
      failureBlock: false,
      keyRate: false,
      slots: 1,
      available: 10,
      async: false,
    };
    const price = { credits: 5, calls: 1, maxCost: 4 };
    const kindOf = async (s: Partial<Script>, p: Price = price) =>
      ((await chargeCall(world({ ...open, ...s }).ports, callOf(p, "k", "run_1").call)) as { refusal?: ChargeRefusal })
        .refusal;
    expect(await kindOf({ paused: true, full: true, keyRate: true })).toMatchObject({ kind: "paused" });
    expect((await kindOf({ paused: true }))?.kind === "paused" && (await kindOf({ paused: true }))).toMatchObject({
      message: "Calls are paused: maintenance",
    });
    expect(await kindOf({ full: true, keyRate: true })).toMatchObject({
      kind: "paused",
      message: "New calls with an Idempotency-Key are paused: the answer log is full",
    });
    expect(await kindOf({ failureBlock: true, keyRate: true })).toMatchObject({
      limit: { code: "free_failure_limit" },
    });
    expect(await kindOf({ keyRate: true, slots: 0 })).toMatchObject({ limit: { reason: "key_qps" } });
    expect(await kindOf({ slots: 0, available: 0 })).toMatchObject({ limit: { reason: "workspace_concurrency" } });
    expect(await kindOf({ available: 0 })).toMatchObject({ kind: "max_cost", credits: 5, maxCost: 4 });
    expect(await kindOf({ available: 4 }, { ...price, maxCost: undefined })).toMatchObject({
      kind: "hold",
      credits: 5,
      hold: { code: "insufficient_balance", available: 4 },
    });
    // A pause stops charged calls only: a quote (free) still answers, as does a paused store's replay.
    expect(await kindOf({ paused: true, full: true }, "free")).toBeUndefined();
  });

  it("runs one call per Idempotency-Key however many arrive at once; the others get 409, then the answer again", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 60 }), fc.boolean(), async (n, async) => {
        const w = world({
          paused: false,
          full: false,
          failureBlock: false,
          keyRate: false,
          slots: 99,
          available: 999,
          async,
        });
        const calls = Array.from({ length: n }, (_, i) => callOf("free", "same", `run_${i}`));
        const outs = await Promise.all(calls.map(({ call }) => chargeCall(w.ports, call)));
        expect(calls.flatMap((c) => c.started)).toHaveLength(1);
        expect(outs.filter((o) => o.kind === "answered")).toHaveLength(1);
        for (const o of outs)
          if (o.kind === "refused") expect(o.refusal).toEqual({ kind: "claim", claim: { kind: "in_progress" } });
        const again = await chargeCall(w.ports, callOf("free", "same", "run_again").call);
        expect(again.kind).toBe("replayed");
        const other = await chargeCall(w.ports, callOf("free", "same", "run_other", { q: "b" }).call);
        expect(other).toEqual({ kind: "refused", refusal: { kind: "claim", claim: { kind: "conflict" } } });
      }),
      { numRuns: 60 },
    );
  });

  it("holds never exceed the balance however many calls arrive at once", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 5 }), async (available, credits) => {
        const w = world({
          paused: false,
          full: false,
          failureBlock: false,
          keyRate: false,
          slots: 999,
          available,
          async: true,
        });
        const price = { credits, calls: 1, maxCost: undefined };
        const outs = await Promise.all(
          Array.from({ length: 30 }, (_, i) => chargeCall(w.ports, callOf(price, undefined, `run_${i}`).call)),
        );
        const ran = outs.filter((o) => o.kind === "answered").length;
        expect(ran).toBe(Math.min(30, Math.floor(available / credits)));
        expect(w.slots()).toBe(ran); // refused calls gave their slots back
      }),
      { numRuns: 60 },
    );
  });

  it("gives the claim back when a free call's run throws, and keeps it when a charged run throws (the run owns it)", async () => {
    const open: Script = {
      paused: false,
      full: false,
      failureBlock: false,
      keyRate: false,
      slots: 9,
      available: 99,
      async: true,
    };
    const boom = () => {
      throw new Error("provider down");
    };
    const free = world(open);
    await expect(chargeCall(free.ports, { ...callOf("free", "k", "r1").call, start: boom })).rejects.toThrow(
      "provider down",
    );
    expect(free.claims.size).toBe(0);
    const charged = world(open);
    const price = { credits: 3, calls: 1, maxCost: undefined };
    await expect(chargeCall(charged.ports, { ...callOf(price, "k", "r1").call, start: boom })).rejects.toThrow();
    expect(charged.claims.size).toBe(1);
    expect(charged.holds.get("r1")).toBe(3);
  });
});

describe("chargeRefusalAnswer", () => {
  const REFUSALS: ChargeRefusal[] = [
    { kind: "paused", message: "Calls are paused: maintenance" },
    { kind: "claim", claim: { kind: "in_progress" } },
    { kind: "claim", claim: { kind: "conflict" } },
    { kind: "claim", claim: { kind: "lost" } },
    { kind: "max_cost", credits: 12, maxCost: 10, tool: true },
    { kind: "limit", limit: { code: "rate_limited", reason: "key_qps", retryAfter: 2, most: 5 } },
    { kind: "limit", limit: { code: "rate_limited", reason: "workspace_concurrency", retryAfter: 1, most: 4 } },
    { kind: "limit", limit: { code: "rate_limited", reason: "address", retryAfter: 30, most: 60 } },
    { kind: "limit", limit: { code: "free_failure_limit", retryAt: Date.parse("2026-11-25T10:00:00Z") } },
    { kind: "limit", limit: { code: "limits_unavailable" } },
    { kind: "hold", credits: 7, hold: { code: "insufficient_balance", balance: 9, available: 3 } },
    { kind: "hold", credits: 7, hold: { code: "plan_limit", freeCallsLeft: 2, freeCalls: 100 } },
    { kind: "hold", credits: 7, hold: { code: "daily_limit_reached", reason: "key", limit: 50, spent: 48 } },
    {
      kind: "hold",
      credits: 7,
      hold: { code: "temporarily_unavailable", reason: "daily_cap", cap: 1000, started: 1000 },
    },
  ];

  it("words every refusal as a contract error answer; only a 4xx the caller can fix counts as a failed call", () => {
    const now = Date.parse("2026-11-25T09:30:00Z");
    for (const r of REFUSALS) {
      const a = chargeRefusalAnswer(r, { urls: URLS, now, inProgressRetrySeconds: 3 });
      const answer = errorAnswer(a.code, "req_1", a.extra as never, { urls: URLS, now: new Date(now) });
      const { message } = answer.body as unknown as { message: string };
      expect(message.length, JSON.stringify(r)).toBeGreaterThan(20);
      const fixable = answer.status >= 400 && answer.status < 500 && answer.status !== 409 && answer.status !== 429;
      expect(a.failure, JSON.stringify(r)).toBe(fixable);
    }
  });

  it("says what a client needs to act: the figures, the limit, and when to come back", () => {
    const words = { urls: URLS, now: Date.parse("2026-11-25T09:30:00Z"), inProgressRetrySeconds: 3 };
    const say = (r: ChargeRefusal) => chargeRefusalAnswer(r, words);
    expect(say(REFUSALS[1]!).extra).toMatchObject({ retry_after: 3 });
    expect(say(REFUSALS[4]!).extra).toMatchObject({
      quote_credits: 12,
      message: expect.stringContaining("over max_cost_credits 10"),
    });
    expect(say(REFUSALS[5]!).extra["message"]).toContain("at most 5");
    expect(say(REFUSALS[8]!).extra).toMatchObject({ retry_at: "2026-11-25T10:00:00Z" });
    expect(say(REFUSALS[10]!).extra).toMatchObject({
      quote_credits: 7,
      message: expect.stringContaining("3 are available"),
    });
    expect(say(REFUSALS[11]!).extra["message"]).toBe(
      "This free account has used its 100 calls (2 left, this request makes more).",
    );
    expect(say(REFUSALS[12]!).extra).toMatchObject({ reason: "key", resets_at: "2026-11-26T00:00:00Z" });
    expect(say(REFUSALS[13]!).extra).toMatchObject({ reason: "daily_cap", resets_at: "2026-11-26T00:00:00Z" });
  });
});
