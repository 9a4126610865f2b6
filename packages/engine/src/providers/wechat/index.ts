/** wechat (微信): official-account articles and accounts. No video search, no trending list, no public comments. */
import { rfc3339, seg } from "../simulator/gen.ts";
import { definePlatform, host, titleAbout, typedOps } from "../simulator/module.ts";
import { ZH_BIOS, ZH_NAMES, ZH_TEMPLATES, ZH_TEXT } from "../simulator/vocab.ts";

/** An article as wechat's official-account pages describe it. */
export interface WechatArticle {
  sn: string;
  title: string;
  digest: string;
  author: string;
  biz: string;
  nickname: string;
  read_num: number;
  like_num: number;
  old_like_num: number;
  create_time: number;
  cover: string;
}
export interface WechatAccount {
  biz: string;
  nickname: string;
  signature: string;
  alias: string;
  service_type: number;
  article_count: number;
}

const accountUrl = (biz: string) =>
  `https://mp.weixin.qq.com/mp/profile_ext?action=home&__biz=${encodeURIComponent(biz)}`;

export const wechat = definePlatform<WechatArticle, WechatAccount, never, never>({
  platform: "wechat",
  lang: "zh",
  scoped: false,
  operations: typedOps("wechat", "微信公众号", ["search", "detail", "user_profile", "user_posts"]),
  unsupported(op, p) {
    if (op === "search" && p["content_type"] === "video")
      return "wechat search reads official-account articles only and does not offer content_type=video; douyin, kuaishou, bilibili and youtube do.";
    return null;
  },
  fake: {
    post: ({ g, topic, id, authorId }) => ({
      sn: id ?? g.base62(22),
      title: titleAbout(g, topic, ZH_TEMPLATES),
      digest: g.pick(ZH_TEXT),
      author: g.pick(ZH_NAMES),
      biz: authorId ?? `Mz${g.base62(10)}==`,
      nickname: `${g.pick(ZH_NAMES)}说`,
      read_num: g.count(100_000),
      like_num: g.count(2000),
      old_like_num: g.count(3000),
      create_time: Math.floor(g.past(90) / 1000),
      cover: `https://mmbiz.qpic.cn/mmbiz_jpg/${g.base62(40)}/0`,
    }),
    user: ({ g, id }) => ({
      biz: id ?? `Mz${g.base62(10)}==`,
      nickname: `${g.pick(ZH_NAMES)}说`,
      signature: g.pick(ZH_BIOS),
      alias: g.lower(10),
      service_type: g.pick([0, 2]),
      article_count: g.int(20, 3000),
    }),
    comment: () => {
      throw new Error("wechat has no comments");
    },
    trend: () => {
      throw new Error("wechat has no trending list");
    },
  },
  map: {
    post: (a) => ({
      kind: "item",
      id: a.sn,
      url: `https://mp.weixin.qq.com/s/${seg(a.sn)}`,
      title: a.title,
      text: a.digest,
      author: { name: a.nickname, id: a.biz, url: accountUrl(a.biz) },
      published_at: rfc3339(a.create_time * 1000, 8),
      metrics: { views: a.read_num, likes: a.old_like_num, shares: a.like_num },
      media: [{ type: "image", url: a.cover }],
      platform_extra: { writer: a.author, zaikan: a.like_num },
    }),
    user: (u) => ({
      kind: "profile_card",
      id: u.biz,
      name: u.nickname,
      url: accountUrl(u.biz),
      bio: u.signature,
      verified: u.service_type === 2,
      posts_count: u.article_count,
      platform_extra: { alias: u.alias, account_type: u.service_type === 2 ? "服务号" : "订阅号" },
    }),
    comment: () => {
      throw new Error("wechat has no comments");
    },
    trend: () => {
      throw new Error("wechat has no trending list");
    },
  },
  postIdFromUrl(u) {
    const m = host(u) === "mp.weixin.qq.com" ? /^\/s\/([A-Za-z0-9_-]{10,40})$/.exec(u.pathname) : null;
    return m ? m[1]! : null;
  },
  userIdFromUrl(u) {
    return host(u) === "mp.weixin.qq.com" && u.pathname === "/mp/profile_ext" ? u.searchParams.get("__biz") : null;
  },
});
