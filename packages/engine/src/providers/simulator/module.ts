/**
 * The shape of one platform folder (`src/providers/<platform>/`): its operations and capability gaps, a fake
 * upstream that writes the platform's own JSON (field names as the platform's API spells them), and pure mapping
 * functions from that JSON to the uniform items. A real connector would keep the mappings and replace the fakes
 * with HTTP calls.
 */
import type { ContentItem, Item, LeaderboardItem, Platform, ProfileCard } from "@sdgw/types";
import type { OperationSpec } from "../port.ts";
import type { Gen } from "./gen.ts";

/** What a fake needs: the generator, the topic written about, and fixed ids when the caller named them. */
export interface FakeContext {
  g: Gen;
  /** The search text, or a trending topic. */
  topic: string;
  /** The post's or account's id when the request named it. */
  id?: string;
  /** The author's id when posts of one account are made. */
  authorId?: string;
  /** For comments: the post they answer. */
  parentId?: string;
  /** For trends: the rank. */
  rank?: number;
  /** The op's parameters (catalog-only ops). */
  params?: Readonly<Record<string, unknown>>;
}

/** One platform folder. `P`, `U`, `C`, `T`: the native JSON of a post, an account, a comment, a trend. */
export interface PlatformModule<P = unknown, U = unknown, C = unknown, T = unknown> {
  platform: Platform;
  lang: "zh" | "en";
  /** Whether `scope` narrows searches here (D18). */
  scoped: boolean;
  operations: OperationSpec[];
  /** Null when the op with these parameters is offered; else one sentence why not. */
  unsupported(operation: string, params: Readonly<Record<string, unknown>>): string | null;
  /** The fake upstream: native JSON made from the generator, the same for the same context. */
  fake: {
    /** Writes one post (or video, note, thread) as the platform's API returns it. */
    post(c: FakeContext): P;
    /** Writes one account's profile as the platform's API returns it. */
    user(c: FakeContext): U;
    /** Writes one comment under `c.parentId` as the platform's API returns it. */
    comment(c: FakeContext): C;
    /** Writes one entry of the platform's trending list at rank `c.rank`. */
    trend(c: FakeContext): T;
    /** Catalog-only ops: the native rows, by op name. */
    extra?: Record<string, (c: FakeContext) => unknown>;
  };
  /** Pure mappings from the native JSON to the uniform items of the contract. */
  map: {
    /** Maps a native post to a `content` item (counts as numbers, dates as RFC 3339, links absolute). */
    post(raw: P): ContentItem;
    /** Maps a native account to a `profile` card. */
    user(raw: U): ProfileCard;
    /** Maps a native comment to a `content` item whose parent is the post it answers. */
    comment(raw: C): ContentItem;
    /** Maps a native trending entry to a `leaderboard` item. */
    trend(raw: T): LeaderboardItem;
    /** Catalog-only ops: maps each native row of the op of that name to an item. */
    extra?: Record<string, (raw: never) => Item>;
  };
  /** The post id a link points at, or null when it is not a link to a post of this platform. Pure. */
  postIdFromUrl(url: URL): string | null;
  /** The account id a link points at, or null. Pure. */
  userIdFromUrl(url: URL): string | null;
}

/** Declares a platform folder, keeping its native types. */
export function definePlatform<P, U, C, T>(m: PlatformModule<P, U, C, T>): PlatformModule<P, U, C, T> {
  return m;
}

const TYPED: Record<string, string> = {
  search: "Search posts or users of {P} · 搜索{Z}内容或用户",
  trending: "Trending topics of {P} · {Z}热榜",
  detail: "Details of {P} posts by id or link · {Z}内容详情",
  comments: "Comments of a {P} post · {Z}评论",
  user_profile: "Profile of a {P} account · {Z}账号资料",
  user_posts: "Posts of a {P} account · {Z}账号发布的内容",
};

/** The typed operations of a platform with their standard descriptions and price (1 credit). */
export function typedOps(platform: string, zh: string, names: readonly string[]): OperationSpec[] {
  return names.map((name) => ({
    name,
    description: TYPED[name]!.replace("{P}", platform).replace("{Z}", zh),
    price: 1,
    pricing: "standard",
  }));
}

/** The id a link names (a post's, or an account's), or null when it is not a link, or not one of this platform. Pure. */
export function idFromLink(
  m: Pick<PlatformModule, "postIdFromUrl" | "userIdFromUrl">,
  kind: "post" | "user",
  link: string,
): string | null {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return null;
  }
  return kind === "post" ? m.postIdFromUrl(url) : m.userIdFromUrl(url);
}

/** The host of a link without `www.` and `m.`. */
export function host(url: URL): string {
  return url.hostname.replace(/^(www|m)\./, "");
}

/** A title from a template, about `topic`. */
export function titleAbout(g: Gen, topic: string, templates: readonly string[]): string {
  return g.pick(templates).replace("{q}", topic);
}
