/**
 * `account_watch`: how accounts did over a range. Waves: `profiles` (one call per account), `posts` (the latest
 * posts of each account found), `aggregate`. Items per account: its profile card, its followers over the range
 * (earlier readings from `ToolContext.followerHistory`, and this run's reading), its engagement per day; then the
 * best posts of all accounts in the range (leaderboard and items).
 */
import type { AccountWatchRequest, AppliedParams, ContentItem, Item, ProfileCard, TimeseriesItem } from "@sdgw/types";
import { validateAccountWatchBody } from "@sdgw/validators";
import {
  dailySeries,
  dayWindow,
  inWindow,
  leaderboard,
  postKey,
  postsOf,
  rankBy,
  tagged,
  timeOf,
  titleOf,
  type DayWindow,
  type FetchedPost,
} from "./analysis.ts";
import { isoSeconds } from "../time.ts";
import type { ResolvedLink } from "./links.ts";
import { applied, defineTool, isRefusal, resolveLinks } from "./params.ts";
import { profilesAndPosts } from "./waves.ts";
import type { FollowerReading } from "./types.ts";

/** Days of each `range`. */
export const RANGE_DAYS = { today: 1, "7d": 7, "14d": 14, "30d": 30 } as const;

/** The period of each `schedule.every`, in milliseconds (D11). */
export const EVERY_MS = { "1h": 3_600_000, "6h": 6 * 3_600_000, "1d": 24 * 3_600_000 } as const;

/** What a schedule keeps of its call's applied parameters (D11, D52): all but `schedule.every`, `confirm`, `max_cost_credits`. */
export function scheduleParams(applied: AppliedParams): AppliedParams {
  const dropped = ["schedule.every", "confirm", "max_cost_credits"];
  return Object.fromEntries(Object.entries(applied).filter(([k]) => !dropped.includes(k))) as AppliedParams;
}

const POSTS_PER_ACCOUNT = 50;
const TOP_POSTS = 10;
const TOP_POST_ITEMS = 5;

interface Setup {
  accounts: ResolvedLink[];
  range: keyof typeof RANGE_DAYS;
}

/** The `account_watch` tool. `schedule` is echoed as `schedule.every`; creating the schedule is the caller's job (D11). */
export const accountWatch = defineTool<AccountWatchRequest, Setup>({
  tool: "account_watch",
  validate: validateAccountWatchBody,
  prepare(req, ctx) {
    const accounts = resolveLinks(req.accounts, "account", "accounts", ctx, ["user_profile", "user_posts"]);
    if (isRefusal(accounts)) return accounts;
    const range = req.range ?? "7d";
    return {
      setup: { accounts, range },
      applied: applied({
        accounts: [...req.accounts],
        range,
        "schedule.every": req.schedule?.every,
        confirm: req.confirm ?? true,
        max_cost_credits: req.max_cost_credits,
      }),
      warnings: [],
      waves: [
        { name: "profiles", calls: accounts.length },
        { name: "posts", calls: accounts.length },
      ],
    };
  },
  async execute(s, runner, ctx) {
    const win = dayWindow(ctx.now, RANGE_DAYS[s.range]);
    const { found, posts: postsOut } = await profilesAndPosts(runner, s.accounts, POSTS_PER_ACCOUNT);

    const items: Item[] = [];
    const best: Array<FetchedPost & { account: string }> = [];
    // Earlier readings of every account, read before the series are built (a store may answer later).
    const histories = await Promise.all(
      found.map(({ account }) => ctx.followerHistory?.(account.platform, account.id) ?? []),
    );
    found.forEach(({ account, card }, i) => {
      const out = postsOut[i];
      const posts = out?.ok ? postsOf(account.platform, out.items) : [];
      const inRange = posts.filter((p) => p.ms !== null && inWindow(p.ms, win));
      best.push(...inRange.map((p) => ({ ...p, account: account.link })));
      if (
        out?.ok &&
        out.page?.has_more &&
        posts.length > 0 &&
        posts.every((p) => p.ms !== null && inWindow(p.ms, win))
      ) {
        runner.warn(
          `${account.link}: only the latest ${posts.length} posts were read; older posts of the ${s.range} range are not counted.`,
        );
      }
      items.push({
        ...card,
        platform_extra: { ...card.platform_extra, platform: account.platform, account: account.link },
      });
      const followers = followerSeries(card, account, win, ctx.now, histories[i] ?? []);
      if (followers) items.push(followers);
      else
        runner.warn(
          `${account.link}: ${account.platform} shows no follower count for this account; no follower series.`,
        );
      items.push(
        dailySeries(
          "engagement",
          "engagement/day",
          inRange.map((p) => ({ ms: p.ms!, value: p.engagement })),
          win,
          {
            platform: account.platform,
            account: account.link,
            posts_in_range: inRange.length,
            posts_read: posts.length,
            engagement: "likes + comments + shares + collects",
          },
        ),
      );
    });

    const ranked = rankBy(best, (p) => p.engagement, postKey);
    items.push(
      ...leaderboard(
        ranked.slice(0, TOP_POSTS).map((p) => ({
          title: titleOf(p.item),
          heat: p.engagement,
          ...(p.item.url ? { url: p.item.url } : {}),
          platform_extra: { platform: p.platform, id: p.item.id, account: p.account, metrics: { ...p.item.metrics } },
        })),
      ),
    );
    items.push(
      ...ranked
        .slice(0, TOP_POST_ITEMS)
        .map((p): ContentItem => tagged(p.item, p.platform, { account: p.account, engagement: p.engagement })),
    );
    return items;
  },
});

