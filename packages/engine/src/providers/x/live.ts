/**
 * X on its official API (D155–D157): X API v2 with the operator's app-only Bearer token, over the connectors' HTTP
 * helper, budget and cache. Every request names the fields it needs (`tweet.fields`, `user.fields`, `media.fields`,
 * `expansions`: X answers only `id` and `text` otherwise). Ids are 19-digit strings and stay strings: nothing here
 * turns one into a number. X bills per post read, so each call's quote is the posts it may read, the operator's
 * daily budget counts them before a request is sent, `count` bounds `max_results`, and a post read by id is kept for
 * X's 24-hour billing window. Trending and followers are not offered live (D156).
 */
import type { Item } from "@sdgw/types";
import { Batcher } from "../../connectors/batch.ts";
import { throughCache } from "../../connectors/cache.ts";
import type { BudgetBucket, ConnectorContext } from "../../connectors/context.ts";
import { decodeCursor, encodeCursor, resumeState, type CursorState } from "../../connectors/cursor.ts";
import { SettingsReader, type ConnectorDefinition } from "../../connectors/define.ts";
import {
  credentialsRefused,
  faultOutcome,
  invalidTarget,
  notFound,
  rateLimitedUntil,
  targetOf,
  upstreamError,
  type TargetLinks,
} from "../../connectors/errors.ts";
import { upstreamGet, type RateLimitInfo, type UpstreamFault } from "../../connectors/http.ts";
import { isoSeconds } from "../../time.ts";
import type { OperationSpec, PlatformProvider, ProviderOutcome, ProviderRequest } from "../port.ts";
import { x } from "./index.ts";
import {
  isTweet,
  isUser,
  str,
  TWEET_ID,
  USERNAME,
  xPost,
  xPostFromLink,
  xUser,
  xUserFromLink,
  type XApiUser,
  type XIncludes,
} from "./v2.ts";

export { xPost, xPostFromLink, xTime, xUser, xUserFromLink } from "./v2.ts";

/** How x's links name their targets. */
const X_LINKS: TargetLinks = {
  user: xUserFromLink,
  post: xPostFromLink,
  noUser: "This link names no x account (x.com/name or twitter.com/name links do).",
  noPost: "This link names no x post (x.com/name/status/…, twitter.com/…/status/… and x.com/i/web/status/… links do).",
};
export type { XApiMedia, XApiTweet, XApiUser, XIncludes } from "./v2.ts";

/** The checked settings of the X connector. */
export interface XSettings {
  /** The operator's app-only Bearer token (secret). */
  bearerToken: string;
  /** The API's base URL (`https://api.x.com/2`, or a fake upstream on this machine). */
  baseUrl: string;
  /** Posts and accounts the gateway may read a day (UTC), every instance together: X bills each one. */
  dailyReads: number;
}

/** The fields every tweet read asks for (X answers `id` and `text` only, otherwise). */
export const X_TWEET_FIELDS =
  "attachments,author_id,conversation_id,created_at,lang,note_tweet,public_metrics,referenced_tweets";
/** The fields of the accounts read, or expanded from a tweet's `author_id`. */
export const X_USER_FIELDS = "created_at,description,location,profile_image_url,public_metrics,verified";
/** The fields of the media expanded from a tweet's `attachments.media_keys`. */
export const X_MEDIA_FIELDS = "duration_ms,preview_image_url,type,url,variants";
/** What a tweet read expands. */
export const X_EXPANSIONS = "attachments.media_keys,author_id";

/** How long an answer is kept (D157): a post or an account read by id for X's 24-hour billing window. */
export const X_CACHE_TTL_MS: Readonly<Record<string, number>> = {
  search: 900_000,
  comments: 900_000,
  user_posts: 900_000,
  detail: 86_400_000,
  user_profile: 86_400_000,
};

const DAY_MS = 86_400_000;

const TRENDING_WHY =
  "x.trending is not available on live X: X API v2 gives trends by place only to some paid tiers " +
  "(and personalised trends only to a signed-in user), and the gateway reads X with an app-only " +
  "token. Nothing ran and nothing was charged.";
