/** Links of `targets` and `accounts`: the link shapes of the ten platforms, `<platform>:<id>`, and what is refused. */
import { PLATFORMS } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import { Gen } from "../../src/providers/simulator/gen.ts";
import { PLATFORM_MODULES } from "../../src/providers/simulator/index.ts";
import { resolveLink } from "../../src/tools/links.ts";

const ok = (link: string, kind: "post" | "account") => {
  const r = resolveLink(link, kind);
  if (!r.ok) throw new Error(`${link}: ${r.message}`);
  return r.target;
};

describe("resolveLink", () => {
  it.each(PLATFORMS)("%s: reads back the post and account ids of the links the platform writes", (platform) => {
    const m = PLATFORM_MODULES[platform];
    for (const seed of ["a", "b", "c", "d"]) {
      const post = m.map.post(m.fake.post({ g: new Gen(seed, 0), topic: "t" }));
      expect(ok(post.url!, "post")).toEqual({ link: post.url, platform, kind: "post", id: post.id });
      const user = m.map.user(m.fake.user({ g: new Gen(seed, 0), topic: "" }));
      expect(ok(user.url!, "account")).toEqual({ link: user.url, platform, kind: "account", id: user.id });
    }
  });

  it.each([
    [
      "https://www.xiaohongshu.com/explore/6b001f4d0000000013004a7e?xsec_token=AB",
      "xiaohongshu",
      "6b001f4d0000000013004a7e",
    ],
    ["https://www.xiaohongshu.com/discovery/item/6b001f4d0000000013004a7e", "xiaohongshu", "6b001f4d0000000013004a7e"],
    ["https://www.douyin.com/video/7709876897014223310", "douyin", "7709876897014223310"],
    ["https://www.iesdouyin.com/share/video/7709876897014223310/", "douyin", "7709876897014223310"],
    ["https://twitter.com/vercel/status/2122526005990306014", "x", "2122526005990306014"],
    ["https://x.com/i/web/status/2122526005990306014", "x", "2122526005990306014"],
    ["https://old.reddit.com/r/espresso/comments/1abc2d/my_setup/", "reddit", "t3_1abc2d"],
    ["https://redd.it/1abc2d", "reddit", "t3_1abc2d"],
    ["https://mp.weixin.qq.com/s/Xy3kLm9QpR2sT7uV1wZ0aB", "wechat", "Xy3kLm9QpR2sT7uV1wZ0aB"],
    ["https://mp.weixin.qq.com/s?__biz=MzA5&mid=2651&idx=1&sn=ab12cd34ef", "wechat", "ab12cd34ef"],
    ["https://weibo.com/1749127163/PbWq8Lm2K", "weibo", "PbWq8Lm2K"],
    ["https://m.weibo.cn/detail/5236417809123457", "weibo", "5236417809123457"],
    ["https://m.bilibili.com/video/BV1xK4y1a7Zq", "bilibili", "BV1xK4y1a7Zq"],
    ["https://www.zhihu.com/question/123456/answer/987654321", "zhihu", "987654321"],
    ["https://zhuanlan.zhihu.com/p/6543210", "zhihu", "6543210"],
    ["https://www.kuaishou.com/short-video/3xg9avuebhtfcku", "kuaishou", "3xg9avuebhtfcku"],
    ["https://youtu.be/Qx7pL2mR9sA", "youtube", "Qx7pL2mR9sA"],
    ["https://www.youtube.com/shorts/Qx7pL2mR9sA", "youtube", "Qx7pL2mR9sA"],
    ["https://m.youtube.com/watch?v=Qx7pL2mR9sA&t=42", "youtube", "Qx7pL2mR9sA"],
  ])("post link %s → %s %s", (link, platform, id) => {
    expect(ok(link, "post")).toMatchObject({ platform, id });
  });

  it.each([
    ["https://x.com/vercel", "x", "vercel"],
    ["https://www.youtube.com/@devbytes_daily", "youtube", "@devbytes_daily"],
    ["https://www.youtube.com/channel/UCq7Rz2Lm9Xb4Tn1Kw8Pv3Ds", "youtube", "UCq7Rz2Lm9Xb4Tn1Kw8Pv3Ds"],
    ["https://space.bilibili.com/517730921/video", "bilibili", "517730921"],
    ["https://weibo.com/u/1749127163", "weibo", "1749127163"],
    ["https://www.zhihu.com/people/deleted-user-8841", "zhihu", "deleted-user-8841"],
    ["https://www.reddit.com/u/decaf_is_a_lie/", "reddit", "decaf_is_a_lie"],
    ["https://mp.weixin.qq.com/mp/profile_ext?action=home&__biz=MzA5NjQ%3D%3D", "wechat", "MzA5NjQ=="],
  ])("account link %s → %s %s", (link, platform, id) => {
    expect(ok(link, "account")).toMatchObject({ platform, id });
  });

  it("takes <platform>:<id> for every platform", () => {
    for (const p of PLATFORMS)
      expect(ok(`${p}:abc123`, "post")).toEqual({ link: `${p}:abc123`, platform: p, kind: "post", id: "abc123" });
    expect(ok("wechat:MzA5NjQ%3D%3D", "account").id).toBe("MzA5NjQ==");
  });

  it.each([
    ["https://b23.tv/Ab12Cd3", /short link \(bilibili\)/],
    ["https://xhslink.com/a/Zx9", /short link \(xiaohongshu\)/],
    ["https://v.douyin.com/iRNBho6u/", /short link \(douyin\)/],
    ["https://t.co/AbCdEf", /short link \(x\)/],
    ["http://t.cn/A6x8Yz2q", /short link \(weibo\)/],
    ["https://v.kuaishou.com/3Ab9Xy", /short link \(kuaishou\)/],
    ["https://www.reddit.com/r/espresso/s/Ab12Cd34", /short link \(reddit\)/],
  ])("refuses the short link %s, naming it", (link, why) => {
    const r = resolveLink(link, "post");
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.message).toMatch(why);
      expect(r.message).toContain(link);
    }
  });

  it.each([
    ["https://www.bilibili.com", "post", /no post page on bilibili/],
    ["https://www.xiaohongshu.com/", "account", /no account page on xiaohongshu/],
    ["https://www.zhihu.com/question/123456", "post", /no post page on zhihu/],
    ["https://www.youtube.com/results?search_query=espresso", "post", /no post page on youtube/],
    ["https://x.com/home", "account", /no account page on x/],
    ["https://example.com/post/1", "post", /platform of .* cannot be told/],
    ["ftp://weibo.com/u/1749127163", "account", /platform of .* cannot be told/],
    ["myspace:123", "post", /platform of .* cannot be told/],
    ["https://x.com/vercel", "post", /link to an account on x, not a post/],
    ["https://www.douyin.com/video/7709876897014223310", "account", /link to a post on douyin, not an account/],
  ] as const)("refuses %s as a %s link", (link, kind, why) => {
    const r = resolveLink(link, kind);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(why);
  });
});
