/** Credits: holds, capture exactly once, release on failure, quotes and max_cost, balance, daily limits, free plan. */
import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./helpers.ts";

let h: Harness;
afterEach(async () => {
  h.audit();
  await h.server.close();
});

const balance = (x: Harness) => x.server.gateway.accounts.account(x.accountId)!.balance;
const ledgerRows = (x: Harness) =>
  x.server.gateway.store.all<{ kind: string; amount: number }>("SELECT kind, amount FROM ledger WHERE kind = 'charge'");

describe("charging", () => {
  it("charges each platform and each target as a call of its own; failures never", async () => {
    h = harness({ credits: 100 });
    h.server.gateway.simulator!.setKnobs("reddit", { fault: "upstream_error" });
    const a = await h.call("search", "GET", "/v1/search?platforms=x,reddit,weibo&query=a");
    expect(a.json.billing).toMatchObject({ cost: 2, balance: 98 });
    const d = await h.call("detail", "POST", "/v1/detail", { body: { platform: "x", id: ["1", "2", "deleted-3"] } });
    expect(d.json.billing).toMatchObject({ cost: 2, balance: 96 });
    h.server.gateway.simulator!.setKnobs("x", { fault: "timeout" });
    const t = await h.call("search", "GET", "/v1/search?platform=x&query=a");
    expect(t.json).toMatchObject({ status: "timeout", billing: { cost: 0, balance: 96 } });
    expect(balance(h)).toBe(96);
    expect(ledgerRows(h).map((r) => r.amount)).toEqual([2, 2]);
  });

  it("refuses a quote over max_cost_credits with quote_credits, before the ledger", async () => {
    h = harness();
    const a = await h.call("search", "GET", "/v1/search?platforms=x,reddit,weibo&query=a&max_cost_credits=2");
    expect(a.status).toBe(402);
    expect(a.json).toMatchObject({ code: "max_cost_exceeded", quote_credits: 3, fix: { param: "max_cost_credits" } });
    expect(h.server.gateway.store.all("SELECT * FROM holds")).toEqual([]);
    expect(
      (await h.call("search", "GET", "/v1/search?platforms=x,reddit,weibo&query=a&max_cost_credits=3")).status,
    ).toBe(200);
  });

  it("refuses when the balance does not cover the quote (402 insufficient_balance), nothing held", async () => {
    h = harness({ credits: 2 });
    const a = await h.call("detail", "POST", "/v1/detail", { body: { platform: "x", id: ["1", "2", "3"] } });
    expect(a.status).toBe(402);
    expect(a.json).toMatchObject({
      code: "insufficient_balance",
      quote_credits: 3,
      fix: { action_url: "https://console.sdgw.dev/billing" },
    });
    expect(balance(h)).toBe(2);
    expect(h.server.gateway.store.all("SELECT * FROM holds")).toEqual([]);
  });

  it("charges exactly 10 of 100 concurrent calls on a balance of 10, never below 0", async () => {
    h = harness({ credits: 10 });
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => h.call("search", "GET", "/v1/search?platform=weibo&query=a")),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
    expect(answers.filter((a) => a.status === 402)).toHaveLength(90);
    expect(balance(h)).toBe(0);
    expect(ledgerRows(h)).toHaveLength(10);
  });

  it("charges exactly 10 of 100 concurrent slow calls too (holds, not balance reads, decide)", async () => {
    h = harness({ credits: 10 });
    h.server.gateway.simulator!.setKnobs("*", { latencyMs: [5, 30] });
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        h.call("searchPost", "POST", "/v1/search", { body: { platform: "zhihu", query: "a" } }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
    expect(balance(h)).toBe(0);
  });
});

