/**
 * The analysis core of the seven multi-step tools of `POST /v1/tools/{tool}` (D8, D24), with no HTTP, no ledger
 * and no storage: each tool `plan`s a request (its quote, D6 steps, or a typed refusal) and `run`s it (waves of
 * provider calls through the provider port, then an analysis computed from what was fetched).
 *
 * ```ts
 * import { TOOLS } from "./tools/index.ts";
 * const ctx = { providers: new Simulator().providers, accountPlan: "paid" as const };
 * const planned = TOOLS.brand_buzz.plan({ query: "瑞幸咖啡", platforms: ["weibo", "douyin"] }, ctx);
 * if (planned.ok) console.log(planned.plan.quote); // { mode, quote_credits, waves_planned, calls_planned, plan }
 * const result = await TOOLS.brand_buzz.run({ query: "瑞幸咖啡", platforms: ["weibo", "douyin"] }, ctx, (steps) => void steps);
 * console.log(result.status, result.items.map((i) => i.kind));
 * ```
 *
 * Pricing and mode: see `CREDITS_PER_CALL` and `INLINE_MAX_CALLS`.
 *
 * @packageDocumentation
 */
import type { ToolName, ToolRequest } from "@sdgw/types";
import { accountWatch } from "./account_watch.ts";
import { batchStats } from "./batch_stats.ts";
import { brandBuzz } from "./brand_buzz.ts";
import { commentInsights } from "./comment_insights.ts";
import { creatorCard } from "./creator_card.ts";
import { findCreators } from "./find_creators.ts";
import type { ToolModule } from "./types.ts";
import { viralFinder } from "./viral_finder.ts";

/** `brand_buzz`: share of voice, mentions and engagement per day, sentiment, keywords, top posts and voices. */
export { brandBuzz, BRAND_BUZZ_SCALES } from "./brand_buzz.ts";
/** `comment_insights`: keywords, sentiment and the most liked comments of posts. */
export { commentInsights } from "./comment_insights.ts";
/** `account_watch`: profile, followers and engagement per day of accounts over a range, and their best posts. */
export { accountWatch, followerReadings, followerSeries, RANGE_DAYS } from "./account_watch.ts";
/** Schedules of `account_watch` (D11): their periods, and what they keep of the call's parameters. */
export { EVERY_MS, scheduleParams } from "./account_watch.ts";
export type { AccountReading } from "./account_watch.ts";
/** `find_creators`: authors of matching posts ranked by relevant reach, filtered by followers. */
export { findCreators, profileBudget } from "./find_creators.ts";
/** `creator_card`: one profile card per account, with metrics and recent posts. */
export { creatorCard, postMetrics, CREATOR_CARD_INCLUDE } from "./creator_card.ts";
/** `batch_stats`: current metrics of many posts as item rows. */
export { batchStats, BATCH_STATS_INCLUDE } from "./batch_stats.ts";
/** `viral_finder`: posts far above their author's median engagement. */
export { viralFinder, authorBudget, VIRAL_MIN_RATIO, MIN_BASELINE_POSTS } from "./viral_finder.ts";

/** Pricing (1 credit per planned provider call) and the inline/background threshold. */
export { CREDITS_PER_CALL, INLINE_MAX_CALLS, creditsFor, modeFor, quoteOf, toolCharge } from "./pricing.ts";
export type { WavePlan } from "./pricing.ts";
/** Links of `targets` and `accounts` on the ten platforms, and `<platform>:<id>`. */
export { resolveLink, platformOfHost } from "./links.ts";
export type { LinkKind, LinkResolution, ResolvedLink } from "./links.ts";
/** Words, keywords and lexicon sentiment (Chinese by `Intl.Segmenter`, and English). */
export {
  words,
  isKeyword,
  keywordsOf,
  keywordCounts,
  keywordDistribution,
  sentimentScore,
  sentimentOf,
  sentimentDistribution,
  ratioBuckets,
} from "./text.ts";
export type { Sentiment } from "./text.ts";
/** Engagement, UTC day windows, daily series, shares, rankings. */
export {
  engagementOf,
  dayWindow,
  inWindow,
  dailySums,
  dailySeries,
  shareDistribution,
  median,
  rankBy,
  leaderboard,
  titleOf,
  dayIso,
  DAY_MS,
} from "./analysis.ts";
export type { DayWindow, RankEntry, FetchedPost } from "./analysis.ts";
/** The wave executor. */
export { Runner } from "./runner.ts";
export type { CallOutcome } from "./runner.ts";
/** Shared request rules and the tool skeleton. */
export { defineTool, searchPlatforms, resolveLinks, scaleRefusal } from "./params.ts";
export type { Prepared, RunContext, ToolDefinition } from "./params.ts";
/** Contexts, plans, refusals and results. */
export { ToolRefusedError } from "./types.ts";
export type {
  FollowerReading,
  OnStep,
  PlanResult,
  RunResult,
  ToolContext,
  ToolModule,
  ToolPlan,
  ToolRefusal,
} from "./types.ts";

/** The seven tools by name, each typed by its request body. */
export const TOOLS: { readonly [T in ToolName]: ToolModule<ToolRequest<T>> } = {
  brand_buzz: brandBuzz,
  comment_insights: commentInsights,
  account_watch: accountWatch,
  find_creators: findCreators,
  creator_card: creatorCard,
  batch_stats: batchStats,
  viral_finder: viralFinder,
};
