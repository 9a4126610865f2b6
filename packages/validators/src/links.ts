/**
 * Links in `targets` and `accounts` (D24, `TargetLinks`): which platform, and which post or account, a link
 * points at, for the public link shapes of the ten platforms, or `<platform>:<id>`. Short links (b23.tv,
 * xhslink.com, v.douyin.com, t.co, t.cn, …) and pages that are no post or account (a bare domain, a search page)
 * cannot be told without opening them: they are refused with the seed's case 14, naming the link. Pure.
 */
import type { Platform } from "@sdgw/types";
import { PLATFORMS } from "@sdgw/types";

/** What a link is expected to point at. @group Parsing */
export type LinkKind = "post" | "account";

/** A link told apart: its platform and the id of the post or account it points at. @group Parsing */
export interface ResolvedLink {
  /** The link as sent. */
  link: string;
  platform: Platform;
  kind: LinkKind;
  /** The id the platform's provider reads (`id` parameter). */
  id: string;
}

/** A link told apart, or why it cannot be. @group Parsing */
export type LinkResolution = { ok: true; target: ResolvedLink } | { ok: false; message: string };

type Matcher = (path: string, url: URL) => string | null;

interface Shape {
  /** Hosts without `www.`, `m.` or `mobile.`. */
  hosts: readonly string[];
  post: readonly Matcher[];
  account: readonly Matcher[];
}

const re =
  (pattern: RegExp, group = 1, prefix = ""): Matcher =>
  (path) => {
    const m = pattern.exec(path);
    return m?.[group] ? prefix + m[group] : null;
  };
const on =
  (host: string, m: Matcher): Matcher =>
  (path, url) =>
    bareHost(url) === host ? m(path, url) : null;

/** Paths of x.com that are pages of the site, not accounts. */
const X_RESERVED = new Set([
  "home",
  "explore",
  "search",
  "i",
  "settings",
  "notifications",
  "messages",
  "login",
  "signup",
  "compose",
  "tos",
  "privacy",
  "hashtag",
  "intent",
  "share",
]);

