/**
 * `@sdgw/engine/connectors`: the framework of live connectors to real platforms (D114–D124) and the connectors
 * themselves. A connector is a {@link ConnectorDefinition}: settings (the credentials switch it on), a budget, and a
 * `PlatformProvider` built over a {@link ConnectorContext} (the platform's `fetch`, the budget and cache the gateway
 * shares between instances, the clock, a log). Building blocks: one HTTP helper (`upstreamGet`), opaque cursors
 * (`encodeCursor`), the mapping of upstream faults (`faultOutcome`), the cache read-through (`throughCache`),
 * coalesced id lookups (`Batcher`), and upstream exchanges for fakes and recordings (`exchangeMatches`). No Node
 * APIs: it runs wherever the engine does.
 *
 * @packageDocumentation
 * @module @sdgw/engine/connectors
 */
import type { ConnectorDefinition } from "./define.ts";
import { redditConnector } from "../providers/reddit/live.ts";
import { xConnector } from "../providers/x/live.ts";
import { youtubeConnector } from "../providers/youtube/live.ts";

export { Batcher } from "./batch.ts";
export type { BatcherOptions, BatchShare } from "./batch.ts";
export { cacheKey, cacheWarning, throughCache } from "./cache.ts";
export type {
  BudgetAnswer,
  BudgetBucket,
  BudgetCharge,
  CachedAnswer,
  ConnectorContext,
  ConnectorLog,
  SharedStore,
  UpstreamBudget,
  UpstreamCache,
} from "./context.ts";
export { CURSOR_VERSION, MAX_CURSOR_LENGTH, decodeCursor, encodeCursor, paramsHash, resumeState } from "./cursor.ts";
export type { CursorBinding, CursorState } from "./cursor.ts";
export { ConnectorConfigError, SettingsReader, isConnectorConfigError, switchedOn } from "./define.ts";
export type { ConnectorDefinition, ConnectorSetting, RawSettings } from "./define.ts";
export {
  credentialsRefused,
  faultOutcome,
  invalidTarget,
  notFound,
  rateLimitedUntil,
  secondsUntil,
  targetOf,
  timedOut,
  upstreamError,
} from "./errors.ts";
export type { TargetLinks } from "./errors.ts";
export { exchangeMatches, exchangeOf, exchangesOf, keptQuery, requestLine } from "./exchanges.ts";
export type { RequestFile, UpstreamExchange } from "./exchanges.ts";
export { decodeEntities } from "./html.ts";
export { UpstreamReplayMiss, rateLimitOf, requestUrl, retryAfterSeconds, upstreamGet } from "./http.ts";
export type { RateLimitInfo, UpstreamFault, UpstreamRequest, UpstreamResult, UpstreamSpend } from "./http.ts";
export { MemoryBudget, MemoryCache, MemoryShared, bucketOf, bucketPeriod } from "./memory.ts";
export type { BudgetBuckets, MemoryBudgetOptions, MemoryCacheOptions, MemorySharedOptions } from "./memory.ts";
export {
  REDACTED,
  SECRET_HEADERS,
  SECRET_JSON_MEMBERS,
  SECRET_QUERY_PARAMS,
  redactJsonSecrets,
  redactText,
  redactUrl,
} from "./redact.ts";
export { isTimeZone, nextMidnight, zonedDay } from "./zone.ts";
export {
  YOUTUBE_CACHE_TTL_MS,
  YOUTUBE_QUOTA_ZONE,
  YOUTUBE_UNITS,
  youtubeConnector,
} from "../providers/youtube/live.ts";
export type { YouTubeSettings } from "../providers/youtube/live.ts";
export {
  REDDIT_CACHE_TTL_MS,
  REDDIT_TOKEN_MARGIN_MS,
  flattenComments,
  listingOf,
  postFromLink,
  redditAccount,
  redditComment,
  redditConnector,
  redditLink,
  redditPost,
  redditTime,
  redditTrend,
  userFromLink,
} from "../providers/reddit/live.ts";
export type { FlatComments, RedditSettings, RedditThingJson } from "../providers/reddit/live.ts";
export {
  X_CACHE_TTL_MS,
  X_EXPANSIONS,
  X_MEDIA_FIELDS,
  X_TWEET_FIELDS,
  X_USER_FIELDS,
  xConnector,
  xPost,
  xPostFromLink,
  xTime,
  xUser,
  xUserFromLink,
} from "../providers/x/live.ts";
export type { XApiMedia, XApiTweet, XApiUser, XIncludes, XSettings } from "../providers/x/live.ts";

/** The live connectors of this package, by platform: a platform listed here goes live when its credentials are set. */
export const CONNECTORS: readonly ConnectorDefinition[] = [youtubeConnector, redditConnector, xConnector];
