/**
 * x: posts (tweets), replies, accounts, trends, and followers (catalog-only `x.user_followers`). No collects. The
 * fakes write X API v2's JSON (what the live connector asks for with `tweet.fields`, `user.fields`, `media.fields`
 * and `expansions`: `data` with the author and media in `includes`, ids as 19-digit strings), and the mappings are
 * the live connector's own (`./v2.ts`, D159): simulated and live x items are made by the same code.
 */
import type { ContentItem, LeaderboardItem, ProfileCard } from "@sdgw/types";
import { rfc3339, type Gen } from "../simulator/gen.ts";
import { definePlatform, titleAbout, typedOps } from "../simulator/module.ts";
import { EN_BIOS, EN_COMMENTS, EN_NAMES, EN_TEMPLATES, EN_TEXT } from "../simulator/vocab.ts";
import {
  TWEET_ID,
  xPost,
  xPostFromLink,
  xTrend,
  xUser,
  xUserFromLink,
  type XApiMedia,
  type XApiTrend,
  type XApiTweet,
  type XApiUser,
  type XIncludes,
} from "./v2.ts";

/** A post as X API v2 answers a lookup by id (`GET /2/tweets/{id}`): the post, its author and media expanded. */
export interface XTweetAnswer {
  data: XApiTweet;
  includes: XIncludes;
}
/** An account as X API v2 answers a lookup (`GET /2/users/by/username/{name}`). */
export interface XUserAnswer {
  data: XApiUser;
}

const handleOf = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, "")
    .slice(0, 12) || "user";
/** X's `created_at`: RFC 3339 UTC with milliseconds (`2022-10-07T23:06:12.000Z`). */
const xDate = (ms: number) => `${rfc3339(ms).slice(0, 19)}.000Z`;
/** A post id as X makes them now: 19 digits. */
const tweetId = (g: Gen) => `18${g.digits(17)}`;
/** X's longest post without `note_tweet`. */
const SHORT = 280;

/** An account; `id` is the username asked for, or its numeric id (then the username is made up). */
function account(g: Gen, id?: string): XApiUser {
  const name = g.pick(EN_NAMES);
  const numeric = id !== undefined && TWEET_ID.test(id);
  const username = id !== undefined && !numeric ? id : handleOf(name) + g.int(1, 999);
  const location = g.pick(["San Francisco, CA", "London", "Berlin", "Toronto", ""]);
  return {
    id: numeric ? id : g.digits(19),
    name,
    username,
    description: g.pick(EN_BIOS),
    ...(location ? { location } : {}),
    verified: g.chance(0.2),
    created_at: xDate(g.past(4000)),
    profile_image_url: `https://pbs.twimg.com/profile_images/${g.digits(19)}/${g.base62(8)}_normal.jpg`,
    public_metrics: {
      followers_count: g.count(80_000),
      following_count: g.int(10, 3000),
      tweet_count: g.int(50, 40_000),
      listed_count: g.int(0, 400),
      like_count: g.int(0, 60_000),
    },
  };
}

/** A photo or a video (with X's MP4 variants) as `includes.media` writes it. */
function media(g: Gen): XApiMedia {
  if (!g.chance(0.2))
    return { media_key: `3_${g.digits(19)}`, type: "photo", url: `https://pbs.twimg.com/media/${g.base62(15)}.jpg` };
  const key = g.digits(19);
  const file = g.base62(16);
  return {
    media_key: `7_${key}`,
    type: "video",
    duration_ms: g.int(3_000, 140_000),
    preview_image_url: `https://pbs.twimg.com/ext_tw_video_thumb/${key}/pu/img/${file}.jpg`,
    variants: [
      { content_type: "application/x-mpegURL", url: `https://video.twimg.com/ext_tw_video/${key}/pu/pl/${file}.m3u8` },
      {
        bit_rate: 832_000,
        content_type: "video/mp4",
        url: `https://video.twimg.com/ext_tw_video/${key}/pu/vid/640x360/${file}.mp4`,
      },
      {
        bit_rate: 2_176_000,
        content_type: "video/mp4",
        url: `https://video.twimg.com/ext_tw_video/${key}/pu/vid/1280x720/${file}.mp4`,
      },
    ],
  };
}

/** A post (a reply when `replyTo` is set), with its author and media in `includes`. */
function tweet(
  g: Gen,
  o: { id?: string; authorId?: string; text: string; days: number; scale: number; replyTo?: string; media: boolean },
): XTweetAnswer {
  const author = account(g, o.authorId);
  const id = o.id ?? tweetId(g);
  const m = o.media ? media(g) : undefined;
  const long = o.text.length > SHORT;
  const data: XApiTweet = {
    id,
    text: long ? `${o.text.slice(0, SHORT - 1)}…` : o.text,
    ...(long ? { note_tweet: { text: o.text } } : {}),
    author_id: author.id,
    conversation_id: o.replyTo ?? id,
    created_at: xDate(g.past(o.days)),
    lang: "en",
    public_metrics: {
      retweet_count: g.count(o.scale / 6),
      reply_count: o.replyTo ? g.int(0, 20) : g.count(o.scale / 16),
      like_count: g.count(o.scale),
      quote_count: g.count(o.scale / 50),
      bookmark_count: g.count(o.scale / 20),
      impression_count: g.count(o.scale * 40),
    },
    ...(o.replyTo ? { referenced_tweets: [{ type: "replied_to", id: o.replyTo }] } : {}),
    ...(m ? { attachments: { media_keys: [m.media_key!] } } : {}),
  };
  return { data, includes: { users: [author], ...(m ? { media: [m] } : {}) } };
}

/** `v`, or a thrown error naming what the shared mapping refused (the fakes write what it maps). */
function mapped<T>(v: T | null, what: string): T {
  if (v === null) throw new Error(`x simulator: the X API v2 mapping refused a simulated ${what}`);
  return v;
}

export const x = definePlatform<XTweetAnswer, XUserAnswer, XTweetAnswer, XApiTrend>({
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
    post: ({ g, topic, id, authorId }) =>
      tweet(g, {
        ...(id !== undefined ? { id } : {}),
        ...(authorId !== undefined ? { authorId } : {}),
        text: `${titleAbout(g, topic, EN_TEMPLATES)}. ${g.pick(EN_TEXT)}`,
        days: 30,
        scale: 5000,
        media: g.chance(0.4),
      }),
    user: ({ g, id }) => ({ data: account(g, id) }),
    comment: ({ g, parentId }) =>
      tweet(g, { text: g.pick(EN_COMMENTS), days: 10, scale: 200, replyTo: parentId!, media: false }),
    trend: ({ g, topic }) => ({
      trend_name: topic,
      ...(g.chance(0.8) ? { tweet_count: g.int(5_000, 900_000) } : {}),
    }),
    // `GET /2/users/{id}/followers` lists accounts in `data`.
    extra: { user_followers: ({ g }) => account(g) },
  },
  map: {
    post: (a): ContentItem => xPost(a.data, a.includes),
    user: (a): ProfileCard => mapped(xUser(a.data), "account"),
    comment: (a): ContentItem => xPost(a.data, a.includes),
    // X lists trends in rank order without a rank; the simulator numbers the list.
    trend: (t): LeaderboardItem => mapped(xTrend(t, 1), "trend"),
    extra: { user_followers: (u: XApiUser): ProfileCard => mapped(xUser(u), "account") },
  },
  postIdFromUrl: (u) => xPostFromLink(u.href),
  userIdFromUrl: (u) => xUserFromLink(u.href),
});
