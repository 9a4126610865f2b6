/** The server's answer serializer: byte for byte what JSON.stringify gives, items spliced from cached bytes. */
import type { Platform } from "@sdgw/types";
import { Simulator } from "@sdgw/engine";
import { describe, expect, it } from "vitest";
import { serializeAnswer } from "../src/serialize.ts";

const call = (sim: Simulator, platform: Platform, operation: string, params: Record<string, unknown>) =>
  sim.providers[platform].call({ platform, operation, params, signal: new AbortController().signal });

describe("answers", () => {
  it("serializes answers with cached item bytes exactly as JSON.stringify does, in UTF-8", async () => {
    const sim = new Simulator({ now: () => Date.parse("2026-11-21T08:00:00Z") });
    const a = await call(sim, "x", "search", { query: 'a \u0000 "q"', count: 3 });
    const b = await call(sim, "reddit", "search", { query: "b", count: 2 });
    const items = (o: typeof a) => (o.status === "ok" ? o.items : []);
    const entry = (o: typeof a) => ({
      status: o.status,
      applied_params: { query: "a \u0000" },
      warnings: [],
      items: items(o),
    });
    const bodies = [
      { request_id: "r", items: items(a), billing: { cost: 1 } },
      { request_id: "r", fanout: { x: entry(a), reddit: entry(b), wechat: { ...entry(b), items: [] } } },
      {
        request_id: "r",
        targets: [
          { platform: "x", target: "1", result: entry(a) },
          { platform: "x", target: "2", result: entry(a) },
        ],
      },
      { request_id: "r", items: [] },
    ];
    for (const body of bodies)
      expect(serializeAnswer(body as never).equals(Buffer.from(JSON.stringify(body)))).toBe(true);
    const zh = await call(sim, "xiaohongshu", "search", { query: "露营", count: 2 });
    const withZh = { request_id: "r", items: items(zh), note: "露营 \u2028 \ud83c\udfd5" };
    expect(serializeAnswer(withZh as never).toString("utf8")).toBe(JSON.stringify(withZh));
  });
});
