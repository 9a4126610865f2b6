/**
 * YouTube on its official API (D124): the YouTube Data API v3 with the operator's key, over the connectors' HTTP
 * helper, budget and cache, mapped to items by this folder's pure mappers. Cheap calls first: an id is read with
 * `videos.list` or `channels.list` (1 unit, up to 50 ids shared by calls that start together), a channel's posts
 * with its uploads playlist (`playlistItems.list`, 1 unit), never with `search.list` (100 units), which only
 * `search` uses — with one `videos.list` (or `channels.list`) more for the statistics, 101 units in all, which its
 * quote says. Transcripts need OAuth access to captions: `video_transcript` is not available on live YouTube.
 */
import type { Item } from "@sdgw/types";
import { Batcher } from "../../connectors/batch.ts";
import { throughCache } from "../../connectors/cache.ts";
import type { BudgetBucket, BudgetCharge, ConnectorContext } from "../../connectors/context.ts";
import { decodeCursor, encodeCursor, resumeState, type CursorState } from "../../connectors/cursor.ts";
import { SettingsReader, type ConnectorDefinition } from "../../connectors/define.ts";
import {
  credentialsRefused,
  faultOutcome,
  invalidTarget,
  notFound,
  rateLimitedUntil,
  upstreamError,
} from "../../connectors/errors.ts";
import { upstreamGet, type UpstreamFault, type UpstreamRequest, type UpstreamResult } from "../../connectors/http.ts";
import { nextMidnight } from "../../connectors/zone.ts";
import { isoSeconds } from "../../time.ts";
import type { OperationSpec, PlatformProvider, ProviderOutcome, ProviderRequest, RouteOperation } from "../port.ts";
import { idFromLink } from "../simulator/module.ts";
import { youtube, type YtChannel, type YtComment, type YtVideo } from "./index.ts";

/** The checked settings of the YouTube connector. */
export interface YouTubeSettings {
  /** The operator's YouTube Data API key (secret). */
  apiKey: string;
  /** The API's base URL (`https://www.googleapis.com/youtube/v3`, or a fake upstream on this machine). */
  baseUrl: string;
  /** Units the gateway may spend a day (at most the project's quota, 10 000 by default). */
  dailyUnits: number;
  /** Of those, units `search.list` may spend a day (100 a search), so that searches leave room for cheap reads. */
  searchUnits: number;
  /** The region of the trending chart (ISO 3166-1 alpha-2). */
  region: string;
}

/** YouTube's quota day ends at midnight Pacific time. */
export const YOUTUBE_QUOTA_ZONE = "America/Los_Angeles";

/** Quota units of each API method the connector calls (YouTube's quota calculator). */
export const YOUTUBE_UNITS = {
  "search.list": 100,
  "videos.list": 1,
  "channels.list": 1,
  "commentThreads.list": 1,
  "playlistItems.list": 1,
} as const;

/** How long an answer is kept, per operation (D122): short for what changes fast, longer for profiles. */
export const YOUTUBE_CACHE_TTL_MS: Readonly<Record<RouteOperation, number>> = {
  search: 120_000,
  trending: 120_000,
  comments: 300_000,
  detail: 600_000,
  user_posts: 600_000,
  user_profile: 3_600_000,
};

const VIDEO_ID = /^[A-Za-z0-9_-]{11}$/;
const CHANNEL_ID = /^UC[A-Za-z0-9_-]{22}$/;
const HANDLE = /^@[A-Za-z0-9._-]{3,30}$/;
const DAY_MS = 86_400_000;
const RANGE_DAYS: Readonly<Record<string, number>> = { "1d": 1, "7d": 7, "30d": 30 };
const VIDEO_PARTS = "snippet,statistics,contentDetails";

const TRANSCRIPT_WHY =
  "youtube.video_transcript is not available on live YouTube yet: the YouTube Data API gives " +
  "captions (captions.download) only to an OAuth token of the video's owner, and the gateway reads " +
  "YouTube with an API key. Nothing ran and nothing was charged.";

