/** Runs and handles: 202 past the wait, cells, reads by the starting key only, formats, expiry, broken runs. */
import { toCsv, toNdjson } from "@sdgw/validators";
import { afterEach, describe, expect, it } from "vitest";
import { harness, validateAnswer, type Harness } from "./helpers.ts";

let h: Harness;
afterEach(async () => {
  h.audit();
  await h.server.close();
});

const until = async (x: Harness, handle: string, key?: string) => {
  for (let i = 0; i < 100; i++) {
    const r = await x.call("getResult", "GET", `/v1/results/${handle}`, key ? { key } : {});
    if (r.status !== 202) return r;
    await new Promise((res) => setTimeout(res, 10));
  }
  throw new Error("still running");
};

describe("runs and handles", () => {
  it("answers 202 with a handle past waitMs, with the cells already ended, then the finished answer, charged once", async () => {
    h = harness({ waitMs: 40, pollAfterSeconds: 2 });
    h.server.gateway.simulator!.setKnobs("reddit", { latencyMs: 150 });
    const a = await h.call("search", "GET", "/v1/search?platforms=x,reddit&query=a");
    expect(a.status).toBe(202);
    expect(a.headers["retry-after"]).toBe("2");
    expect(a.json).toMatchObject({
      status: "running",
      retry_after_seconds: 2,
      charge: { quote_credits: 2, charged_credits: 0 },
      billing: { cost_credits: 0, balance_credits: 1000, today_spend_credits: 2 },
    });
    expect(a.json.cells).toEqual([expect.objectContaining({ platform: "x" })]);
    const running = await h.call("getResult", "GET", `/v1/results/${a.json.handle}`);
    expect(running.status).toBe(202);
    const done = await until(h, a.json.handle);
    expect(done.status).toBe(200);
    expect(done.json.status).toBe("ok");
    expect(done.json.request_id).toBe(a.json.request_id);
    expect(done.json.billing).toMatchObject({ cost: 2, balance: 998 });
    const again = await h.call("getResult", "GET", `/v1/results/${a.json.handle}`);
    expect(again.json).toEqual(done.json);
    expect(h.server.gateway.accounts.account(h.accountId)!.balance).toBe(998);
  });

  it("reads only with the starting key (404 no_such_handle otherwise), free and repeatable, as csv and ndjson", async () => {
    h = harness({ waitMs: 10 });
    h.server.gateway.simulator!.setKnobs("*", { latencyMs: 40 });
    const a = await h.call("detail", "POST", "/v1/detail", {
      body: { platform: "douyin", id: ["7301234567890123456", "7301234567890123457"] },
    });
    expect(a.status).toBe(202);
    const done = await until(h, a.json.handle);
    expect(done.json.targets).toHaveLength(2);
    const other = h.server.gateway.accounts.createKey({ accountId: h.accountId }).secret;
    const foreign = await h.call("getResult", "GET", `/v1/results/${a.json.handle}`, { key: other });
    expect(foreign.status).toBe(404);
    expect(foreign.json).toMatchObject({ reason: "no_such_handle", fix: { param: "handle" } });
    expect((await h.call("getResult", "GET", "/v1/results/h_nothing")).status).toBe(404);
    expect((await h.call("getResult", "GET", `/v1/results/${"h".repeat(128)}`)).status).toBe(404);
    expect((await h.call("getResult", "GET", `/v1/results/${"h".repeat(129)}`)).json.fix.param).toBe("handle");
    const csv = await h.call("getResult", "GET", `/v1/results/${a.json.handle}?format=csv`);
    expect(csv.headers["content-type"]).toMatch(/^text\/csv/);
    expect(csv.text).toBe(toCsv(done.json));
    expect(csv.text.split("\n")[0]).toMatch(/^platform,target,kind,id/);
    expect(csv.headers["content-disposition"]).toBe(`attachment; filename="${a.json.handle}.csv"`);
    const nd = await h.call("getResult", "GET", `/v1/results/${a.json.handle}?format=ndjson`);
    expect(nd.text).toBe(toNdjson(done.json));
    const bad = await h.call("getResult", "GET", `/v1/results/${a.json.handle}?format=xml`);
    expect(bad.json.fix.param).toBe("format");
    expect(h.server.gateway.accounts.account(h.accountId)!.balance).toBe(998);
  });

  it("expires a result 24 hours after its run ended (410 handle_expired)", async () => {
    let now = Date.parse("2026-11-21T10:00:00Z");
    h = harness({ waitMs: 10, now: () => now });
    h.server.gateway.simulator!.setKnobs("*", { latencyMs: 30 });
    const a = await h.call("search", "GET", "/v1/search?platform=x&query=a");
    await h.server.gateway.runs.drain();
    now += 24 * 3600_000 - 1000;
    expect((await h.call("getResult", "GET", `/v1/results/${a.json.handle}`)).status).toBe(200);
    now += 2000;
    const gone = await h.call("getResult", "GET", `/v1/results/${a.json.handle}`);
    expect(gone.status).toBe(410);
    expect(gone.json.code).toBe("handle_expired");
    h.server.gateway.runs.sweep();
    expect((await h.call("getResult", "GET", `/v1/results/${a.json.handle}`)).status).toBe(410);
  });

  it("reads a run broken on the server's side as 500 internal_error, uncharged", async () => {
    h = harness({ waitMs: 10 });
    h.server.gateway.simulator!.setKnobs("*", { latencyMs: 40, fault: "crash" });
    const a = await h.call("search", "GET", "/v1/search?platform=x&query=a");
    expect(a.status).toBe(202);
    await h.server.gateway.runs.drain();
    const r = await h.call("getResult", "GET", `/v1/results/${a.json.handle}`);
    expect(r.status).toBe(500);
    expect(r.json).toMatchObject({ code: "internal_error", retryable: true, fix: { param: "handle" } });
    expect(h.server.gateway.accounts.account(h.accountId)!.balance).toBe(1000);
  });

  it("ends a platform that takes longer than providerTimeoutMs with status timeout (X-Should-Retry: false)", async () => {
    h = harness({ providerTimeoutMs: 30 });
    h.server.gateway.simulator!.setKnobs("zhihu", { latencyMs: 500 });
    const a = await h.call("trending", "POST", "/v1/trending", { body: { platform: "zhihu" } });
    expect(a.json.status).toBe("timeout");
    expect(a.headers["x-should-retry"]).toBe("false");
    validateAnswer("trending", { statusCode: 200, headers: a.headers, body: a.text });
  });
});
