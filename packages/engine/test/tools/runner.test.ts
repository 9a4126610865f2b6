/** The wave executor: failures as warnings, the run's status when every call failed, time limits, breaks, limits. */
import type { Item, Platform, Step } from "@sdgw/types";
import { PLATFORMS } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import type { PlatformProvider, ProviderOutcome, ProviderRequest } from "../../src/providers/port.ts";
import { quoteOf } from "../../src/tools/pricing.ts";
import { Runner } from "../../src/tools/runner.ts";
import type { ToolContext } from "../../src/tools/types.ts";

type Answer = (req: ProviderRequest) => Promise<ProviderOutcome> | ProviderOutcome;

function providers(
  answer: Answer,
  unsupported: (op: string) => string | null = () => null,
): Record<Platform, PlatformProvider> {
  const make = (platform: Platform): PlatformProvider => ({
    platform,
    scoped: false,
    operations: [{ name: "search", description: "s", price: 1, pricing: "standard" }],
    unsupported: (op) => unsupported(op),
    cursorValid: () => true,
    call: async (req) => answer(req),
  });
  return Object.fromEntries(PLATFORMS.map((p) => [p, make(p)])) as Record<Platform, PlatformProvider>;
}

const ITEM: Item = { kind: "item", id: "p1", text: "hello" };
const ok = (): ProviderOutcome => ({ status: "ok", items: [ITEM] });
const upstream = (): ProviderOutcome => ({
  status: "error",
  failure: { code: "upstream_error", message: "weibo answered 502.", retryable: true },
});

function runner(
  ctx: Partial<ToolContext> & { providers: ToolContext["providers"] },
  calls = 3,
  onStep?: (s: Step[]) => void,
) {
  return new Runner({ ...ctx }, quoteOf([{ name: "search", calls }]).plan, ["request-wide warning"], onStep);
}

