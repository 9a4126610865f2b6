/**
 * Reddit on its official API (D151–D155): the Data API at `oauth.reddit.com` with an app-only OAuth2 token (the
 * client-credentials grant, the operator's client id and secret by HTTP Basic auth), over the connectors' HTTP
 * helper, budget and cache. The token is fetched once, kept until shortly before it expires and shared by the
 * instances (D150); Reddit's requests a minute are a shared budget of their own, and its `X-Ratelimit-Remaining` /
 * `X-Ratelimit-Reset` pause every call until the window starts again. Every request asks `raw_json=1`, so titles and
 * bodies come as plain text (not HTML-escaped). Reddit's own JSON is mapped here: the listings' `t3` posts, `t1`
 * comments (a forest flattened with `parent_id` and `reply_count`, `more` stubs left out), `t2` accounts.
 */
import type { ContentItem, Item, LeaderboardItem, Media, ProfileCard } from "@sdgw/types";
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
  targetOf,
  timedOut,
  upstreamError,
  type TargetLinks,
} from "../../connectors/errors.ts";
import {
  UpstreamReplayMiss,
  retryAfterSeconds,
  upstreamGet,
  type RateLimitInfo,
  type UpstreamFault,
  type UpstreamResult,
} from "../../connectors/http.ts";
import { redactText } from "../../connectors/redact.ts";
import { linkOf } from "../links.ts";
import { isoSeconds } from "../../time.ts";
import { hash32 } from "../simulator/gen.ts";
import { host } from "../simulator/module.ts";
import type { OperationSpec, PlatformProvider, ProviderOutcome, ProviderRequest, RouteOperation } from "../port.ts";
import { reddit } from "./index.ts";

/** The checked settings of the Reddit connector. */
export interface RedditSettings {
  /** The client id of the operator's Reddit app (kept out of logs and the banner). */
  clientId: string;
  /** Its secret. */
  clientSecret: string;
  /** The User-Agent Reddit requires: `<platform>:<app id>:<version> (by /u/<username>)`. */
  userAgent: string;
  /** The API's base URL (`https://oauth.reddit.com`, or a fake upstream on this machine). */
  baseUrl: string;
  /** Where tokens are fetched (`https://www.reddit.com/api/v1/access_token`). */
  tokenUrl: string;
  /** Requests the gateway may send a minute, every instance together (Reddit's free tier: 100). */
  minuteRequests: number;
  /** Requests the gateway may send a day (the operator's own budget, D121). */
  dailyRequests: number;
}

/** How long an answer is kept, per operation (D122). */
export const REDDIT_CACHE_TTL_MS: Readonly<Record<RouteOperation | "subreddit_posts", number>> = {
  search: 120_000,
  trending: 120_000,
  subreddit_posts: 120_000,
  comments: 300_000,
  detail: 600_000,
  user_posts: 600_000,
  user_profile: 3_600_000,
};

/** A token is fetched again when less than this is left of its life (or half its life, if that is shorter). */
export const REDDIT_TOKEN_MARGIN_MS = 300_000;

const POST_ID = /^[a-z0-9]{4,10}$/;
const USER_NAME = /^[A-Za-z0-9_-]{3,20}$/;
const SUBREDDIT = /^[A-Za-z0-9][A-Za-z0-9_]{1,20}$/;
/** Reddit's rule for API clients: a unique agent naming the app and its author, never a library's default. */
const USER_AGENT = /^[!-~][ -~]{2,254}:[ -~]+\(by \/?u\/[A-Za-z0-9_-]{3,20}\)$/;
const GONE = new Set(["[deleted]", "[removed]"]);
const RANGE: Readonly<Record<string, string>> = { "1d": "day", "7d": "week", "30d": "month", all: "all" };