const FOLLOWERS_WHY =
  "x.user_followers is not available on live X: X API v2 lists followers only on tiers above the " +
  "gateway's app-only reads. Nothing ran and nothing was charged.";

/** The operator's settings of the X connector. */
export const xConnector: ConnectorDefinition<XSettings> = {
  platform: "x",
  api: "X API v2 (app-only Bearer token)",
  settings: [
    {
      name: "bearerToken",
      env: "SDGW_X_BEARER_TOKEN",
      description:
        "The app-only Bearer token of the operator's X app; setting it switches x from the simulator to the API.",
      secret: true,
      switch: true,
    },
    {
      name: "baseUrl",
      env: "SDGW_X_BASE_URL",
      description: "The API's base URL (tests point it at a fake upstream on 127.0.0.1).",
      default: "https://api.x.com/2",
    },
    {
      name: "dailyReads",
      env: "SDGW_X_DAILY_READS",
      description:
        "Posts and accounts the gateway may read a day (UTC), every instance together; X bills each one, so this is the operator's spending cap.",
      default: "10000",
    },
  ],
  configure(raw, label) {
    const r = new SettingsReader(this.settings, raw, label);
    const bearerToken = r.secret("bearerToken", "an X app-only Bearer token");
    const baseUrl = r.baseUrl("baseUrl");
    const dailyReads = r.whole(
      "dailyReads",
      "the posts and accounts the gateway may read from X a day",
      1,
      1_000_000_000,
    );
    r.done();
    return { bearerToken, baseUrl, dailyReads };
  },
  budget: (s): BudgetBucket[] => [
    { name: "reads", limit: s.dailyReads, timeZone: "UTC", label: "X posts and accounts read" },
  ],
  secrets: (s) => [s.bearerToken],
  volatileParams: ["start_time"],
  describe: (s) => `X API v2 at ${s.baseUrl}`,
  create: (s, ctx) => new XLive(s, ctx).provider(),
};

/** The first `errors` entry of an answer that says a resource was not found, if any. */
function notFoundError(body: unknown): boolean {
  const errors = (body as { errors?: { type?: unknown; title?: unknown }[] } | null)?.errors;
  return (
    Array.isArray(errors) &&
    errors.some((e) => /resource-not-found/.test(String(e?.type)) || /Not Found/i.test(String(e?.title)))
  );
}

// ---------------------------------------------------------------------------------------------------------------

interface Spend {
  units: number;
  requests: number;
}
type Got = { ok: true; body: Record<string, unknown> } | { ok: false; outcome: ProviderOutcome };
type Lookup = { ok: true; body: Record<string, unknown> } | { ok: false; outcome: ProviderOutcome };
type Target = { tweet: string } | { username: string } | { userId: string };

/** `count` as X's `max_results`: X asks at least `min` (it bills what it sends). */
const maxResults = (n: unknown, min: number) => Math.max(min, Math.min(100, Number(n ?? 10)));

class XLive {
  private readonly s: XSettings;
  private readonly ctx: ConnectorContext;
  /** Endpoints X said are spent, until when (ms since the epoch). */
  private readonly paused = new Map<string, number>();
  private readonly tweets: Batcher<Lookup>;
  private readonly batchSpend = new WeakMap<object, Spend>();

  constructor(s: XSettings, ctx: ConnectorContext) {
    this.s = s;
    this.ctx = ctx;
    this.tweets = new Batcher({
      windowMs: 10,
      max: 100,
      run: async (ids, signal, deadline) => {
        const spend: Spend = { units: 0, requests: 0 };
        const got = await this.get(
          "/tweets",
          { ids: ids.join(","), ...this.tweetQuery() },
          ids.length,
          { signal, deadline },
          spend,
          "post",
        );
        const result: Lookup = got.ok ? { ok: true, body: got.body } : { ok: false, outcome: got.outcome };
        this.batchSpend.set(result, spend);
        return result;
      },
    });
  }

  private tweetQuery() {
    return {
      "tweet.fields": X_TWEET_FIELDS,
      expansions: X_EXPANSIONS,
      "user.fields": X_USER_FIELDS,
      "media.fields": X_MEDIA_FIELDS,
    };
  }

