/**
 * The deterministic simulator: the default provider of every platform. Data is seeded by platform, operation and
 * parameters (same request, same data), written as each platform's native JSON by its folder's fakes and mapped
 * to items by its pure mapping functions. Knobs per platform (or `*` for all) set latency and faults, in tests or
 * at start-up.
 */
import { platformFailure } from "../failures.ts";
import type { Item, Platform } from "@sdgw/types";
import { PLATFORMS } from "@sdgw/types";
import { bilibili } from "../bilibili/index.ts";
import { douyin } from "../douyin/index.ts";
import type { OperationSpec, PlatformProvider, ProviderOutcome, ProviderRequest } from "../port.ts";
import { kuaishou } from "../kuaishou/index.ts";
import { reddit } from "../reddit/index.ts";
import { wechat } from "../wechat/index.ts";
import { weibo } from "../weibo/index.ts";
import { x } from "../x/index.ts";
import { xiaohongshu } from "../xiaohongshu/index.ts";
import { youtube } from "../youtube/index.ts";
import { zhihu } from "../zhihu/index.ts";
import { utcDayStart } from "../../time.ts";
import { Gen, hash32 } from "./gen.ts";
import { idFromLink, type PlatformModule } from "./module.ts";
import { EN_TRENDS, ZH_TRENDS } from "./vocab.ts";
import { base64url, fromBase64url } from "../../encoding.ts";
import { seedText } from "../../canonical.ts";

export { seedText };

/** Every platform folder, by platform. */
export const PLATFORM_MODULES: Readonly<Record<Platform, PlatformModule>> = {
  xiaohongshu,
  douyin,
  x,
  reddit,
  wechat,
  weibo,
  bilibili,
  zhihu,
  kuaishou,
  youtube,
};

/** Latency and faults of a simulated platform. */
export interface SimulatorKnobs {
  /** Milliseconds before the platform answers: a number, or `[min, max]` (uniform). Default 0. */
  latencyMs?: number | readonly [number, number];
  /**
   * A fault to inject: `upstream_error`, `timeout`, `rate_limited` (the platform's own limit), `unavailable`
   * (reads paused), `empty` (no results), or `crash` (the provider throws: the run breaks on the server's side).
   */
  fault?: "upstream_error" | "timeout" | "rate_limited" | "unavailable" | "empty" | "crash" | null;
  /** Share of calls that get the fault, 0 to 1 (default 1). */
  faultRate?: number;
}

