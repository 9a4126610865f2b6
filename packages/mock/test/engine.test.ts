/**
 * The mock answers from @sdgw/engine, as the reference server does: the same request gets the simulator's items
 * (the server's), the catalog is the engine's, and `anchor` fixes the simulated dates.
 */
import { Catalog, Simulator } from "@sdgw/engine";
import { responseValidators } from "@sdgw/validators";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createMock } from "../src/index.ts";
import { BASE, idem, send } from "./helpers.ts";

const ANCHOR = "2026-06-01T00:00:00Z";
const mock = createMock({ baseUrl: BASE, anchor: ANCHOR, balance: 1000 });
const server = setupServer(...mock.handlers);
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterAll(() => server.close());
beforeEach(() => mock.reset());

const simulator = new Simulator({ anchor: ANCHOR });
const signal = new AbortController().signal;

describe("answers from the engine", () => {
  it("a search answers the simulator's items for its applied parameters, dated before the anchor", async () => {
    const got = await send({
      path: "/v1/search",
      query: { platform: "reddit", query: "espresso", count: "5" },
      headers: { "Idempotency-Key": idem() },
    });
    expect([got.status, got.body.status, responseValidators.search(200, got.body).ok]).toEqual([200, "ok", true]);
    const params = {
      query: "espresso",
      type: "content",
      sort: "relevance",
      time_range: "all",
      content_type: "all",
      count: 5,
    };
    const want = await simulator.providers.reddit.call({ platform: "reddit", operation: "search", params, signal });
    expect(want.status === "ok" && want.items).toEqual(got.body.items);
    for (const item of got.body.items) expect(Date.parse(item.published_at)).toBeLessThan(Date.parse(ANCHOR));
  });

  it("a targets answer reads each target on its own, charged its catalog price per ok call", async () => {
    const got = await send({
      method: "POST",
      path: "/v1/detail",
      body: { platform: "weibo", id: ["5236417809123457", "deleted-post"] },
    });
    expect(got.body.targets.map((c: { result: { status: string } }) => c.result.status)).toEqual(["ok", "error"]);
    expect(got.body.targets[1].result.error.code).toBe("not_found");
    const price = new Catalog(simulator.providers).lookup("weibo.detail")!.spec.price;
    expect([got.body.billing.cost, mock.state.balance]).toEqual([price, 1000 - price]);
  });

  it("GET /v1/capabilities lists the engine's catalog", async () => {
    const got = await send({ path: "/v1/capabilities", key: null });
    const catalog = new Catalog(simulator.providers);
    expect([got.body.operations, got.body.tools]).toEqual([catalog.operations, catalog.tools]);
  });

  it("batch_stats answers in its format, as the server: csv rows inline, the same text again under its Idempotency-Key", async () => {
    const body = { targets: ["https://www.douyin.com/video/7301234567890123456"], format: "csv" };
    const headers = { "Idempotency-Key": idem() };
    const got = await send({ method: "POST", path: "/v1/tools/batch_stats", body, headers });
    expect([got.status, got.headers.get("content-type")]).toEqual([200, "text/csv; charset=utf-8"]);
    expect(got.text.split("\n")[0]).toMatch(/kind/);
    const again = await send({ method: "POST", path: "/v1/tools/batch_stats", body, headers });
    expect([again.status, again.text, again.headers.get("idempotent-replayed")]).toEqual([200, got.text, "true"]);
    expect(mock.state.spentToday).toBeGreaterThan(0);
  });
});
