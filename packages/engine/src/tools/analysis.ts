/**
 * Numbers of the tools, computed from fetched items: engagement, day windows (UTC) and series per day, shares,
 * rankings, medians. Pure and deterministic: ties break on stable keys, never on arrival order.
 */
import type { ContentItem, DistributionItem, Item, LeaderboardItem, Platform, TimeseriesItem } from "@sdgw/types";
import { DAY_MS, isoSeconds } from "../time.ts";
import { ratioBuckets } from "./text.ts";

export { DAY_MS };

/**
 * The engagement of a post: likes + comments + shares + collects (views are reach, not engagement, and are left
 * out). Missing counters count 0.
 */
export function engagementOf(item: ContentItem): number {
  const m = item.metrics ?? {};
  return (m.likes ?? 0) + (m.comments ?? 0) + (m.shares ?? 0) + (m.collects ?? 0);
}

/** A content item (`kind: "item"`), narrowed. */
export function isContent(item: Item): item is ContentItem {
  return item.kind === "item";
}

/** The moment of an RFC 3339 text (ms), or null. */
export function timeOf(text: string | undefined): number | null {
  if (text === undefined) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}

/** `YYYY-MM-DDT00:00:00Z` of a UTC day number (days since the epoch). */
export function dayIso(day: number): string {
  return isoSeconds(day * DAY_MS);
}

/**
 * A window of whole UTC days ending with the day of the run's moment: `days` calendar days, the last being the
 * day that holds `now - 1 ms` (so a run at midnight covers the day just ended). A moment is in the window when
 * its day is one of those days and it is not after `now`.
 */
export interface DayWindow {
  /** The run's moment (ms). */
  now: number;
  /** UTC day numbers, oldest first, consecutive. */
  days: number[];
  /** First millisecond of the first day. */
  start: number;
}

/** The window of `days` UTC days ending at `now`. */
export function dayWindow(now: number, days: number): DayWindow {
  const last = Math.floor((now - 1) / DAY_MS);
  const list = Array.from({ length: days }, (_, i) => last - days + 1 + i);
  return { now, days: list, start: list[0]! * DAY_MS };
}

/** Whether a moment (ms) is inside the window. */
export function inWindow(ms: number, w: DayWindow): boolean {
  return ms >= w.start && ms <= w.now;
}

/** The value of each day of the window: the sum of `value` of the entries on that day (0 for none). */
export function dailySums(
  entries: ReadonlyArray<{ ms: number; value: number }>,
  w: DayWindow,
): Array<{ t: string; value: number }> {
  const sums = new Map<number, number>(w.days.map((d) => [d, 0]));
  for (const e of entries) {
    if (!inWindow(e.ms, w)) continue;
    const d = Math.floor(e.ms / DAY_MS);
    if (sums.has(d)) sums.set(d, sums.get(d)! + e.value);
  }
  return w.days.map((d) => ({ t: dayIso(d), value: sums.get(d)! }));
}

/** A `timeseries` of one value per day over the window. */
export function dailySeries(
  metric: string,
  unit: string,
  entries: ReadonlyArray<{ ms: number; value: number }>,
  w: DayWindow,
  extra: Record<string, unknown> = {},
): TimeseriesItem {
  return {
    kind: "timeseries",
    metric,
    unit,
    points: dailySums(entries, w),
    platform_extra: { timezone: "UTC", days: w.days.length, ...extra },
  };
}

/** A `distribution` of shares (unit `ratio`) over labels, or null when every count is 0. */
export function shareDistribution(
  dimension: string,
  counts: ReadonlyArray<readonly [string, number]>,
  extra: Record<string, unknown> = {},
): DistributionItem | null {
  const buckets = ratioBuckets(counts);
  return buckets
    ? {
        kind: "distribution",
        dimension,
        unit: "ratio",
        buckets,
        platform_extra: { counts: Object.fromEntries(counts), total: counts.reduce((a, [, n]) => a + n, 0), ...extra },
      }
    : null;
}

/** The middle value (mean of the two middle values for an even count), or null for none. */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Sorts by `score` descending, ties by `key` ascending (code-point order): a stable, arrival-independent order. */
export function rankBy<T>(list: readonly T[], score: (t: T) => number, key: (t: T) => string): T[] {
  return [...list].sort((a, b) => {
    const d = score(b) - score(a);
    if (d !== 0) return d;
    const ka = key(a);
    const kb = key(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
}

/** One entry of a ranking, before its rank is given. */
export interface RankEntry {
  title: string;
  heat: number;
  url?: string;
  query?: string;
  platform_extra?: Record<string, unknown>;
}

/** `leaderboard` items of entries already in rank order: rank 1..n. */
export function leaderboard(entries: readonly RankEntry[]): LeaderboardItem[] {
  return entries.map((e, i) => ({
    kind: "leaderboard",
    rank: i + 1,
    title: e.title,
    heat: e.heat,
    ...(e.url !== undefined ? { url: e.url } : {}),
    ...(e.query !== undefined ? { query: e.query } : {}),
    ...(e.platform_extra ? { platform_extra: e.platform_extra } : {}),
  }));
}

/** A one-line title of a post: its title, else the first line of its text (at most 80 characters), else its id. */
export function titleOf(item: ContentItem): string {
  const raw = item.title ?? item.text?.split("\n").find((l) => l.trim() !== "") ?? item.id;
  const line = raw.trim() || item.id;
  const chars = [...line];
  return chars.length > 80 ? `${chars.slice(0, 79).join("")}…` : line;
}

/** A copy of a content item with `platform` (and `extra`) added to its `platform_extra`. */
export function tagged(item: ContentItem, platform: Platform, extra: Record<string, unknown> = {}): ContentItem {
  return { ...item, platform_extra: { ...item.platform_extra, platform, ...extra } };
}

/** A number rounded to `digits` decimals (for ratios shown to people). */
export function round(n: number, digits = 4): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** A post fetched from a platform, with the numbers the tools rank by. */
export interface FetchedPost {
  platform: Platform;
  item: ContentItem;
  /** `engagementOf(item)`. */
  engagement: number;
  /** `published_at` in ms, or null. */
  ms: number | null;
}

/** The posts among items, once each (by platform and id), with their engagement and time. */
export function postsOf(platform: Platform, items: readonly Item[], seen: Set<string> = new Set()): FetchedPost[] {
  const out: FetchedPost[] = [];
  for (const item of items) {
    if (!isContent(item)) continue;
    const key = `${platform}|${item.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ platform, item, engagement: engagementOf(item), ms: timeOf(item.published_at) });
  }
  return out;
}

/** The key of a post for stable ordering. */
export function postKey(p: FetchedPost): string {
  return `${p.platform}|${p.item.id}`;
}
