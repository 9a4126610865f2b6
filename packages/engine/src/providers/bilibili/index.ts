/** bilibili (哔哩哔哩): videos (BV ids), replies, uploaders, the popular list, and `bilibili.video_danmaku`. */
import type { ContentItem } from "@sdgw/types";
import { rfc3339, seg } from "../simulator/gen.ts";
import { definePlatform, host, type PlatformModule, titleAbout, typedOps } from "../simulator/module.ts";
import { ZH_BIOS, ZH_COMMENTS, ZH_NAMES, ZH_TEMPLATES, ZH_TEXT } from "../simulator/vocab.ts";

/** A video as bilibili's web API writes it (`pubdate` and `duration` in seconds). */
export interface BiliVideo {
  bvid: string;
  aid: number;
  title: string;
  desc: string;
  pic: string;
  pubdate: number;
  duration: number;
  tname: string;
  owner: { mid: number; name: string };
  stat: { view: number; danmaku: number; reply: number; favorite: number; coin: number; share: number; like: number };
}
export interface BiliUser {
  mid: number;
  name: string;
  sign: string;
  official: { type: number; title: string };
  follower: number;
  following: number;
  archive_count: number;
  level: number;
}
export interface BiliReply {
  rpid_str: string;
  oid_bvid: string;
  content: { message: string };
  ctime: number;
  like: number;
  rcount: number;
  member: { mid: string; uname: string };
}
export interface BiliDanmaku {
  id_str: string;
  content: string;
  progress: number;
  mode: number;
  fontsize: number;
  color: number;
  ctime: number;
  cid: number;
}

const userUrl = (mid: number | string) => `https://space.bilibili.com/${seg(String(mid))}`;
const BV = "fZodR9XQDSUm21yCkr6zBqiveYah8bt4xsWJ";

export const bilibili: PlatformModule<BiliVideo, BiliUser, BiliReply, BiliVideo> = definePlatform<
  BiliVideo,
  BiliUser,
  BiliReply,
  BiliVideo
