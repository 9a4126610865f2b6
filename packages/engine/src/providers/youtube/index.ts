/** youtube: videos, comment threads, channels, the trending chart, and `youtube.video_transcript`; `scope` is a channel (D18). */
import type { ContentItem } from "@sdgw/types";
import { isoDurationSeconds, num, rfc3339, seg } from "../simulator/gen.ts";
import { decodeEntities } from "../../connectors/html.ts";
import { isoSeconds } from "../../time.ts";
import { definePlatform, host, type PlatformModule, titleAbout, typedOps } from "../simulator/module.ts";
import { EN_BIOS, EN_COMMENTS, EN_NAMES, EN_TEMPLATES, EN_TEXT } from "../simulator/vocab.ts";

/**
 * A video resource as the YouTube Data API v3 writes it (`videos.list`): counts as strings, an ISO 8601 duration.
 * Parts and fields may be missing in real answers (statistics hidden, no description), so they are optional.
 */
export interface YtVideo {
  id: string;
  snippet: {
    title: string;
    description?: string;
    channelId: string;
    channelTitle?: string;
    publishedAt: string;
    categoryId?: string;
  };
  statistics?: { viewCount?: string; likeCount?: string; commentCount?: string };
  contentDetails?: { duration?: string };
}
/** A channel resource (`channels.list`); `customUrl` is its handle (`@name`) when it has one. */
export interface YtChannel {
  id: string;
  snippet: { title: string; description?: string; customUrl?: string; country?: string };
  statistics?: { subscriberCount?: string; videoCount?: string; hiddenSubscriberCount?: boolean };
  contentDetails?: { relatedPlaylists?: { uploads?: string } };
}
/** A comment thread (`commentThreads.list`): its top-level comment; `textOriginal` is the plain text. */
export interface YtComment {
  id: string;
  snippet: {
    videoId?: string;
    topLevelComment: {
      snippet: {
        textOriginal?: string;
        textDisplay?: string;
        authorDisplayName: string;
        authorChannelId?: { value: string };
        likeCount?: number;
        publishedAt: string;
      };
    };
    totalReplyCount?: number;
  };
}
export interface YtCaption {
  start: number;
  dur: number;
  text: string;
}

const channelUrl = (handle: string) =>
  `https://www.youtube.com/${handle.startsWith("@") ? `@${seg(handle.slice(1))}` : `channel/${seg(handle)}`}`;
/** A count YouTube sent as text, or undefined when it sent none (a hidden like count stays absent, not 0). */
const count = (v: string | number | undefined) => (v === undefined ? undefined : num(v));
/** Text as plain text (search snippets are HTML-escaped), or undefined when empty (items take no empty text). */
const plain = (v: string | undefined) => {
  const t = v === undefined ? "" : decodeEntities(v);
  return t === "" ? undefined : t;
};
/** An RFC 3339 UTC time in whole seconds (`2019-03-21T20:37:49.000Z` → `…:49Z`), or undefined when not a time. */
const utc = (v: string | undefined) => {
  if (v === undefined) return undefined;
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(v)) return v;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? isoSeconds(ms) : undefined;
};
/** The fields of `o` whose value is defined. */
const defined = <T extends Record<string, unknown>>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

const handleOf = (name: string) => `@${name.replace(/[^A-Za-z0-9]/g, "").toLowerCase() || "channel"}`;

export const youtube: PlatformModule<YtVideo, YtChannel, YtComment, YtVideo> = definePlatform<
  YtVideo,
  YtChannel,
  YtComment,
  YtVideo