describe("where holds live", () => {
  it("holds a call that ends within its request in memory: counted by every check, never written", async () => {
    h = harness({ credits: 3 });
    const gw = h.server.gateway;
    gw.simulator!.setKnobs("*", { latencyMs: 100 });
    const first = h.call("detail", "POST", "/v1/detail", { body: { platform: "x", id: ["1", "2"] } });
    await new Promise((r) => setTimeout(r, 30));
    expect(gw.ledger.audit(h.accountId)).toMatchObject({ held: 0, holdsHeld: 0, inMemory: 2 });
    const view = await h.call("getAccount", "GET", "/v1/account");
    expect(view.json.billing).toMatchObject({ balance_credits: 3, today_spend_credits: 2 });
    const second = await h.call("detail", "POST", "/v1/detail", { body: { platform: "x", id: ["3", "4"] } });
    expect(second.status).toBe(402);
    expect(second.json).toMatchObject({ code: "insufficient_balance", quote_credits: 2 });
    expect((await first).json.billing).toMatchObject({ cost: 2, balance: 1 });
    expect(gw.store.all("SELECT * FROM holds")).toEqual([]);
    expect(gw.ledger.audit(h.accountId)).toMatchObject({ balance: 1, charges: 2, inMemory: 0 });
  });

  it("makes the hold durable when the call answers 202, and captures it once when the run ends", async () => {
    h = harness({ credits: 5, waitMs: 20 });
    const gw = h.server.gateway;
    gw.simulator!.setKnobs("reddit", { latencyMs: 120 });
    const a = await h.call("search", "GET", "/v1/search?platforms=x,reddit&query=a");
    expect(a.status).toBe(202);
    expect(gw.store.all("SELECT amount, state FROM holds")).toEqual([{ amount: 2, state: "held" }]);
    expect(gw.ledger.audit(h.accountId)).toMatchObject({ held: 2, holdsHeld: 2, inMemory: 0 });
    const refused = await h.call("detail", "POST", "/v1/detail", { body: { platform: "x", id: ["1", "2", "3", "4"] } });
    expect(refused.json).toMatchObject({ code: "insufficient_balance", quote_credits: 4 });
    await gw.runs.drain();
    expect(gw.store.all("SELECT captured, state FROM holds")).toEqual([{ captured: 2, state: "captured" }]);
    expect(gw.ledger.audit(h.accountId)).toMatchObject({ balance: 3, held: 0, charges: 2, inMemory: 0 });
  });

  it("charges exactly 10 of 100 concurrent calls on a balance of 10 when some answer 202 and some end inline", async () => {
    h = harness({ credits: 10, waitMs: 15 });
    h.server.gateway.simulator!.setKnobs("*", { latencyMs: [0, 30] });
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        h.call("searchPost", "POST", "/v1/search", { body: { platform: "zhihu", query: "a" } }),
      ),
    );
    expect(answers.filter((a) => a.status === 200 || a.status === 202)).toHaveLength(10);
    expect(answers.filter((a) => a.status === 402)).toHaveLength(90);
    await h.server.gateway.runs.drain();
    expect(balance(h)).toBe(0);
    expect(ledgerRows(h)).toHaveLength(10);
  });
});

describe("daily limits and the free plan", () => {
  it("stops a key at its daily limit (429 reason key, resets_at UTC midnight, Retry-After) and the account at its own", async () => {
    h = harness();
    const gw = h.server.gateway;
    const key = gw.accounts.createKey({ accountId: h.accountId, dailyLimit: 2 });
    expect((await h.call("search", "GET", "/v1/search?platforms=x,reddit&query=a", { key: key.secret })).status).toBe(
      200,
    );
    const a = await h.call("search", "GET", "/v1/search?platform=x&query=a", { key: key.secret });
    expect(a.status).toBe(429);
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect(a.json).toMatchObject({
      code: "daily_limit_reached",
      reason: "key",
      resets_at: midnight.toISOString().replace(".000Z", "Z"),
    });
    expect(Number(a.headers["retry-after"])).toBeGreaterThan(0);
    const view = await h.call("getAccount", "GET", "/v1/account", { key: key.secret });
    expect(view.json.billing).toMatchObject({
      today_spend_credits: 2,
      daily_limit_credits: 2,
      daily_remaining_credits: 0,
    });
    gw.accounts.setAccountDailyLimit(h.accountId, 3);
    expect((await h.call("search", "GET", "/v1/search?platform=x&query=a")).status).toBe(200);
    const b = await h.call("search", "GET", "/v1/search?platform=x&query=a");
    expect(b.json.reason).toBe("account");
  });

  it("gives a free account its allowance of calls, then 403 plan_limit", async () => {
    h = harness({ limits: { freeCalls: 3 } });
    const gw = h.server.gateway;
    const { account } = gw.accounts.createAccount({ name: "Free", plan: "free" });
    gw.accounts.grant(account.id, 50);
    const key = gw.accounts.createKey({ accountId: account.id }).secret;
    expect((await h.call("search", "GET", "/v1/search?platforms=x,reddit&query=a", { key })).status).toBe(200);
    const before = await h.call("getAccount", "GET", "/v1/account", { key });
    expect(before.json.account.free_calls_left).toBe(1);
    const two = await h.call("search", "GET", "/v1/search?platforms=x,reddit&query=a", { key });
    expect(two.status).toBe(403);
    expect(two.json).toMatchObject({ code: "plan_limit", reason: "free_calls_used" });
    h.server.gateway.simulator!.setKnobs("x", { fault: "upstream_error" });
    expect((await h.call("search", "GET", "/v1/search?platform=x&query=a", { key })).json.status).toBe("error");
    h.server.gateway.simulator!.resetKnobs();
    expect((await h.call("search", "GET", "/v1/search?platform=x&query=a", { key })).status).toBe(200);
    expect((await h.call("search", "GET", "/v1/search?platform=x&query=a", { key })).json.reason).toBe(
      "free_calls_used",
    );
  });
});
