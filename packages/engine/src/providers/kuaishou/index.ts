/** kuaishou (快手): short videos (photos), comments, accounts and the hot list. */
import { rfc3339, seg } from "../simulator/gen.ts";
import { definePlatform, host, titleAbout, typedOps } from "../simulator/module.ts";
import { ZH_BIOS, ZH_COMMENTS, ZH_NAMES, ZH_TEMPLATES } from "../simulator/vocab.ts";

/** A photo (video) as kuaishou's web GraphQL writes it (`timestamp` and `duration` in ms, counts as text). */
export interface KsPhoto {
  photoId: string;
  caption: string;
  timestamp: number;
  duration: number;
  coverUrl: string;
  photoUrl: string;
  likeCount: string;
  viewCount: string;
  commentCount: number;
  author: { id: string; name: string };
}
export interface KsUser {
  id: string;
  name: string;
  description: string;
  fan: string;
  follow: string;
  photo: string;
  verified: boolean;
  cityName: string;
}
export interface KsComment {
  commentId: string;
  photoId: string;
  content: string;
  timestamp: number;
  realLikedCount: number;
  subCommentCount: number;
  authorId: string;
  authorName: string;
}
export interface KsHot {
  name: string;
  hotValue: string;
  rank: number;
}

const userUrl = (id: string) => `https://www.kuaishou.com/profile/${seg(id)}`;
const ksId = (g: { lower(n: number): string }) => `3x${g.lower(13)}`;

export const kuaishou = definePlatform<KsPhoto, KsUser, KsComment, KsHot>({
  platform: "kuaishou",
  lang: "zh",
  scoped: false,
  operations: typedOps("kuaishou", "快手", ["search", "trending", "detail", "comments", "user_profile", "user_posts"]),
  unsupported(op, p) {
    if (op === "search" && p["content_type"] === "text")
      return "kuaishou is a video platform and does not offer content_type=text; weibo, zhihu and wechat do.";
    return null;
  },
  fake: {
    post: ({ g, topic, id, authorId }) => ({
      photoId: id ?? ksId(g),
      caption: `${titleAbout(g, topic, ZH_TEMPLATES)} #${topic}`,
      timestamp: g.past(60),
      duration: g.int(10, 240) * 1000,
      coverUrl: `https://p2.a.yximgs.com/upic/${g.hex(24)}.jpg`,
      photoUrl: `https://v2.kwaicdn.com/upic/${g.hex(24)}.mp4`,
      likeCount: g.chance(0.3) ? `${(g.int(10, 99) / 10).toFixed(1)}万` : String(g.count(9000)),
      viewCount: String(g.count(400_000)),
      commentCount: g.count(2000),
      author: { id: authorId ?? ksId(g), name: g.pick(ZH_NAMES) },
    }),
    user: ({ g, id }) => ({
      id: id ?? ksId(g),
      name: g.pick(ZH_NAMES),
      description: g.pick(ZH_BIOS),
      fan: String(g.count(300_000)),
      follow: String(g.int(0, 600)),
      photo: String(g.int(5, 1500)),
      verified: g.chance(0.15),
      cityName: g.pick(["哈尔滨", "成都", "郑州", "长沙", ""]),
    }),
    comment: ({ g, parentId }) => ({
      commentId: g.digits(12),
      photoId: parentId!,
      content: g.pick(ZH_COMMENTS),
      timestamp: g.past(15),
      realLikedCount: g.count(1500),
      subCommentCount: g.int(0, 30),
      authorId: ksId(g),
      authorName: g.pick(ZH_NAMES),
    }),
    trend: ({ g, topic, rank }) => ({ name: topic, hotValue: `${(g.int(100, 999) / 10).toFixed(1)}万`, rank: rank! }),
  },
  map: {
    post: (p) => ({
      kind: "item",
      id: p.photoId,
      url: `https://www.kuaishou.com/short-video/${seg(p.photoId)}`,
      text: p.caption,
      author: { name: p.author.name, id: p.author.id, url: userUrl(p.author.id) },
      published_at: rfc3339(p.timestamp, 8),
      metrics: { likes: numText(p.likeCount), views: numText(p.viewCount), comments: p.commentCount },
      media: [
        { type: "video", url: p.photoUrl, duration_s: p.duration / 1000 },
        { type: "image", url: p.coverUrl },
      ],
    }),
    user: (u) => ({
      kind: "profile_card",
      id: u.id,
      name: u.name,
      url: userUrl(u.id),
      bio: u.description,
      verified: u.verified,
      followers: numText(u.fan),
      following: numText(u.follow),
      posts_count: numText(u.photo),
      ...(u.cityName ? { location: u.cityName } : {}),
    }),
    comment: (c) => ({
      kind: "item",
      id: c.commentId,
      parent_id: c.photoId,
      text: c.content,
      author: { name: c.authorName, id: c.authorId, url: userUrl(c.authorId) },
      published_at: rfc3339(c.timestamp, 8),
      metrics: { likes: c.realLikedCount },
      reply_count: c.subCommentCount,
    }),
    trend: (h) => ({
      kind: "leaderboard",
      rank: h.rank,
      title: h.name,
      heat: numText(h.hotValue),
      query: h.name,
      url: `https://www.kuaishou.com/search/video?searchKey=${seg(h.name)}`,
    }),
  },
  postIdFromUrl(u) {
    const m = host(u) === "kuaishou.com" ? /^\/short-video\/(3x[a-z0-9]{8,20})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
  userIdFromUrl(u) {
    const m = host(u) === "kuaishou.com" ? /^\/profile\/(3x[a-z0-9]{8,20})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
});

/** Kuaishou's counts as text: "9.8万" or "1234". */
function numText(v: string): number {
  const wan = /^([\d.]+)万$/.exec(v);
  return wan ? Math.round(Number(wan[1]) * 10_000) : Math.max(0, Math.floor(Number(v) || 0));
}
