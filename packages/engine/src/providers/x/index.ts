/** x: posts (tweets), replies, accounts, trends, and followers (catalog-only `x.user_followers`). No collects. */
import type { ProfileCard } from "@sdgw/types";
import { num, parseTwitterDate, rfc3339, seg, twitterDate } from "../simulator/gen.ts";
import { definePlatform, host, titleAbout, typedOps } from "../simulator/module.ts";
import { EN_BIOS, EN_COMMENTS, EN_NAMES, EN_TEMPLATES, EN_TEXT } from "../simulator/vocab.ts";

/** A tweet as x's v1.1-style API writes it. */
export interface XTweet {
  id_str: string;
  full_text: string;
  created_at: string;
  in_reply_to_status_id_str: string | null;
  user: { id_str: string; screen_name: string; name: string; followers_count: number };
  favorite_count: number;
  retweet_count: number;
  reply_count: number;
  views: { count: string };
  entities: { media?: Array<{ type: "photo" | "video"; media_url_https: string }> };
}
export interface XUser {
  id_str: string;
  screen_name: string;
  name: string;
  description: string;
  verified: boolean;
  followers_count: number;
  friends_count: number;
  statuses_count: number;
  location: string;
}
export interface XTrend {
  name: string;
  tweet_volume: number | null;
  rank: number;
}

const handleOf = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, "")
    .slice(0, 12) || "user";
const userUrl = (screen: string) => `https://x.com/${seg(screen)}`;

function user(g: import("../simulator/gen.ts").Gen, id?: string): XUser {
  const name = g.pick(EN_NAMES);
  const screen = id ?? handleOf(name) + g.int(1, 999);
  return {
    id_str: g.digits(18),
    screen_name: screen,
    name,
    description: g.pick(EN_BIOS),
    verified: g.chance(0.2),
    followers_count: g.count(80_000),
    friends_count: g.int(10, 3000),
    statuses_count: g.int(50, 40_000),
    location: g.pick(["San Francisco, CA", "London", "Berlin", "Toronto", ""]),
  };
}

export const x = definePlatform<XTweet, XUser, XTweet, XTrend>({
  platform: "x",
  lang: "en",
  scoped: false,
  operations: [
    ...typedOps("x", "X", ["search", "trending", "detail", "comments", "user_profile", "user_posts"]),
    {
      name: "user_followers",
      description: "Followers of an x account · X 账号的粉丝",
      price: 1,
      pricing: "standard",
      params: [
        { name: "user", type: "string", required: true, min: 1, max: 64 },
        { name: "limit", type: "integer", min: 1, max: 50, default: 20 },
        { name: "cursor", type: "string", min: 1, max: 20000 },
      ],
    },
  ],
  unsupported(op, p) {
    if (op === "search" && p["sort"] === "most_collected")
      return "x shows no collect counts and does not offer sort=most_collected; xiaohongshu, douyin and bilibili do.";
    return null;
  },
  fake: {
    post: ({ g, topic, id, authorId }) => {
      const u = user(g, authorId);
      const video = g.chance(0.2);
      return {
        id_str: id ?? `18${g.digits(17)}`,
        full_text: `${titleAbout(g, topic, EN_TEMPLATES)}. ${g.pick(EN_TEXT)}`,
        created_at: twitterDate(g.past(30)),
        in_reply_to_status_id_str: null,
        user: { id_str: u.id_str, screen_name: u.screen_name, name: u.name, followers_count: u.followers_count },
        favorite_count: g.count(5000),
        retweet_count: g.count(800),
        reply_count: g.count(300),
        views: { count: String(g.count(200_000)) },
        entities: g.chance(0.4)
          ? {
              media: [
                { type: video ? "video" : "photo", media_url_https: `https://pbs.twimg.com/media/${g.base62(15)}.jpg` },
              ],
            }
          : {},
      };
    },
    user: ({ g, id }) => user(g, id),
    comment: ({ g, parentId }) => {
      const u = user(g);
      return {
        id_str: `18${g.digits(17)}`,
        full_text: g.pick(EN_COMMENTS),
        created_at: twitterDate(g.past(10)),
        in_reply_to_status_id_str: parentId!,
        user: { id_str: u.id_str, screen_name: u.screen_name, name: u.name, followers_count: u.followers_count },
        favorite_count: g.count(200),
        retweet_count: g.count(10),
        reply_count: g.int(0, 20),
        views: { count: String(g.count(5000)) },
        entities: {},
      };
    },
    trend: ({ g, topic, rank }) => ({
      name: topic,
      tweet_volume: g.chance(0.8) ? g.int(5_000, 900_000) : null,
      rank: rank!,
    }),
    extra: { user_followers: ({ g }) => user(g) },
  },
  map: {
    post: (t) => ({
      kind: "item",
      id: t.id_str,
      url: `https://x.com/${seg(t.user.screen_name)}/status/${seg(t.id_str)}`,
      text: t.full_text,
      author: {
        name: t.user.name,
        id: t.user.screen_name,
        url: userUrl(t.user.screen_name),
        followers: t.user.followers_count,
      },
      published_at: rfc3339(parseTwitterDate(t.created_at)),
      metrics: { likes: t.favorite_count, shares: t.retweet_count, comments: t.reply_count, views: num(t.views.count) },
      ...(t.entities.media
        ? {
            media: t.entities.media.map((m) => ({
              type: m.type === "photo" ? ("image" as const) : ("video" as const),
              url: m.media_url_https,
            })),
          }
        : {}),
      ...(t.in_reply_to_status_id_str ? { parent_id: t.in_reply_to_status_id_str } : {}),
    }),
    user: (u) => ({
      kind: "profile_card",
      id: u.screen_name,
      name: u.name,
      url: userUrl(u.screen_name),
      bio: u.description,
      verified: u.verified,
      followers: u.followers_count,
      following: u.friends_count,
      posts_count: u.statuses_count,
      ...(u.location ? { location: u.location } : {}),
    }),
    comment: (t) => ({
      kind: "item",
      id: t.id_str,
      parent_id: t.in_reply_to_status_id_str ?? t.id_str,
      url: `https://x.com/${seg(t.user.screen_name)}/status/${seg(t.id_str)}`,
      text: t.full_text,
      author: { name: t.user.name, id: t.user.screen_name, url: userUrl(t.user.screen_name) },
      published_at: rfc3339(parseTwitterDate(t.created_at)),
      metrics: { likes: t.favorite_count, shares: t.retweet_count, views: num(t.views.count) },
      reply_count: t.reply_count,
    }),
    trend: (t) => ({
      kind: "leaderboard",
      rank: t.rank,
      title: t.name,
      ...(t.tweet_volume !== null ? { heat: t.tweet_volume } : {}),
      query: t.name,
      url: `https://x.com/search?q=${seg(t.name)}`,
    }),
    extra: { user_followers: (u: XUser): ProfileCard => x.map.user(u) },
  },
  postIdFromUrl(u) {
    const m = ["x.com", "twitter.com"].includes(host(u))
      ? /^\/[A-Za-z0-9_]{1,15}\/status\/(\d{5,20})$/.exec(u.pathname)
      : null;
    return m ? m[1]! : null;
  },
  userIdFromUrl(u) {
    const m = ["x.com", "twitter.com"].includes(host(u)) ? /^\/([A-Za-z0-9_]{1,15})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
});
