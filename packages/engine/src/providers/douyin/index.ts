/** douyin (抖音): videos (awemes), comments, accounts (sec_uid) and the hot list. */
import { rfc3339, seg } from "../simulator/gen.ts";
import { definePlatform, host, titleAbout, typedOps } from "../simulator/module.ts";
import { ZH_BIOS, ZH_COMMENTS, ZH_NAMES, ZH_TEMPLATES } from "../simulator/vocab.ts";

/** An aweme as douyin's web API writes it (`create_time` in seconds, `duration` in ms). */
export interface DouyinAweme {
  aweme_id: string;
  desc: string;
  create_time: number;
  author: { uid: string; sec_uid: string; nickname: string; follower_count: number };
  statistics: {
    digg_count: number;
    comment_count: number;
    share_count: number;
    collect_count: number;
    play_count: number;
  };
  video: { duration: number; play_addr: { url_list: string[] } };
  music: { title: string };
}
export interface DouyinUser {
  sec_uid: string;
  nickname: string;
  signature: string;
  follower_count: number;
  following_count: number;
  aweme_count: number;
  ip_location: string;
  custom_verify: string;
}
export interface DouyinComment {
  cid: string;
  aweme_id: string;
  text: string;
  create_time: number;
  digg_count: number;
  reply_comment_total: number;
  user: { sec_uid: string; nickname: string };
}
export interface DouyinTrend {
  word: string;
  hot_value: number;
  position: number;
  label: number;
}

const userUrl = (secUid: string) => `https://www.douyin.com/user/${seg(secUid)}`;

export const douyin = definePlatform<DouyinAweme, DouyinUser, DouyinComment, DouyinTrend>({
  platform: "douyin",
  lang: "zh",
  scoped: false,
  operations: typedOps("douyin", "抖音", ["search", "trending", "detail", "comments", "user_profile", "user_posts"]),
  unsupported(op, p) {
    if (op === "search" && p["content_type"] === "text")
      return "douyin is a video platform and does not offer content_type=text; weibo, zhihu and wechat do.";
    return null;
  },
  fake: {
    post: ({ g, topic, id, authorId }) => ({
      aweme_id: id ?? `73${g.digits(17)}`,
      desc: `${titleAbout(g, topic, ZH_TEMPLATES)} #${topic}`,
      create_time: Math.floor(g.past(60) / 1000),
      author: {
        uid: g.digits(11),
        sec_uid: authorId ?? `MS4wLjABAAAA${g.base62(32)}`,
        nickname: g.pick(ZH_NAMES),
        follower_count: g.count(200_000),
      },
      statistics: {
        digg_count: g.count(50_000),
        comment_count: g.count(3000),
        share_count: g.count(5000),
        collect_count: g.count(8000),
        play_count: g.count(900_000),
      },
      video: {
        duration: g.int(8, 300) * 1000,
        play_addr: { url_list: [`https://v26-web.douyinvod.com/${g.hex(32)}/video/tos/cn/${g.lower(24)}.mp4`] },
      },
      music: { title: `@${g.pick(ZH_NAMES)}创作的原声` },
    }),
    user: ({ g, id }) => ({
      sec_uid: id ?? `MS4wLjABAAAA${g.base62(32)}`,
      nickname: g.pick(ZH_NAMES),
      signature: g.pick(ZH_BIOS),
      follower_count: g.count(300_000),
      following_count: g.int(0, 500),
      aweme_count: g.int(3, 900),
      ip_location: `IP属地：${g.pick(["广东", "北京", "上海", "湖南", "重庆"])}`,
      custom_verify: g.chance(0.15) ? "优质生活领域创作者" : "",
    }),
    comment: ({ g, parentId }) => ({
      cid: `74${g.digits(17)}`,
      aweme_id: parentId!,
      text: g.pick(ZH_COMMENTS),
      create_time: Math.floor(g.past(20) / 1000),
      digg_count: g.count(2000),
      reply_comment_total: g.int(0, 40),
      user: { sec_uid: `MS4wLjABAAAA${g.base62(32)}`, nickname: g.pick(ZH_NAMES) },
    }),
    trend: ({ g, topic, rank }) => ({
      word: topic,
      hot_value: g.int(1_000_000, 12_000_000),
      position: rank!,
      label: g.int(0, 3),
    }),
  },
  map: {
    post: (a) => ({
      kind: "item",
      id: a.aweme_id,
      url: `https://www.douyin.com/video/${seg(a.aweme_id)}`,
      text: a.desc,
      author: {
        name: a.author.nickname,
        id: a.author.sec_uid,
        url: userUrl(a.author.sec_uid),
        followers: a.author.follower_count,
      },
      published_at: rfc3339(a.create_time * 1000, 8),
      metrics: {
        likes: a.statistics.digg_count,
        comments: a.statistics.comment_count,
        shares: a.statistics.share_count,
        collects: a.statistics.collect_count,
        views: a.statistics.play_count,
      },
      media: a.video.play_addr.url_list
        .slice(0, 1)
        .map((url) => ({ type: "video" as const, url, duration_s: a.video.duration / 1000 })),
      platform_extra: { music: a.music.title },
    }),
    user: (u) => ({
      kind: "profile_card",
      id: u.sec_uid,
      name: u.nickname,
      url: userUrl(u.sec_uid),
      bio: u.signature,
      verified: u.custom_verify !== "",
      followers: u.follower_count,
      following: u.following_count,
      posts_count: u.aweme_count,
      location: u.ip_location.replace(/^IP属地：/, ""),
      ...(u.custom_verify ? { platform_extra: { custom_verify: u.custom_verify } } : {}),
    }),
    comment: (c) => ({
      kind: "item",
      id: c.cid,
      parent_id: c.aweme_id,
      text: c.text,
      author: { name: c.user.nickname, id: c.user.sec_uid, url: userUrl(c.user.sec_uid) },
      published_at: rfc3339(c.create_time * 1000, 8),
      metrics: { likes: c.digg_count },
      reply_count: c.reply_comment_total,
    }),
    trend: (t) => ({
      kind: "leaderboard",
      rank: t.position,
      title: t.word,
      heat: t.hot_value,
      query: t.word,
      url: `https://www.douyin.com/search/${seg(t.word)}`,
      platform_extra: { label: t.label },
    }),
  },
  postIdFromUrl(u) {
    const m = host(u) === "douyin.com" ? /^\/(?:video|note)\/(\d{15,20})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
  userIdFromUrl(u) {
    const m = host(u) === "douyin.com" ? /^\/user\/([A-Za-z0-9_-]{10,80})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
});
