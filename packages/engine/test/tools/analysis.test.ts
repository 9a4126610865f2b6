/** The analysis helpers: words and keyword counts, lexicon sentiment, shares, day windows, rankings, pricing. */
import fc from "fast-check";
import { validateItem } from "@sdgw/validators";
import { describe, expect, it } from "vitest";
import {
  DAY_MS,
  dailySums,
  dayIso,
  dayWindow,
  engagementOf,
  leaderboard,
  median,
  rankBy,
  shareDistribution,
  titleOf,
} from "../../src/tools/analysis.ts";
import { CREDITS_PER_CALL, INLINE_MAX_CALLS, creditsFor, modeFor, quoteOf } from "../../src/tools/pricing.ts";
import {
  keywordCounts,
  keywordDistribution,
  keywordsOf,
  ratioBuckets,
  sentimentDistribution,
  sentimentOf,
  sentimentScore,
  words,
} from "../../src/tools/text.ts";
import { expectShares } from "./helpers.ts";

/** Words that the segmenter reads as one keyword each (checked below, kept only if so). */
const VOCAB = [
  "收纳",
  "预算",
  "链接",
  "灯光",
  "帐篷",
  "咖啡",
  "拿铁",
  "测评",
  "攻略",
  "新手",
  "价格",
  "收藏",
  "espresso",
  "grinder",
  "typescript",
  "review",
  "budget",
  "coffee",
  "camping",
  "latte",
].filter((w) => JSON.stringify(keywordsOf(w)) === JSON.stringify([w]));
const SEPARATORS = [" ", "，", "。", "、", "! ", "？", "\n", " - "];

describe("keywords", () => {
  it("segments Chinese into words with Intl.Segmenter and reads English words, lower-cased", () => {
    expect(words("收纳那段反复看了三遍")).toContain("收纳");
    expect(words("Great write-up, THANKS!")).toEqual(["great", "write", "up", "thanks"]);
    expect(keywordsOf("这个收纳真的太有用了 the grinder is great")).toEqual(
      expect.arrayContaining(["收纳", "有用", "grinder", "great"]),
    );
    expect(keywordsOf("的 了 a I 2026 1.5 the and")).toEqual([]);
  });

  it("the vocabulary of the properties is wide enough", () => {
    expect(VOCAB.length).toBeGreaterThanOrEqual(16);
  });

  it("property: any sequence of texts built from words → each word's count is its number of occurrences", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.tuple(fc.constantFrom(...VOCAB), fc.constantFrom(...SEPARATORS)), { maxLength: 12 }), {
          maxLength: 8,
        }),
        (texts) => {
          const expected = new Map<string, number>();
          for (const t of texts) for (const [w] of t) expected.set(w, (expected.get(w) ?? 0) + 1);
          const got = keywordCounts(texts.map((t) => t.map(([w, sep]) => w + sep).join("")));
          expect(new Map([...got].sort())).toEqual(new Map([...expected].sort()));
          const dist = keywordDistribution(
            texts.map((t) => t.map(([w, sep]) => w + sep).join("")),
            { top: 5 },
          );
          if (expected.size === 0) expect(dist).toBeNull();
          else {
            expect(validateItem(dist).ok).toBe(true);
            for (const b of dist!.buckets) expect(b.value).toBe(expected.get(b.label));
            const top = [...expected.values()].sort((a, b) => b - a).slice(0, 5);
            expect(dist!.buckets.map((b) => b.value)).toEqual(top);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("property: counts over any texts are the sum of each text's keywords, and the distribution keeps the most frequent", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.string({ maxLength: 40 }),
            fc.string({ unit: "grapheme", maxLength: 40 }),
            fc.constantFrom("太有用了，已收藏", "求链接！收纳收纳", "Great write-up."),
          ),
          { maxLength: 10 },
        ),
        (texts) => {
          const counts = keywordCounts(texts);
          const recount = new Map<string, number>();
          for (const t of texts) for (const w of keywordsOf(t)) recount.set(w, (recount.get(w) ?? 0) + 1);
          expect(counts).toEqual(recount);
          const dist = keywordDistribution(texts, { top: 3 });
          if (counts.size === 0) {
            expect(dist).toBeNull();
            return;
          }
          expect(validateItem(dist).ok).toBe(true);
          expect(dist!.unit).toBe("count");
          const values = dist!.buckets.map((b) => b.value);
          expect(values).toEqual([...values].sort((a, b) => b - a));
          const smallestKept = values.at(-1)!;
          for (const [w, n] of counts)
            if (!dist!.buckets.some((b) => b.label === w)) expect(n).toBeLessThanOrEqual(smallestKept);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("leaves out excluded words (a tool's own query)", () => {
    expect(keywordCounts(["瑞幸咖啡 咖啡 拿铁"], new Set(keywordsOf("咖啡"))).get("咖啡")).toBeUndefined();
  });
});

describe("sentiment", () => {
  it.each([
    ["太有用了，已收藏", "positive"],
    ["up主辛苦了", "positive"],
    ["这个价格可以接受", "positive"],
    ["感觉有点夸张了", "negative"],
    ["同款踩坑，哈哈哈", "negative"],
    ["真的不值，后悔了", "negative"],
    ["并不推荐", "negative"],
    ["楼主是哪个城市的？", "neutral"],
    ["This is exactly what I needed, thanks!", "positive"],
    ["Great write-up.", "positive"],
    ["Strongly disagree with point 3.", "negative"],
    ["This is not good at all", "negative"],
    ["Source?", "neutral"],
  ])("%s → %s", (text, want) => {
    expect(sentimentOf(text)).toBe(want);
  });

  it("scores sum over lexicon hits", () => {
    expect(sentimentScore("太有用了，已收藏")).toBe(2);
    expect(sentimentScore("")).toBe(0);
  });

  it("property: the sentiment shares of any non-empty list of texts sum to 1, buckets positive, neutral, negative", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string(), fc.constantFrom("太有用了", "踩坑了", "Great", "bad", "求链接")), {
          minLength: 1,
          maxLength: 30,
        }),
        (texts) => {
          const d = sentimentDistribution(texts, "comments")!;
          expect(validateItem(d).ok).toBe(true);
          expect(d.buckets.map((b) => b.label)).toEqual(["positive", "neutral", "negative"]);
          expectShares(d.buckets);
          const counts = d.platform_extra!["counts"] as Record<string, number>;
          expect(counts["positive"]! + counts["neutral"]! + counts["negative"]!).toBe(texts.length);
        },
      ),
    );
    expect(sentimentDistribution([], "comments")).toBeNull();
  });
});

