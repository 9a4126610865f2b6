/**
 * X API v2's JSON and its mapping to items: the one mapping of x, used by the live connector (D155) on what X answers
 * and by the simulator on the X API v2 JSON it writes (D159), so simulated and live x items are made alike. Ids are
 * 19-digit strings and stay strings.
 */
import type { ContentItem, LeaderboardItem, Media, ProfileCard } from "@sdgw/types";
import { isoSeconds } from "../../time.ts";
import { linkOf } from "../links.ts";
import { host } from "../simulator/module.ts";

/** A post id as X writes it: up to 19 digits, a string. */
export const TWEET_ID = /^\d{1,19}$/;
/** A username: 1 to 15 letters, digits or `_`. */
export const USERNAME = /^[A-Za-z0-9_]{1,15}$/;

// X's JSON (only the members read; any may be missing).

/** A tweet as X API v2 writes it. */
export interface XApiTweet {
  id: string;
  text?: string;
  author_id?: string;
  conversation_id?: string;
  created_at?: string;
  lang?: string;
  note_tweet?: { text?: string };
  public_metrics?: Record<string, unknown>;
  referenced_tweets?: { type?: string; id?: string }[];
  attachments?: { media_keys?: string[] };
}
/** An account as X API v2 writes it. */
export interface XApiUser {
  id: string;
  name?: string;
  username?: string;
  description?: string;
  location?: string;
  verified?: boolean;
  created_at?: string;
  profile_image_url?: string;
  public_metrics?: Record<string, unknown>;
}
/** A media object of `includes.media`. */
export interface XApiMedia {
  media_key?: string;
  type?: string;
  url?: string;
  preview_image_url?: string;
  duration_ms?: number;
  variants?: { content_type?: string; url?: string; bit_rate?: number }[];
}
/** What an answer expands: its `includes`. */
export interface XIncludes {
  users?: XApiUser[];
  media?: XApiMedia[];
}