/** The operator's settings of the YouTube connector. */
export const youtubeConnector: ConnectorDefinition<YouTubeSettings> = {
  platform: "youtube",
  api: "YouTube Data API v3",
  settings: [
    {
      name: "apiKey",
      env: "SDGW_YOUTUBE_API_KEY",
      description: "The operator's YouTube Data API key; setting it switches youtube from the simulator to the API.",
      secret: true,
      switch: true,
    },
    {
      name: "baseUrl",
      env: "SDGW_YOUTUBE_BASE_URL",
      description: "The API's base URL (tests point it at a fake upstream on 127.0.0.1).",
      default: "https://www.googleapis.com/youtube/v3",
    },
    {
      name: "dailyUnits",
      env: "SDGW_YOUTUBE_DAILY_UNITS",
      description:
        "Quota units the gateway may spend a day, every instance together (YouTube's default quota: 10 000).",
      default: "10000",
    },
    {
      name: "searchUnits",
      env: "SDGW_YOUTUBE_SEARCH_UNITS",
      description: "Of the daily units, how many searches may spend (100 each); default half of the daily units.",
    },
    {
      name: "region",
      env: "SDGW_YOUTUBE_REGION",
      description: "The region of the trending chart, an ISO 3166-1 alpha-2 code.",
      default: "US",
    },
  ],
  configure(raw, label) {
    const r = new SettingsReader(this.settings, raw, label);
    const apiKey = r.secret("apiKey", "a YouTube Data API key");
    const baseUrl = r.baseUrl("baseUrl");
    const dailyUnits = r.whole("dailyUnits", "the YouTube quota units the gateway may spend a day", 1, 1_000_000_000);
    const searchUnits =
      r.text("searchUnits") === undefined
        ? Math.floor(dailyUnits / 2)
        : r.whole("searchUnits", "the units searches may spend a day (100 a search)", 0, 1_000_000_000);
    const region = r.matching("region", "a region code of two capital letters (US, JP, DE)", /^[A-Z]{2}$/);
    r.done();
    return { apiKey, baseUrl, dailyUnits, searchUnits: Math.min(searchUnits, dailyUnits), region };
  },
  budget: (s): BudgetBucket[] => [
    { name: "units", limit: s.dailyUnits, timeZone: YOUTUBE_QUOTA_ZONE, label: "YouTube Data API" },
    { name: "search", limit: s.searchUnits, timeZone: YOUTUBE_QUOTA_ZONE, label: "YouTube search" },
  ],
  secrets: (s) => [s.apiKey],
  volatileParams: ["publishedAfter"],
  describe: (s) => `YouTube Data API v3 at ${s.baseUrl}`,
  create: (s, ctx) => new YouTubeLive(s, ctx).provider(),
};

/** A YouTube error body's first reason (`quotaExceeded`, `keyInvalid`, `videoNotFound`), if any. */
function reasonOf(body: unknown): string | undefined {
  const e = (body as { error?: { errors?: { reason?: unknown }[]; status?: unknown } } | null)?.error;
  const reason = e?.errors?.[0]?.reason;
  return typeof reason === "string" ? reason : typeof e?.status === "string" ? e.status : undefined;
}

/** The `items` of a list answer, or null when the answer is not a list of objects. */
function itemsOf<T>(body: unknown): T[] | null {
  const items = (body as { items?: unknown } | null)?.items;
  if (items === undefined) return [];
  return Array.isArray(items) && items.every((i) => typeof i === "object" && i !== null) ? (items as T[]) : null;
}

const isVideo = (v: unknown): v is YtVideo => {
  const x = v as YtVideo;
  return (
    typeof x.id === "string" &&
    typeof x.snippet === "object" &&
    x.snippet !== null &&
    typeof x.snippet.channelId === "string"
  );
};
const isChannel = (c: unknown): c is YtChannel => {
  const x = c as YtChannel;
  return typeof x.id === "string" && typeof x.snippet === "object" && x.snippet !== null;
};
const isThread = (t: unknown): t is YtComment => {
  const x = t as YtComment;
  return typeof x.id === "string" && typeof x.snippet?.topLevelComment?.snippet === "object";
};

/** A `search.list` result: the id of what it found, and its snippet (HTML-escaped title, no statistics). */
interface YtSearchResult {
  id: { kind?: string; videoId?: string; channelId?: string };
  snippet: YtVideo["snippet"] & { customUrl?: string };
}

const isSearchResult = (r: unknown): r is YtSearchResult => {
  const x = r as YtSearchResult;
  return typeof x.id === "object" && x.id !== null && typeof x.snippet === "object" && x.snippet !== null;
};

