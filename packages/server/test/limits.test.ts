/** Limits of D27 with small numbers: per-key rate, workspace concurrency, per-address on keyless routes, free failures. */
import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./helpers.ts";

let h: Harness;
afterEach(async () => {
  h.audit();
  await h.server.close();
});

describe("limits", () => {
  it("limits calls per second per key (rate_limited, key_qps, Retry-After), before the ledger", async () => {
    h = harness({ limits: { keyQps: 3 } });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => h.call("search", "GET", "/v1/search?platform=x&query=a")),
    );
    const limited = answers.filter((a) => a.status === 429);
    expect(limited).toHaveLength(2);
    expect(limited[0]!.json).toMatchObject({ code: "rate_limited", reason: "key_qps", retry_after: 1 });
    expect(h.server.gateway.store.all("SELECT * FROM ledger WHERE kind = 'charge'")).toHaveLength(3);
  });

  it("limits running calls per workspace (workspace_concurrency)", async () => {
    h = harness({ limits: { workspaceConcurrency: 2 } });
    h.server.gateway.simulator!.setKnobs("*", { latencyMs: 80 });
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => h.call("search", "GET", "/v1/search?platform=x&query=a")),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(2);
    expect(answers.filter((a) => a.json.reason === "workspace_concurrency")).toHaveLength(2);
    expect(h.server.gateway.limits.runningOf(h.server.gateway.accounts.workspaceOf(h.accountId)!.id)).toBe(0);
  });

  it("limits keyless routes per network address (address)", async () => {
    h = harness({ limits: { addressPerMinute: 2 } });
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push(await h.call("listCapabilities", "GET", "/v1/capabilities", { key: null }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(answers[2]!.json).toMatchObject({ reason: "address", fix: { note: expect.stringMatching(/send a key/) } });
    expect(Number(answers[2]!.headers["retry-after"])).toBeGreaterThan(1);
  });

  it("holds back a key after many failed calls (free_failure_limit with retry_at)", async () => {
    h = harness({ limits: { failureThreshold: 3, failureWindowSeconds: 60, failureBlockSeconds: 300 } });
    for (let i = 0; i < 4; i++)
      expect((await h.call("search", "GET", "/v1/search?platform=x&query=a&count=99")).status).toBe(400);
    const a = await h.call("search", "GET", "/v1/search?platform=x&query=a");
    expect(a.status).toBe(429);
    expect(a.json.code).toBe("free_failure_limit");
    const wait = (Date.parse(a.json.retry_at) - Date.now()) / 1000;
    expect(wait).toBeGreaterThan(250);
    expect(Number(a.headers["retry-after"])).toBeGreaterThan(250);
  });
});