export const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const counter = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
/** The moments RFC 3339 can write: years 0000 to 9999. */
const FIRST_MS = -62_167_219_200_000;
const END_MS = 253_402_300_800_000;
/** X's `created_at` (`2022-10-07T23:06:12.000Z`) as RFC 3339 UTC in whole seconds. */
export const xTime = (v: unknown): string | undefined => {
  const s = str(v);
  const ms = s ? Date.parse(s) : Number.NaN;
  return Number.isFinite(ms) && ms >= FIRST_MS && ms < END_MS ? isoSeconds(ms) : undefined;
};
const link = (v: unknown): string | undefined => linkOf(str(v), /^https:\/\//);
const userUrl = (username: string) => `https://x.com/${encodeURIComponent(username)}`;
export const isTweet = (t: unknown): t is XApiTweet =>
  typeof t === "object" && t !== null && typeof (t as XApiTweet).id === "string" && TWEET_ID.test((t as XApiTweet).id);
export const isUser = (u: unknown): u is XApiUser =>
  typeof u === "object" && u !== null && typeof (u as XApiUser).id === "string";

/** The media of a tweet: photos as images, videos and GIFs as their best MP4. */
function mediaOf(t: XApiTweet, includes: XIncludes): Media[] | undefined {
  const keys = t.attachments?.media_keys ?? [];
  const out: Media[] = [];
  for (const key of keys) {
    const m = includes.media?.find((x) => x.media_key === key);
    if (!m) continue;
    if (m.type === "photo" && link(m.url)) out.push({ type: "image", url: link(m.url)! });
    else if (m.type === "video" || m.type === "animated_gif") {
      const best = (m.variants ?? [])
        .filter((v) => v.content_type === "video/mp4" && link(v.url))
        .sort((a, b) => (b.bit_rate ?? 0) - (a.bit_rate ?? 0))[0];
      if (best) {
        const d = typeof m.duration_ms === "number" && m.duration_ms >= 0 ? m.duration_ms / 1000 : undefined;
        out.push({ type: "video", url: link(best.url)!, ...(d !== undefined ? { duration_s: d } : {}) });
      }
    }
  }
  return out.length ? out : undefined;
}

/** A tweet as an item, its author and media from `includes`; a reply names the tweet it answers as `parent_id`. */
export function xPost(t: XApiTweet, includes: XIncludes = {}): ContentItem {
  const author = includes.users?.find((u) => u.id === t.author_id);
  const username = author && str(author.username) && USERNAME.test(author.username!) ? author.username! : undefined;
  const m = t.public_metrics ?? {};
  const metrics = Object.fromEntries(
    (
      [
        ["likes", counter(m["like_count"])],
        ["shares", counter(m["retweet_count"])],
        ["comments", counter(m["reply_count"])],
        ["views", counter(m["impression_count"])],
      ] as const
    ).filter(([, v]) => v !== undefined),
  );
  const text = str(t.note_tweet?.text) ?? str(t.text);
  const repliedTo = t.referenced_tweets?.find((r) => r.type === "replied_to" && str(r.id) && TWEET_ID.test(r.id!))?.id;
  const published = xTime(t.created_at);
  const media = mediaOf(t, includes);
  const followers = counter(author?.public_metrics?.["followers_count"]);
  const retweeted = t.referenced_tweets?.find((r) => r.type === "retweeted")?.id;
  const quoted = t.referenced_tweets?.find((r) => r.type === "quoted")?.id;
  return {
    kind: "item",
    id: t.id,
    // An id or name a caller chose (the simulator echoes any text) is percent-encoded: the link stays a URI.
    url: username
      ? `https://x.com/${encodeURIComponent(username)}/status/${encodeURIComponent(t.id)}`
      : `https://x.com/i/web/status/${encodeURIComponent(t.id)}`,
    ...(text ? { text } : {}),
    ...(username
      ? {
          author: {
            name: str(author!.name) ?? username,
            id: username,
            url: userUrl(username),
            ...(followers !== undefined ? { followers } : {}),
          },
        }
      : {}),
    ...(published ? { published_at: published } : {}),
    ...(Object.keys(metrics).length ? { metrics } : {}),
    ...(media ? { media } : {}),
    ...(repliedTo ? { parent_id: repliedTo } : {}),
    ...(repliedTo && counter(m["reply_count"]) !== undefined ? { reply_count: counter(m["reply_count"])! } : {}),
    platform_extra: {
      ...(str(t.conversation_id) ? { conversation_id: t.conversation_id } : {}),
      ...(str(t.lang) ? { lang: t.lang } : {}),
      ...(retweeted ? { retweet_of: retweeted } : {}),
      ...(quoted ? { quotes: quoted } : {}),
      ...(counter(m["quote_count"]) !== undefined ? { quotes_count: counter(m["quote_count"]) } : {}),
      ...(counter(m["bookmark_count"]) !== undefined ? { bookmarks: counter(m["bookmark_count"]) } : {}),
    },
  };
}

/** An account as a profile card; null without a username. */
export function xUser(u: XApiUser): ProfileCard | null {
  const username = str(u.username);
  if (!username) return null;
  const m = u.public_metrics ?? {};
  const followers = counter(m["followers_count"]);
  const following = counter(m["following_count"]);
  const posts = counter(m["tweet_count"]);
  const created = xTime(u.created_at);
  const avatar = link(u.profile_image_url);
  return {
    kind: "profile_card",
    id: username,
    name: str(u.name) ?? username,
    url: userUrl(username),
    ...(str(u.description) ? { bio: u.description! } : {}),
    ...(typeof u.verified === "boolean" ? { verified: u.verified } : {}),
    ...(followers !== undefined ? { followers } : {}),
    ...(following !== undefined ? { following } : {}),
    ...(posts !== undefined ? { posts_count: posts } : {}),
    ...(str(u.location) ? { location: u.location! } : {}),
    platform_extra: {
      user_id: u.id,
      ...(created ? { created_at: created } : {}),
      ...(avatar ? { avatar } : {}),
    },
  };
}

/** An entry of X's trends by place (`GET /2/trends/by/woeid/{id}`): `data` is the list, in rank order. */
export interface XApiTrend {
  trend_name?: string;
  /** Posts about it in the last 24 hours, when X knows. */
  tweet_count?: number;
}

/** A trend at `rank` (its place in `data`, from 1) as a leaderboard item; null without a name. */
export function xTrend(t: XApiTrend, rank: number): LeaderboardItem | null {
  const name = str(t.trend_name);
  if (!name) return null;
  const heat = counter(t.tweet_count);
  const q = encodeURIComponent(name);
  return {
    kind: "leaderboard",
    rank,
    title: name,
    ...(heat !== undefined ? { heat } : {}),
    query: name,
    url: `https://x.com/search?q=${q}`,
  };
}

/** The post id an X link names (19 digits, a string), or null. */
export function xPostFromLink(value: string): string | null {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return null;
  }
  if (!["x.com", "twitter.com", "mobile.twitter.com", "mobile.x.com"].includes(host(u))) return null;
  return /^\/(?:[A-Za-z0-9_]{1,15}|i\/web|i)\/status(?:es)?\/(\d{1,19})(?:\/.*)?$/.exec(u.pathname)?.[1] ?? null;
}

/** The username an X link names, or null. */
export function xUserFromLink(value: string): string | null {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return null;
  }
  if (!["x.com", "twitter.com", "mobile.twitter.com", "mobile.x.com"].includes(host(u))) return null;
  const m = /^\/([A-Za-z0-9_]{1,15})\/?$/.exec(u.pathname);
  return m && !["home", "explore", "search", "i", "settings", "messages", "notifications"].includes(m[1]!.toLowerCase())
    ? m[1]!
    : null;
}
