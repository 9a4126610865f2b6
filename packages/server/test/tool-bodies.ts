/** Request bodies of the seven tools for tests: per tool one whose quote runs inline and one that runs in the background. */
import type { ToolName } from "@sdgw/types";

export const weiboPosts = (n: number) => Array.from({ length: n }, (_, i) => `weibo:50${String(i).padStart(14, "0")}`);
export const weiboUsers = (n: number) => Array.from({ length: n }, (_, i) => `https://weibo.com/u/${1749127100 + i}`);
export const redditPosts = (n: number) =>
  Array.from(
    { length: n },
    (_, i) => `https://www.reddit.com/r/espresso/comments/ab${String(i).padStart(4, "0")}/post/`,
  );

/** Per tool: a body whose quote runs inline and one whose quote runs in the background. */
export const BODIES: Record<ToolName, { inline: Record<string, unknown>; background: Record<string, unknown> }> = {
  brand_buzz: {
    inline: { query: "露营", platforms: ["x", "weibo", "reddit"] },
    background: { query: "露营", platforms: ["x", "weibo", "reddit", "zhihu"] },
  },
  comment_insights: {
    inline: {
      targets: ["https://www.bilibili.com/video/BV1xK4y1a7Zq", "https://x.com/vercel/status/2122526005990306014"],
      limit: 50,
    },
    background: { targets: weiboPosts(11), limit: 20 },
  },
  account_watch: {
    inline: { accounts: ["https://x.com/vercel", "https://www.youtube.com/@devbytes_daily"], range: "14d" },
    background: { accounts: weiboUsers(6), range: "7d" },
  },
  find_creators: {
    inline: { query: "咖啡", platforms: ["weibo"], count: 5 },
    background: { query: "咖啡", platforms: ["weibo", "douyin", "xiaohongshu", "bilibili", "zhihu"], count: 20 },
  },
  creator_card: {
    inline: { accounts: ["https://x.com/vercel"], include: ["posts", "metrics"] },
    background: { accounts: weiboUsers(6), include: ["posts", "metrics"] },
  },
  batch_stats: {
    inline: { targets: redditPosts(3), include: ["metrics"] },
    background: { targets: redditPosts(12), include: ["metrics"] },
  },
  viral_finder: {
    inline: { query: "露营", platforms: ["weibo"], count: 3 },
    background: { query: "露营", platforms: ["weibo", "douyin", "xiaohongshu", "bilibili", "zhihu"], count: 20 },
  },
};

/** A body for each of the six data tools whose answer has many rows (larger than an MCP answer's bound). */
export const LARGE_DATA_CALLS: ReadonlyArray<[string, Record<string, unknown>]> = [
  ["search", { platforms: ["weibo", "x", "reddit"], query: "camping", count: 20 }],
  ["trending", { platforms: ["weibo", "zhihu", "douyin"], count: 20 }],
  ["detail", { platform: "x", id: Array.from({ length: 12 }, (_, i) => `21225260059903060${10 + i}`) }],
  ["comments", { platform: "bilibili", url: "https://www.bilibili.com/video/BV1xK4y1a7Zq", limit: 50 }],
  ["user_profile", { platform: "weibo", id: Array.from({ length: 10 }, (_, i) => String(1749127100 + i)) }],
  ["user_posts", { platform: "x", id: "vercel", limit: 50 }],
];