/** The operator's settings of the Reddit connector. */
export const redditConnector: ConnectorDefinition<RedditSettings> = {
  platform: "reddit",
  api: "Reddit Data API (app-only OAuth2)",
  settings: [
    {
      name: "clientId",
      env: "SDGW_REDDIT_CLIENT_ID",
      description:
        "The client id of the operator's Reddit app (a script or web app, reddit.com/prefs/apps); " +
        "with the secret it switches reddit from the simulator to the API.",
      secret: true,
      switch: true,
    },
    {
      name: "clientSecret",
      env: "SDGW_REDDIT_CLIENT_SECRET",
      description: "The app's secret.",
      secret: true,
      switch: true,
    },
    {
      name: "userAgent",
      env: "SDGW_REDDIT_USER_AGENT",
      description:
        "Required: the User-Agent Reddit asks of every API client, `<platform>:<app id>:<version> (by /u/<username>)`; Reddit refuses generic agents.",
    },
    {
      name: "baseUrl",
      env: "SDGW_REDDIT_BASE_URL",
      description: "The API's base URL (tests point it at a fake upstream on 127.0.0.1).",
      default: "https://oauth.reddit.com",
    },
    {
      name: "tokenUrl",
      env: "SDGW_REDDIT_TOKEN_URL",
      description: "Where app-only tokens are fetched.",
      default: "https://www.reddit.com/api/v1/access_token",
    },
    {
      name: "minuteRequests",
      env: "SDGW_REDDIT_MINUTE_REQUESTS",
      description: "Requests the gateway may send a minute, every instance together (Reddit's free tier: 100).",
      default: "100",
    },
    {
      name: "dailyRequests",
      env: "SDGW_REDDIT_DAILY_REQUESTS",
      description: "Requests the gateway may send a day (UTC), every instance together.",
      default: "144000",
    },
  ],
  configure(raw, label) {
    const r = new SettingsReader(this.settings, raw, label);
    const clientId = r.secret("clientId", "the client id of a Reddit app");
    const clientSecret = r.secret("clientSecret", "the secret of that Reddit app");
    const userAgent = r.text("userAgent");
    if (userAgent === undefined)
      r.problems.push(
        `${label("userAgent")} is required: Reddit refuses generic agents; write <platform>:<app ` +
          `id>:<version> (by /u/<username>), e.g. "server:sdgw-acme:1.0 (by /u/acme_ops)"`,
      );
    else if (!USER_AGENT.test(userAgent))
      r.problems.push(
        `${label("userAgent")} must be Reddit's form <platform>:<app id>:<version> (by ` +
          `/u/<username>), visible ASCII, at most 300 characters (got ${JSON.stringify(userAgent.slice(0, 80))})`,
      );
    const baseUrl = r.baseUrl("baseUrl");
    const tokenUrl = r.baseUrl("tokenUrl");
    const minuteRequests = r.whole("minuteRequests", "the Reddit requests the gateway may send a minute", 1, 100_000);
    const dailyRequests = r.whole("dailyRequests", "the Reddit requests the gateway may send a day", 1, 1_000_000_000);
    r.done();
    return { clientId, clientSecret, userAgent: userAgent!, baseUrl, tokenUrl, minuteRequests, dailyRequests };
  },
  budget: (s): BudgetBucket[] => [
    { name: "minute", limit: s.minuteRequests, windowMs: 60_000, timeZone: "UTC", label: "Reddit requests a minute" },
    { name: "requests", limit: s.dailyRequests, timeZone: "UTC", label: "Reddit API requests" },
  ],
  secrets: (s) => [s.clientId, s.clientSecret],
  describe: (s) => `Reddit Data API at ${s.baseUrl}`,
  create: (s, ctx) => new RedditLive(s, ctx).provider(),
};

// ---------------------------------------------------------------------------------------------------------------
// Reddit's JSON, as the API writes it (only the members read here; any may be missing).

