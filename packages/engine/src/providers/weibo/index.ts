/** weibo (微博): posts (mblogs), comments, accounts and the hot-search list; `scope` is a topic (D18). */
import { parseTwitterDate, rfc3339, seg, twitterDate } from "../simulator/gen.ts";
import { definePlatform, host, titleAbout, typedOps } from "../simulator/module.ts";
import { ZH_BIOS, ZH_COMMENTS, ZH_NAMES, ZH_TEMPLATES, ZH_TEXT } from "../simulator/vocab.ts";

/** An mblog as weibo's web API writes it (`created_at` in Twitter's format, +0800). */
export interface WeiboMblog {
  mid: string;
  mblogid: string;
  text_raw: string;
  created_at: string;
  user: { idstr: string; screen_name: string; followers_count: number };
  attitudes_count: number;
  comments_count: number;
  reposts_count: number;
  pic_ids: string[];
  region_name?: string;
}
export interface WeiboUser {
  idstr: string;
  screen_name: string;
  description: string;
  verified: boolean;
  verified_reason: string;
  followers_count: number;
  friends_count: number;
  statuses_count: number;
  location: string;
}
export interface WeiboComment {
  idstr: string;
  rootidstr: string;
  text_raw: string;
  created_at: string;
  like_counts: number;
  total_number: number;
  user: { idstr: string; screen_name: string };
}
export interface WeiboHot {
  word: string;
  num: number;
  realpos: number;
  label_name: string;
}

const userUrl = (uid: string) => `https://weibo.com/u/${seg(uid)}`;

export const weibo = definePlatform<WeiboMblog, WeiboUser, WeiboComment, WeiboHot>({
  platform: "weibo",
  lang: "zh",
  scoped: true,
  operations: typedOps("weibo", "微博", ["search", "trending", "detail", "comments", "user_profile", "user_posts"]),
  unsupported() {
    return null;
  },
  fake: {
    post: ({ g, topic, id, authorId }) => ({
      mid: id ?? `50${g.digits(14)}`,
      mblogid: g.base62(9),
      text_raw: `#${topic}# ${titleAbout(g, topic, ZH_TEMPLATES)} ${g.pick(ZH_TEXT)}`,
      created_at: twitterDate(g.past(30), 8),
      user: { idstr: authorId ?? g.digits(10), screen_name: g.pick(ZH_NAMES), followers_count: g.count(500_000) },
      attitudes_count: g.count(20_000),
      comments_count: g.count(3000),
      reposts_count: g.count(5000),
      pic_ids: Array.from({ length: g.int(0, 3) }, () => `${g.hex(8)}ly1h${g.lower(20)}`),
      region_name: `发布于 ${g.pick(["北京", "上海", "广东", "江苏"])}`,
    }),
    user: ({ g, id }) => {
      const v = g.chance(0.3);
      return {
        idstr: id ?? g.digits(10),
        screen_name: g.pick(ZH_NAMES),
        description: g.pick(ZH_BIOS),
        verified: v,
        verified_reason: v ? "知名生活博主" : "",
        followers_count: g.count(900_000),
        friends_count: g.int(10, 2000),
        statuses_count: g.int(100, 30_000),
        location: g.pick(["北京 朝阳区", "上海", "广东 深圳", "浙江 杭州"]),
      };
    },
    comment: ({ g, parentId }) => ({
      idstr: `50${g.digits(14)}`,
      rootidstr: parentId!,
      text_raw: g.pick(ZH_COMMENTS),
      created_at: twitterDate(g.past(10), 8),
      like_counts: g.count(800),
      total_number: g.int(0, 50),
      user: { idstr: g.digits(10), screen_name: g.pick(ZH_NAMES) },
    }),
    trend: ({ g, topic, rank }) => ({
      word: topic,
      num: g.int(200_000, 5_000_000),
      realpos: rank!,
      label_name: g.pick(["热", "新", "沸", ""]),
    }),
  },
  map: {
    post: (m) => ({
      kind: "item",
      id: m.mid,
      url: `https://weibo.com/${seg(m.user.idstr)}/${seg(m.mid)}`,
      text: m.text_raw,
      author: {
        name: m.user.screen_name,
        id: m.user.idstr,
        url: userUrl(m.user.idstr),
        followers: m.user.followers_count,
      },
      published_at: rfc3339(parseTwitterDate(m.created_at), 8),
      metrics: { likes: m.attitudes_count, comments: m.comments_count, shares: m.reposts_count },
      ...(m.pic_ids.length
        ? {
            media: m.pic_ids.map((p) => ({
              type: "image" as const,
              url: `https://wx1.sinaimg.cn/large/${seg(p)}.jpg`,
            })),
          }
        : {}),
      platform_extra: {
        mblogid: m.mblogid,
        ...(m.region_name ? { region: m.region_name.replace(/^发布于 /, "") } : {}),
      },
    }),
    user: (u) => ({
      kind: "profile_card",
      id: u.idstr,
      name: u.screen_name,
      url: userUrl(u.idstr),
      bio: u.description,
      verified: u.verified,
      followers: u.followers_count,
      following: u.friends_count,
      posts_count: u.statuses_count,
      location: u.location,
      ...(u.verified_reason ? { platform_extra: { verified_reason: u.verified_reason } } : {}),
    }),
    comment: (c) => ({
      kind: "item",
      id: c.idstr,
      parent_id: c.rootidstr,
      text: c.text_raw,
      author: { name: c.user.screen_name, id: c.user.idstr, url: userUrl(c.user.idstr) },
      published_at: rfc3339(parseTwitterDate(c.created_at), 8),
      metrics: { likes: c.like_counts },
      reply_count: c.total_number,
    }),
    trend: (h) => ({
      kind: "leaderboard",
      rank: h.realpos,
      title: h.word,
      heat: h.num,
      query: `#${h.word}#`,
      url: `https://s.weibo.com/weibo?q=${seg(`#${h.word}#`)}`,
      ...(h.label_name ? { platform_extra: { label: h.label_name } } : {}),
    }),
  },
  postIdFromUrl(u) {
    const m =
      host(u) === "weibo.com"
        ? /^\/\d{5,12}\/([A-Za-z0-9]{9}|\d{16})$/.exec(u.pathname)
        : host(u) === "weibo.cn"
          ? /^\/(?:detail|status)\/(\d{16})$/.exec(u.pathname)
          : null;
    return m ? m[1]! : null;
  },
  userIdFromUrl(u) {
    const m = host(u) === "weibo.com" ? /^\/u\/(\d{5,12})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
});
