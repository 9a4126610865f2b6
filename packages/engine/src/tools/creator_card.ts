/**
 * `creator_card`: one card per account. Waves: `profiles` (one call per account), `posts` (the latest posts of
 * each account found, when `include` has `posts` or `metrics`), `aggregate`. Items per account: its profile card
 * (with `platform_extra.metrics` computed from the recent posts when `include` has `metrics`), then its latest
 * posts when `include` has `posts`.
 */
import type { CreatorCardRequest, Item } from "@sdgw/types";
import { validateCreatorCardBody } from "@sdgw/validators";
import { DAY_MS, median, postsOf, round, tagged, type FetchedPost } from "./analysis.ts";
import type { ResolvedLink } from "./links.ts";
import { applied, defineTool, isRefusal, resolveLinks } from "./params.ts";
import { profilesAndPosts } from "./waves.ts";

/** What `include` offers on `creator_card`, and its default. */
export const CREATOR_CARD_INCLUDE = ["posts", "metrics"] as const;

const POSTS_READ = 20;
const POSTS_SHOWN = 5;

interface Setup {
  accounts: ResolvedLink[];
  include: Array<(typeof CREATOR_CARD_INCLUDE)[number]>;
}

/** Averages and rates of an account's recent posts (engagement = likes + comments + shares + collects). */
export function postMetrics(posts: readonly FetchedPost[], followers: number | undefined): Record<string, number> {
  const n = posts.length;
  const sum = (f: (p: FetchedPost) => number) => posts.reduce((a, p) => a + f(p), 0);
  const out: Record<string, number> = { posts_read: n };
  if (n === 0) return out;
  out["avg_likes"] = round(sum((p) => p.item.metrics?.likes ?? 0) / n, 2);
  out["avg_comments"] = round(sum((p) => p.item.metrics?.comments ?? 0) / n, 2);
  out["avg_shares"] = round(sum((p) => p.item.metrics?.shares ?? 0) / n, 2);
  out["avg_engagement"] = round(sum((p) => p.engagement) / n, 2);
  out["median_engagement"] = median(posts.map((p) => p.engagement))!;
  if (followers !== undefined && followers > 0)
    out["engagement_rate"] = round(sum((p) => p.engagement) / n / followers, 6);
  const times = posts.flatMap((p) => (p.ms !== null ? [p.ms] : []));
  if (times.length >= 2) {
    const spanDays = (Math.max(...times) - Math.min(...times)) / DAY_MS;
    if (spanDays > 0) out["posts_per_week"] = round(((times.length - 1) / spanDays) * 7, 2);
  }
  return out;
}

/** The `creator_card` tool. */
export const creatorCard = defineTool<CreatorCardRequest, Setup>({
  tool: "creator_card",
  validate: validateCreatorCardBody,
  prepare(req, ctx) {
    const include = req.include ?? [...CREATOR_CARD_INCLUDE];
    const accounts = resolveLinks(
      req.accounts,
      "account",
      "accounts",
      ctx,
      include.length > 0 ? ["user_profile", "user_posts"] : ["user_profile"],
    );
    if (isRefusal(accounts)) return accounts;
    return {
      setup: { accounts, include },
      applied: applied({
        accounts: [...req.accounts],
        include,
        confirm: req.confirm ?? true,
        max_cost_credits: req.max_cost_credits,
      }),
      warnings: [],
      waves: [
        { name: "profiles", calls: accounts.length },
        { name: "posts", calls: include.length > 0 ? accounts.length : 0 },
      ],
    };
  },
  async execute(s, runner) {
    const { found, posts: postsOut } = await profilesAndPosts(runner, s.accounts, POSTS_READ);
    const items: Item[] = [];
    found.forEach(({ account, card }, i) => {
      const out = postsOut[i];
      const posts = out?.ok ? postsOf(account.platform, out.items) : [];
      const extra: Record<string, unknown> = {
        ...card.platform_extra,
        platform: account.platform,
        account: account.link,
      };
      if (s.include.includes("metrics") && out?.ok) extra["metrics"] = postMetrics(posts, card.followers);
      items.push({ ...card, platform_extra: extra });
      if (s.include.includes("posts")) {
        const latest = [...posts]
          .sort((a, b) => (b.ms ?? 0) - (a.ms ?? 0) || (a.item.id < b.item.id ? -1 : 1))
          .slice(0, POSTS_SHOWN);
        items.push(
          ...latest.map((p) => tagged(p.item, p.platform, { account: account.link, engagement: p.engagement })),
        );
      }
    });
    return items;
  },
});