  provider(): PlatformProvider {
    const operations: OperationSpec[] = x.operations;
    return {
      platform: "x",
      operations,
      scoped: false,
      source: "live",
      unsupported: (op, p) => this.unsupported(op, p),
      notAvailableYet: (op) => (op === "trending" ? TRENDING_WHY : op === "user_followers" ? FOLLOWERS_WHY : null),
      upstreamCost: (op, p) => this.upstreamCost(op, p),
      cursorValid: (op, cursor, params) => {
        const norm = this.normalise(op, params ?? {});
        return (
          "outcome" in norm || decodeCursor({ platform: "x", operation: op, params: norm.params }, cursor) !== null
        );
      },
      call: (req) => this.call(req),
      check: (signal) => this.check(signal),
    };
  }

  private unsupported(op: string, p: Readonly<Record<string, unknown>>): string | null {
    const gap = x.unsupported(op, p);
    if (gap) return gap;
    if (op === "search") {
      if (p["type"] === "user")
        return "x's API finds posts, not accounts, for the gateway's app-only token and does not offer type=user; read an account with user_profile.";
      if (p["sort"] === "most_liked" || p["sort"] === "most_comments")
        return `x's recent search orders by relevance or time only and does not offer sort=${String(p["sort"])}; sort=relevance and latest work.`;
    }
    if ((op === "comments" || op === "user_posts") && p["sort"] === "most_liked")
      return `x lists ${op === "comments" ? "replies" : "an account's posts"} newest first only and does not offer sort=most_liked here; sort=latest works.`;
    return null;
  }

  /** The most posts and accounts a call may read (X's bill), for the quote (D157). */
  private upstreamCost(op: string, p: Readonly<Record<string, unknown>>): number {
    const byName = (v: unknown) => typeof v !== "string" || !/^\d+$/.test(v);
    switch (op) {
      case "search":
        return maxResults(p["count"], 10);
      case "comments":
        return maxResults(p["limit"] ?? 20, 10);
      case "user_posts":
        return maxResults(p["limit"] ?? 20, 5) + (typeof p["cursor"] === "string" ? 0 : byName(p["id"]) ? 1 : 0);
      case "detail":
      case "user_profile":
        return 1;
      default:
        return 0;
    }
  }

  /** The key of an endpoint's own rate limit (`/users/{id}/tweets`). */
  private endpoint(path: string): string {
    return path.replace(/\/\d+(?=\/|$)/g, "/{id}").replace(/\/by\/username\/[^/]+$/, "/by/username/{username}");
  }

  private async noteLimit(path: string, rate: RateLimitInfo): Promise<void> {
    if (rate.remaining === undefined || rate.remaining >= 1 || rate.resetAt === undefined) return;
    const key = this.endpoint(path);
    this.paused.set(key, rate.resetAt);
    this.ctx.log.info(
      `x: the API says GET ${key} is spent for this window; pausing it until ${isoSeconds(rate.resetAt)}`,
    );
    await this.ctx.shared?.set(`x:paused:${key}`, String(rate.resetAt), Math.max(1, rate.resetAt - this.ctx.now()));
  }

  private async pausedUntil(path: string): Promise<number | null> {
    const key = this.endpoint(path);
    const now = this.ctx.now();
    const here = this.paused.get(key) ?? 0;
    if (here > now) return here;
    const there = Number(await this.ctx.shared?.get(`x:paused:${key}`));
    return Number.isFinite(there) && there > now ? there : null;
  }