/** The words of a failure's outcome, without the closing "Nothing was charged." */
const reasonText = (o: ProviderOutcome) =>
  (o.status === "error" ? o.failure.message : "message" in o ? o.message : o.status).replace(
    / Nothing was charged\.$/,
    "",
  );

const NO_UPLOADS = "this youtube channel lists no uploads";

/** An `empty` answer, the last page, with the warning that says why there is nothing. */
const nothingThere = (warning: string): ProviderOutcome => ({
  status: "empty",
  items: [],
  page: { has_more: false },
  warnings: [warning],
});

/** What one call spent upstream so far. */
interface Spend {
  units: number;
  requests: number;
}

/** A list answer read: its items and next page token, or the outcome that ends the call. */
type Listed<T> = { items: T[]; next?: string } | { outcome: ProviderOutcome };

/** What a coalesced lookup found by id, or the fault of its request. */
type Lookup<T> = { ok: true; found: Map<string, T> } | { ok: false; fault: UpstreamFault };

/** A target of a call, normalised: a video id, or a channel id or handle. */
type Target = { video: string } | { channel: string } | { handle: string };

class YouTubeLive {
  private readonly s: YouTubeSettings;
  private readonly ctx: ConnectorContext;
  /** Videos and channels by id, coalesced: calls that start together share one request of up to 50 ids. */
  private readonly videos: Batcher<Lookup<YtVideo>>;
  private readonly channels: Batcher<Lookup<YtChannel>>;
  /** Spend of the batched requests, attributed to the calls that shared them. */
  private readonly batchSpend = new WeakMap<object, Spend>();

  constructor(s: YouTubeSettings, ctx: ConnectorContext) {
    this.s = s;
    this.ctx = ctx;
    this.videos = this.lookup("videos.list", "/videos", VIDEO_PARTS, isVideo);
    this.channels = this.lookup("channels.list", "/channels", "snippet,statistics,contentDetails", isChannel);
  }

  /** A coalescing lookup of objects by id with one list method (1 unit for up to 50 ids). */
  private lookup<T extends { id: string }>(
    method: "videos.list" | "channels.list",
    path: string,
    part: string,
    is: (x: unknown) => x is T,
  ): Batcher<Lookup<T>> {
    return new Batcher({
      windowMs: 10,
      max: 50,
      run: async (ids, signal, deadline) => {
        const r = await this.get({ method, path, query: { part, id: ids.join(",") }, signal, deadline });
        const result: Lookup<T> = r.ok ? { ok: true, found: this.byId(r.body, is) } : { ok: false, fault: r.fault };
        this.batchSpend.set(result, { units: r.units, requests: r.requests });
        return result;
      },
    });
  }

  provider(): PlatformProvider {
    const operations: OperationSpec[] = youtube.operations;
    return {
      platform: "youtube",
      operations,
      scoped: true,
      source: "live",
      unsupported: (op, p) => this.unsupported(op, p),
      notAvailableYet: (op) => (op === "video_transcript" ? TRANSCRIPT_WHY : null),
      upstreamCost: (op, p) => this.upstreamCost(op, p),
      cursorValid: (op, cursor, params) => {
        const norm = this.normalise(op, params ?? {});
        // A target that is not one answers invalid_target when the call runs; the cursor is not what is wrong.
        return (
          "outcome" in norm ||
          decodeCursor({ platform: "youtube", operation: op, params: norm.params }, cursor) !== null
        );
      },
      call: (req) => this.call(req),
      check: (signal) => this.check(signal),
    };
  }

  private unsupported(op: string, p: Readonly<Record<string, unknown>>): string | null {
    const gap = youtube.unsupported(op, p);
    if (gap) return gap;
    if (op === "search") {
      if (p["content_type"] === "text")
        return "youtube's API finds videos and channels only and does not offer content_type=text; x, reddit and weibo do.";
      if (p["sort"] === "most_comments")
        return "youtube's search cannot order by comments and does not offer sort=most_comments; sort=relevance, latest and most_liked work.";
      if (p["type"] === "user" && p["sort"] !== undefined && p["sort"] !== "relevance" && p["sort"] !== "latest")
        return `youtube orders channels by relevance or date only and does not offer sort=${String(p["sort"])} with type=user.`;
    }
    if (op === "user_posts" && p["sort"] === "most_liked")
      return "youtube lists a channel's uploads newest first only and does not offer sort=most_liked here; sort=latest works.";
    return null;
  }

