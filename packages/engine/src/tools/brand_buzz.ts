/**
 * `brand_buzz`: what is said about a brand across platforms over a window. Waves: `search` (pages of the
 * newest posts per platform, by `scale`), `comments` (of each platform's most engaging posts), `aggregate`.
 * Items: share of voice by platform, mentions and engagement per day, sentiment of the comments, keywords of
 * the posts, top posts (leaderboard and items), top voices (profile cards).
 */
import type { BrandBuzzRequest, Item, Platform, ProfileCard } from "@sdgw/types";
import { validateBrandBuzzBody } from "@sdgw/validators";
import {
  dailySeries,
  dayWindow,
  inWindow,
  leaderboard,
  postKey,
  postsOf,
  rankBy,
  shareDistribution,
  tagged,
  titleOf,
  type FetchedPost,
} from "./analysis.ts";
import {
  applied,
  defineTool,
  isRefusal,
  platformsOffering,
  queryText,
  scaleRefusal,
  searchPlatforms,
} from "./params.ts";
import { keywordDistribution, keywordsOf, sentimentDistribution, sentimentOf } from "./text.ts";

/** What each `scale` reads per platform: pages of 20 search results, and posts whose comments are read. */
export const BRAND_BUZZ_SCALES = {
  small: { pages: 1, commentedPosts: 2 },
  standard: { pages: 3, commentedPosts: 5 },
  large: { pages: 5, commentedPosts: 10 },
} as const;

const PAGE_SIZE = 20;
const COMMENTS_PER_POST = 20;
const TOP_POSTS = 10;
const TOP_POST_ITEMS = 3;
const TOP_VOICES = 5;
const TOP_KEYWORDS = 20;

interface Setup {
  query: string;
  platforms: Platform[];
  commentPlatforms: Platform[];
  window: "7d" | "30d";
  pages: number;
  commentedPosts: number;
}