/** A thing of a listing: `t1` comment, `t2` account, `t3` post, `more` stub. */
export interface RedditThingJson {
  kind?: string;
  data?: Record<string, unknown>;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const counter = (v: unknown): number | undefined => {
  const n = num(v);
  return n !== undefined && n >= 0 && n <= Number.MAX_SAFE_INTEGER ? Math.floor(n) : undefined;
};
/** Reddit's `created_utc` (seconds, often with `.0`) as RFC 3339 UTC. */
export const redditTime = (v: unknown): string | undefined => {
  const n = num(v);
  return n !== undefined && n > 0 && n < 253_402_300_800 ? isoSeconds(Math.floor(n) * 1000) : undefined;
};
/** A link Reddit gives, or undefined for its placeholders (`self`, `default`, `nsfw`, `spoiler`, `image`, ``). */
export const redditLink = (v: unknown): string | undefined => linkOf(str(v), /^https?:\/\//);
const userUrl = (name: string) => `https://www.reddit.com/user/${encodeURIComponent(name)}/`;
/** A permalink (`/r/…/comments/…/`) as a link of www.reddit.com; a protocol-relative `//…` is none. */
const permalinkUrl = (p: unknown) => linkOf(str(p), /^\/(?!\/)/, "https://www.reddit.com");
/** The author of a thing, or undefined when the account was deleted. */
const authorOf = (d: Record<string, unknown>) => {
  const name = str(d["author"]);
  return name && !GONE.has(name) ? { name, id: name, url: userUrl(name) } : undefined;
};
/** `edited`: false, or when (seconds). */
const editedAt = (d: Record<string, unknown>) => redditTime(d["edited"]);

/** The media of a post: Reddit's own video, or an image link. */
function mediaOf(d: Record<string, unknown>): Media[] | undefined {
  const video = (d["secure_media"] ?? d["media"]) as { reddit_video?: { fallback_url?: unknown; duration?: unknown } };
  const fallback = redditLink(video?.reddit_video?.fallback_url);
  if (d["is_video"] === true && fallback) {
    const duration = num(video.reddit_video?.duration);
    return [{ type: "video", url: fallback, ...(duration !== undefined ? { duration_s: duration } : {}) }];
  }
  const link = redditLink(d["url_overridden_by_dest"] ?? d["url"]);
  if (link && (d["post_hint"] === "image" || /\.(?:jpe?g|png|gif|webp)$/i.test(new URL(link).pathname)))
    return [{ type: "image", url: link }];
  return undefined;
}

/** A `t3` post as an item; null when it is not one. */
export function redditPost(d: Record<string, unknown>): ContentItem | null {
  const id = str(d["id"]);
  if (!id) return null;
  const name = str(d["name"]) ?? `t3_${id}`;
  const selftext = str(d["selftext"]);
  const removed = selftext && GONE.has(selftext) ? selftext.slice(1, -1) : undefined;
  const score = num(d["score"]);
  const likes = d["hide_score"] === true ? undefined : counter(score);
  const comments = counter(d["num_comments"]);
  const author = authorOf(d);
  const published = redditTime(d["created_utc"]);
  const url = permalinkUrl(d["permalink"]);
  const media = mediaOf(d);
  const thumbnail = redditLink(d["thumbnail"]);
  const external = d["is_self"] === true ? undefined : redditLink(d["url_overridden_by_dest"] ?? d["url"]);
  const edited = editedAt(d);
  const sub = str(d["subreddit"]);
  return {
    kind: "item",
    id: name,
    ...(url ? { url } : {}),
    ...(str(d["title"]) ? { title: str(d["title"])! } : {}),
    ...(selftext && !removed ? { text: selftext } : {}),
    ...(author ? { author } : {}),
    ...(published ? { published_at: published } : {}),
    metrics: { ...(likes !== undefined ? { likes } : {}), ...(comments !== undefined ? { comments } : {}) },
    ...(media ? { media } : {}),
    platform_extra: {
      ...(sub ? { subreddit: `r/${sub}` } : {}),
      ...(score !== undefined ? { score: Math.trunc(score) } : {}),
      ...(typeof d["is_video"] === "boolean" ? { is_video: d["is_video"] } : {}),
      ...(typeof d["over_18"] === "boolean" ? { over_18: d["over_18"] } : {}),
      ...(external && external !== url ? { link: external } : {}),
      ...(thumbnail ? { thumbnail } : {}),
      ...(edited ? { edited_at: edited } : {}),
      ...(removed ? { removed } : {}),
    },
  };
}

/** A `t1` comment as an item (its replies counted, not included); null when it is not one. */
export function redditComment(d: Record<string, unknown>, replyCount: number): ContentItem | null {
  const id = str(d["id"]);
  if (!id) return null;
  const body = str(d["body"]);
  const removed = body && GONE.has(body) ? body.slice(1, -1) : undefined;
  const score = num(d["score"]);
  const likes = d["score_hidden"] === true ? undefined : counter(score);
  const author = authorOf(d);
  const published = redditTime(d["created_utc"]);
  const link = str(d["link_id"]);
  const url =
    permalinkUrl(d["permalink"]) ??
    (link ? `https://www.reddit.com/comments/${link.replace(/^t3_/, "")}/_/${id}/` : undefined);
  const edited = editedAt(d);
  return {
    kind: "item",
    id: str(d["name"]) ?? `t1_${id}`,
    ...(str(d["parent_id"]) ? { parent_id: str(d["parent_id"])! } : {}),
    ...(url ? { url } : {}),
    ...(body && !removed ? { text: body } : {}),
    ...(author ? { author } : {}),
    ...(published ? { published_at: published } : {}),
    ...(likes !== undefined ? { metrics: { likes } } : {}),
    reply_count: replyCount,
    platform_extra: {
      ...(score !== undefined ? { score: Math.trunc(score) } : {}),
      ...(typeof d["depth"] === "number" ? { depth: d["depth"] } : {}),
      ...(edited ? { edited_at: edited } : {}),
      ...(removed ? { removed } : {}),
    },
  };
}

/** A `t2` account as a profile card; null when it is not one. */
export function redditAccount(d: Record<string, unknown>): ProfileCard | null {
  const name = str(d["name"]);
  if (!name) return null;
  const sub = (d["subreddit"] ?? {}) as Record<string, unknown>;
  const bio = str(sub["public_description"]);
  const link = counter(d["link_karma"]);
  const commentKarma = counter(d["comment_karma"]);
  const karma =
    num(d["total_karma"]) ??
    (link !== undefined || commentKarma !== undefined ? (link ?? 0) + (commentKarma ?? 0) : undefined);
  const created = redditTime(d["created_utc"]);
  const icon = redditLink(d["icon_img"]);
  const followers = counter(sub["subscribers"]);
  return {
    kind: "profile_card",
    id: name,
    name,
    url: userUrl(name),
    ...(bio ? { bio } : {}),
    ...(typeof d["verified"] === "boolean" ? { verified: d["verified"] } : {}),
    ...(followers !== undefined ? { followers } : {}),
    platform_extra: {
      ...(karma !== undefined ? { karma: Math.trunc(karma) } : {}),
      ...(link !== undefined ? { link_karma: link } : {}),
      ...(commentKarma !== undefined ? { comment_karma: commentKarma } : {}),
      ...(created ? { created_at: created } : {}),
      ...(icon ? { icon } : {}),
      ...(d["is_suspended"] === true ? { suspended: true } : {}),
    },
  };
}

/** A popular post as a leaderboard entry at `rank`; null when it is not one. */
export function redditTrend(d: Record<string, unknown>, rank: number): LeaderboardItem | null {
  const title = str(d["title"]);
  if (!title) return null;
  const url = permalinkUrl(d["permalink"]);
  const score = num(d["score"]);
  // A post's score may be below 0; heat is not: the score itself stays in platform_extra.
  const heat = counter(score);
  const sub = str(d["subreddit"]);
  const name = str(d["name"]);
  return {
    kind: "leaderboard",
    rank,
    title,
    ...(heat !== undefined ? { heat } : {}),
    ...(url ? { url } : {}),
    platform_extra: {
      ...(name ? { id: name } : {}),
      ...(sub ? { subreddit: `r/${sub}` } : {}),
      ...(score !== undefined ? { score: Math.trunc(score) } : {}),
    },
  };
}

/** What a comment forest holds: its comments in reading order, and what Reddit left out (`more` stubs). */
export interface FlatComments {
  items: ContentItem[];
  /** Comments Reddit did not send (the `count` of its `more` stubs); "continue this thread" stubs count none. */
  notSent: number;
  /** Threads cut short by "continue this thread" (a `more` stub with id `_`). */
  continued: number;
}

/**
 * The comment forest of `/comments/{id}` flattened depth first: each `t1` an item with Reddit's `parent_id`
 * (`t3_…` for a top-level comment, `t1_…` for a reply) and `reply_count` (its direct replies: those sent, and those
 * a `more` stub names). `more` stubs and "continue this thread" are not items; deleted and removed comments stay
 * (their replies point at them) without author or text.
 */
export function flattenComments(children: unknown): FlatComments {
  const out: FlatComments = { items: [], notSent: 0, continued: 0 };
  const walk = (list: unknown) => {
    if (!Array.isArray(list)) return;
    for (const thing of list as RedditThingJson[]) {
      const d = thing?.data;
      if (!d || typeof d !== "object") continue;
      if (thing.kind === "more") {
        if (d["id"] === "_" || (Array.isArray(d["children"]) && d["children"].length === 0)) out.continued += 1;
        else out.notSent += counter(d["count"]) ?? 0;
        continue;
      }
      if (thing.kind !== "t1") continue;
      const replies = repliesOf(d);
      const direct = replies.reduce((n, r) => {
        if (r?.kind === "t1") return n + 1;
        if (r?.kind === "more" && Array.isArray(r.data?.["children"]))
          return n + (r.data["children"] as unknown[]).length;
        return n;
      }, 0);
      const item = redditComment(d, direct);
      if (item) out.items.push(item);
      walk(replies);
    }
  };
  walk(children);
  return out;
}

/** A comment's replies: a listing, or `""` when there are none. */
function repliesOf(d: Record<string, unknown>): RedditThingJson[] {
  const r = d["replies"] as { data?: { children?: unknown } } | string | undefined;
  const children = typeof r === "object" && r !== null ? r.data?.children : undefined;
  return Array.isArray(children) ? (children as RedditThingJson[]) : [];
}

/** A listing's things of `kind` and its `after`, or null when the body is not a listing. */
export function listingOf(body: unknown, kind: string): { data: Record<string, unknown>[]; after?: string } | null {
  const l = body as { kind?: unknown; data?: { children?: unknown; after?: unknown } } | null;
  if (!l || typeof l !== "object" || !l.data || !Array.isArray(l.data.children)) return null;
  const data = (l.data.children as RedditThingJson[]).flatMap((c) =>
    c?.kind === kind && c.data && typeof c.data === "object" ? [c.data] : [],
  );
  const after = str(l.data.after);
  return after ? { data, after } : { data };
}

// ---------------------------------------------------------------------------------------------------------------

/** What one call spent upstream so far. */
interface Spend {
  units: number;
  requests: number;
}

/** An app-only token and when it stops working (ms since the epoch). */
interface Token {
  value: string;
  expiresAt: number;
}

/** A target of a call, normalised. */
type Target = { post: string } | { user: string };

type Got = { ok: true; body: unknown } | { ok: false; outcome: ProviderOutcome };

/** What a coalesced `/api/info` lookup found, or how it failed. */
type Lookup = { ok: true; found: Map<string, Record<string, unknown>> } | { ok: false; outcome: ProviderOutcome };

const base64 = (text: string) => btoa(text);

class RedditLive {
  private readonly s: RedditSettings;
  private readonly ctx: ConnectorContext;
  private token: Token | null = null;
  private fetching: Promise<Token | ProviderOutcome> | null = null;
  /** Reddit said its window is spent: no request before this (ms since the epoch). */
  private pausedUntil = 0;
  private readonly posts: Batcher<Lookup>;
  private readonly batchSpend = new WeakMap<object, Spend>();
  /** The key of the shared token: the client id's hash, never the id itself. */
  private readonly tokenKey: string;

  constructor(s: RedditSettings, ctx: ConnectorContext) {
    this.s = s;
    this.ctx = ctx;
    this.tokenKey = `reddit:token:${hash32(`${s.clientId}\u0000${s.tokenUrl}`).toString(16)}`;
    this.posts = new Batcher({
      windowMs: 10,
      max: 100,
      run: async (ids, signal, deadline) => {
        const spend: Spend = { units: 0, requests: 0 };
        const got = await this.get("/api/info", { id: ids.join(",") }, { signal, deadline }, spend, "post");
        const result: Lookup = got.ok
          ? {
              ok: true,
              found: new Map((listingOf(got.body, "t3")?.data ?? []).map((d) => [String(d["name"]), d] as const)),
            }
          : { ok: false, outcome: got.outcome };
        this.batchSpend.set(result, spend);
        return result;
      },
    });
  }

  provider(): PlatformProvider {
    const operations: OperationSpec[] = reddit.operations;
    return {
      platform: "reddit",
      operations,
      scoped: true,
      source: "live",
      unsupported: (op, p) => this.unsupported(op, p),
      notAvailableYet: () => null,
      upstreamCost: (op) => (op in REDDIT_CACHE_TTL_MS ? 1 : 0),
      cursorValid: (op, cursor, params) => {
        const norm = this.normalise(op, params ?? {});
        return (
          "outcome" in norm || decodeCursor({ platform: "reddit", operation: op, params: norm.params }, cursor) !== null
        );
      },
      call: (req) => this.call(req),
      check: (signal) => this.check(signal),
    };
  }

  private unsupported(op: string, p: Readonly<Record<string, unknown>>): string | null {
    const gap = reddit.unsupported(op, p);
    if (gap) return gap;
    if (op === "search" && (p["content_type"] === "video" || p["content_type"] === "image"))
      return `reddit's search cannot filter by media and does not offer content_type=${String(p["content_type"])}; content_type=text and all work.`;
    if (op === "search" && p["type"] === "user" && p["sort"] !== undefined && p["sort"] !== "relevance")
      return `reddit finds accounts by relevance only and does not offer sort=${String(p["sort"])} with type=user.`;
    return null;
  }

  // --- the token --------------------------------------------------------------------------------------------

  /** A working token: this instance's, the one another instance shared, or a new one (one fetch at a time). */
  private async accessToken(signal: AbortSignal): Promise<Token | ProviderOutcome> {
    const now = this.ctx.now();
    if (this.token && this.fresh(this.token, now)) return this.token;
    const shared = await this.ctx.shared?.get(this.tokenKey);
    if (shared) {
      try {
        const t = JSON.parse(shared) as Token;
        if (typeof t.value === "string" && typeof t.expiresAt === "number" && this.fresh(t, now)) {
          this.token = t;
          return t;
        }
      } catch {
        // Not a token of ours: fetch one.
      }
    }
    this.fetching ??= this.fetchToken(signal).finally(() => {
      this.fetching = null;
    });
    return this.fetching;
  }

  /** Whether a token has more than the margin left. */
  private fresh(t: Token, now: number): boolean {
    return t.expiresAt - now > REDDIT_TOKEN_MARGIN_MS;
  }

  /** Forgets a token Reddit refused, here and in the shared store (if it is still the one there). */
  private async forget(t: Token): Promise<void> {
    if (this.token?.value === t.value) this.token = null;
    const shared = await this.ctx.shared?.get(this.tokenKey);
    if (shared?.includes(JSON.stringify(t.value))) await this.ctx.shared?.delete(this.tokenKey);
  }

  /** `POST <tokenUrl>` with `grant_type=client_credentials` and Basic auth; the token, or why there is none. */
  private async fetchToken(signal: AbortSignal): Promise<Token | ProviderOutcome> {
    const secrets = [this.s.clientId, this.s.clientSecret];
    let res: Response;
    let text: string;
    try {
      res = await this.ctx.fetch(this.s.tokenUrl, {
        method: "POST",
        headers: {
          authorization: `Basic ${base64(`${this.s.clientId}:${this.s.clientSecret}`)}`,
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
          "user-agent": this.s.userAgent,
        },
        body: "grant_type=client_credentials",
        signal,
        redirect: "error",
      });
      text = await res.text();
    } catch (e) {
      if (e instanceof UpstreamReplayMiss) throw e;
      if (signal.aborted) return timedOut("reddit");
      const message = e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e);
      return upstreamError(
        `reddit's token service could not be reached (${redactText(message, secrets)}). A retry later usually works.`,
        true,
      );
    }
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = {};
    }
    const now = this.ctx.now();
    const value = str(body["access_token"]);
    const life = num(body["expires_in"]);
    if (res.ok && value && life !== undefined && life > 0) {
      const t: Token = { value, expiresAt: now + life * 1000 };
      this.token = t;
      const keep = t.expiresAt - now - REDDIT_TOKEN_MARGIN_MS;
      if (keep > 0) await this.ctx.shared?.set(this.tokenKey, JSON.stringify(t), keep);
      return t;
    }
    const error = str(body["error"]) ?? (typeof body["error"] === "number" ? String(body["error"]) : "");
    if (
      res.status === 401 ||
      res.status === 403 ||
      ["invalid_grant", "unauthorized_client", "invalid_client"].includes(error)
    )
      return credentialsRefused(
        "reddit",
        `HTTP ${res.status}${error && !/^\d+$/.test(error) ? ` ${error}` : ""} from the token service: the client id or secret is not valid`,
        this.ctx.log,
      );
    if (res.status === 429) {
      const wait = retryAfterSeconds(res.headers.get("retry-after")) ?? 60;
      return rateLimitedUntil("reddit's token service is limiting the gateway.", now + wait * 1000, now);
    }
    if (res.status >= 500)
      return upstreamError(
        `reddit's token service answered with a server error (${res.status}). A retry later usually works.`,
        true,
      );
    this.ctx.log.error(`reddit: the token service answered HTTP ${res.status} without a token (the API changed?)`);
    return upstreamError(`reddit's token service refused the gateway's request (HTTP ${res.status}).`, false);
  }