  private upstreamCost(op: string, p: Readonly<Record<string, unknown>>): number {
    switch (op) {
      case "search":
        return (
          YOUTUBE_UNITS["search.list"] + 1 + (typeof p["scope"] === "string" && p["scope"].startsWith("@") ? 1 : 0)
        );
      case "user_posts":
        return typeof p["cursor"] === "string" ? 2 : 3;
      case "trending":
      case "detail":
      case "comments":
      case "user_profile":
        return 1;
      default:
        return 0;
    }
  }

  /** One request of the API with the key, the budget's units, the call's signal and deadline. */
  private get(o: {
    method: keyof typeof YOUTUBE_UNITS;
    path: string;
    query: Record<string, string | number | undefined>;
    signal: AbortSignal;
    deadline: number | undefined;
  }): Promise<UpstreamResult> {
    const units = YOUTUBE_UNITS[o.method];
    const cost: BudgetCharge[] = [{ bucket: "units", units }];
    if (o.method === "search.list") cost.push({ bucket: "search", units });
    const r: UpstreamRequest = {
      platform: "youtube",
      method: o.method,
      url: `${this.s.baseUrl}${o.path}`,
      query: { ...o.query, key: this.s.apiKey },
      cost,
      signal: o.signal,
      secrets: [this.s.apiKey],
      ...(o.deadline !== undefined ? { deadline: o.deadline } : {}),
    };
    return upstreamGet(this.ctx, r);
  }

  private byId<T extends { id: string }>(body: unknown, is: (x: unknown) => x is T): Map<string, T> {
    const found = new Map<string, T>();
    for (const item of itemsOf<unknown>(body) ?? []) if (is(item)) found.set(item.id, item);
    return found;
  }

  /** What a fault means on YouTube; the rest is the common mapping (D120). */
  private failed(fault: UpstreamFault, what: string, op: string): ProviderOutcome {
    const now = this.ctx.now();
    if (fault.kind === "http") {
      const reason = reasonOf(fault.body) ?? "";
      if (reason === "quotaExceeded" || reason === "dailyLimitExceeded") {
        this.ctx.budget.drain("youtube", "units").catch(() => undefined);
        this.ctx.log.error(
          "youtube: the YouTube Data API says the project's daily quota is exceeded; youtube calls are refused until midnight Pacific time",
        );
        return rateLimitedUntil(
          "YouTube's daily quota for the gateway is used up; it refills at midnight Pacific time.",
          nextMidnight(now, YOUTUBE_QUOTA_ZONE),
          now,
        );
      }
      if (reason === "rateLimitExceeded" || reason === "userRateLimitExceeded")
        return rateLimitedUntil(
          "youtube is limiting how fast the gateway may read.",
          now + 1000 * (fault.retryAfter ?? 60),
          now,
        );
      // The video exists and has no comments to read; the channel exists and has uploaded nothing (D120).
      if (reason === "commentsDisabled") return nothingThere("comments are turned off on this youtube video");
      if (reason === "playlistNotFound" && op === "user_posts") return nothingThere(NO_UPLOADS);
      if (reason === "invalidPageToken")
        return invalidTarget("cursor", "YouTube no longer accepts this page; restart without `cursor`.");
      if (
        reason === "keyInvalid" ||
        reason === "keyExpired" ||
        /API key not valid/i.test(JSON.stringify(fault.body ?? ""))
      )
        return credentialsRefused(
          "youtube",
          `HTTP ${fault.status} ${reason || "keyInvalid"}: the API key is not valid`,
          this.ctx.log,
        );
      if (fault.status === 403)
        return credentialsRefused("youtube", `HTTP 403${reason ? ` ${reason}` : ""}`, this.ctx.log);
      if (fault.status === 404) return notFound("youtube", what);
    }
    return faultOutcome(fault, { platform: "youtube", now, log: this.ctx.log });
  }

