/** xiaohongshu (小红书): notes (image or video), their comments, accounts and the hot list. */
import { num, rfc3339, seg } from "../simulator/gen.ts";
import { definePlatform, host, titleAbout, typedOps, type FakeContext } from "../simulator/module.ts";
import { ZH_BIOS, ZH_COMMENTS, ZH_NAMES, ZH_TEMPLATES, ZH_TEXT } from "../simulator/vocab.ts";

/** A note as xiaohongshu's web API writes it (counts are strings). */
export interface XhsNote {
  note_id: string;
  display_title: string;
  desc: string;
  type: "normal" | "video";
  time: number;
  user: { user_id: string; nickname: string };
  interact_info: { liked_count: string; collected_count: string; comment_count: string; share_count: string };
  image_list: Array<{ url_default: string }>;
  video?: { duration: number; url: string };
  tag_list: Array<{ name: string }>;
}
export interface XhsUser {
  user_id: string;
  nickname: string;
  desc: string;
  fans: string;
  follows: string;
  notes: string;
  ip_location: string;
  red_official_verified: boolean;
}
export interface XhsComment {
  id: string;
  note_id: string;
  content: string;
  create_time: number;
  like_count: string;
  sub_comment_count: string;
  user_info: { user_id: string; nickname: string };
}
export interface XhsTrend {
  title: string;
  score: string;
  word_type: "热" | "新" | "无";
  rank: number;
}

const BASE = "https://www.xiaohongshu.com";
const userUrl = (id: string) => `${BASE}/user/profile/${seg(id)}`;

function note(c: FakeContext): XhsNote {
  const { g } = c;
  const video = g.chance(0.35);
  const id = c.id ?? g.hex(24);
  return {
    note_id: id,
    display_title: titleAbout(g, c.topic, ZH_TEMPLATES),
    desc: `${g.pick(ZH_TEXT)} #${c.topic}`,
    type: video ? "video" : "normal",
    time: g.past(60),
    user: { user_id: c.authorId ?? g.hex(24), nickname: g.pick(ZH_NAMES) },
    interact_info: {
      liked_count: String(g.count(3000)),
      collected_count: String(g.count(2500)),
      comment_count: String(g.count(200)),
      share_count: String(g.count(100)),
    },
    image_list: video
      ? []
      : Array.from({ length: g.int(1, 4) }, () => ({
          url_default: `https://sns-webpic-qc.xhscdn.com/${g.hex(32)}/1040g2sg31${g.lower(20)}`,
        })),
    ...(video
      ? { video: { duration: g.int(15, 600), url: `https://sns-video-qc.xhscdn.com/stream/${g.lower(40)}.mp4` } }
      : {}),
    tag_list: [{ name: c.topic }],
  };
}

export const xiaohongshu = definePlatform<XhsNote, XhsUser, XhsComment, XhsTrend>({
  platform: "xiaohongshu",
  lang: "zh",
  scoped: false,
  operations: typedOps("xiaohongshu", "小红书", [
    "search",
    "trending",
    "detail",
    "comments",
    "user_profile",
    "user_posts",
  ]),
  unsupported(op, p) {
    if (op === "search" && p["content_type"] === "text")
      return "xiaohongshu notes are image or video notes and does not offer content_type=text; weibo, zhihu and wechat do.";
    return null;
  },
  fake: {
    post: note,
    user: ({ g, id }) => ({
      user_id: id ?? g.hex(24),
      nickname: g.pick(ZH_NAMES),
      desc: g.pick(ZH_BIOS),
      fans: String(g.count(50_000)),
      follows: String(g.int(10, 900)),
      notes: String(g.int(5, 800)),
      ip_location: g.pick(["上海", "北京", "广东", "浙江", "四川"]),
      red_official_verified: g.chance(0.1),
    }),
    comment: ({ g, parentId }) => ({
      id: g.hex(24),
      note_id: parentId!,
      content: g.pick(ZH_COMMENTS),
      create_time: g.past(20),
      like_count: String(g.count(300)),
      sub_comment_count: String(g.int(0, 12)),
      user_info: { user_id: g.hex(24), nickname: g.pick(ZH_NAMES) },
    }),
    trend: ({ g, topic, rank }) => ({
      title: topic,
      score: String(g.int(100_000, 9_000_000)),
      word_type: g.pick(["热", "新", "无"] as const),
      rank: rank!,
    }),
  },
  map: {
    post: (n) => ({
      kind: "item",
      id: n.note_id,
      url: `${BASE}/explore/${seg(n.note_id)}`,
      title: n.display_title,
      text: n.desc,
      author: { name: n.user.nickname, id: n.user.user_id, url: userUrl(n.user.user_id) },
      published_at: rfc3339(n.time, 8),
      metrics: {
        likes: num(n.interact_info.liked_count),
        collects: num(n.interact_info.collected_count),
        comments: num(n.interact_info.comment_count),
        shares: num(n.interact_info.share_count),
      },
      media: n.video
        ? [{ type: "video", url: n.video.url, duration_s: n.video.duration }]
        : n.image_list.map((i) => ({ type: "image" as const, url: i.url_default })),
      platform_extra: { note_type: n.type, tags: n.tag_list.map((t) => t.name) },
    }),
    user: (u) => ({
      kind: "profile_card",
      id: u.user_id,
      name: u.nickname,
      url: userUrl(u.user_id),
      bio: u.desc,
      verified: u.red_official_verified,
      followers: num(u.fans),
      following: num(u.follows),
      posts_count: num(u.notes),
      location: u.ip_location,
    }),
    comment: (c) => ({
      kind: "item",
      id: c.id,
      parent_id: c.note_id,
      text: c.content,
      author: { name: c.user_info.nickname, id: c.user_info.user_id, url: userUrl(c.user_info.user_id) },
      published_at: rfc3339(c.create_time, 8),
      metrics: { likes: num(c.like_count) },
      reply_count: num(c.sub_comment_count),
    }),
    trend: (t) => ({
      kind: "leaderboard",
      rank: t.rank,
      title: t.title,
      heat: num(t.score),
      query: t.title,
      url: `${BASE}/search_result?keyword=${seg(t.title)}`,
      platform_extra: { word_type: t.word_type },
    }),
  },
  postIdFromUrl(u) {
    const m = host(u) === "xiaohongshu.com" ? /^\/(?:explore|discovery\/item)\/([0-9a-f]{24})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
  userIdFromUrl(u) {
    const m = host(u) === "xiaohongshu.com" ? /^\/user\/profile\/([0-9a-f]{24})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
});