  // --- requests ---------------------------------------------------------------------------------------------

  /** Notes what Reddit's rate-limit headers said: a spent window pauses every call, on every instance, until it resets. */
  private async noteLimit(rate: RateLimitInfo): Promise<void> {
    if (rate.remaining === undefined || rate.remaining >= 1) return;
    const until = rate.resetAt ?? this.ctx.now() + 60_000;
    if (until <= this.pausedUntil) return;
    this.pausedUntil = until;
    this.ctx.log.info(
      `reddit: the API says this minute's requests are spent; pausing reddit reads until ${isoSeconds(until)}`,
    );
    await this.ctx.shared?.set("reddit:paused", String(until), Math.max(1, until - this.ctx.now()));
  }

  /** When Reddit's window frees up, if it is spent now (this instance's word or another's). */
  private async paused(): Promise<number | null> {
    const now = this.ctx.now();
    if (this.pausedUntil > now) return this.pausedUntil;
    const shared = Number(await this.ctx.shared?.get("reddit:paused"));
    if (Number.isFinite(shared) && shared > now) {
      this.pausedUntil = shared;
      return shared;
    }
    return null;
  }

  /**
   * One GET of the API with the token, the budget's units, the call's signal and deadline; a token Reddit refuses
   * (401) is fetched again once. `what` names the object for a `not_found`.
   */
  private async get(
    path: string,
    query: Record<string, string | number | undefined>,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
    what: string,
  ): Promise<Got> {
    const until = await this.paused();
    if (until !== null)
      return {
        ok: false,
        outcome: rateLimitedUntil(
          "reddit's limit of requests a minute is reached for the gateway.",
          until,
          this.ctx.now(),
        ),
      };
    let refused: Token | null = null;
    for (let round = 0; round < 2; round++) {
      const token = await this.accessToken(c.signal);
      if (!("value" in token)) return { ok: false, outcome: token };
      const cost: BudgetCharge[] = [
        { bucket: "minute", units: 1 },
        { bucket: "requests", units: 1 },
      ];
      const r: UpstreamResult = await upstreamGet(this.ctx, {
        platform: "reddit",
        method: `GET ${path}`,
        url: `${this.s.baseUrl}${path}`,
        query: { ...query, raw_json: 1 },
        headers: { authorization: `bearer ${token.value}`, "user-agent": this.s.userAgent },
        cost,
        signal: c.signal,
        secrets: [this.s.clientId, this.s.clientSecret, token.value],
        ...(c.deadline !== undefined ? { deadline: c.deadline } : {}),
      });
      // Reddit counts requests: one unit each (the two buckets taken are the same request counted twice).
      spend.units += r.requests;
      spend.requests += r.requests;
      if (r.ok) {
        await this.noteLimit(r.rateLimit);
        return { ok: true, body: r.body };
      }
      if (r.fault.kind === "http") await this.noteLimit(r.fault.rateLimit);
      if (r.fault.kind === "http" && r.fault.status === 401 && refused === null) {
        refused = token;
        await this.forget(token);
        continue;
      }
      return { ok: false, outcome: this.failed(r.fault, what) };
    }
    return { ok: false, outcome: credentialsRefused("reddit", "HTTP 401 twice, with a new token", this.ctx.log) };
  }

