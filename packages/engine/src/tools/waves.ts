/**
 * Waves that several tools make alike: a search on each platform (`find_creators`, `viral_finder`), and each
 * account's profile card then its latest posts (`account_watch`, `creator_card`).
 */
import type { Platform, ProfileCard } from "@sdgw/types";
import type { ResolvedLink } from "./links.ts";
import type { CallOutcome, Runner } from "./runner.ts";

/** The wave `search`: one search of content on each platform, with `params` (query, sort, count, …). */
export function searchWave(
  runner: Runner,
  platforms: readonly Platform[],
  params: Record<string, unknown>,
): Promise<CallOutcome[]> {
  return runner.wave(
    "search",
    () => runner.all(platforms, (p) => runner.call(p, "search", { type: "content", ...params })),
    [],
  );
}

/** An account whose profile card was read. */
export interface FoundAccount {
  account: ResolvedLink;
  card: ProfileCard;
}

/**
 * The waves `profiles` (each account's profile card) and `posts` (the latest `postsPerAccount` posts of each
 * account found): the accounts found with their cards, and the posts' outcomes in the same order.
 */
export async function profilesAndPosts(
  runner: Runner,
  accounts: readonly ResolvedLink[],
  postsPerAccount: number,
): Promise<{ found: FoundAccount[]; posts: CallOutcome[] }> {
  const profiles = await runner.wave(
    "profiles",
    () => runner.all(accounts, (a) => runner.call(a.platform, "user_profile", { id: a.id }, a.link, "accounts")),
    [] as CallOutcome[],
  );
  const found = accounts.flatMap((account, i) => {
    const out = profiles[i];
    const card = out?.ok ? out.items.find((it): it is ProfileCard => it.kind === "profile_card") : undefined;
    return card ? [{ account, card }] : [];
  });
  const posts = await runner.wave(
    "posts",
    () =>
      runner.all(found, (f) =>
        runner.call(
          f.account.platform,
          "user_posts",
          { id: f.account.id, limit: postsPerAccount, sort: "latest" },
          f.account.link,
          "accounts",
        ),
      ),
    [] as CallOutcome[],
  );
  return { found, posts };
}