  /** One GET with the Bearer token; `reads` the posts or accounts it may read (taken from the budget first). */
  private async get(
    path: string,
    query: Record<string, string | number | undefined>,
    reads: number,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
    what: string,
  ): Promise<Got> {
    const until = await this.pausedUntil(path);
    if (until !== null)
      return {
        ok: false,
        outcome: rateLimitedUntil(
          "x's rate limit for this kind of read is reached for the gateway.",
          until,
          this.ctx.now(),
        ),
      };
    const r = await upstreamGet(this.ctx, {
      platform: "x",
      method: `GET ${this.endpoint(path)}`,
      url: `${this.s.baseUrl}${path}`,
      query,
      headers: { authorization: `Bearer ${this.s.bearerToken}` },
      cost: [{ bucket: "reads", units: reads }],
      signal: c.signal,
      secrets: [this.s.bearerToken],
      ...(c.deadline !== undefined ? { deadline: c.deadline } : {}),
    });
    spend.units += r.units;
    spend.requests += r.requests;
    if (r.ok) {
      await this.noteLimit(path, r.rateLimit);
      const body = r.body;
      if (typeof body !== "object" || body === null || Array.isArray(body))
        return { ok: false, outcome: this.unknownShape(path) };
      return { ok: true, body: body as Record<string, unknown> };
    }
    if (r.fault.kind === "http") await this.noteLimit(path, r.fault.rateLimit);
    return { ok: false, outcome: this.failed(r.fault, what) };
  }

  /** What a fault means on X; the rest is the common mapping (D120, D157). */
  private failed(fault: UpstreamFault, what: string): ProviderOutcome {
    const now = this.ctx.now();
    if (fault.kind === "http") {
      const body = (fault.body ?? {}) as { title?: unknown; detail?: unknown; type?: unknown };
      const type = String(body.type ?? "");
      if (fault.status === 401)
        return credentialsRefused("x", "HTTP 401: the Bearer token in SDGW_X_BEARER_TOKEN was refused", this.ctx.log);
      if (fault.status === 403)
        return credentialsRefused(
          "x",
          `HTTP 403${/client-not-enrolled|client-forbidden/.test(type) ? ": the app's access level does not include this endpoint" : ""}`,
          this.ctx.log,
        );
      if (fault.status === 404) return notFound("x", what);
      if (fault.status === 429) {
        const until = fault.rateLimit.resetAt ?? now + 1000 * (fault.retryAfter ?? 900);
        const capped = /usage-capped|UsageCapExceeded/i.test(`${type} ${String(body.title ?? "")}`);
        if (capped) this.ctx.log.error("x: the X project's usage cap is reached; x calls are refused until it resets");
        return rateLimitedUntil(
          capped ? "The X project's usage cap is reached." : "x is limiting how fast the gateway may read.",
          until,
          now,
        );
      }
      if (fault.status === 400) {
        const detail = str(body.detail) ?? "X refused the request";
        return upstreamError(`x refused the request: ${detail.slice(0, 200)}`, false);
      }
    }
    return faultOutcome(fault, { platform: "x", now, log: this.ctx.log });
  }

  private unknownShape(path: string): ProviderOutcome {
    this.ctx.log.error(`x GET ${path}: an answer in a shape the gateway does not know (the API changed?)`);
    return upstreamError("x answered in a shape the gateway does not know.", false);
  }

  private normalise(
    op: string,
    params: Readonly<Record<string, unknown>>,
  ): { params: Record<string, unknown>; target?: Target } | { outcome: ProviderOutcome } {
    const out: Record<string, unknown> = { ...params };
    const target = targetOf(op, params, out, X_LINKS);
    if (target === null) return { params: out };
    if ("outcome" in target) return target;
    const { id, users } = target;
    if (users) {
      const name = id.replace(/^@/, "");
      if (/^\d{1,19}$/.test(name)) {
        out["id"] = name;
        return { params: out, target: { userId: name } };
      }
      if (!USERNAME.test(name))
        return {
          outcome: invalidTarget(
            "id",
            "This is not an x account: a username (1 to 15 letters, digits, _) or its numeric id.",
          ),
        };
      out["id"] = name.toLowerCase();
      return { params: out, target: { username: name } };
    }
    if (!TWEET_ID.test(id))
      return { outcome: invalidTarget("id", "This is not an x post id (1 to 19 digits, as a string).") };
    out["id"] = id;
    return { params: out, target: { tweet: id } };
  }