  /** What a fault means on Reddit; the rest is the common mapping (D120, D153). */
  private failed(fault: UpstreamFault, what: string): ProviderOutcome {
    const now = this.ctx.now();
    if (fault.kind === "budget" && fault.refusal.reason === "drained" && fault.refusal.bucket === "minute")
      return rateLimitedUntil(
        `The gateway's ${fault.refusal.limit} Reddit requests a minute are used.`,
        fault.refusal.resetsAt,
        now,
      );
    if (fault.kind === "http") {
      const body = (fault.body ?? {}) as Record<string, unknown>;
      const reason = str(body["reason"]) ?? "";
      if (fault.status === 404) return notFound("reddit", what);
      if (fault.status === 400 && /DOESNT_EXIST|NOT_FOUND/i.test(reason)) return notFound("reddit", what);
      // A private, quarantined or banned community (or an account's hidden listing): the gateway may not read it.
      if (fault.status === 403 && reason !== "") return notFound("reddit", what);
      if (fault.status === 401)
        return credentialsRefused("reddit", "HTTP 401: the app-only token was refused", this.ctx.log);
      if (fault.status === 403)
        return credentialsRefused(
          "reddit",
          "HTTP 403: Reddit blocked the app (is it approved for the Data API, and is SDGW_REDDIT_USER_AGENT its own?)",
          this.ctx.log,
        );
      if (fault.status === 429) {
        const until = fault.rateLimit.resetAt ?? now + 1000 * (fault.retryAfter ?? 60);
        return rateLimitedUntil("reddit is limiting how fast the gateway may read.", until, now);
      }
    }
    return faultOutcome(fault, { platform: "reddit", now, log: this.ctx.log });
  }