>({
  platform: "bilibili",
  lang: "zh",
  scoped: true,
  operations: [
    ...typedOps("bilibili", "哔哩哔哩", ["search", "trending", "detail", "comments", "user_profile", "user_posts"]),
    {
      name: "video_danmaku",
      description: "Danmaku (bullet comments) of a bilibili video · 视频弹幕",
      price: 1,
      pricing: "standard",
      params: [
        { name: "bvid", type: "string", required: true, min: 12, max: 12 },
        { name: "limit", type: "integer", min: 1, max: 50, default: 20 },
        { name: "cursor", type: "string", min: 1, max: 20000 },
      ],
    },
  ],
  unsupported(op, p) {
    if (op === "search" && p["content_type"] === "image")
      return "bilibili search reads videos and articles and does not offer content_type=image; xiaohongshu and weibo do.";
    return null;
  },
  fake: {
    post: ({ g, topic, id, authorId, params }) => ({
      bvid: id ?? `BV1${Array.from({ length: 9 }, () => g.pick(BV.split(""))).join("")}`,
      aid: g.int(100_000_000, 999_999_999),
      title: `【${g.pick(["4K", "干货", "实测", "合集"])}】${titleAbout(g, topic, ZH_TEMPLATES)}`,
      desc: g.pick(ZH_TEXT),
      pic: `https://i0.hdslb.com/bfs/archive/${g.hex(40)}.jpg`,
      pubdate: Math.floor(g.past(90) / 1000),
      duration: g.int(60, 3600),
      tname:
        typeof params?.["scope"] === "string"
          ? String(params["scope"])
          : g.pick(["知识", "生活", "科技", "美食", "游戏"]),
      owner: { mid: authorId ? Number(authorId) : g.int(1_000_000, 999_999_999), name: g.pick(ZH_NAMES) },
      stat: {
        view: g.count(500_000),
        danmaku: g.count(5000),
        reply: g.count(3000),
        favorite: g.count(20_000),
        coin: g.count(15_000),
        share: g.count(3000),
        like: g.count(40_000),
      },
    }),
    user: ({ g, id }) => {
      const official = g.chance(0.2);
      return {
        mid: id ? Number(id) : g.int(1_000_000, 999_999_999),
        name: g.pick(ZH_NAMES),
        sign: g.pick(ZH_BIOS),
        official: { type: official ? 0 : -1, title: official ? "bilibili 知名UP主" : "" },
        follower: g.count(600_000),
        following: g.int(0, 800),
        archive_count: g.int(5, 900),
        level: g.int(2, 6),
      };
    },
    comment: ({ g, parentId }) => ({
      rpid_str: g.digits(11),
      oid_bvid: parentId!,
      content: { message: g.pick(ZH_COMMENTS) },
      ctime: Math.floor(g.past(20) / 1000),
      like: g.count(2000),
      rcount: g.int(0, 60),
      member: { mid: String(g.int(1_000_000, 999_999_999)), uname: g.pick(ZH_NAMES) },
    }),
    trend: (c) => bilibili.fake.post(c),
    extra: {
      video_danmaku: ({ g }) => ({
        id_str: `19${g.digits(17)}`,
        content: g.pick(["前方高能", "哈哈哈哈哈", "泪目", "这个收纳思路绝了", "已三连", "下次一定", "名场面", "awsl"]),
        progress: g.int(0, 1_200_000),
        mode: g.pick([1, 1, 1, 5, 4]),
        fontsize: 25,
        color: g.pick([16777215, 16777215, 16646914, 65280]),
        ctime: Math.floor(g.past(20) / 1000),
        cid: g.int(10_000_000_000, 29_999_999_999),
      }),
    },
  },
  map: {
    post: (v) => ({
      kind: "item",
      id: v.bvid,
      url: `https://www.bilibili.com/video/${seg(v.bvid)}`,
      title: v.title,
      text: v.desc,
      author: { name: v.owner.name, id: String(v.owner.mid), url: userUrl(v.owner.mid) },
      published_at: rfc3339(v.pubdate * 1000, 8),
      metrics: {
        views: v.stat.view,
        likes: v.stat.like,
        collects: v.stat.favorite,
        comments: v.stat.reply,
        shares: v.stat.share,
      },
      media: [
        { type: "video", url: `https://www.bilibili.com/video/${seg(v.bvid)}`, duration_s: v.duration },
        { type: "image", url: v.pic },
      ],
      platform_extra: { bvid: v.bvid, aid: v.aid, danmaku_count: v.stat.danmaku, coins: v.stat.coin, zone: v.tname },
    }),
    user: (u) => ({
      kind: "profile_card",
      id: String(u.mid),
      name: u.name,
      url: userUrl(u.mid),
      bio: u.sign,
      verified: u.official.type >= 0,
      followers: u.follower,
      following: u.following,
      posts_count: u.archive_count,
      platform_extra: { level: u.level, ...(u.official.title ? { official: u.official.title } : {}) },
    }),
    comment: (r) => ({
      kind: "item",
      id: r.rpid_str,
      parent_id: r.oid_bvid,
      text: r.content.message,
      author: { name: r.member.uname, id: r.member.mid, url: userUrl(r.member.mid) },
      published_at: rfc3339(r.ctime * 1000, 8),
      metrics: { likes: r.like },
      reply_count: r.rcount,
    }),
    trend: (v) => ({
      kind: "leaderboard",
      rank: 1,
      title: v.title,
      heat: v.stat.view,
      url: `https://www.bilibili.com/video/${seg(v.bvid)}`,
      query: v.title.replace(/^【[^】]*】/, ""),
      platform_extra: { bvid: v.bvid },
    }),
    extra: {
      video_danmaku: (d: BiliDanmaku): ContentItem => ({
        kind: "item",
        id: d.id_str,
        text: d.content,
        published_at: rfc3339(d.ctime * 1000, 8),
        platform_extra: { progress_ms: d.progress, mode: d.mode, fontsize: d.fontsize, color: d.color, cid: d.cid },
      }),
    },
  },
  postIdFromUrl(u) {
    const m = host(u) === "bilibili.com" ? /^\/video\/(BV1[0-9A-Za-z]{9})\/?$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
  userIdFromUrl(u) {
    const m = u.hostname === "space.bilibili.com" ? /^\/(\d{1,12})\/?$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
});
