/**
 * `POST /v1/find`: ranks the catalog's operations and tools by how well their names and descriptions (English and
 * Chinese) match a query. Words come from `Intl.Segmenter` (Chinese has no spaces: 视频弹幕 → 视频 · 弹幕), plus
 * character pairs of Chinese text so that a word the segmenter split differently still meets its match.
 */
import type { Platform } from "@sdgw/types";
import type { Catalog } from "./catalog.ts";
import type { ProviderSource } from "./providers/port.ts";

const ZH_PLATFORM: Record<Platform, string> = {
  xiaohongshu: "小红书 红书",
  douyin: "抖音",
  x: "推特 twitter",
  reddit: "红迪",
  wechat: "微信 公众号",
  weibo: "微博",
  bilibili: "哔哩哔哩 b站 B站",
  zhihu: "知乎",
  kuaishou: "快手",
  youtube: "油管",
};

const SEGMENTER = new Intl.Segmenter("zh", { granularity: "word" });
const HAN = /\p{Script=Han}/u;
const STOP = new Set([
  "a",
  "an",
  "the",
  "of",
  "or",
  "and",
  "by",
  "to",
  "in",
  "on",
  "for",
  "with",
  "its",
  "at",
  "as",
  "is",
  "的",
  "了",
  "和",
  "或",
]);

/** The words of a text: lower-cased, split at `_` and `.`, Chinese segmented, plus pairs of Chinese characters. */
export function words(text: string): string[] {
  const out = new Set<string>();
  for (const s of SEGMENTER.segment(text.toLowerCase().replace(/[_.·|/]/g, " "))) {
    if (!s.isWordLike) continue;
    const w = s.segment.trim();
    if (!w || STOP.has(w)) continue;
    out.add(w);
    if (HAN.test(w) && w.length > 2) for (let i = 0; i + 1 < w.length; i++) out.add(w.slice(i, i + 2));
  }
  return [...out];
}

interface Doc {
  op: string;
  platform: Platform | null;
  source: ProviderSource | null;
  name: string;
  description: string;
  example_call: { method: "GET" | "POST"; path: string };
  strong: Set<string>;
  weak: Set<string>;
  text: string;
}

/** One match of `POST /v1/find`. */
export interface FindMatch {
  op: string;
  platform: Platform | null;
  /** Where an operation's data comes from (live, simulated or plugged, as the catalog's platforms say); null for a tool. */
  source: ProviderSource | null;
  name: string;
  description: string;
  score: number;
  example_call: { method: "GET" | "POST"; path: string };
}

/** The ranked index over a catalog. */
export class Finder {
  private readonly docs: Doc[];

  constructor(catalog: Catalog) {
    const sourceOf = new Map(catalog.platforms.map((p) => [p.platform, p.source] as const));
    this.docs = [
      ...catalog.operations.map((o) => ({
        op: o.op,
        platform: o.platform,
        source: sourceOf.get(o.platform) ?? "simulated",
        name: o.name,
        description: o.description,
        example_call:
          o.route === "/v1/search"
            ? { method: "GET" as const, path: "/v1/search" }
            : { method: "POST" as const, path: o.route },
        strong: new Set(words(`${o.name} ${o.platform} ${ZH_PLATFORM[o.platform]}`)),
        weak: new Set(words(o.description)),
        text: `${o.op} ${o.description} ${ZH_PLATFORM[o.platform]}`.toLowerCase(),
      })),
      ...catalog.tools.map((t) => ({
        op: t.tool,
        platform: null,
        source: null,
        name: t.tool,
        description: t.description,
        example_call: { method: "POST" as const, path: `/v1/tools/${t.tool}` },
        strong: new Set(words(t.tool)),
        weak: new Set(words(`${t.description} ${t.params.join(" ")}`)),
        text: `${t.tool} ${t.description}`.toLowerCase(),
      })),
    ];
  }

  /** The best matches, best first; ties keep catalog order. Scores are in [0, 1]. */
  find(query: string, options: { platform?: Platform; limit?: number } = {}): FindMatch[] {
    const q = words(query);
    if (q.length === 0) return [];
    const scored: FindMatch[] = [];
    for (const d of this.docs) {
      if (options.platform && d.platform !== options.platform) continue;
      let got = 0;
      for (const w of q) {
        if (d.strong.has(w)) got += 1;
        else if (d.weak.has(w)) got += 0.8;
        else if (w.length >= 3 && d.text.includes(w)) got += 0.5;
      }
      const score = Math.round((got / q.length) * 100) / 100;
      if (score > 0)
        scored.push({
          op: d.op,
          platform: d.platform,
          source: d.source,
          name: d.name,
          description: d.description,
          score: Math.min(1, score),
          example_call: d.example_call,
        });
    }
    return scored.sort((a, b) => b.score - a.score).slice(0, options.limit ?? 20);
  }
}