  // --- calls ------------------------------------------------------------------------------------------------

  /** The parameters of a call with its target as an id (a link becomes the id it names), or invalid_target. */
  private normalise(
    op: string,
    params: Readonly<Record<string, unknown>>,
  ): { params: Record<string, unknown>; target?: Target } | { outcome: ProviderOutcome } {
    const out: Record<string, unknown> = { ...params };
    if (op === "search" && typeof params["scope"] === "string") {
      const sub = params["scope"].replace(/^\/?r\//, "");
      if (!SUBREDDIT.test(sub))
        return {
          outcome: invalidTarget("scope", "`scope` on reddit is a community: r/name (2 to 21 letters, digits, _)."),
        };
      out["scope"] = sub.toLowerCase();
    }
    if (op === "subreddit_posts") {
      const sub = String(params["subreddit"] ?? "").replace(/^\/?r\//, "");
      if (!SUBREDDIT.test(sub))
        return {
          outcome: invalidTarget("subreddit", "This is not a reddit community: r/name (2 to 21 letters, digits, _)."),
        };
      out["subreddit"] = sub.toLowerCase();
      return { params: out };
    }
    const target = targetOf(op, params, out, REDDIT_LINKS);
    if (target === null) return { params: out };
    if ("outcome" in target) return target;
    const { id, users } = target;
    if (users) {
      const name = id.replace(/^\/?u(?:ser)?\//, "");
      if (!USER_NAME.test(name))
        return {
          outcome: invalidTarget("id", "This is not a reddit account name (3 to 20 letters, digits, - and _)."),
        };
      out["id"] = name.toLowerCase();
      return { params: out, target: { user: name } };
    }
    const short = id.replace(/^t3_/, "");
    if (!POST_ID.test(short))
      return {
        outcome: invalidTarget("id", "This is not a reddit post id (t3_ and 4 to 10 lowercase letters and digits)."),
      };
    out["id"] = `t3_${short}`;
    return { params: out, target: { post: short } };
  }

  private async call(req: ProviderRequest): Promise<ProviderOutcome> {
    const op = req.operation;
    if (!(op in REDDIT_CACHE_TTL_MS)) return { status: "not_supported", message: `reddit does not offer ${op}.` };
    const norm = this.normalise(op, req.params);
    if ("outcome" in norm) return norm.outcome;
    const resumed = resumeState({ platform: "reddit", operation: op, params: norm.params }, req.params["cursor"]);
    if ("outcome" in resumed) return resumed.outcome;
    const { state } = resumed;
    const spend: Spend = { units: 0, requests: 0 };
    return throughCache(
      this.ctx,
      { platform: "reddit", operation: op, params: norm.params, ttlMs: REDDIT_CACHE_TTL_MS[op as RouteOperation] },
      async () => {
        const o = await this.read(op, norm.params, norm.target, state, req, spend);
        return { ...o, upstream: { units: round(spend.units), requests: round(spend.requests), cached: false } };
      },
    );
  }

  private read(
    op: string,
    p: Record<string, unknown>,
    target: Target | undefined,
    state: CursorState,
    req: ProviderRequest,
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const c = { signal: req.signal, deadline: req.deadline };
    const after = typeof state["a"] === "string" ? state["a"] : undefined;
    switch (op) {
      case "search":
        return this.search(p, after, c, spend);
      case "trending":
        return this.listing(op, p, "/r/popular/hot", { limit: Number(p["count"] ?? 10), after }, c, spend, {
          trend: typeof state["r"] === "number" ? state["r"] : 0,
        });
      case "subreddit_posts":
        return this.listing(
          op,
          p,
          `/r/${String(p["subreddit"])}/${String(p["sort"] ?? "hot")}`,
          { limit: Number(p["limit"] ?? 20), after, ...(p["sort"] === "top" ? { t: "day" } : {}) },
          c,
          spend,
          {},
        );
      case "detail":
        return this.detail((target as { post: string }).post, req, spend);
      case "comments":
        return this.comments(p, (target as { post: string }).post, c, spend);
      case "user_profile":
        return this.profile((target as { user: string }).user, c, spend);
      case "user_posts":
        return this.listing(
          op,
          p,
          `/user/${(target as { user: string }).user}/submitted`,
          {
            limit: Number(p["limit"] ?? 20),
            sort: p["sort"] === "most_liked" ? "top" : "new",
            ...(p["sort"] === "most_liked" ? { t: "all" } : {}),
            after,
          },
          c,
          spend,
          { what: "account" },
        );
      default:
        return Promise.resolve({ status: "not_supported", message: `reddit does not offer ${op}.` });
    }
  }

  /** The page of an answer: a cursor over Reddit's `after` (and the rank reached), or the end. */
  private page(op: string, p: Record<string, unknown>, next: CursorState | null) {
    if (!next) return { has_more: false as const };
    const cursor = encodeCursor({ platform: "reddit", operation: op, params: p }, next);
    return cursor ? { has_more: true as const, cursor } : { has_more: false as const };
  }

  private async search(
    p: Record<string, unknown>,
    after: string | undefined,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const count = Number(p["count"] ?? 10);
    if (p["type"] === "user")
      return this.listing("search", p, "/users/search", { q: String(p["query"]), limit: count, after }, c, spend, {
        users: true,
      });
    const scope = typeof p["scope"] === "string" ? p["scope"] : undefined;
    const sort = { latest: "new", most_liked: "top", most_comments: "comments" }[String(p["sort"])] ?? "relevance";
    return this.listing(
      "search",
      p,
      scope ? `/r/${scope}/search` : "/search",
      {
        q: String(p["query"]),
        type: "link",
        sort,
        t: RANGE[String(p["time_range"] ?? "all")] ?? "all",
        ...(scope ? { restrict_sr: 1 } : {}),
        ...(p["content_type"] === "text" ? { self: "true" } : {}),
        limit: count,
        after,
      },
      c,
      spend,
      {},
    );
  }

  /** A listing read and mapped: posts (or accounts, or trending entries ranked from `trend`), paged by `after`. */
  private async listing(
    op: string,
    p: Record<string, unknown>,
    path: string,
    query: Record<string, string | number | undefined>,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
    o: { users?: boolean; trend?: number; what?: string },
  ): Promise<ProviderOutcome> {
    const got = await this.get(path, query, c, spend, o.what ?? "community");
    if (!got.ok) return got.outcome;
    const listing = listingOf(got.body, o.users ? "t2" : "t3");
    if (!listing) return this.unknownShape(path);
    const items: Item[] = [];
    for (const d of listing.data) {
      const item =
        o.trend !== undefined ? redditTrend(d, o.trend + items.length + 1) : o.users ? redditAccount(d) : redditPost(d);
      if (item) items.push(item);
    }
    const next = listing.after
      ? { a: listing.after, ...(o.trend !== undefined ? { r: o.trend + items.length } : {}) }
      : null;
    const page = this.page(op, p, next);
    return items.length ? { status: "ok", items, page } : { status: "empty", items: [], page };
  }

  private async detail(id: string, req: ProviderRequest, spend: Spend): Promise<ProviderOutcome> {
    const { result, share } = await this.posts.load(`t3_${id}`, req.signal, req.deadline);
    const s = this.batchSpend.get(result);
    if (s) {
      spend.units += s.units * share;
      spend.requests += s.requests * share;
    }
    if (!result.ok) return result.outcome;
    const d = result.found.get(`t3_${id}`);
    const item = d ? redditPost(d) : null;
    return item ? { status: "ok", items: [item] } : notFound("reddit", "post");
  }

  private async comments(
    p: Record<string, unknown>,
    id: string,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const limit = Number(p["limit"] ?? 20);
    const got = await this.get(
      `/comments/${id}`,
      { limit, sort: p["sort"] === "most_liked" ? "top" : "new", threaded: "true" },
      c,
      spend,
      "post",
    );
    if (!got.ok) return got.outcome;
    const pair = got.body;
    if (!Array.isArray(pair) || pair.length < 2) return this.unknownShape(`/comments/${id}`);
    const forest = listingOf(pair[1], "t1");
    if (!forest) return this.unknownShape(`/comments/${id}`);
    const flat = flattenComments((pair[1] as { data: { children: unknown } }).data.children);
    const items = flat.items.slice(0, limit);
    const warnings: string[] = [];
    const left = flat.notSent + (flat.items.length - items.length);
    if (left > 0 || flat.continued > 0)
      warnings.push(
        `reddit did not send every comment of this post in one ` +
          `read${left > 0 ? ` (${left} more)` : ""}${
            flat.continued > 0 ? `; ${flat.continued} thread(s) continue deeper` : ""
          }; the gateway reads the first ${limit} and does not page further`,
      );
    return items.length
      ? { status: "ok", items, page: { has_more: false }, ...(warnings.length ? { warnings } : {}) }
      : { status: "empty", items: [], page: { has_more: false }, ...(warnings.length ? { warnings } : {}) };
  }

  private async profile(
    name: string,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const got = await this.get(`/user/${name}/about`, {}, c, spend, "account");
    if (!got.ok) return got.outcome;
    const thing = got.body as RedditThingJson;
    const card = thing?.kind === "t2" && thing.data ? redditAccount(thing.data) : null;
    return card ? { status: "ok", items: [card] } : notFound("reddit", "account");
  }

  private unknownShape(path: string): ProviderOutcome {
    this.ctx.log.error(`reddit GET ${path}: an answer in a shape the gateway does not know (the API changed?)`);
    return upstreamError("reddit answered in a shape the gateway does not know.", false);
  }

  private async check(signal: AbortSignal): Promise<{ ok: boolean; message: string }> {
    const t = await this.accessToken(signal);
    if ("value" in t)
      return {
        ok: true,
        message: `Reddit issued an app-only token to the app in SDGW_REDDIT_CLIENT_ID (valid ${Math.round((t.expiresAt - this.ctx.now()) / 1000)} s)`,
      };
    const refused = t.status === "error" && t.failure.code === "upstream_error" && !t.failure.retryable;
    return {
      ok: false,
      message: refused
        ? "Reddit refused the app in SDGW_REDDIT_CLIENT_ID and SDGW_REDDIT_CLIENT_SECRET (no token)"
        : `Reddit's token service did not answer the check: ${t.status === "error" ? t.failure.message : t.status}`,
    };
  }
}

/** How reddit's links name their targets (D153). */
const REDDIT_LINKS: TargetLinks = {
  user: userFromLink,
  post: postFromLink,
  noUser: "This link names no reddit account (reddit.com/user/name or reddit.com/u/name links do).",
  noPost: "This link names no reddit post (reddit.com/r/…/comments/…, reddit.com/comments/… and redd.it/… links do).",
};

/** The post id a Reddit link names (`abc123`), or null. */
export function postFromLink(link: string): string | null {
  let u: URL;
  try {
    u = new URL(link);
  } catch {
    return null;
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") return null;
  const h = host(u);
  if (h === "redd.it") return /^\/([a-z0-9]{4,10})\/?$/.exec(u.pathname)?.[1] ?? null;
  if (h !== "reddit.com" && h !== "old.reddit.com" && h !== "new.reddit.com" && h !== "np.reddit.com") return null;
  const m = /^\/(?:r\/[A-Za-z0-9_]+\/)?comments\/([a-z0-9]{4,10})(?:\/|$)/.exec(u.pathname);
  return m ? m[1]! : null;
}

/** The account name a Reddit link names, or null. */
export function userFromLink(link: string): string | null {
  let u: URL;
  try {
    u = new URL(link);
  } catch {
    return null;
  }
  const h = host(u);
  if (h !== "reddit.com" && h !== "old.reddit.com" && h !== "new.reddit.com") return null;
  return /^\/(?:user|u)\/([A-Za-z0-9_-]{3,20})(?:\/(?:submitted|overview)?\/?)?$/.exec(u.pathname)?.[1] ?? null;
}

const round = (n: number) => Math.round(n * 100) / 100;
