/**
 * Coalesced id lookups (D124) and the budget in memory (D121), as a connector's callers meet them: calls that start
 * together share one request of at most `max` ids; one caller giving up does not cancel the others'; a budget never
 * grants more than its buckets hold, all or nothing, and refills at its zone's midnight.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Batcher } from "../../src/connectors/batch.ts";
import { MemoryBudget } from "../../src/connectors/memory.ts";

describe("Batcher", () => {
  it("calls that start together share one request; more than max keys are split", async () => {
    const runs: string[][] = [];
    const b = new Batcher({
      windowMs: 5,
      max: 2,
      run: async (keys) => {
        runs.push(keys);
        return keys.length;
      },
    });
    const signal = new AbortController().signal;
    const got = await Promise.all(["a", "b", "a", "c"].map((k) => b.load(k, signal)));
    expect(runs).toEqual([["a", "b"], ["c"]]);
    expect(got.map((g) => g.result)).toEqual([2, 2, 2, 1]);
    expect(got.map((g) => g.share)).toEqual([1 / 3, 1 / 3, 1 / 3, 1]);
  });

  it("a caller that gives up does not cancel the others' request; when all have, it is cancelled", async () => {
    let seen: AbortSignal | undefined;
    const b = new Batcher({
      windowMs: 5,
      max: 50,
      run: (_keys, signal) =>
        new Promise<string>((resolve, reject) => {
          seen = signal;
          signal.addEventListener("abort", () => reject(new Error("cancelled")));
          setTimeout(() => resolve("answered"), 50);
        }),
    });
    const one = new AbortController();
    const two = new AbortController();
    const first = b.load("a", one.signal);
    const second = b.load("b", two.signal);
    setTimeout(() => one.abort(), 10);
    expect((await first).result).toBe("answered");
    expect((await second).result).toBe("answered");
    expect(seen!.aborted).toBe(false);
    const three = new AbortController();
    const four = new AbortController();
    const both = Promise.allSettled([b.load("c", three.signal), b.load("d", four.signal)]);
    setTimeout(() => {
      three.abort();
      four.abort();
    }, 10);
    expect((await both).map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(seen!.aborted).toBe(true);
  });
});

describe("MemoryBudget", () => {
  const buckets = {
    youtube: [
      { name: "units", limit: 300, timeZone: "America/Los_Angeles", label: "YouTube Data API" },
      { name: "search", limit: 150, timeZone: "America/Los_Angeles", label: "YouTube search" },
    ],
  };

  it("never grants more than a bucket holds, and takes all of a call's units or none", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.boolean(), { maxLength: 60 }), async (searches) => {
        const budget = new MemoryBudget({ buckets, now: () => Date.parse("2026-05-01T12:00:00Z") });
        for (const search of searches)
          await budget.take(
            "youtube",
            search
              ? [
                  { bucket: "units", units: 100 },
                  { bucket: "search", units: 100 },
                ]
              : [{ bucket: "units", units: 1 }],
          );
        const used = await budget.used("youtube");
        expect(used["units"]).toBeLessThanOrEqual(300);
        expect(used["search"]).toBeLessThanOrEqual(150);
        expect(used["search"]! % 100).toBe(0);
      }),
    );
  });

  it("refuses naming the bucket and when it refills, and is full again after midnight Pacific", async () => {
    let now = Date.parse("2026-05-01T12:00:00Z");
    const budget = new MemoryBudget({ buckets, now: () => now });
    expect(
      await budget.take("youtube", [
        { bucket: "units", units: 100 },
        { bucket: "search", units: 100 },
      ]),
    ).toEqual({ ok: true });
    expect(
      await budget.take("youtube", [
        { bucket: "units", units: 100 },
        { bucket: "search", units: 100 },
      ]),
    ).toEqual({
      ok: false,
      reason: "drained",
      bucket: "search",
      label: "YouTube search",
      limit: 150,
      resetsAt: Date.parse("2026-05-02T07:00:00Z"),
    });
    expect(await budget.used("youtube")).toEqual({ units: 100, search: 100 });
    await budget.drain("youtube", "units");
    expect((await budget.take("youtube", [{ bucket: "units", units: 1 }])).ok).toBe(false);
    now = Date.parse("2026-05-02T07:00:00Z");
    expect(await budget.take("youtube", [{ bucket: "units", units: 1 }])).toEqual({ ok: true });
  });
});
