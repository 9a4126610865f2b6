/**
 * The wire keeps every run it saw started (each 202 with a handle, whoever sent it) and `settle` follows them to
 * their end with the key that started them, never sooner than `Retry-After`; a run past its budget is reported open.
 */
import { DEFAULT_KEYS } from "@sdgw/mock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Http } from "../src/index.ts";
import { startMockHttp, type MockHttp } from "./mock-http.ts";

let mock: MockHttp;
beforeAll(async () => {
  // Each run answers 202 to its first read, then ends; Retry-After is 1 s.
  mock = await startMockHttp({
    keys: { ...DEFAULT_KEYS, sdgw_second_key: { permissions: ["read_data"] } },
    balance: 10_000,
    polls: 1,
  });
});
afterAll(() => mock.close());

const wire = () =>
  new Http({
    baseUrl: mock.baseUrl,
    key: "sdgw_test_key",
    fetch: globalThis.fetch.bind(globalThis),
    requestTimeoutMs: 10_000,
    rateLimitRetries: 0,
    secrets: { key: "sdgw_test_key", "second-key": "sdgw_second_key" },
  });
const slow = (query: string) => ({ path: "/v1/search", query: { platform: "x", query } });

describe("Http run tracking and settle", () => {
  it("keeps the 202s of the raw wire and of the SDK's fetch, and follows each to its end with its own key", async () => {
    const http = wire();
    await http.send({ ...slow("slow one") });
    await http.send({ ...slow("slow two"), key: "sdgw_second_key", auth: "bearer" });
    await http.fetch(`${mock.baseUrl}/v1/search?platform=x&query=slow+three`, {
      headers: { "X-API-Key": "sdgw_test_key", "Idempotency-Key": "settle-test-3" },
    });
    await http.send({ ...slow("an ordinary call") }); // 200: nothing to follow
    expect(http.runs.map((r) => [r.ended, r.lastStatus])).toEqual([
      [false, 202],
      [false, 202],
      [false, 202],
    ]);
    expect(http.runs[1]!.startedBy).toMatch(
      /^GET \/v1\/search\?platform=x&query=slow\+two \[Authorization: Bearer …, Idempotency-Key/,
    );

    const start = Date.now();
    const settled = await http.settle(30_000);
    expect(settled.open).toEqual([]);
    expect(http.runs.every((r) => r.ended && r.lastStatus === 200)).toBe(true);
    // Every read waited out the Retry-After (1 s) of the answer before it: two reads per run take 2 s.
    const reads = http.exchanges.filter((x) => x.op === "getResult");
    expect(reads.length).toBe(settled.reads);
    expect(settled.reads).toBe(6); // each run: one 202 read, then its end
    // The run started with the second key (in Bearer) is read with it; the others with the main key.
    expect(reads.filter((x) => x.requestHeaders["x-api-key"] === "<second-key>")).toHaveLength(2);
    expect(reads.filter((x) => x.requestHeaders["x-api-key"] === "<key>")).toHaveLength(4);
    expect(Date.now() - start).toBeGreaterThanOrEqual(1800);
    // Settled runs cost nothing more to settle.
    expect((await http.settle(30_000)).reads).toBe(0);
  });

  it("does not take another key's 404 or a refused format for the run's end", async () => {
    const http = wire();
    const started = await http.send({ ...slow("slow isolation") });
    const handle = (started.json as { handle: string }).handle;
    await http.send({ path: `/v1/results/${handle}`, key: "sdgw_second_key" }); // 404: not this key's
    await http.send({ path: `/v1/results/${handle}`, query: { format: "xlsx" } }); // 400: a bad format
    expect(http.exchanges.slice(-2).map((x) => x.status)).toEqual([404, 400]);
    expect(http.runs[0]).toMatchObject({ handle, ended: false, lastStatus: 202 });
    expect((await http.settle(30_000)).open).toEqual([]);
    expect(http.runs[0]).toMatchObject({ ended: true, lastStatus: 200 });
  });

  it("reports a run still going after its budget as open, after at most one read", async () => {
    const http = wire();
    await http.send({ ...slow("slow budget") });
    const first = await http.settle(0);
    expect(first.open.map((r) => r.ended)).toEqual([false]);
    expect(first.reads).toBe(0); // its Retry-After had not passed: not read, not waited for
    await new Promise((r) => setTimeout(r, 1100));
    const second = await http.settle(0);
    expect(second.reads).toBe(1); // due now: read once (202), then reported open without waiting again
    expect(second.open).toHaveLength(1);
    expect(second.waitedMs).toBeLessThan(500);
  });
});