/** Options of the simulator. */
export interface SimulatorOptions {
  /**
   * The clock the simulated platforms follow (ms since the epoch; default `Date.now`, and the gateway passes its
   * own). Their data reaches up to the start of the clock's UTC day: every date is before it, and the same request
   * answers the same data all day. The next day the same posts are a day older and a day's newer ones come first.
   */
  now?: () => number;
  /** A fixed moment instead of the clock's day (tests that compare exact dates): every date is before it. */
  anchor?: string | number;
  /** Knobs per platform, or `*` for every platform. */
  knobs?: Partial<Record<Platform | "*", SimulatorKnobs>>;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason ?? new Error("aborted"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Cursors the simulator writes: base64url JSON `{ o: offset, p: platform, op }`. */
export function encodeCursor(platform: string, operation: string, offset: number): string {
  return base64url(JSON.stringify({ o: offset, p: platform, op: operation }));
}

function decodeCursor(platform: string, operation: string, cursor: string): number | null {
  try {
    const text = fromBase64url(cursor);
    if (text === undefined) return null;
    const v = JSON.parse(text) as { o?: unknown; p?: unknown; op?: unknown };
    return v.p === platform &&
      v.op === operation &&
      Number.isSafeInteger(v.o) &&
      (v.o as number) >= 0 &&
      (v.o as number) <= 10_000
      ? (v.o as number)
      : null;
  } catch {
    return null;
  }
}

const SORT_METRIC: Record<string, "likes" | "collects" | "comments"> = {
  most_liked: "likes",
  most_collected: "collects",
  most_comments: "comments",
};

function sortItems(items: Item[], sort: unknown): Item[] {
  if (sort === "latest")
    return [...items].sort((a, b) =>
      String((b as { published_at?: string }).published_at ?? "").localeCompare(
        String((a as { published_at?: string }).published_at ?? ""),
      ),
    );
  const metric = typeof sort === "string" ? SORT_METRIC[sort] : undefined;
  if (!metric) return items;
  return [...items].sort(
    (a, b) =>
      ((b as { metrics?: Record<string, number> }).metrics?.[metric] ?? 0) -
      ((a as { metrics?: Record<string, number> }).metrics?.[metric] ?? 0),
  );
}

/**
 * Answers the simulator keeps (the last ones made). Few: an answer kept long enough outlives V8's young generation,
 * and every varied call then costs the old generation's marking (bench/server/README.md: at 2 000 answers, a third
 * more garbage-collection work a call at count 20); a query asked again at once (a retry, a replay) is still kept.
 */
const MEMO_SIZE = 32;

/** The simulated providers of the ten platforms, and their knobs. */
export class Simulator {
  /** The fixed moment, or null: the start of the clock's UTC day. */
  private readonly fixedAnchor: number | null;
  private readonly now: () => number;
  private knobs: Partial<Record<Platform | "*", SimulatorKnobs>>;
  /** Answers are pure in (platform, operation, parameters): the last ones are kept (treat them as read-only). */
  private readonly memo = new Map<string, ProviderOutcome>();
  /** One provider per platform. */
  readonly providers: Record<Platform, PlatformProvider>;

  constructor(options: SimulatorOptions = {}) {
    this.fixedAnchor =
      options.anchor === undefined
        ? null
        : typeof options.anchor === "number"
          ? options.anchor
          : Date.parse(options.anchor);
    if (this.fixedAnchor !== null && !Number.isFinite(this.fixedAnchor))
      throw new TypeError(`simulator anchor: not a date: ${String(options.anchor)}`);
    this.now = options.now ?? Date.now;
    this.knobs = { ...options.knobs };
    this.providers = Object.fromEntries(PLATFORMS.map((p) => [p, this.provider(PLATFORM_MODULES[p])])) as Record<
      Platform,
      PlatformProvider
    >;
  }

  /** Sets the knobs of one platform (or `*`); `null` clears them. */
  setKnobs(platform: Platform | "*", knobs: SimulatorKnobs | null): void {
    if (knobs === null) delete this.knobs[platform];
    else this.knobs[platform] = { ...knobs };
  }

  /** Clears every knob: no latency, no faults. */
  resetKnobs(): void {
    this.knobs = {};
  }

  /** The moment the simulated platforms stand at now: every date they answer is before it. */
  anchor(): number {
    return this.fixedAnchor ?? utcDayStart(this.now());
  }

  private knobsFor(platform: Platform): SimulatorKnobs {
    return { ...this.knobs["*"], ...this.knobs[platform] };
  }

  private provider(m: PlatformModule): PlatformProvider {
    return {
      platform: m.platform,
      operations: m.operations,
      scoped: m.scoped,
      source: "simulated",
      unsupported: (op, params) => m.unsupported(op, params),
      cursorValid: (op, cursor) => decodeCursor(m.platform, op, cursor) !== null,
      call: (req) => this.call(m, req),
    };
  }

  private async call(m: PlatformModule, req: ProviderRequest): Promise<ProviderOutcome> {
    const k = this.knobsFor(m.platform);
    const latency = Array.isArray(k.latencyMs)
      ? k.latencyMs[0]! + Math.random() * (k.latencyMs[1]! - k.latencyMs[0]!)
      : ((k.latencyMs as number | undefined) ?? 0);
    await sleep(latency, req.signal);
    if (k.fault && Math.random() < (k.faultRate ?? 1)) {
      if (k.fault === "crash") throw new Error(`simulated crash of the ${m.platform} provider`);
      return platformFailure(k.fault === "unavailable" ? "temporarily_unavailable" : k.fault, m.platform);
    }
    const anchor = this.anchor();
    const key = `${anchor}|${m.platform}|${req.operation}|${seedText(req.params)}`;
    let out = this.memo.get(key);
    if (!out) {
      out = this.answer(m, req, anchor);
      if (this.memo.size >= MEMO_SIZE) this.memo.delete(this.memo.keys().next().value!);
      this.memo.set(key, out);
    }
    return out;
  }

  /** The data of one call: pure given the request and the anchor. */
  private answer(m: PlatformModule, req: ProviderRequest, anchor: number): ProviderOutcome {
    const p = req.params;
    const op = req.operation;
    const cursor = typeof p["cursor"] === "string" ? p["cursor"] : undefined;
    const offset = cursor ? (decodeCursor(m.platform, op, cursor) ?? 0) : 0;
    const { cursor: _c, ...stable } = p as Record<string, unknown>;
    void _c;
    const seed = `${m.platform}|${op}|${seedText(stable)}`;
    const seedHash = hash32(`${seed}|`);
    const gen = (salt: string | number) => new Gen(String(salt), anchor, seedHash); // the generator of `${seed}|${salt}`
    const trends = m.lang === "zh" ? ZH_TRENDS : EN_TRENDS;
    const topicOf = (g: Gen) => g.pick(trends);
    const page = (shown: number, total: number) =>
      offset + shown < total
        ? { has_more: true as const, cursor: encodeCursor(m.platform, op, offset + shown) }
        : { has_more: false as const };
    const list = (total: number, size: number, make: (i: number) => Item): ProviderOutcome => {
      const n = Math.max(0, Math.min(size, total - offset));
      if (n === 0) return { status: "empty", items: [], page: { has_more: false } };
      const items = Array.from({ length: n }, (_, i) => make(offset + i));
      return { status: "ok", items: sortItems(items, p["sort"]), page: page(n, total) };
    };
    const target = (kind: "post" | "user"): { id: string } | ProviderOutcome => {
      const url = typeof p["url"] === "string" ? p["url"] : undefined;
      let id = typeof p["id"] === "string" ? p["id"] : undefined;
      if (url !== undefined) {
        const found = idFromLink(m, kind, url);
        if (!found)
          return {
            status: "error",
            failure: {
              code: "invalid_target",
              param: "url",
              message: `This link does not point at a ${m.platform} ${kind === "post" ? "post" : "account"}.`,
            },
          };
        id = found;
      }
      if (!id)
        return {
          status: "error",
          failure: { code: "invalid_target", param: "id", message: "No id or link was given." },
        };
      if (/deleted|missing|private/i.test(id))
        return {
          status: "error",
          failure: {
            code: "not_found",
            message: `This ${m.platform} ${kind === "post" ? "post" : "account"} is missing, private or deleted.`,
          },
        };
      return { id };
    };
    const size = (fallback: number) =>
      typeof p["limit"] === "number" ? p["limit"] : typeof p["count"] === "number" ? p["count"] : fallback;

    switch (op) {
      case "search": {
        const q = String(p["query"]);
        const topic = q;
        if (/^(zzz|nothing\b|无结果)/i.test(q)) return { status: "empty", items: [], page: { has_more: false } };
        const total = 20 + (hash32(`${m.platform}|${q}|${String(p["type"])}`) % 160);
        if (p["type"] === "user") return list(total, size(10), (i) => m.map.user(m.fake.user({ g: gen(i), topic })));
        return list(total, size(10), (i) => m.map.post(m.fake.post({ g: gen(i), topic, params: p })));
      }
      case "trending":
        return list(50, size(10), (i) => {
          const g = gen(i);
          const topic = trends[(hash32(seed) + i) % trends.length]!;
          return { ...m.map.trend(m.fake.trend({ g, topic, rank: i + 1, params: p })), rank: i + 1 };
        });
      case "detail": {
        const t = target("post");
        if (!("id" in t)) return t;
        const g = gen(t.id);
        return { status: "ok", items: [m.map.post(m.fake.post({ g, topic: topicOf(g), id: t.id, params: p }))] };
      }
      case "comments": {
        const t = target("post");
        if (!("id" in t)) return t;
        const total = hash32(`${m.platform}|comments|${t.id}`) % 90;
        return list(total, size(20), (i) => m.map.comment(m.fake.comment({ g: gen(i), topic: "", parentId: t.id })));
      }
      case "user_profile": {
        const t = target("user");
        if (!("id" in t)) return t;
        return { status: "ok", items: [m.map.user(m.fake.user({ g: gen(t.id), topic: "", id: t.id }))] };
      }
      case "user_posts": {
        const t = target("user");
        if (!("id" in t)) return t;
        const total = 5 + (hash32(`${m.platform}|posts|${t.id}`) % 120);
        return list(total, size(20), (i) => {
          const g = gen(i);
          return m.map.post(m.fake.post({ g, topic: topicOf(g), authorId: t.id, params: p }));
        });
      }
      default: {
        const fake = m.fake.extra?.[op];
        const map = m.map.extra?.[op] as ((raw: unknown) => Item) | undefined;
        const spec = m.operations.find((o: OperationSpec) => o.name === op);
        if (!fake || !map || !spec) return { status: "not_supported", message: `${m.platform} does not offer ${op}.` };
        const subject = Object.values(p).find((v) => typeof v === "string" && /deleted|missing|private/i.test(v));
        if (subject !== undefined)
          return {
            status: "error",
            failure: { code: "not_found", message: `This ${m.platform} object is missing, private or deleted.` },
          };
        const paged = spec.params?.some((x) => x.name === "cursor") ?? false;
        const total = paged ? 20 + (hash32(seed) % 100) : 12;
        return list(total, paged ? size(20) : 12, (i) => {
          const g = gen(i);
          return map(fake({ g, topic: topicOf(g), rank: i, params: p }));
        });
      }
    }
  }
}
