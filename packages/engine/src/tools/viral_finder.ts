/**
 * `viral_finder`: posts on a topic that did far better than their author usually does. Waves: `search` (the
 * most liked posts per platform), `posts` (the latest posts of the authors of the most engaging posts in the
 * window, to learn each author's usual engagement), `aggregate`. A post is viral when its engagement is at least
 * `VIRAL_MIN_RATIO` times its author's median engagement (the author's other posts; at least 3 of them).
 * Items: the viral posts ranked by that ratio, as a leaderboard (heat = ratio) and as items.
 */
import type { Item, Platform, ViralFinderRequest } from "@sdgw/types";
import { validateViralFinderBody } from "@sdgw/validators";
import {
  dayWindow,
  inWindow,
  leaderboard,
  median,
  postKey,
  postsOf,
  rankBy,
  round,
  tagged,
  titleOf,
  type FetchedPost,
} from "./analysis.ts";
import { applied, defineTool, isRefusal, queryText, searchPlatforms } from "./params.ts";
import { searchWave } from "./waves.ts";

/** A post is viral at this many times its author's median engagement, or more. */
export const VIRAL_MIN_RATIO = 3;
/** Fewest other posts of an author for a median to be trusted. */
export const MIN_BASELINE_POSTS = 3;

const PAGE_SIZE = 20;
const AUTHOR_POSTS = 20;

interface Setup {
  query: string;
  platforms: Platform[];
  window: "7d" | "30d";
  count: number;
}

/** Authors whose usual engagement is read: two per post asked for, at most the posts a search can find. */
export function authorBudget(platforms: number, count: number): number {
  return Math.min(platforms * PAGE_SIZE, 2 * count);
}

/** The `viral_finder` tool. */
export const viralFinder = defineTool<ViralFinderRequest, Setup>({
  tool: "viral_finder",
  validate: validateViralFinderBody,
  prepare(req, ctx) {
    const found = searchPlatforms(req.platforms, ctx);
    if (isRefusal(found)) return found;
    const setup: Setup = {
      query: queryText(req.query),
      platforms: found.platforms,
      window: req.window ?? "7d",
      count: req.count ?? 10,
    };
    return {
      setup,
      applied: applied({
        query: setup.query,
        platforms: setup.platforms,
        window: setup.window,
        count: setup.count,
        confirm: req.confirm ?? true,
        max_cost_credits: req.max_cost_credits,
      }),
      warnings: found.warnings,
      waves: [
        { name: "search", calls: setup.platforms.length },
        { name: "posts", calls: authorBudget(setup.platforms.length, setup.count) },
      ],
    };
  },
  async execute(s, runner, ctx) {
    const win = dayWindow(ctx.now, s.window === "7d" ? 7 : 30);
    const params = { query: s.query, sort: "most_liked", time_range: s.window, count: PAGE_SIZE };
    const outs = await searchWave(runner, s.platforms, params);
    const posts = outs
      .flatMap((out, i) => (out.ok ? postsOf(s.platforms[i]!, out.items) : []))
      .filter((p) => p.ms !== null && inWindow(p.ms, win));
    const ranked = rankBy(posts, (p) => p.engagement, postKey);

    // The authors of the most engaging posts, once each, as many as planned.
    const authors: Array<{ platform: Platform; id: string; posts: FetchedPost[] }> = [];
    const byKey = new Map<string, (typeof authors)[number]>();
    for (const p of ranked) {
      const id = p.item.author?.id;
      if (!id) continue;
      const key = `${p.platform}|${id}`;
      const known = byKey.get(key);
      if (known) known.posts.push(p);
      else if (authors.length < runner.callsLeft("posts")) {
        const a = { platform: p.platform, id, posts: [p] };
        authors.push(a);
        byKey.set(key, a);
      }
    }
    const baselines = await runner.wave(
      "posts",
      () =>
        runner.all(authors, (a) =>
          runner.call(
            a.platform,
            "user_posts",
            { id: a.id, limit: AUTHOR_POSTS, sort: "latest" },
            a.posts[0]!.item.author!.name,
          ),
        ),
      [],
    );

    const viral: Array<{ post: FetchedPost; ratio: number; baseline: number; authorPosts: number }> = [];
    let thin = 0;
    authors.forEach((a, i) => {
      const out = baselines[i];
      if (!out?.ok) return;
      const mine = new Set(a.posts.map((p) => p.item.id));
      const others = postsOf(a.platform, out.items).filter((p) => !mine.has(p.item.id));
      const m = median(others.map((p) => p.engagement));
      if (m === null || others.length < MIN_BASELINE_POSTS) {
        thin++;
        return;
      }
      for (const post of a.posts) {
        const ratio = post.engagement / Math.max(m, 1);
        if (ratio >= VIRAL_MIN_RATIO) viral.push({ post, ratio, baseline: m, authorPosts: others.length });
      }
    });
    if (thin > 0)
      runner.warn(
        `${thin} authors had fewer than ${MIN_BASELINE_POSTS} other posts to compare with; their posts were not judged.`,
      );

    const top = rankBy(
      viral,
      (v) => v.ratio,
      (v) => postKey(v.post),
    ).slice(0, s.count);
    const items: Item[] = [];
    items.push(
      ...leaderboard(
        top.map((v) => ({
          title: titleOf(v.post.item),
          heat: round(v.ratio, 2),
          ...(v.post.item.url ? { url: v.post.item.url } : {}),
          query: s.query,
          platform_extra: {
            platform: v.post.platform,
            id: v.post.item.id,
            engagement: v.post.engagement,
            author_median: v.baseline,
            author_posts_compared: v.authorPosts,
            ratio: round(v.ratio, 4),
          },
        })),
      ),
    );
    items.push(
      ...top.map((v) =>
        tagged(v.post.item, v.post.platform, {
          engagement: v.post.engagement,
          author_median: v.baseline,
          viral_ratio: round(v.ratio, 4),
        }),
      ),
    );
    return items;
  },
});