  /** A list request's items and next page token, or the outcome that ends the call. */
  private async list<T>(
    c: { spend: Spend; req: ProviderRequest },
    o: Omit<Parameters<YouTubeLive["get"]>[0], "signal" | "deadline">,
    what: string,
    op: string,
    is: (x: unknown) => x is T,
  ): Promise<Listed<T>> {
    const { spend, req } = c;
    const r = await this.get({ ...o, signal: req.signal, deadline: req.deadline });
    spend.units += r.units;
    spend.requests += r.requests;
    if (!r.ok) {
      const f = this.failed(r.fault, what, op);
      return { outcome: f };
    }
    const items = itemsOf<unknown>(r.body);
    if (items === null) {
      this.ctx.log.error(`youtube ${o.method}: an answer without a list of items (the API changed?)`);
      return { outcome: upstreamError("youtube answered in a shape the gateway does not know.", false) };
    }
    const next = (r.body as { nextPageToken?: unknown }).nextPageToken;
    return { items: items.filter(is), ...(typeof next === "string" && next !== "" ? { next } : {}) };
  }

  /** The parameters of a call with its target as an id (a link becomes the id it names), or invalid_target. */
  private normalise(
    op: string,
    params: Readonly<Record<string, unknown>>,
  ): { params: Record<string, unknown>; target?: Target } | { outcome: ProviderOutcome } {
    const out: Record<string, unknown> = { ...params };
    if (op !== "detail" && op !== "comments" && op !== "user_profile" && op !== "user_posts") return { params: out };
    const kind = op === "user_profile" || op === "user_posts" ? "channel" : "video";
    const url = typeof params["url"] === "string" ? params["url"] : undefined;
    let id = typeof params["id"] === "string" ? params["id"] : undefined;
    delete out["url"];
    if (url !== undefined) {
      const found = idFromLink(youtube, kind === "video" ? "post" : "user", url);
      if (!found)
        return {
          outcome: invalidTarget(
            "url",
            kind === "video"
              ? "This link names no youtube video (watch?v=, youtu.be/, /shorts/, /embed/ or /live/ links do)."
              : "This link names no youtube channel (youtube.com/@handle or youtube.com/channel/UC… links do).",
          ),
        };
      id = found;
    }
    if (id === undefined) return { outcome: invalidTarget("id", "No id or link was given.") };
    out["id"] = id;
    if (kind === "video") {
      if (!VIDEO_ID.test(id))
        return {
          outcome: invalidTarget("id", "This is not a youtube video id (11 characters: letters, digits, - and _)."),
        };
      return { params: out, target: { video: id } };
    }
    if (CHANNEL_ID.test(id)) return { params: out, target: { channel: id } };
    if (HANDLE.test(id)) return { params: out, target: { handle: id } };
    return {
      outcome: invalidTarget(
        "id",
        "This is not a youtube channel: a channel id (UC and 22 characters) or a handle (@name).",
      ),
    };
  }

  private async call(req: ProviderRequest): Promise<ProviderOutcome> {
    const op = req.operation;
    if (op === "video_transcript") return { status: "not_supported", message: TRANSCRIPT_WHY };
    if (!(op in YOUTUBE_CACHE_TTL_MS)) return { status: "not_supported", message: `youtube does not offer ${op}.` };
    const norm = this.normalise(op, req.params);
    if ("outcome" in norm) return norm.outcome;
    const resumed = resumeState({ platform: "youtube", operation: op, params: norm.params }, req.params["cursor"]);
    if ("outcome" in resumed) return resumed.outcome;
    const { state } = resumed;
    const spend: Spend = { units: 0, requests: 0 };
    const outcome = await throughCache(
      this.ctx,
      { platform: "youtube", operation: op, params: norm.params, ttlMs: YOUTUBE_CACHE_TTL_MS[op as RouteOperation] },
      async () => {
        const o = await this.read(op as RouteOperation, norm.params, norm.target, state, req, spend);
        return { ...o, upstream: { units: round(spend.units), requests: round(spend.requests), cached: false } };
      },
    );
    return outcome;
  }