describe("Runner", () => {
  it("answers failures as warnings and counts charged calls; the run is ok when any call succeeded", async () => {
    let n = 0;
    const r = runner({ providers: providers(() => (n++ === 1 ? upstream() : ok())) });
    await r.wave(
      "search",
      () => r.all(["x", "weibo", "reddit"] as Platform[], (p) => r.call(p, "search", { query: "q" }, `label ${p}`)),
      [],
    );
    const result = r.finish([ITEM]);
    expect(result.status).toBe("ok");
    expect(result.calls_made).toBe(3);
    expect(result.calls_charged).toBe(2);
    expect(result.warnings).toEqual(["request-wide warning", "weibo search (label weibo): weibo answered 502."]);
    expect(result.steps).toEqual([
      { wave: 1, name: "search", status: "done", calls_planned: 3, calls_done: 3 },
      { wave: 2, name: "aggregate", status: "done", calls_planned: 0, calls_done: 0 },
    ]);
  });

  it("every call failed: status error with the first failure's error object, no items, failed steps", async () => {
    const r = runner({ providers: providers(upstream) });
    await r.wave("search", () => r.all(["x", "weibo"] as Platform[], (p) => r.call(p, "search", {})), []);
    const result = r.finish([ITEM]);
    expect(result.status).toBe("error");
    expect(result.items).toEqual([]);
    expect(result.error).toEqual({
      code: "upstream_error",
      message: "weibo answered 502.",
      retryable: true,
      action_url: "https://status.sdgw.dev",
    });
    expect(result.steps.map((s) => s.status)).toEqual(["failed", "failed"]);
    expect(result.calls_charged).toBe(0);
  });

  it("a call past its time is a timeout; all timeouts make a timeout run", async () => {
    const r = runner({ providers: providers(() => new Promise(() => undefined)), callTimeoutMs: 20 });
    await r.wave("search", () => r.call("x", "search", {}), undefined);
    const result = r.finish([]);
    expect(result.status).toBe("timeout");
    expect(result.error).toMatchObject({ code: "timeout", retryable: false });
  });

  it("an operation the platform does not offer is answered not_supported without calling it", async () => {
    let called = 0;
    const r = runner({
      providers: providers(
        () => {
          called++;
          return ok();
        },
        () => "no such thing here",
      ),
    });
    const out = await r.wave("search", () => r.call("wechat", "search", {}), undefined);
    expect(out).toMatchObject({ ok: false, status: "not_supported" });
    expect(called).toBe(0);
    const result = r.finish([]);
    expect(result.status).toBe("not_supported");
    expect(result.error).toMatchObject({
      code: "not_supported",
      action_url: "https://console.sdgw.dev/capabilities?platform=wechat",
    });
  });

  it("mixed timeouts and not_supported answers with no plain error: an upstream_error run", async () => {
    let n = 0;
    const r = runner({
      providers: providers(() =>
        n++ === 0 ? { status: "timeout", message: "late" } : { status: "not_supported", message: "no" },
      ),
    });
    await r.wave("search", () => r.all(["x", "weibo"] as Platform[], (p) => r.call(p, "search", {})), []);
    const result = r.finish([]);
    expect(result.status).toBe("error");
    expect(result.error?.code).toBe("upstream_error");
  });

  it("nothing found: empty", async () => {
    const r = runner({ providers: providers(() => ({ status: "empty", items: [] })) });
    await r.wave("search", () => r.call("x", "search", {}), undefined);
    expect(r.finish([])).toMatchObject({ status: "empty", items: [], calls_charged: 1 });
  });

  it("a provider that throws breaks the run; an aborted run rejects with the signal's reason", async () => {
    const r = runner({ providers: providers(() => Promise.reject(new Error("crash"))) });
    await expect(r.wave("search", () => r.call("x", "search", {}), undefined)).rejects.toThrow("crash");
    const ctrl = new AbortController();
    const r2 = runner({ providers: providers(() => new Promise(() => undefined)), signal: ctrl.signal });
    const p = r2.wave("search", () => r2.call("x", "search", {}), undefined);
    ctrl.abort(new Error("cancelled"));
    await expect(p).rejects.toThrow("cancelled");
  });

  it("never makes more calls than the wave planned, nor calls outside a wave", async () => {
    const r = runner({ providers: providers(ok) }, 2);
    await expect(r.call("x", "search", {})).rejects.toThrow(/outside a wave/);
    await expect(r.wave("search", () => r.all([1, 2, 3], () => r.call("x", "search", {})), [])).rejects.toThrow(
      /used its 2 planned calls/,
    );
  });

  it("keeps at most `concurrency` calls in flight and answers in list order", async () => {
    let inFlight = 0;
    let peak = 0;
    const r = runner(
      {
        providers: providers(async (req) => {
          inFlight++;
          peak = Math.max(peak, inFlight);
          await new Promise((res) => setTimeout(res, 5 + (Number(req.params["i"]) % 3) * 5));
          inFlight--;
          return { status: "ok", items: [{ kind: "item", id: String(req.params["i"]) }] };
        }),
        concurrency: 2,
      },
      7,
    );
    const outs = await r.wave("search", () => r.all([0, 1, 2, 3, 4, 5, 6], (i) => r.call("x", "search", { i })), []);
    expect(peak).toBe(2);
    expect(outs.map((o) => (o.ok ? o.items[0]!.kind === "item" && o.items[0]!.id : null))).toEqual([
      "0",
      "1",
      "2",
      "3",
      "4",
      "5",
      "6",
    ]);
  });

  it("reports a copy of the steps after each wave", async () => {
    const seen: Step[][] = [];
    const r = runner({ providers: providers(ok) }, 1, (s) => seen.push(s));
    await r.wave("search", () => r.call("x", "search", {}), undefined);
    r.finish([ITEM]);
    expect(seen).toHaveLength(2);
    expect(seen[0]!.map((s) => s.status)).toEqual(["done", "pending"]);
    expect(seen[1]!.map((s) => s.status)).toEqual(["done", "done"]);
    seen[0]![0]!.status = "failed";
    expect(r.steps[0]!.status).toBe("done");
  });
});
