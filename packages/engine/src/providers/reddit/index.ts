/** reddit: submissions (t3), comments (t1), accounts, popular posts, and `reddit.subreddit_posts`. */
import { rfc3339, seg } from "../simulator/gen.ts";
import { definePlatform, host, type PlatformModule, titleAbout, typedOps } from "../simulator/module.ts";
import { EN_BIOS, EN_COMMENTS, EN_NAMES, EN_TEMPLATES, EN_TEXT } from "../simulator/vocab.ts";

/** A listing child as reddit's JSON API writes it. */
export interface RedditThing<D> {
  kind: "t1" | "t2" | "t3";
  data: D;
}
export interface RedditPost {
  id: string;
  name: string;
  title: string;
  selftext: string;
  subreddit: string;
  author: string;
  created_utc: number;
  score: number;
  num_comments: number;
  permalink: string;
  is_video: boolean;
  url_overridden_by_dest?: string;
}
export interface RedditAccount {
  name: string;
  id: string;
  total_karma: number;
  created_utc: number;
  subreddit: { public_description: string; subscribers: number };
  verified: boolean;
}
export interface RedditComment {
  id: string;
  name: string;
  parent_id: string;
  link_id: string;
  body: string;
  author: string;
  created_utc: number;
  score: number;
  replies_count: number;
  permalink: string;
}

const SUBS = [
  "typescript",
  "programming",
  "webdev",
  "Coffee",
  "personalfinance",
  "travel",
  "cooking",
  "technology",
  "AskReddit",
  "running",
];
const userName = (name: string) => name.replace(/[^A-Za-z0-9_-]/g, "_");
const userUrl = (name: string) => `https://www.reddit.com/user/${seg(name)}`;

export const reddit: PlatformModule<
  RedditThing<RedditPost>,
  RedditThing<RedditAccount>,
  RedditThing<RedditComment>,
  RedditThing<RedditPost>
> = definePlatform<
  RedditThing<RedditPost>,
  RedditThing<RedditAccount>,
  RedditThing<RedditComment>,
  RedditThing<RedditPost>
>({
  platform: "reddit",
  lang: "en",
  scoped: true,
  operations: [
    ...typedOps("reddit", "Reddit", ["search", "trending", "detail", "comments", "user_profile", "user_posts"]),
    {
      name: "subreddit_posts",
      description: "Posts of a subreddit · Reddit 子版块帖子",
      price: 1,
      pricing: "standard",
      params: [
        { name: "subreddit", type: "string", required: true, min: 1, max: 64 },
        { name: "sort", type: "string", allowed: ["hot", "new", "top"], default: "hot" },
        { name: "limit", type: "integer", min: 1, max: 50, default: 20 },
        { name: "cursor", type: "string", min: 1, max: 20000 },
      ],
    },
  ],
  unsupported(op, p) {
    if (op === "search" && p["sort"] === "most_collected")
      return "reddit keeps saves private and does not offer sort=most_collected; xiaohongshu, douyin and bilibili do.";
    return null;
  },
  fake: {
    post: ({ g, topic, id, authorId, params }) => {
      const sub =
        typeof params?.["scope"] === "string"
          ? String(params["scope"]).replace(/^r\//, "")
          : typeof params?.["subreddit"] === "string"
            ? String(params["subreddit"])
            : g.pick(SUBS);
      const short = id?.replace(/^t3_/, "") ?? g.lower(7);
      const title = titleAbout(g, topic, EN_TEMPLATES);
      const slug =
        title
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, "_")
          .replace(/^_|_$/g, "")
          .slice(0, 50) || "post";
      return {
        kind: "t3",
        data: {
          id: short,
          name: `t3_${short}`,
          title,
          selftext: g.pick(EN_TEXT),
          subreddit: sub,
          author: authorId ?? userName(g.pick(EN_NAMES)),
          created_utc: Math.floor(g.past(30) / 1000),
          score: g.count(4000),
          num_comments: g.count(500),
          permalink: `/r/${seg(sub)}/comments/${seg(short)}/${slug}/`,
          is_video: g.chance(0.1),
        },
      };
    },
    user: ({ g, id }) => ({
      kind: "t2",
      data: {
        name: id ?? userName(g.pick(EN_NAMES)),
        id: g.lower(8),
        total_karma: g.count(50_000),
        created_utc: Math.floor(g.past(3000) / 1000),
        subreddit: { public_description: g.pick(EN_BIOS), subscribers: g.count(2000) },
        verified: g.chance(0.7),
      },
    }),
    comment: ({ g, parentId }) => {
      const id = g.lower(7);
      const link = parentId!.startsWith("t3_") ? parentId! : `t3_${parentId}`;
      return {
        kind: "t1",
        data: {
          id,
          name: `t1_${id}`,
          parent_id: link,
          link_id: link,
          body: g.pick(EN_COMMENTS),
          author: userName(g.pick(EN_NAMES)),
          created_utc: Math.floor(g.past(10) / 1000),
          score: g.count(500),
          replies_count: g.int(0, 30),
          permalink: `/r/${g.pick(SUBS)}/comments/${seg(link.slice(3))}/c/${seg(id)}/`,
        },
      };
    },
    trend: (c) => reddit.fake.post(c),
    extra: { subreddit_posts: (c) => reddit.fake.post(c) },
  },
  map: {
    post: ({ data: p }) => ({
      kind: "item",
      id: p.name,
      url: `https://www.reddit.com${p.permalink}`,
      title: p.title,
      text: p.selftext,
      author: { name: p.author, id: p.author, url: userUrl(p.author) },
      published_at: rfc3339(p.created_utc * 1000),
      metrics: { likes: p.score, comments: p.num_comments },
      platform_extra: { subreddit: `r/${p.subreddit}`, is_video: p.is_video },
    }),
    user: ({ data: a }) => ({
      kind: "profile_card",
      id: a.name,
      name: a.name,
      url: userUrl(a.name),
      bio: a.subreddit.public_description,
      verified: a.verified,
      followers: a.subreddit.subscribers,
      platform_extra: { karma: a.total_karma },
    }),
    comment: ({ data: c }) => ({
      kind: "item",
      id: c.name,
      parent_id: c.parent_id,
      url: `https://www.reddit.com${c.permalink}`,
      text: c.body,
      author: { name: c.author, id: c.author, url: userUrl(c.author) },
      published_at: rfc3339(c.created_utc * 1000),
      metrics: { likes: c.score },
      reply_count: c.replies_count,
    }),
    trend: ({ data: p }) => ({
      kind: "leaderboard",
      rank: 1,
      title: p.title,
      heat: p.score,
      url: `https://www.reddit.com${p.permalink}`,
      platform_extra: { subreddit: `r/${p.subreddit}` },
    }),
    extra: { subreddit_posts: (t: RedditThing<RedditPost>) => reddit.map.post(t) },
  },
  postIdFromUrl(u) {
    const m =
      host(u) === "reddit.com" || host(u) === "old.reddit.com"
        ? /^\/r\/[^/]+\/comments\/([a-z0-9]{4,10})(?:\/|$)/.exec(u.pathname)
        : null;
    return m ? `t3_${m[1]}` : null;
  },
  userIdFromUrl(u) {
    const m = host(u) === "reddit.com" ? /^\/(?:user|u)\/([A-Za-z0-9_-]{3,20})\/?$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
});