  private read(
    op: RouteOperation,
    p: Record<string, unknown>,
    target: Target | undefined,
    state: CursorState,
    req: ProviderRequest,
    spend: Spend,
  ): Promise<ProviderOutcome> {
    switch (op) {
      case "search":
        return this.search(p, state, req, spend);
      case "trending":
        return this.trending(p, state, req, spend);
      case "detail":
        return this.detail((target as { video: string }).video, req, spend);
      case "comments":
        return this.comments(p, (target as { video: string }).video, state, req, spend);
      case "user_profile":
        return this.profile(target!, req, spend);
      case "user_posts":
        return this.posts(p, target!, state, req, spend);
    }
  }

  /** The page of an answer: its cursor, or the end (with a warning when the cursor would be too long). */
  private page(op: string, p: Record<string, unknown>, next: CursorState | null, warnings: string[]) {
    if (!next) return { has_more: false as const };
    const cursor = encodeCursor({ platform: "youtube", operation: op, params: p }, next);
    if (cursor) return { has_more: true as const, cursor };
    warnings.push(
      "youtube has more, but its page token is too long for a cursor; this is the last page the gateway can give",
    );
    return { has_more: false as const };
  }

  private async search(
    p: Record<string, unknown>,
    state: CursorState,
    req: ProviderRequest,
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const users = p["type"] === "user";
    const warnings: string[] = [];
    let channelId: string | undefined;
    if (typeof p["scope"] === "string") {
      const scope = p["scope"];
      if (CHANNEL_ID.test(scope)) channelId = scope;
      else if (HANDLE.test(scope)) {
        const found = await this.handle(scope, req, spend);
        if ("outcome" in found) {
          const f = found.outcome;
          return f.status === "error" && f.failure.code === "not_found"
            ? invalidTarget("scope", `No youtube channel has the handle ${scope}.`)
            : f;
        }
        channelId = found.channel.id;
      } else
        return invalidTarget(
          "scope",
          "`scope` on youtube is a channel: its id (UC and 22 characters) or its handle (@name).",
        );
    }
    const days = RANGE_DAYS[String(p["time_range"])];
    const publishedAfter =
      typeof state["a"] === "string" ? state["a"] : days ? isoSeconds(this.ctx.now() - days * DAY_MS) : undefined;
    const order = p["sort"] === "latest" ? "date" : p["sort"] === "most_liked" ? "rating" : "relevance";
    const listed = await this.list<YtSearchResult>(
      { spend, req },
      {
        method: "search.list",
        path: "/search",
        query: {
          part: "snippet",
          q: String(p["query"]),
          type: users ? "channel" : "video",
          maxResults: Number(p["count"] ?? 10),
          order,
          publishedAfter,
          channelId,
          pageToken: typeof state["t"] === "string" ? state["t"] : undefined,
        },
      },
      "search",
      "search",
      isSearchResult,
    );
    if ("outcome" in listed) return listed.outcome;
    // Search results carry `id.videoId` (or `id.channelId`), an HTML-escaped snippet and no statistics.
    const results = listed.items.flatMap((r) => {
      const id = users ? r.id.channelId : r.id.videoId;
      const fits = typeof id === "string" && (users ? CHANNEL_ID : VIDEO_ID).test(id);
      return fits && (users || typeof r.snippet.channelId === "string") ? [{ id, snippet: r.snippet }] : [];
    });
    const next = listed.next ? { t: listed.next, ...(publishedAfter ? { a: publishedAfter } : {}) } : null;
    if (results.length === 0)
      return { status: "empty", items: [], page: this.page("search", p, next, warnings), warnings };
    // The statistics are one request more (1 unit); without them the results still answer, without metrics.
    const ids = results.map((r) => r.id).join(",");
    const stats = users
      ? await this.list<YtChannel>(
          { spend, req },
          {
            method: "channels.list",
            path: "/channels",
            query: { part: "snippet,statistics", id: ids },
          },
          "channel",
          "search",
          isChannel,
        )
      : await this.list<YtVideo>(
          { spend, req },
          {
            method: "videos.list",
            path: "/videos",
            query: { part: "statistics,contentDetails", id: ids },
          },
          "video",
          "search",
          (x): x is YtVideo => typeof (x as { id?: unknown }).id === "string",
        );
    const found = new Map<string, YtVideo | YtChannel>();
    if ("outcome" in stats)
      warnings.push(
        `youtube's statistics could not be read (${reasonText(stats.outcome)}); these results carry no counts`,
      );
    else for (const x of stats.items) found.set(x.id, x);
    const items: Item[] = results.map((r) => {
      const more = found.get(r.id);
      if (users) {
        const c = more as YtChannel | undefined;
        return youtube.map.user({
          id: r.id,
          snippet: { ...r.snippet, ...c?.snippet },
          ...(c?.statistics ? { statistics: c.statistics } : {}),
        });
      }
      const v = more as YtVideo | undefined;
      return youtube.map.post({
        id: r.id,
        snippet: r.snippet,
        ...(v?.statistics ? { statistics: v.statistics } : {}),
        ...(v?.contentDetails ? { contentDetails: v.contentDetails } : {}),
      });
    });
    return { status: "ok", items, page: this.page("search", p, next, warnings), warnings };
  }