/**
 * The followers of an account over the range: the earlier readings inside it and this run's reading, oldest
 * first, one point per reading (a later reading at the same moment wins). Null when the platform shows no count.
 */
export function followerSeries(
  card: ProfileCard,
  account: ResolvedLink,
  win: DayWindow,
  now: number,
  history: readonly FollowerReading[],
): TimeseriesItem | null {
  if (card.followers === undefined) return null;
  const byMoment = new Map<number, number>();
  for (const r of history) {
    const ms = typeof r.t === "number" ? r.t : timeOf(r.t);
    if (ms !== null && Number.isFinite(r.value) && inWindow(ms, win) && ms < now) byMoment.set(ms, r.value);
  }
  byMoment.set(now, card.followers);
  const points = [...byMoment].sort((a, b) => a[0] - b[0]).map(([ms, value]) => ({ t: isoSeconds(ms), value }));
  return {
    kind: "timeseries",
    metric: "followers",
    unit: "followers",
    points,
    platform_extra: {
      platform: account.platform,
      account: account.link,
      account_id: account.id,
      readings: points.length,
      change: points[points.length - 1]!.value - points[0]!.value,
    },
  };
}

/** A follower count read at a moment, of one account of one platform. */
export interface AccountReading extends FollowerReading {
  /** When it was read, ms since the epoch. */
  t: number;
  platform: string;
  accountId: string;
}

/**
 * The follower readings a finished `account_watch` run made (the last point of each account's follower series), to
 * keep for later runs' `ToolContext.followerHistory`.
 */
export function followerReadings(result: { items: readonly Item[] }): AccountReading[] {
  const out: AccountReading[] = [];
  for (const item of result.items) {
    if (item.kind !== "timeseries" || (item as TimeseriesItem).metric !== "followers") continue;
    const extra = (item as TimeseriesItem).platform_extra as Record<string, unknown> | undefined;
    const last = (item as TimeseriesItem).points.at(-1);
    if (!extra || !last || typeof extra["platform"] !== "string" || typeof extra["account_id"] !== "string") continue;
    out.push({ platform: extra["platform"], accountId: extra["account_id"], t: Date.parse(last.t), value: last.value });
  }
  return out;
}