>({
  platform: "youtube",
  lang: "en",
  scoped: true,
  operations: [
    ...typedOps("youtube", "YouTube", ["search", "trending", "detail", "comments", "user_profile", "user_posts"]),
    {
      name: "video_transcript",
      description: "Transcript (captions) of a youtube video · YouTube 视频字幕",
      price: 2,
      pricing: "placeholder",
      params: [
        { name: "video_id", type: "string", required: true, min: 11, max: 11 },
        { name: "lang", type: "string", min: 2, max: 8, default: "en" },
      ],
    },
  ],
  unsupported(op, p) {
    if (op === "search" && p["sort"] === "most_collected")
      return "youtube shows no collect counts and does not offer sort=most_collected; xiaohongshu, douyin and bilibili do.";
    if (op === "search" && p["content_type"] === "image")
      return "youtube is a video platform and does not offer content_type=image; xiaohongshu and weibo do.";
    return null;
  },
  fake: {
    post: ({ g, topic, id, authorId, params }) => {
      const name = typeof params?.["scope"] === "string" ? String(params["scope"]) : g.pick(EN_NAMES);
      return {
        id: id ?? g.base62(11),
        snippet: {
          title: titleAbout(g, topic, EN_TEMPLATES),
          description: g.pick(EN_TEXT),
          channelId: authorId ?? handleOf(name),
          channelTitle: name,
          publishedAt: rfc3339(g.past(90)),
          categoryId: String(g.pick([22, 24, 27, 28])),
        },
        statistics: {
          viewCount: String(g.count(2_000_000)),
          likeCount: String(g.count(60_000)),
          commentCount: String(g.count(4000)),
        },
        contentDetails: { duration: `PT${g.int(1, 40)}M${g.int(0, 59)}S` },
      };
    },
    user: ({ g, id }) => {
      const name = g.pick(EN_NAMES);
      return {
        id: id ?? handleOf(name),
        snippet: {
          title: name,
          description: g.pick(EN_BIOS),
          customUrl: id ?? handleOf(name),
          ...(g.chance(0.7) ? { country: g.pick(["US", "GB", "CA", "DE"]) } : {}),
        },
        statistics: {
          subscriberCount: String(g.count(900_000)),
          videoCount: String(g.int(5, 1500)),
          hiddenSubscriberCount: false,
        },
      };
    },
    comment: ({ g, parentId }) => {
      const name = g.pick(EN_NAMES);
      return {
        id: `Ug${g.base62(24)}`,
        snippet: {
          videoId: parentId!,
          topLevelComment: {
            snippet: {
              textOriginal: g.pick(EN_COMMENTS),
              authorDisplayName: handleOf(name),
              authorChannelId: { value: `UC${g.base62(22)}` },
              likeCount: g.count(900),
              publishedAt: rfc3339(g.past(20)),
            },
          },
          totalReplyCount: g.int(0, 40),
        },
      };
    },
    trend: (c) => youtube.fake.post(c),
    extra: {
      video_transcript: ({ g, rank }) => ({
        start: (rank ?? 0) * 4.2,
        dur: Math.round(g.int(20, 60)) / 10,
        text: g.pick([
          "so today we're looking at something different",
          "let me show you how this works",
          "and that's the key idea here",
          "if you found this useful, consider subscribing",
          "here's what surprised me the most",
          "let's jump right in",
        ]),
      }),
    },
  },
  map: {
    post: (v) => {
      const url = `https://www.youtube.com/watch?v=${seg(v.id)}`;
      const metrics = defined({
        views: count(v.statistics?.viewCount),
        likes: count(v.statistics?.likeCount),
        comments: count(v.statistics?.commentCount),
      });
      const duration = v.contentDetails?.duration;
      return {
        kind: "item",
        id: v.id,
        url,
        ...defined({ title: plain(v.snippet.title), text: plain(v.snippet.description) }),
        author: {
          name: plain(v.snippet.channelTitle) ?? v.snippet.channelId,
          id: v.snippet.channelId,
          url: channelUrl(v.snippet.channelId),
        },
        ...defined({ published_at: utc(v.snippet.publishedAt) }),
        ...(Object.keys(metrics).length ? { metrics } : {}),
        media: [{ type: "video", url, ...(duration ? { duration_s: isoDurationSeconds(duration) } : {}) }],
        ...(v.snippet.categoryId ? { platform_extra: { category_id: v.snippet.categoryId } } : {}),
      };
    },
    user: (c) => ({
      kind: "profile_card",
      id: c.id,
      name: plain(c.snippet.title) ?? c.id,
      url: channelUrl(c.snippet.customUrl || c.id),
      ...(c.snippet.description !== undefined ? { bio: decodeEntities(c.snippet.description) } : {}),
      ...defined({
        followers: c.statistics?.hiddenSubscriberCount ? undefined : count(c.statistics?.subscriberCount),
        posts_count: count(c.statistics?.videoCount),
      }),
      ...(c.snippet.country ? { location: c.snippet.country } : {}),
    }),
    comment: (t) => {
      const s = t.snippet.topLevelComment.snippet;
      const author = s.authorChannelId?.value;
      return {
        kind: "item",
        id: t.id,
        ...(t.snippet.videoId ? { parent_id: t.snippet.videoId } : {}),
        ...defined({ text: plain(s.textOriginal ?? s.textDisplay?.replace(/<[^>]*>/g, "")) }),
        author: {
          name: s.authorDisplayName || "(unknown)",
          ...(author ? { id: author, url: `https://www.youtube.com/channel/${seg(author)}` } : {}),
        },
        ...defined({ published_at: utc(s.publishedAt) }),
        ...(s.likeCount !== undefined ? { metrics: { likes: count(s.likeCount)! } } : {}),
        ...(t.snippet.totalReplyCount !== undefined ? { reply_count: count(t.snippet.totalReplyCount)! } : {}),
      };
    },
    trend: (v) => {
      const title = plain(v.snippet.title) ?? v.id;
      const heat = count(v.statistics?.viewCount);
      return {
        kind: "leaderboard",
        rank: 1,
        title,
        ...(heat !== undefined ? { heat } : {}),
        url: `https://www.youtube.com/watch?v=${seg(v.id)}`,
        query: title,
        platform_extra: { search: `https://www.youtube.com/results?search_query=${seg(title)}` },
      };
    },
    extra: {
      video_transcript: (c: YtCaption): ContentItem => ({
        kind: "item",
        id: `t${Math.round(c.start * 1000)}`,
        text: c.text,
        platform_extra: { start_s: c.start, duration_s: c.dur },
      }),
    },
  },
  postIdFromUrl(u) {
    if (host(u) === "youtube.com" && u.pathname === "/watch")
      return /^[A-Za-z0-9_-]{11}$/.test(u.searchParams.get("v") ?? "") ? u.searchParams.get("v") : null;
    const m =
      host(u) === "youtu.be"
        ? /^\/([A-Za-z0-9_-]{11})$/.exec(u.pathname)
        : host(u) === "youtube.com" || host(u) === "youtube-nocookie.com"
          ? /^\/(?:shorts|embed|live|v)\/([A-Za-z0-9_-]{11})\/?$/.exec(u.pathname)
          : null;
    return m ? m[1]! : null;
  },
  userIdFromUrl(u) {
    const m =
      host(u) === "youtube.com" ? /^\/(@[A-Za-z0-9._-]{3,30}|channel\/UC[A-Za-z0-9_-]{22})$/.exec(u.pathname) : null;
    return m ? m[1]!.replace(/^channel\//, "") : null;
  },
});
