/**
 * `find_creators`: who posts about a topic with the most reach. Waves: `search` (20 posts per platform),
 * `profiles` (the profiles of the authors, best first, until `count` pass `min_followers` or the planned calls
 * run out), `aggregate`. An author's relevant reach is the sum of the engagement of their matching posts.
 * Items: the creators as a leaderboard (heat = relevant reach) and as profile cards, in the same order.
 */
import type { FindCreatorsRequest, Item, Platform, ProfileCard } from "@sdgw/types";
import { validateFindCreatorsBody } from "@sdgw/validators";
import { leaderboard, postsOf, rankBy, type FetchedPost } from "./analysis.ts";
import { applied, defineTool, isRefusal, queryText, searchPlatforms } from "./params.ts";
import { searchWave } from "./waves.ts";

const PAGE_SIZE = 20;

interface Setup {
  query: string;
  platforms: Platform[];
  count: number;
  minFollowers: number;
}

interface Candidate {
  platform: Platform;
  key: string;
  posts: FetchedPost[];
  reach: number;
}

/**
 * Profiles read per request: `count`, or twice that when `min_followers` may turn authors away (never more than
 * the authors a search can find).
 */
export function profileBudget(platforms: number, count: number, minFollowers: number): number {
  return Math.min(platforms * PAGE_SIZE, minFollowers > 0 ? 2 * count : count);
}

/** The `find_creators` tool. */
export const findCreators = defineTool<FindCreatorsRequest, Setup>({
  tool: "find_creators",
  validate: validateFindCreatorsBody,
  prepare(req, ctx) {
    const found = searchPlatforms(req.platforms, ctx);
    if (isRefusal(found)) return found;
    const setup: Setup = {
      query: queryText(req.query),
      platforms: found.platforms,
      count: req.count ?? 10,
      minFollowers: req.min_followers ?? 0,
    };
    return {
      setup,
      applied: applied({
        query: setup.query,
        platforms: setup.platforms,
        count: setup.count,
        min_followers: setup.minFollowers,
        confirm: req.confirm ?? true,
        max_cost_credits: req.max_cost_credits,
      }),
      warnings: found.warnings,
      waves: [
        { name: "search", calls: setup.platforms.length },
        { name: "profiles", calls: profileBudget(setup.platforms.length, setup.count, setup.minFollowers) },
      ],
    };
  },
  async execute(s, runner) {
    const outs = await searchWave(runner, s.platforms, { query: s.query, sort: "relevance", count: PAGE_SIZE });
    const byAuthor = new Map<string, Candidate>();
    outs.forEach((out, i) => {
      if (!out.ok) return;
      const platform = s.platforms[i]!;
      for (const post of postsOf(platform, out.items)) {
        const a = post.item.author;
        if (!a) continue;
        const key = `${platform}|${a.id || a.name}`;
        const c = byAuthor.get(key) ?? { platform, key, posts: [], reach: 0 };
        c.posts.push(post);
        c.reach += post.engagement;
        byAuthor.set(key, c);
      }
    });
    // Authors whose follower count the search already shows below the bar need no profile call.
    const queue = rankBy(
      [...byAuthor.values()],
      (c) => c.reach,
      (c) => c.key,
    ).filter((c) => {
      const f = c.posts[0]!.item.author!.followers;
      return s.minFollowers === 0 || f === undefined || f >= s.minFollowers;
    });

    const accepted: Array<{ candidate: Candidate; card: ProfileCard }> = [];
    let unverifiable = 0;
    await runner.wave(
      "profiles",
      async () => {
        while (accepted.length < s.count && queue.length > 0) {
          const left = runner.callsLeft("profiles");
          if (left === 0) break;
          const batch = queue.splice(0, Math.min(s.count - accepted.length, left));
          const cards = await runner.all(batch, async (c): Promise<ProfileCard> => {
            const author = c.posts[0]!.item.author!;
            const fallback: ProfileCard = {
              kind: "profile_card",
              id: author.id || author.name,
              name: author.name,
              ...(author.url ? { url: author.url } : {}),
              ...(author.followers !== undefined ? { followers: author.followers } : {}),
            };
            if (!author.id) return fallback;
            const out = await runner.call(c.platform, "user_profile", { id: author.id }, author.name);
            const card = out.ok ? out.items.find((i): i is ProfileCard => i.kind === "profile_card") : undefined;
            return card ? { ...card, followers: card.followers ?? fallback.followers } : fallback;
          });
          batch.forEach((c, i) => {
            const card = cards[i]!;
            const followers = card.followers;
            if (followers === undefined) {
              if (s.minFollowers > 0) {
                unverifiable++;
                return;
              }
            } else if (followers < s.minFollowers) return;
            accepted.push({ candidate: c, card: stripUndefined(card) });
          });
        }
      },
      undefined,
    );
    if (unverifiable > 0)
      runner.warn(
        `${unverifiable} authors show no follower count, so min_followers could not be checked; they were left out.`,
      );

    const items: Item[] = [];
    items.push(
      ...leaderboard(
        accepted.map(({ candidate: c, card }) => ({
          title: card.name,
          heat: c.reach,
          ...(card.url ? { url: card.url } : {}),
          query: s.query,
          platform_extra: {
            platform: c.platform,
            id: card.id,
            relevant_posts: c.posts.length,
            ...(card.followers !== undefined ? { followers: card.followers } : {}),
          },
        })),
      ),
    );
    items.push(
      ...accepted.map(({ candidate: c, card }, i): ProfileCard => {
        const top = rankBy(
          c.posts,
          (p) => p.engagement,
          (p) => p.item.id,
        )[0]!;
        return {
          ...card,
          platform_extra: {
            ...card.platform_extra,
            platform: c.platform,
            rank: i + 1,
            relevant_posts: c.posts.length,
            relevant_reach: c.reach,
            ...(top.item.url ? { top_post: top.item.url } : {}),
          },
        };
      }),
    );
    return items;
  },
});

function stripUndefined(card: ProfileCard): ProfileCard {
  return Object.fromEntries(Object.entries(card).filter(([, v]) => v !== undefined)) as ProfileCard;
}
