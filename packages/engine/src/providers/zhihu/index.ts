/** zhihu (知乎): answers, comments, members, the hot list, and `zhihu.question_answers`; `scope` is a topic (D18). */
import { rfc3339, seg } from "../simulator/gen.ts";
import { definePlatform, host, type PlatformModule, titleAbout, typedOps } from "../simulator/module.ts";
import { ZH_BIOS, ZH_COMMENTS, ZH_NAMES, ZH_TEMPLATES, ZH_TEXT } from "../simulator/vocab.ts";

/** An answer as zhihu's v4 API writes it. */
export interface ZhihuAnswer {
  id: string;
  type: "answer";
  question: { id: string; title: string };
  author: { url_token: string; name: string; follower_count: number };
  excerpt: string;
  voteup_count: number;
  comment_count: number;
  created_time: number;
  thanks_count: number;
}
export interface ZhihuMember {
  url_token: string;
  name: string;
  headline: string;
  badge: Array<{ description: string }>;
  follower_count: number;
  following_count: number;
  answer_count: number;
  location: string;
}
export interface ZhihuComment {
  id: string;
  answer_id: string;
  content: string;
  created_time: number;
  like_count: number;
  child_comment_count: number;
  author: { url_token: string; name: string };
}
export interface ZhihuHot {
  target: { id: string; title: string };
  detail_text: string;
  rank: number;
}

const memberUrl = (token: string) => `https://www.zhihu.com/people/${seg(token)}`;

export const zhihu: PlatformModule<ZhihuAnswer, ZhihuMember, ZhihuComment, ZhihuHot> = definePlatform<
  ZhihuAnswer,
  ZhihuMember,
  ZhihuComment,
  ZhihuHot
>({
  platform: "zhihu",
  lang: "zh",
  scoped: true,
  operations: [
    ...typedOps("zhihu", "知乎", ["search", "trending", "detail", "comments", "user_profile", "user_posts"]),
    {
      name: "question_answers",
      description: "Answers to a zhihu question · 知乎问题下的回答",
      price: 1,
      pricing: "standard",
      params: [
        { name: "question_id", type: "string", required: true, min: 1, max: 20 },
        { name: "limit", type: "integer", min: 1, max: 50, default: 20 },
        { name: "cursor", type: "string", min: 1, max: 20000 },
      ],
    },
  ],
  unsupported() {
    return null;
  },
  fake: {
    post: ({ g, topic, id, authorId, params }) => ({
      id: id ?? g.digits(10),
      type: "answer",
      question: {
        id: typeof params?.["question_id"] === "string" ? String(params["question_id"]) : g.digits(9),
        title: `如何评价${topic}？`,
      },
      author: {
        url_token: authorId ?? `${g.lower(6)}-${g.lower(4)}`,
        name: g.pick(ZH_NAMES),
        follower_count: g.count(80_000),
      },
      excerpt: `${titleAbout(g, topic, ZH_TEMPLATES)}。${g.pick(ZH_TEXT)}`,
      voteup_count: g.count(20_000),
      comment_count: g.count(1500),
      created_time: Math.floor(g.past(120) / 1000),
      thanks_count: g.count(2000),
    }),
    user: ({ g, id }) => ({
      url_token: id ?? `${g.lower(6)}-${g.lower(4)}`,
      name: g.pick(ZH_NAMES),
      headline: g.pick(ZH_BIOS),
      badge: g.chance(0.2) ? [{ description: "优秀回答者" }] : [],
      follower_count: g.count(200_000),
      following_count: g.int(0, 900),
      answer_count: g.int(3, 2000),
      location: g.pick(["北京", "上海", "杭州", "深圳", ""]),
    }),
    comment: ({ g, parentId }) => ({
      id: g.digits(11),
      answer_id: parentId!,
      content: g.pick(ZH_COMMENTS),
      created_time: Math.floor(g.past(30) / 1000),
      like_count: g.count(1000),
      child_comment_count: g.int(0, 25),
      author: { url_token: `${g.lower(6)}-${g.lower(4)}`, name: g.pick(ZH_NAMES) },
    }),
    trend: ({ g, topic, rank }) => ({
      target: { id: g.digits(9), title: `如何看待${topic}？` },
      detail_text: `${g.int(100, 3000)} 万热度`,
      rank: rank!,
    }),
    extra: { question_answers: (c) => zhihu.fake.post(c) },
  },
  map: {
    post: (a) => ({
      kind: "item",
      id: a.id,
      url: `https://www.zhihu.com/question/${seg(a.question.id)}/answer/${seg(a.id)}`,
      title: a.question.title,
      text: a.excerpt,
      parent_id: a.question.id,
      author: {
        name: a.author.name,
        id: a.author.url_token,
        url: memberUrl(a.author.url_token),
        followers: a.author.follower_count,
      },
      published_at: rfc3339(a.created_time * 1000, 8),
      metrics: { likes: a.voteup_count, comments: a.comment_count },
      platform_extra: { type: a.type, question_id: a.question.id, thanks: a.thanks_count },
    }),
    user: (m) => ({
      kind: "profile_card",
      id: m.url_token,
      name: m.name,
      url: memberUrl(m.url_token),
      bio: m.headline,
      verified: m.badge.length > 0,
      followers: m.follower_count,
      following: m.following_count,
      posts_count: m.answer_count,
      ...(m.location ? { location: m.location } : {}),
      ...(m.badge[0] ? { platform_extra: { badge: m.badge[0].description } } : {}),
    }),
    comment: (c) => ({
      kind: "item",
      id: c.id,
      parent_id: c.answer_id,
      text: c.content,
      author: { name: c.author.name, id: c.author.url_token, url: memberUrl(c.author.url_token) },
      published_at: rfc3339(c.created_time * 1000, 8),
      metrics: { likes: c.like_count },
      reply_count: c.child_comment_count,
    }),
    trend: (h) => {
      const heat = /^(\d+) 万热度$/.exec(h.detail_text);
      return {
        kind: "leaderboard",
        rank: h.rank,
        title: h.target.title,
        ...(heat ? { heat: Number(heat[1]) * 10_000 } : {}),
        url: `https://www.zhihu.com/question/${seg(h.target.id)}`,
        query: h.target.title,
        platform_extra: { search: `https://www.zhihu.com/search?q=${seg(h.target.title)}` },
      };
    },
    extra: { question_answers: (a: ZhihuAnswer) => zhihu.map.post(a) },
  },
  postIdFromUrl(u) {
    const m = host(u) === "zhihu.com" ? /^\/question\/\d+\/answer\/(\d+)$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
  userIdFromUrl(u) {
    const m = host(u) === "zhihu.com" ? /^\/people\/([A-Za-z0-9_-]{2,64})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
});