const SHAPES: Record<Platform, Shape> = {
  xiaohongshu: {
    hosts: ["xiaohongshu.com"],
    post: [re(/^\/(?:explore|discovery\/item)\/([0-9a-f]{24})\/?$/)],
    account: [re(/^\/user\/profile\/([0-9a-f]{24})\/?$/)],
  },
  douyin: {
    hosts: ["douyin.com", "iesdouyin.com"],
    post: [
      on("douyin.com", re(/^\/(?:video|note)\/(\d{15,20})\/?$/)),
      on("iesdouyin.com", re(/^\/share\/(?:video|note)\/(\d{15,20})\/?$/)),
    ],
    account: [
      on("douyin.com", re(/^\/user\/([A-Za-z0-9_-]{10,80})\/?$/)),
      on("iesdouyin.com", re(/^\/share\/user\/([A-Za-z0-9_-]{10,80})\/?$/)),
    ],
  },
  x: {
    hosts: ["x.com", "twitter.com"],
    post: [
      re(/^\/[A-Za-z0-9_]{1,15}\/status\/(\d{5,20})(?:\/(?:photo|video)\/\d+)?\/?$/),
      re(/^\/i\/(?:web\/)?status\/(\d{5,20})\/?$/),
    ],
    account: [
      (path) => {
        const m = /^\/([A-Za-z0-9_]{1,15})\/?$/.exec(path);
        return m && !X_RESERVED.has(m[1]!.toLowerCase()) ? m[1]! : null;
      },
    ],
  },
  reddit: {
    hosts: ["reddit.com", "old.reddit.com", "new.reddit.com", "np.reddit.com", "redd.it"],
    post: [
      on("redd.it", re(/^\/([a-z0-9]{4,10})\/?$/, 1, "t3_")),
      re(/^\/r\/[^/]+\/comments\/([a-z0-9]{4,10})(?:\/|$)/, 1, "t3_"),
      re(/^\/comments\/([a-z0-9]{4,10})(?:\/|$)/, 1, "t3_"),
    ],
    account: [re(/^\/(?:user|u)\/([A-Za-z0-9_-]{3,20})\/?$/)],
  },
  wechat: {
    hosts: ["mp.weixin.qq.com"],
    post: [
      re(/^\/s\/([A-Za-z0-9_-]{10,40})\/?$/),
      (path, url) => (/^\/s\/?$/.test(path) ? url.searchParams.get("sn") || null : null),
    ],
    account: [(path, url) => (path === "/mp/profile_ext" ? url.searchParams.get("__biz") || null : null)],
  },
  weibo: {
    hosts: ["weibo.com", "weibo.cn"],
    post: [
      on("weibo.com", re(/^\/\d{5,12}\/([A-Za-z0-9]{9}|\d{16})\/?$/)),
      on("weibo.cn", re(/^\/(?:detail|status)\/([A-Za-z0-9]{9}|\d{16})\/?$/)),
    ],
    account: [
      re(/^\/u\/(\d{5,12})\/?$/),
      on("weibo.com", re(/^\/(\d{5,12})\/?$/)),
      on("weibo.cn", re(/^\/profile\/(\d{5,12})\/?$/)),
    ],
  },
  bilibili: {
    hosts: ["bilibili.com", "space.bilibili.com"],
    post: [on("bilibili.com", re(/^\/video\/(BV1[0-9A-Za-z]{9}|av\d{1,12})\/?$/))],
    account: [on("space.bilibili.com", re(/^\/(\d{1,12})(?:\/[a-z]*)?\/?$/))],
  },
  zhihu: {
    hosts: ["zhihu.com", "zhuanlan.zhihu.com"],
    post: [
      on("zhihu.com", re(/^\/question\/\d+\/answer\/(\d+)\/?$/)),
      on("zhihu.com", re(/^\/answer\/(\d+)\/?$/)),
      on("zhuanlan.zhihu.com", re(/^\/p\/(\d+)\/?$/)),
    ],
    account: [on("zhihu.com", re(/^\/(?:people|org)\/([A-Za-z0-9_-]{2,64})(?:\/[a-z]+)?\/?$/))],
  },
  kuaishou: {
    hosts: ["kuaishou.com"],
    post: [re(/^\/short-video\/([A-Za-z0-9_-]{8,32})\/?$/)],
    account: [re(/^\/profile\/([A-Za-z0-9_-]{6,40})\/?$/)],
  },
  youtube: {
    hosts: ["youtube.com", "youtu.be", "music.youtube.com"],
    post: [
      (path, url) =>
        bareHost(url) !== "youtu.be" && path === "/watch" && /^[A-Za-z0-9_-]{11}$/.test(url.searchParams.get("v") ?? "")
          ? url.searchParams.get("v")
          : null,
      on("youtube.com", re(/^\/(?:shorts|live|embed)\/([A-Za-z0-9_-]{11})\/?$/)),
      on("youtu.be", re(/^\/([A-Za-z0-9_-]{11})\/?$/)),
    ],
    account: [
      on("youtube.com", re(/^\/(@[A-Za-z0-9._-]{3,30})(?:\/[a-z]+)?\/?$/)),
      on("youtube.com", re(/^\/channel\/(UC[A-Za-z0-9_-]{22})(?:\/[a-z]+)?\/?$/)),
    ],
  },
};

/** Link shorteners: the post or account is known only after opening the link. */
const SHORT_HOSTS: Readonly<Record<string, Platform>> = {
  "b23.tv": "bilibili",
  "bili2233.cn": "bilibili",
  "xhslink.com": "xiaohongshu",
  "v.douyin.com": "douyin",
  "t.co": "x",
  "t.cn": "weibo",
  "v.kuaishou.com": "kuaishou",
  "kuaishou.cn": "kuaishou",
  "link.zhihu.com": "zhihu",
  "url.cn": "wechat",
};

/** The host without `www.`, `m.` and `mobile.`, lower-case. */
function bareHost(url: URL): string {
  return url.hostname.toLowerCase().replace(/^(?:www|m|mobile)\./, "");
}

const PLATFORM_ID = new RegExp(`^(${PLATFORMS.join("|")}):(?!//)(\\S{1,512})$`);

function shortLink(link: string): string {
  return link.length > 120 ? `${link.slice(0, 117)}...` : link;
}

/** The platform a link's host belongs to, if it is one of the ten. @group Parsing */
export function platformOfHost(url: URL): Platform | null {
  const host = bareHost(url);
  return PLATFORMS.find((p) => SHAPES[p].hosts.includes(host)) ?? null;
}

/**
 * Tells which post or account `link` points at. Accepts the public link shapes of the ten platforms (post
 * pages for `post`, account pages for `account`) and `<platform>:<id>`.
 * @group Parsing
 */