  private async call(req: ProviderRequest): Promise<ProviderOutcome> {
    const op = req.operation;
    if (op === "trending") return { status: "not_supported", message: TRENDING_WHY };
    if (op === "user_followers") return { status: "not_supported", message: FOLLOWERS_WHY };
    if (!(op in X_CACHE_TTL_MS)) return { status: "not_supported", message: `x does not offer ${op}.` };
    const norm = this.normalise(op, req.params);
    if ("outcome" in norm) return norm.outcome;
    const resumed = resumeState({ platform: "x", operation: op, params: norm.params }, req.params["cursor"]);
    if ("outcome" in resumed) return resumed.outcome;
    const { state } = resumed;
    const spend: Spend = { units: 0, requests: 0 };
    return throughCache(
      this.ctx,
      { platform: "x", operation: op, params: norm.params, ttlMs: X_CACHE_TTL_MS[op]! },
      async () => {
        const c = { signal: req.signal, deadline: req.deadline };
        const o = await this.read(op, norm.params, norm.target, state, c, req, spend);
        return { ...o, upstream: { units: round(spend.units), requests: round(spend.requests), cached: false } };
      },
    );
  }

  private read(
    op: string,
    p: Record<string, unknown>,
    target: Target | undefined,
    state: CursorState,
    c: { signal: AbortSignal; deadline: number | undefined },
    req: ProviderRequest,
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const token = typeof state["t"] === "string" ? state["t"] : undefined;
    switch (op) {
      case "search":
        return this.search(p, token, state, c, spend);
      case "detail":
        return this.detail((target as { tweet: string }).tweet, req, spend);
      case "comments":
        return this.comments(p, (target as { tweet: string }).tweet, token, c, spend);
      case "user_profile":
        return this.profile(target!, c, spend);
      default:
        return this.posts(p, target!, token, state, c, spend);
    }
  }

  private page(op: string, p: Record<string, unknown>, next: CursorState | null) {
    if (!next) return { has_more: false as const };
    const cursor = encodeCursor({ platform: "x", operation: op, params: p }, next);
    return cursor ? { has_more: true as const, cursor } : { has_more: false as const };
  }

  /** A list of tweets answered (`data`, `includes`, `meta.next_token`) as items, `count` at most. */
  private tweetsPage(
    op: string,
    p: Record<string, unknown>,
    body: Record<string, unknown>,
    limit: number,
    next: (token: string) => CursorState,
    warnings: string[],
  ): ProviderOutcome {
    const data = body["data"];
    if (data !== undefined && !Array.isArray(data)) return this.unknownShape(op);
    const includes = (body["includes"] ?? {}) as XIncludes;
    const items: Item[] = ((data as unknown[]) ?? [])
      .filter(isTweet)
      .slice(0, limit)
      .map((t) => xPost(t, includes));
    const token = str((body["meta"] as { next_token?: unknown } | undefined)?.next_token);
    const page = this.page(op, p, token ? next(token) : null);
    const w = warnings.length ? { warnings } : {};
    return items.length ? { status: "ok", items, page, ...w } : { status: "empty", items: [], page, ...w };
  }

  private async search(
    p: Record<string, unknown>,
    token: string | undefined,
    state: CursorState,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const warnings: string[] = [];
    const media = { video: " has:videos", image: " has:images", text: " -has:media" }[String(p["content_type"])] ?? "";
    if (p["time_range"] === "30d")
      warnings.push("x's recent search covers the last seven days only; older posts are not included");
    const startTime =
      typeof state["s"] === "string"
        ? state["s"]
        : p["time_range"] === "1d"
          ? isoSeconds(this.ctx.now() - DAY_MS)
          : undefined;
    const max = maxResults(p["count"], 10);
    const got = await this.get(
      "/tweets/search/recent",
      {
        query: `${String(p["query"])}${media}`,
        max_results: max,
        sort_order: p["sort"] === "latest" ? "recency" : "relevancy",
        start_time: startTime,
        next_token: token,
        ...this.tweetQuery(),
      },
      max,
      c,
      spend,
      "post",
    );
    if (!got.ok) return got.outcome;
    return this.tweetsPage(
      "search",
      p,
      got.body,
      Number(p["count"] ?? 10),
      (t) => ({ t, ...(startTime ? { s: startTime } : {}) }),
      warnings,
    );
  }

