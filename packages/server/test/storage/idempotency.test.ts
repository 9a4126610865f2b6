/**
 * The Idempotency-Key's contract of the engine's storage port (`CallStore`: `claim`, `release`, `complete`, `full`)
 * on every engine, written once: a claim is its call's until it is completed or given back, on every instance; the
 * same key with other parameters conflicts; keys are scoped to their API key; a completed call's first answer
 * replays, marked `Idempotent-Replayed`; and a record is forgotten once its time to live (24 hours) passed.
 *
 * Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; CI's `.ci/run` starts it): without it this file fails,
 * it does not skip.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpAnswer } from "../../src/runs/types.ts";
import { adapters, type Storage } from "./adapters.ts";

const NOW = Date.parse("2026-11-21T10:00:00Z");
const DAY = 86_400_000;

describe.each(adapters)("Idempotency-Key claims through the storage port ($engine)", (adapter) => {
  let s: Storage;
  beforeAll(async () => {
    s = await adapter.open("idem", { now: NOW });
  });
  afterAll(() => s?.close());

  const store = (i: number) => s.on(i).calls.store;
  const search = (q: string, runId: string) => ({ operationId: "search", params: { q, platform: "x" }, runId });
  const answer: HttpAnswer = {
    status: 200,
    headers: { "content-type": "application/json" },
    body: '{"ok":true,"text":"露营装备"}',
  };

  it(
    "a claim is its call's on every instance until completed: the same parameters in any order " +
      "wait (in_progress), others conflict, another API key's slot is free",
    async () => {
      const { ctx } = await s.account(10);
      const other = await s.account(10);
      const slot = { keyId: ctx.key.id, idemKey: "k-claim" };
      expect(await store(0).full()).toBeNull();
      expect(await store(0).claim(slot, search("a", "run_claim_1"))).toEqual({ kind: "claimed" });
      for (const i of [0, 1, 2]) {
        expect(await store(i).claim(slot, search("a", `run_claim_again_${i}`))).toEqual({ kind: "in_progress" });
        expect(
          await store(i).claim(slot, { operationId: "search", params: { platform: "x", q: "a" }, runId: "run_x" }),
        ).toEqual({ kind: "in_progress" });
        expect(await store(i).claim(slot, search("b", `run_claim_other_${i}`))).toEqual({ kind: "conflict" });
        expect(
          await store(i).claim(slot, { operationId: "searchPost", params: { q: "a", platform: "x" }, runId: "run_y" }),
        ).toEqual({ kind: "conflict" });
      }
      expect(
        await store(1).claim({ keyId: other.ctx.key.id, idemKey: "k-claim" }, search("b", "run_claim_key_2")),
      ).toEqual({ kind: "claimed" });
    },
  );

  it(
    "given back, the key starts a new call (with any parameters); completed, its first answer " +
      "replays marked Idempotent-Replayed, other parameters conflict",
    async () => {
      const { ctx } = await s.account(10);
      const slot = { keyId: ctx.key.id, idemKey: "k-release" };
      expect(await store(0).claim(slot, search("a", "run_rel_1"))).toEqual({ kind: "claimed" });
      await store(1).release(slot);
      expect(await store(2).claim(slot, search("b", "run_rel_2"))).toEqual({ kind: "claimed" });
      await store(2).complete(slot, answer);
      await s.on(2).ports.durable();
      for (const i of [0, 1, 2]) {
        const again = await store(i).claim(slot, search("b", `run_rel_again_${i}`));
        expect(again.kind).toBe("replay");
        const replayed = (again as { answer: HttpAnswer }).answer;
        expect(replayed.status).toBe(200);
        expect(String(replayed.body)).toBe(answer.body);
        expect(replayed.headers).toMatchObject({ "content-type": "application/json", "idempotent-replayed": "true" });
        expect(await store(i).claim(slot, search("a", `run_rel_other_${i}`))).toEqual({ kind: "conflict" });
      }
    },
  );

  it("forgets a record once its time to live (24 hours) after the call passed: the key starts a new call", async () => {
    const { ctx } = await s.account(10);
    const slot = { keyId: ctx.key.id, idemKey: "k-ttl" };
    s.clock.now = NOW;
    expect(await store(0).claim(slot, search("a", "run_ttl_1"))).toEqual({ kind: "claimed" });
    await store(0).complete(slot, answer);
    await s.on(0).ports.durable();
    s.clock.now = NOW + DAY - 1000;
    expect((await store(1).claim(slot, search("a", "run_ttl_2"))).kind).toBe("replay");
    s.clock.now = NOW + DAY + 1000;
    expect(await store(2).claim(slot, search("b", "run_ttl_3"))).toEqual({ kind: "claimed" });
    s.clock.now = NOW;
  });
});