describe("shares, windows, rankings", () => {
  it("property: shares of any counts (not all 0) sum to 1 and are count / total", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.nat({ max: 1_000_000 })), {
          minLength: 1,
          maxLength: 12,
        }),
        (counts) => {
          const total = counts.reduce((a, [, n]) => a + n, 0);
          const d = shareDistribution("platform", counts);
          if (total === 0) {
            expect(d).toBeNull();
            return;
          }
          expect(validateItem(d).ok).toBe(true);
          expectShares(d!.buckets);
          for (const [i, b] of d!.buckets.entries()) expect(b.value).toBe(counts[i]![1] / total);
        },
      ),
      { numRuns: 500 },
    );
    expect(ratioBuckets([["a", 0]])).toBeNull();
  });

  it("property: a window is `days` consecutive UTC days ending with the day of now - 1 ms, and daily sums add up", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.parse("2020-01-01"), max: Date.parse("2030-01-01") }),
        fc.constantFrom(1, 7, 14, 30),
        fc.array(fc.integer({ min: -40 * DAY_MS, max: DAY_MS }), { maxLength: 50 }),
        (now, days, offsets) => {
          const w = dayWindow(now, days);
          expect(w.days).toHaveLength(days);
          for (const [i, d] of w.days.entries()) if (i > 0) expect(d).toBe(w.days[i - 1]! + 1);
          expect(w.days.at(-1)).toBe(Math.floor((now - 1) / DAY_MS));
          const entries = offsets.map((o) => ({ ms: now + o, value: 1 }));
          const points = dailySums(entries, w);
          expect(points.map((p) => p.t)).toEqual(w.days.map(dayIso));
          const inside = entries.filter((e) => e.ms <= now && e.ms >= w.start).length;
          expect(points.reduce((a, p) => a + p.value, 0)).toBe(inside);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("ranks by score then key, whatever the input order; leaderboard ranks 1..n", () => {
    const list = [
      { k: "b", s: 3 },
      { k: "a", s: 3 },
      { k: "c", s: 9 },
    ];
    expect(
      rankBy(
        list,
        (x) => x.s,
        (x) => x.k,
      ).map((x) => x.k),
    ).toEqual(["c", "a", "b"]);
    expect(
      rankBy(
        [...list].reverse(),
        (x) => x.s,
        (x) => x.k,
      ).map((x) => x.k),
    ).toEqual(["c", "a", "b"]);
    const lb = leaderboard([
      { title: "x", heat: 9 },
      { title: "y", heat: 3, url: "https://x.com/a/status/12345" },
    ]);
    expect(lb.map((i) => i.rank)).toEqual([1, 2]);
    for (const i of lb) expect(validateItem(i).ok).toBe(true);
  });

  it("engagement, median, titles", () => {
    expect(
      engagementOf({ kind: "item", id: "1", metrics: { likes: 5, comments: 2, shares: 1, collects: 4, views: 1000 } }),
    ).toBe(12);
    expect(engagementOf({ kind: "item", id: "1" })).toBe(0);
    expect(median([])).toBeNull();
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(titleOf({ kind: "item", id: "1", text: "\n  first line\nsecond" })).toBe("first line");
    expect(titleOf({ kind: "item", id: "1", text: "好".repeat(100) })).toHaveLength(80);
    expect(titleOf({ kind: "item", id: "id-1" })).toBe("id-1");
  });
});

describe("pricing", () => {
  it("1 credit per planned provider call; inline up to INLINE_MAX_CALLS calls", () => {
    expect(CREDITS_PER_CALL).toBe(1);
    expect(INLINE_MAX_CALLS).toBe(10);
    expect(creditsFor(33)).toBe(33);
    expect(modeFor(10)).toBe("inline");
    expect(modeFor(11)).toBe("background");
    expect(modeFor(11, 11)).toBe("inline");
    const q = quoteOf([
      { name: "search", calls: 3 },
      { name: "comments", calls: 0 },
      { name: "details", calls: 8 },
    ]);
    expect(q).toEqual({
      mode: "background",
      quote_credits: 11,
      waves_planned: 3,
      calls_planned: 11,
      plan: [
        { wave: 1, name: "search", status: "pending", calls_planned: 3, calls_done: 0 },
        { wave: 2, name: "details", status: "pending", calls_planned: 8, calls_done: 0 },
        { wave: 3, name: "aggregate", status: "pending", calls_planned: 0, calls_done: 0 },
      ],
    });
  });
});