  private async detail(id: string, req: ProviderRequest, spend: Spend): Promise<ProviderOutcome> {
    const { result, share } = await this.tweets.load(id, req.signal, req.deadline);
    const s = this.batchSpend.get(result);
    if (s) {
      spend.units += s.units * share;
      spend.requests += s.requests * share;
    }
    if (!result.ok) return result.outcome;
    const data = result.body["data"];
    const tweet = Array.isArray(data) ? data.filter(isTweet).find((t) => t.id === id) : undefined;
    if (!tweet) return notFound("x", "post");
    return { status: "ok", items: [xPost(tweet, (result.body["includes"] ?? {}) as XIncludes)] };
  }

  private async comments(
    p: Record<string, unknown>,
    id: string,
    token: string | undefined,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const limit = Number(p["limit"] ?? 20);
    const max = maxResults(limit, 10);
    const got = await this.get(
      "/tweets/search/recent",
      {
        query: `conversation_id:${id} is:reply`,
        max_results: max,
        sort_order: "recency",
        next_token: token,
        ...this.tweetQuery(),
      },
      max,
      c,
      spend,
      "post",
    );
    if (!got.ok) return got.outcome;
    return this.tweetsPage("comments", p, got.body, limit, (t) => ({ t }), [
      "x finds replies with its recent search: replies older than seven days are not included",
    ]);
  }

  /** An account by username or id (1 read), or the outcome that ends the call. */
  private async user(
    target: Target,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
  ): Promise<{ user: XApiUser } | { outcome: ProviderOutcome }> {
    const path =
      "username" in target
        ? `/users/by/username/${target.username}`
        : `/users/${(target as { userId: string }).userId}`;
    const got = await this.get(path, { "user.fields": X_USER_FIELDS }, 1, c, spend, "account");
    if (!got.ok) return { outcome: got.outcome };
    const data = got.body["data"];
    if (isUser(data)) return { user: data };
    if (data === undefined && (notFoundError(got.body) || got.body["errors"] !== undefined))
      return { outcome: notFound("x", "account") };
    return { outcome: this.unknownShape(path) };
  }

  private async profile(
    target: Target,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
  ): Promise<ProviderOutcome> {
    const found = await this.user(target, c, spend);
    if ("outcome" in found) return found.outcome;
    const card = xUser(found.user);
    return card ? { status: "ok", items: [card] } : notFound("x", "account");
  }

  private async posts(
    p: Record<string, unknown>,
    target: Target,
    token: string | undefined,
    state: CursorState,
    c: { signal: AbortSignal; deadline: number | undefined },
    spend: Spend,
  ): Promise<ProviderOutcome> {
    let userId = typeof state["u"] === "string" ? state["u"] : "userId" in target ? target.userId : undefined;
    if (userId === undefined) {
      const found = await this.user(target, c, spend);
      if ("outcome" in found) return found.outcome;
      userId = found.user.id;
    }
    const limit = Number(p["limit"] ?? 20);
    const max = maxResults(limit, 5);
    const got = await this.get(
      `/users/${userId}/tweets`,
      { max_results: max, pagination_token: token, ...this.tweetQuery() },
      max,
      c,
      spend,
      "account",
    );
    if (!got.ok) return got.outcome;
    const id = userId;
    return this.tweetsPage("user_posts", p, got.body, limit, (t) => ({ t, u: id }), []);
  }

  private async check(signal: AbortSignal): Promise<{ ok: boolean; message: string }> {
    const spend: Spend = { units: 0, requests: 0 };
    const got = await this.get(
      "/users/by/username/XDevelopers",
      { "user.fields": "id" },
      1,
      { signal, deadline: undefined },
      spend,
      "account",
    );
    if (got.ok) return { ok: true, message: "X API v2 accepted the Bearer token (1 account read)" };
    const o = got.outcome;
    const refused = o.status === "error" && o.failure.code === "upstream_error" && !o.failure.retryable;
    return {
      ok: false,
      message: refused
        ? "X API v2 refused the Bearer token in SDGW_X_BEARER_TOKEN"
        : `X API v2 did not answer the check: ${o.status === "error" ? o.failure.message : o.status}`,
    };
  }
}

const round = (n: number) => Math.round(n * 100) / 100;