/** The `brand_buzz` tool. */
export const brandBuzz = defineTool<BrandBuzzRequest, Setup>({
  tool: "brand_buzz",
  validate: validateBrandBuzzBody,
  prepare(req, ctx) {
    const scale = req.scale ?? "small";
    if (scale === "large" && req.confirm !== false) return scaleRefusal(ctx, req.confirm);
    const found = searchPlatforms(req.platforms, ctx);
    if (isRefusal(found)) return found;
    const withComments = platformsOffering(ctx, "comments");
    const { pages, commentedPosts } = BRAND_BUZZ_SCALES[scale];
    const setup: Setup = {
      query: queryText(req.query),
      platforms: found.platforms,
      commentPlatforms: found.platforms.filter((p) => withComments.includes(p)),
      window: req.window ?? "7d",
      pages,
      commentedPosts,
    };
    return {
      setup,
      applied: applied({
        query: setup.query,
        platforms: setup.platforms,
        window: setup.window,
        scale,
        confirm: req.confirm ?? true,
        max_cost_credits: req.max_cost_credits,
      }),
      warnings: found.warnings,
      waves: [
        { name: "search", calls: setup.platforms.length * pages },
        { name: "comments", calls: setup.commentPlatforms.length * commentedPosts },
      ],
    };
  },
  async execute(s, runner, ctx) {
    const win = dayWindow(ctx.now, s.window === "7d" ? 7 : 30);

    // Wave 1: the newest posts per platform, page after page, until the pages run out or leave the window.
    const perPlatform = await runner.wave(
      "search",
      () =>
        runner.all(s.platforms, async (platform) => {
          const seen = new Set<string>();
          const posts: FetchedPost[] = [];
          let cursor: string | undefined;
          for (let page = 0; page < s.pages; page++) {
            const params = {
              query: s.query,
              type: "content",
              sort: "latest",
              time_range: s.window,
              count: PAGE_SIZE,
              ...(cursor ? { cursor } : {}),
            };
            const out = await runner.call(platform, "search", params, page > 0 ? `page ${page + 1}` : undefined);
            if (!out.ok) break;
            const got = postsOf(platform, out.items, seen);
            posts.push(...got);
            if (!out.page?.has_more || got.some((p) => p.ms !== null && p.ms < win.start)) break;
            cursor = out.page.cursor;
          }
          return posts;
        }),
      [] as FetchedPost[][],
    );
    const all = perPlatform.flat();
    const mentions = all.filter((p) => p.ms !== null && inWindow(p.ms, win));
    const outside = all.length - mentions.length;
    if (outside > 0)
      runner.warn(
        `${outside} of ${all.length} posts found were outside the ${s.window} window (or undated) and were left out.`,
      );

    // Wave 2: comments of each platform's most engaging posts in the window.
    const commented = s.commentPlatforms.flatMap((p) =>
      rankBy(
        mentions.filter((m) => m.platform === p),
        (m) => m.engagement,
        postKey,
      ).slice(0, s.commentedPosts),
    );
    const commentTexts = (
      await runner.wave(
        "comments",
        () =>
          runner.all(commented, (post) =>
            runner.call(
              post.platform,
              "comments",
              { id: post.item.id, limit: COMMENTS_PER_POST, sort: "most_liked" },
              post.item.url ?? post.item.id,
            ),
          ),
        [],
      )
    ).flatMap((out) => (out.ok ? out.items.flatMap((c) => (c.kind === "item" && c.text ? [c.text] : [])) : []));

    // Aggregate.
    const items: Item[] = [];
    const share = shareDistribution(
      "platform",
      s.platforms.map((p) => [p, mentions.filter((m) => m.platform === p).length] as const),
      { window: s.window, basis: "posts in the window" },
    );
    if (!share) return items;
    items.push(share);
    items.push(
      dailySeries(
        "mentions",
        "posts/day",
        mentions.map((m) => ({ ms: m.ms!, value: 1 })),
        win,
        { platforms: s.platforms },
      ),
    );
    items.push(
      dailySeries(
        "engagement",
        "engagement/day",
        mentions.map((m) => ({ ms: m.ms!, value: m.engagement })),
        win,
        { platforms: s.platforms, engagement: "likes + comments + shares + collects" },
      ),
    );

    const postTexts = mentions
      .map((m) => [m.item.title, m.item.text].filter(Boolean).join(" "))
      .filter((t) => t !== "");
    const sentiment =
      commentTexts.length > 0
        ? sentimentDistribution(commentTexts, "comments")
        : sentimentDistribution(postTexts, "posts");
    if (sentiment) items.push(sentiment);
    const keywords = keywordDistribution(postTexts, { top: TOP_KEYWORDS, exclude: new Set(keywordsOf(s.query)) });
    if (keywords) items.push(keywords);

    const top = rankBy(mentions, (m) => m.engagement, postKey);
    items.push(
      ...leaderboard(
        top.slice(0, TOP_POSTS).map((m) => ({
          title: titleOf(m.item),
          heat: m.engagement,
          ...(m.item.url ? { url: m.item.url } : {}),
          query: s.query,
          platform_extra: { platform: m.platform, id: m.item.id, metrics: { ...m.item.metrics } },
        })),
      ),
    );

    items.push(...topVoices(mentions));
    items.push(
      ...top.slice(0, TOP_POST_ITEMS).map((m) =>
        tagged(m.item, m.platform, {
          engagement: m.engagement,
          sentiment: sentimentOf(`${m.item.title ?? ""} ${m.item.text ?? ""}`),
        }),
      ),
    );
    return items;
  },
});

/** The authors with the most engagement on the window's posts, as profile cards. */
function topVoices(mentions: readonly FetchedPost[]): ProfileCard[] {
  const voices = new Map<string, { platform: Platform; card: ProfileCard; posts: number; engagement: number }>();
  for (const m of mentions) {
    const a = m.item.author;
    if (!a) continue;
    const id = a.id || a.name;
    const key = `${m.platform}|${id}`;
    const v = voices.get(key) ?? {
      platform: m.platform,
      card: {
        kind: "profile_card" as const,
        id,
        name: a.name,
        ...(a.url ? { url: a.url } : {}),
        ...(a.followers !== undefined ? { followers: a.followers } : {}),
      },
      posts: 0,
      engagement: 0,
    };
    v.posts++;
    v.engagement += m.engagement;
    voices.set(key, v);
  }
  return rankBy(
    [...voices.values()],
    (v) => v.engagement,
    (v) => `${v.platform}|${v.card.id}`,
  )
    .slice(0, TOP_VOICES)
    .map((v) => ({
      ...v.card,
      platform_extra: { platform: v.platform, mentions_in_window: v.posts, engagement: v.engagement },
    }));
}