  private async trending(
    p: Record<string, unknown>,
    state: CursorState,
    req: ProviderRequest,
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const warnings: string[] = [];
    if (p["scope"] !== undefined) warnings.push("scope is ignored by youtube trending (its chart is per region)");
    const offset = typeof state["r"] === "number" ? state["r"] : 0;
    const listed = await this.list<YtVideo>(
      { spend, req },
      {
        method: "videos.list",
        path: "/videos",
        query: {
          part: VIDEO_PARTS,
          chart: "mostPopular",
          regionCode: this.s.region,
          maxResults: Number(p["count"] ?? 10),
          pageToken: typeof state["t"] === "string" ? state["t"] : undefined,
        },
      },
      "chart",
      "trending",
      isVideo,
    );
    if ("outcome" in listed) return listed.outcome;
    const items = listed.items.map((v, i) => ({ ...youtube.map.trend(v), rank: offset + i + 1 }));
    const page = this.page("trending", p, listed.next ? { t: listed.next, r: offset + items.length } : null, warnings);
    return items.length ? { status: "ok", items, page, warnings } : { status: "empty", items: [], page, warnings };
  }

  private async detail(id: string, req: ProviderRequest, spend: Spend): Promise<ProviderOutcome> {
    const { result, share } = await this.videos.load(id, req.signal, req.deadline);
    this.share(spend, result, share);
    if (!result.ok) {
      const f = this.failed(result.fault, "video", "detail");
      return f;
    }
    const video = result.found.get(id);
    return video ? { status: "ok", items: [youtube.map.post(video)] } : notFound("youtube", "video");
  }

  private async comments(
    p: Record<string, unknown>,
    videoId: string,
    state: CursorState,
    req: ProviderRequest,
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const warnings: string[] = [];
    if (p["sort"] === "most_liked")
      warnings.push("youtube orders comments by relevance (its top comments), the closest it has to most_liked");
    const listed = await this.list<YtComment>(
      { spend, req },
      {
        method: "commentThreads.list",
        path: "/commentThreads",
        query: {
          part: "snippet",
          videoId,
          maxResults: Number(p["limit"] ?? 20),
          order: p["sort"] === "most_liked" ? "relevance" : "time",
          textFormat: "plainText",
          pageToken: typeof state["t"] === "string" ? state["t"] : undefined,
        },
      },
      "video",
      "comments",
      isThread,
    );
    if ("outcome" in listed) return listed.outcome;
    const items = listed.items.map((t) => youtube.map.comment(t));
    const page = this.page("comments", p, listed.next ? { t: listed.next } : null, warnings);
    return items.length ? { status: "ok", items, page, warnings } : { status: "empty", items: [], page, warnings };
  }

  /** A channel by its handle (`channels.list?forHandle=`, 1 unit), or the outcome that ends the call. */
  private async handle(
    handle: string,
    req: ProviderRequest,
    spend: Spend,
  ): Promise<{ channel: YtChannel } | { outcome: ProviderOutcome }> {
    const listed = await this.list<YtChannel>(
      { spend, req },
      {
        method: "channels.list",
        path: "/channels",
        query: { part: "snippet,statistics,contentDetails", forHandle: handle },
      },
      "channel",
      "user_profile",
      isChannel,
    );
    if ("outcome" in listed) return listed;
    return listed.items[0] ? { channel: listed.items[0] } : { outcome: notFound("youtube", "channel") };
  }