export function resolveLink(link: string, kind: LinkKind): LinkResolution {
  const shown = shortLink(link);
  const what = kind === "post" ? "post" : "account";
  const pair = PLATFORM_ID.exec(link);
  if (pair) {
    let id = pair[2]!;
    try {
      id = decodeURIComponent(id);
    } catch {
      // keep the id as sent
    }
    return { ok: true, target: { link, platform: pair[1] as Platform, kind, id } };
  }
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return {
      ok: false,
      message: `\`${shown}\` is neither a link nor \`<platform>:<id>\`; send the ${what}'s full link or \`<platform>:<id>\`.`,
    };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return {
      ok: false,
      message: `The platform of \`${shown}\` cannot be told; send the ${what}'s full link on one of the ten platforms, or \`<platform>:<id>\`.`,
    };
  }
  const host = bareHost(url);
  const shortener = SHORT_HOSTS[url.hostname.toLowerCase()] ?? SHORT_HOSTS[host];
  const redditShare =
    host === "reddit.com" && /^\/r\/[^/]+\/s\/[A-Za-z0-9]+\/?$/.test(url.pathname) ? "reddit" : undefined;
  if (shortener || redditShare) {
    const p = shortener ?? redditShare!;
    return {
      ok: false,
      message:
        `\`${shown}\` is a short link (${p}); which ${what} it points at cannot be told ` +
        `without opening it. Send the full link of the ${what}, or \`${p}:<id>\`.`,
    };
  }
  const platform = platformOfHost(url);
  if (!platform) {
    return {
      ok: false,
      message: `The platform of \`${shown}\` cannot be told; send the ${what}'s full link on one of the ten platforms, or \`<platform>:<id>\`.`,
    };
  }
  const shape = SHAPES[platform];
  const path = url.pathname;
  for (const m of kind === "post" ? shape.post : shape.account) {
    const id = m(path, url);
    if (id) return { ok: true, target: { link, platform, kind, id } };
  }
  const other = (kind === "post" ? shape.account : shape.post).some((m) => m(path, url) !== null);
  if (other) {
    return {
      ok: false,
      message:
        `\`${shown}\` is a link to ${kind === "post" ? "an account" : "a post"} ` +
        `on ${platform}, not ${kind === "post" ? "a post" : "an account"}; send the ${what}'s own link.`,
    };
  }
  return {
    ok: false,
    message: `\`${shown}\` is no ${what} page on ${platform} (the ${what} cannot be told from it); send the ${what}'s full link, or \`${platform}:<id>\`.`,
  };
}

/** Why the links of a tool's `targets` or `accounts` were refused (see `resolveLinks`). @group Requests */
export type LinksRefusal =
  | { code: "invalid_params"; param: "targets" | "accounts"; message: string }
  | {
      code: "not_supported";
      reason: "no_such_capability";
      param: "targets" | "accounts";
      message: string;
      allowed: Platform[];
    };

/**
 * The links of a tool's `targets` or `accounts`, told apart by `resolveLink` (`invalid_params` naming the
 * parameter for a link that cannot be), each on a platform that offers every one of `operations` (else
 * `not_supported` `no_such_capability`, `allowed` the platforms that do, D41). `offering` says which platforms
 * offer an operation: the server asks its providers, the mock its catalog.
 * @group Parsing
 */
export function resolveLinks(
  links: readonly string[],
  kind: LinkKind,
  param: "targets" | "accounts",
  operations: readonly string[],
  offering: (operation: string) => Platform[],
): ResolvedLink[] | LinksRefusal {
  const out: ResolvedLink[] = [];
  for (const link of links) {
    const r = resolveLink(link, kind);
    if (!r.ok) return { code: "invalid_params", param, message: r.message };
    for (const op of operations) {
      const allowed = offering(op);
      if (!allowed.includes(r.target.platform)) {
        return {
          code: "not_supported",
          reason: "no_such_capability",
          param,
          message: `${r.target.platform} does not offer ${op}, which this tool reads for \`${link}\`; ${allowed.join(", ")} do.`,
          allowed,
        };
      }
    }
    out.push(r.target);
  }
  return out;
}

/** Why `batch_stats` refused `include` (see `refuseCommentsWithout`). @group Requests */
export interface IncludeRefusal {
  code: "invalid_params";
  param: "include";
  message: string;
  allowed: ["metrics"];
}

/**
 * `batch_stats` with `include` naming comments: the refusal naming `include` when a target's platform offers no
 * comments (`allowed`: metrics only), else null. `offering` says which platforms offer an operation, as for
 * `resolveLinks`.
 * @group Requests
 */
export function refuseCommentsWithout(
  targets: readonly ResolvedLink[],
  offering: (operation: string) => Platform[],
): IncludeRefusal | null {
  const withComments = offering("comments");
  const without = targets.find((t) => !withComments.includes(t.platform));
  if (!without) return null;
  return {
    code: "invalid_params",
    param: "include",
    message: `\`include\` does not offer comments for this call: ${without.platform} posts have no public comments (\`${without.link}\`).`,
    allowed: ["metrics"],
  };
}
