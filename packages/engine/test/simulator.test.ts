/** The simulator: deterministic data, pure mappings per platform folder, the capability matrix, knobs. */
import { PLATFORMS, type Item } from "@sdgw/types";
import { validateItem } from "@sdgw/validators";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Catalog } from "../src/catalog.ts";
import { Gen } from "../src/providers/simulator/gen.ts";
import { PLATFORM_MODULES, Simulator, seedText } from "../src/providers/simulator/index.ts";

/** The definition of the seed text (the same request must keep giving the same data). */
function referenceSeedText(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "";
  if (Array.isArray(value)) return `[${value.map(referenceSeedText).join(",")}]`;
  const o = value as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${k}:${referenceSeedText(o[k])}`)
    .join(",")}}`;
}

const call = (
  sim: Simulator,
  platform: (typeof PLATFORMS)[number],
  operation: string,
  params: Record<string, unknown>,
) => sim.providers[platform].call({ platform, operation, params, signal: new AbortController().signal });

describe("simulator", () => {
  it("gives the same data for the same request, and other data for another", async () => {
    const now = () => Date.parse("2026-11-21T08:00:00Z");
    const a = await call(new Simulator({ now }), "douyin", "search", { query: "露营", count: 5 });
    const b = await call(new Simulator({ now }), "douyin", "search", { query: "露营", count: 5 });
    const c = await call(new Simulator({ now }), "douyin", "search", { query: "徒步", count: 5 });
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
  });

  // The platforms stand at the clock's UTC day: on any date (1970 to 2200) every date answered is on or before the
  // day's start, the newest posts of a long list are from the last days, and the whole day answers the same data.
  // A day later the same posts come back one day older.
  it("follows its clock: dates up to the start of the clock's UTC day, the same all day, a day older the next day", async () => {
    const dates = (o: Awaited<ReturnType<typeof call>>) =>
      (o.status === "ok" ? o.items : [])
        .map((i) => Date.parse((i as { published_at?: string }).published_at ?? ""))
        .filter(Number.isFinite);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: Date.parse("2200-01-01T00:00:00Z") }),
        fc.constantFrom(...PLATFORMS),
        async (ms, platform) => {
          const dayStart = ms - (ms % 86_400_000);
          let clock = dayStart;
          const sim = new Simulator({ now: () => clock });
          const params = { query: "露营 camping", count: 20 };
          const first = await call(sim, platform, "search", params);
          expect(first.status).toBe("ok");
          const when = dates(first);
          expect(when.length).toBeGreaterThan(0);
          for (const t of when) expect(t).toBeLessThanOrEqual(dayStart);
          expect(Math.max(...when)).toBeGreaterThan(dayStart - 60 * 86_400_000);
          clock = dayStart + 86_399_999;
          expect(await call(sim, platform, "search", params)).toEqual(first);
          clock = dayStart + 86_400_000;
          const next = await call(sim, platform, "search", params);
          expect(next.status === "ok" && next.items.map((i) => (i as { id: string }).id)).toEqual(
            first.status === "ok" && first.items.map((i) => (i as { id: string }).id),
          );
          expect(dates(next)).toEqual(when.map((t) => t + 86_400_000));
        },
      ),
      { numRuns: 40 },
    );
  });

  it.each(PLATFORMS)("%s: every fake maps to valid items with RFC 3986 links, by pure functions", (platform) => {
    const m = PLATFORM_MODULES[platform];
    const g = () => new Gen(`${platform}-test`, Date.parse("2026-11-20T00:00:00Z"));
    const items: Item[] = [
      m.map.post(m.fake.post({ g: g(), topic: "双十一 #1" })),
      m.map.user(m.fake.user({ g: g(), topic: "" })),
    ];
    if (m.operations.some((o) => o.name === "comments"))
      items.push(m.map.comment(m.fake.comment({ g: g(), topic: "", parentId: "p1" })));
    if (m.operations.some((o) => o.name === "trending"))
      items.push(m.map.trend(m.fake.trend({ g: g(), topic: "双十一", rank: 1 })));
    for (const item of items) {
      const v = validateItem(item);
      expect(v.ok, JSON.stringify(v.ok ? "" : v.errors)).toBe(true);
      for (const url of JSON.stringify(item).match(/https?:\/\/[^"]+/g) ?? [])
        expect(url, url).toMatch(/^[\x21-\x7e]+$/);
    }
    const raw = m.fake.post({ g: g(), topic: "t" });
    expect(m.map.post(raw)).toEqual(m.map.post(structuredClone(raw)));
  });

  it("reads ids back from the links it writes", () => {
    for (const platform of PLATFORMS) {
      const m = PLATFORM_MODULES[platform];
      const item = m.map.post(m.fake.post({ g: new Gen("links", 0), topic: "t" }));
      expect(m.postIdFromUrl(new URL(item.url!)), platform).toBe(item.id);
      const user = m.map.user(m.fake.user({ g: new Gen("links", 0), topic: "" }));
      expect(m.userIdFromUrl(new URL(user.url!)), platform).toBe(user.id);
    }
  });

  it("has the capability matrix: wechat has no video search nor trending, x no collects", () => {
    const catalog = new Catalog(new Simulator().providers);
    expect(catalog.platformsOffering("trending")).not.toContain("wechat");
    expect(catalog.providers.wechat.unsupported("search", { content_type: "video" })).toMatch(/douyin/);
    expect(catalog.providers.x.unsupported("search", { sort: "most_collected" })).toMatch(/collect/);
    expect(catalog.providers.weibo.unsupported("search", { sort: "most_collected" })).toBeNull();
    expect(catalog.lookup("bilibili.video_danmaku")).toBeDefined();
  });

  it("applies latency and faults per platform and for all", async () => {
    const sim = new Simulator({ knobs: { "*": { latencyMs: 20 } } });
    const t0 = Date.now();
    await call(sim, "x", "trending", {});
    expect(Date.now() - t0).toBeGreaterThanOrEqual(15);
    sim.setKnobs("x", { fault: "upstream_error" });
    expect(await call(sim, "x", "trending", {})).toMatchObject({
      status: "error",
      failure: { code: "upstream_error" },
    });
    expect((await call(sim, "reddit", "trending", {})).status).toBe("ok");
    sim.setKnobs("x", { fault: "crash" });
    await expect(call(sim, "x", "trending", {})).rejects.toThrow(/simulated crash/);
    sim.resetKnobs();
    expect((await call(sim, "x", "trending", {})).status).toBe("ok");
  });
});

describe("seeds", () => {
  it("seeds by the reference definition of the parameters' text", () => {
    fc.assert(
      fc.property(
        fc.anything({ withNullPrototype: true, withSparseArray: true, withObjectString: true }),
        (v) => seedText(v) === referenceSeedText(v),
      ),
      { numRuns: 3000 },
    );
  });
});
