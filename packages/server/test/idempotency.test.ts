/** Idempotency exactly as the seed's table (D35: replays unchanged, `Idempotent-Replayed: true`, no new charge). */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { canonicalJson, fingerprint } from "../src/storage/idempotency.ts";

/** The definition canonical JSON keeps (fingerprints are stored: the text must never change). */
function referenceCanonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(referenceCanonical).join(",")}]`;
  const obj = value as Record<string, unknown>;
  return `{${Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${referenceCanonical(obj[k])}`)
    .join(",")}}`;
}
import { harness, newIdem, type Harness } from "./helpers.ts";

let h: Harness;
afterEach(async () => {
  h.audit();
  await h.server.close();
});

const charges = (x: Harness) => x.server.gateway.store.all("SELECT * FROM ledger WHERE kind = 'charge'").length;

describe("Idempotency-Key", () => {
  it("replays the first answer unchanged after the end, with Idempotent-Replayed and no new charge", async () => {
    h = harness();
    const key = newIdem();
    const first = await h.call("search", "GET", "/v1/search?platform=x&query=a&count=2", {
      headers: { "idempotency-key": key },
    });
    const again = await h.call("search", "GET", "/v1/search?count=2&query=a&platform=x", {
      headers: { "idempotency-key": key },
    });
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    expect(charges(h)).toBe(1);
  });

  it("answers 422 idempotency_conflict for the same key with other parameters, or on another route", async () => {
    h = harness();
    const key = newIdem();
    await h.call("search", "GET", "/v1/search?platform=x&query=a", { headers: { "idempotency-key": key } });
    const other = await h.call("search", "GET", "/v1/search?platform=x&query=b", {
      headers: { "idempotency-key": key },
    });
    expect(other.status).toBe(422);
    expect(other.json.fix.param).toBe("Idempotency-Key");
    const post = await h.call("searchPost", "POST", "/v1/search", {
      body: { platform: "x", query: "a" },
      headers: { "idempotency-key": key },
    });
    expect(post.status).toBe(422);
  });

  it("answers 409 with Retry-After while the first call runs", async () => {
    h = harness({ inProgressRetrySeconds: 3 });
    h.server.gateway.simulator!.setKnobs("*", { latencyMs: 150 });
    const key = newIdem();
    const running = h.call("detail", "POST", "/v1/detail", {
      body: { platform: "x", id: "1" },
      headers: { "idempotency-key": key },
    });
    await new Promise((r) => setTimeout(r, 30));
    const busy = await h.call("detail", "POST", "/v1/detail", {
      body: { platform: "x", id: "1" },
      headers: { "idempotency-key": key },
    });
    expect(busy.status).toBe(409);
    expect(busy.headers["retry-after"]).toBe("3");
    expect(busy.json).toMatchObject({ code: "idempotency_in_progress", retry_after: 3 });
    expect((await running).status).toBe(200);
  });

  it("charges once for 50 concurrent identical requests under one key", async () => {
    h = harness();
    h.server.gateway.simulator!.setKnobs("*", { latencyMs: 20 });
    const key = newIdem();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        h.call("search", "GET", "/v1/search?platform=bilibili&query=a", { headers: { "idempotency-key": key } }),
      ),
    );
    expect(answers.filter((a) => a.status === 200 && !a.headers["idempotent-replayed"])).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(49);
    expect(charges(h)).toBe(1);
    const late = await h.call("search", "GET", "/v1/search?platform=bilibili&query=a", {
      headers: { "idempotency-key": key },
    });
    expect(late.headers["idempotent-replayed"]).toBe("true");
    expect(charges(h)).toBe(1);
  });

  it("gives the key back when the call is refused before running, or its run breaks", async () => {
    h = harness({ credits: 0 });
    const key = newIdem();
    expect(
      (await h.call("search", "GET", "/v1/search?platform=x&query=a", { headers: { "idempotency-key": key } })).status,
    ).toBe(402);
    h.server.gateway.accounts.grant(h.accountId, 5);
    h.server.gateway.simulator!.setKnobs("x", { fault: "crash" });
    const broken = await h.call("search", "GET", "/v1/search?platform=x&query=a", {
      headers: { "idempotency-key": key },
    });
    expect(broken.status).toBe(500);
    expect(broken.json.code).toBe("internal_error");
    h.server.gateway.simulator!.resetKnobs();
    const ok = await h.call("search", "GET", "/v1/search?platform=x&query=a", { headers: { "idempotency-key": key } });
    expect(ok.status).toBe(200);
    expect(charges(h)).toBe(1);
  });

  it("forgets records 24 hours after the call ended", async () => {
    let now = Date.parse("2026-11-21T10:00:00Z");
    h = harness({ now: () => now });
    const key = newIdem();
    await h.call("search", "GET", "/v1/search?platform=x&query=a", { headers: { "idempotency-key": key } });
    now += 24 * 3600_000 + 1000;
    const fresh = await h.call("search", "GET", "/v1/search?platform=x&query=b", {
      headers: { "idempotency-key": key },
    });
    expect(fresh.status).toBe(200);
    expect(charges(h)).toBe(2);
  });

  it("compares parameters canonically", () => {
    h = harness();
    expect(canonicalJson({ b: 1, a: [2, { d: 1, c: 2 }] })).toBe(canonicalJson({ a: [2, { c: 2, d: 1 }], b: 1 }));
    // Stored records keep matching: the text is the reference definition's, and so is the fingerprint.
    fc.assert(
      fc.property(
        fc.anything({ withNullPrototype: true, withSparseArray: true, withObjectString: true }),
        (v) => canonicalJson(v) === referenceCanonical(v),
      ),
      { numRuns: 3000 },
    );
    expect(fingerprint("search", { query: "露营", platform: "x", count: 3 })).toBe(
      "56ZhqNkDWzswqRi8JYqhGcNEoK89i6YMvJYZpw0a2jc",
    );
  });
});