  /** A channel by id (batched) or handle. */
  private async channel(
    target: Target,
    req: ProviderRequest,
    spend: Spend,
  ): Promise<{ channel: YtChannel } | { outcome: ProviderOutcome }> {
    if ("handle" in target) return this.handle(target.handle, req, spend);
    const id = (target as { channel: string }).channel;
    const { result, share } = await this.channels.load(id, req.signal, req.deadline);
    this.share(spend, result, share);
    if (!result.ok) {
      const f = this.failed(result.fault, "channel", "user_profile");
      return { outcome: f };
    }
    const channel = result.found.get(id);
    return channel ? { channel } : { outcome: notFound("youtube", "channel") };
  }

  private async profile(target: Target, req: ProviderRequest, spend: Spend): Promise<ProviderOutcome> {
    const found = await this.channel(target, req, spend);
    return "outcome" in found ? found.outcome : { status: "ok", items: [youtube.map.user(found.channel)] };
  }

  private async posts(
    p: Record<string, unknown>,
    target: Target,
    state: CursorState,
    req: ProviderRequest,
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const warnings: string[] = [];
    let uploads = typeof state["u"] === "string" ? state["u"] : undefined;
    if (uploads === undefined) {
      const found = await this.channel(target, req, spend);
      if ("outcome" in found) return found.outcome;
      uploads = found.channel.contentDetails?.relatedPlaylists?.uploads;
      if (!uploads) return nothingThere(NO_UPLOADS);
    }
    const listed = await this.list<{
      contentDetails?: { videoId?: unknown };
      snippet?: { resourceId?: { videoId?: unknown } };
    }>(
      { spend, req },
      {
        method: "playlistItems.list",
        path: "/playlistItems",
        query: {
          part: "contentDetails",
          playlistId: uploads,
          maxResults: Number(p["limit"] ?? 20),
          pageToken: typeof state["t"] === "string" ? state["t"] : undefined,
        },
      },
      "channel",
      "user_posts",
      (x): x is { contentDetails?: { videoId?: unknown } } => typeof x === "object" && x !== null,
    );
    if ("outcome" in listed) return listed.outcome;
    const ids = listed.items
      .map((i) => i.contentDetails?.videoId ?? i.snippet?.resourceId?.videoId)
      .filter((id): id is string => typeof id === "string" && VIDEO_ID.test(id));
    const next = listed.next ? { t: listed.next, u: uploads } : null;
    if (ids.length === 0)
      return { status: "empty", items: [], page: this.page("user_posts", p, next, warnings), warnings };
    const got = await this.list<YtVideo>(
      { spend, req },
      {
        method: "videos.list",
        path: "/videos",
        query: { part: VIDEO_PARTS, id: ids.join(",") },
      },
      "video",
      "user_posts",
      isVideo,
    );
    if ("outcome" in got) return got.outcome;
    const byId = new Map(got.items.map((v) => [v.id, v]));
    const items = ids.flatMap((id) => (byId.has(id) ? [youtube.map.post(byId.get(id)!)] : []));
    const page = this.page("user_posts", p, next, warnings);
    return items.length ? { status: "ok", items, page, warnings } : { status: "empty", items: [], page, warnings };
  }

  /** Adds a member's share of a batched request's spend. */
  private share(spend: Spend, result: object, share: number): void {
    const s = this.batchSpend.get(result);
    if (!s) return;
    spend.units += s.units * share;
    spend.requests += s.requests * share;
  }

  private async check(signal: AbortSignal): Promise<{ ok: boolean; message: string }> {
    const r = await this.get({
      method: "videos.list",
      path: "/videos",
      query: { part: "id", chart: "mostPopular", maxResults: 1 },
      signal,
      deadline: undefined,
    });
    if (r.ok) return { ok: true, message: "the YouTube Data API accepted the key (1 unit)" };
    const o = this.failed(r.fault, "chart", "check");
    // The operator reads this line: a refusal of the credentials names the setting to fix, not the callers' words.
    const refused = r.fault.kind === "http" && [400, 401, 403].includes(r.fault.status) && o.status === "error";
    return {
      ok: false,
      message: refused
        ? `the YouTube Data API refused the key in SDGW_YOUTUBE_API_KEY (HTTP ${r.fault.kind === "http" ? r.fault.status : ""})`
        : `the YouTube Data API did not accept the check: ${reasonText(o)}`,
    };
  }
}

const round = (n: number) => Math.round(n * 100) / 100;
