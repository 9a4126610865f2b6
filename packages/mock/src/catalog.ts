/**
 * What the mock's gateway offers (D41), as data the package ships: the operations of each platform — the capabilities
 * fixture's, plus the typed operations this table gives each platform — and the parameter values a platform does not
 * offer on an operation it has. `GET /v1/capabilities` lists this catalog, and every capability gap the mock answers
 * is read from it: a platform without the operation is `400 not_supported` (`no_such_capability`), a platform with
 * the operation but not the value is an HTTP 200 `not_supported` answer, and `platforms=all` leaves both out.
 */
import { PLATFORMS, type OperationId, type OperationInfo, type Platform } from "@sdgw/types";
import { OPERATIONS } from "@sdgw/validators";
import { FIXTURES, ROUTES } from "./generated/routes.ts";

/** The six operations with a typed route, by catalog name. */
export type TypedName = "search" | "trending" | "detail" | "comments" | "user_profile" | "user_posts";

/** Each typed operation: its route, the operation whose body `POST /v1/call/<platform>.<name>` takes, and its wording. */
const TYPED: Record<TypedName, { route: string; body: OperationId; description: (p: string) => string }> = {
  search: { route: "/v1/search", body: "searchPost", description: (p) => `Search posts or users of ${p} · 搜索${p}内容或用户` },
  trending: { route: "/v1/trending", body: "trending", description: (p) => `The trending list of ${p} · ${p}热榜` },
  detail: { route: "/v1/detail", body: "detail", description: (p) => `Details and stats of ${p} posts · ${p}作品详情与数据` },
  comments: { route: "/v1/comments", body: "comments", description: (p) => `Comments of a ${p} post · ${p}作品评论` },
  user_profile: { route: "/v1/user_profile", body: "userProfile", description: (p) => `Profile of a ${p} account · ${p}账号资料` },
  user_posts: { route: "/v1/user_posts", body: "userPosts", description: (p) => `Posts of a ${p} account · ${p}账号作品` },
};

const ALL_TYPED = Object.keys(TYPED) as TypedName[];

/** The typed operations each platform offers: all six, but wechat has no trending list and no public comments. */
const OFFERS: Readonly<Record<Platform, readonly TypedName[]>> = {
  xiaohongshu: ALL_TYPED,
  douyin: ALL_TYPED,
  x: ALL_TYPED,
  reddit: ALL_TYPED,
  wechat: ["search", "detail", "user_profile", "user_posts"],
  weibo: ALL_TYPED,
  bilibili: ALL_TYPED,
  zhihu: ALL_TYPED,
  kuaishou: ALL_TYPED,
  youtube: ALL_TYPED,
};

/** Platforms where `scope` narrows a search or a trending list (D18); their typed ops list it as a parameter. */
const SCOPED: readonly Platform[] = ["reddit", "weibo", "bilibili", "zhihu", "youtube"];

/** A parameter value a platform does not offer on an operation it has (D41). */
export interface ValueGap {
  platform: Platform;
  /** The catalog name of the operation (`search`). */
  operation: string;
  param: string;
  value: string;
  /** Why, as the platform's own limit ("it reads official-account articles only"). */
  because: string;
}

/** The parameter values each platform does not offer (D41): what its content or its API has no notion of. */
export const VALUE_GAPS: readonly ValueGap[] = [
  { platform: "xiaohongshu", operation: "search", param: "content_type", value: "text", because: "its notes are image or video notes" },
  { platform: "douyin", operation: "search", param: "content_type", value: "text", because: "it is a video platform" },
  { platform: "kuaishou", operation: "search", param: "content_type", value: "text", because: "it is a video platform" },
  { platform: "wechat", operation: "search", param: "content_type", value: "video", because: "its search reads official-account articles only" },
  { platform: "bilibili", operation: "search", param: "content_type", value: "image", because: "it has videos and articles, not image posts" },
  { platform: "youtube", operation: "search", param: "content_type", value: "image", because: "it is a video platform" },
  { platform: "x", operation: "search", param: "sort", value: "most_collected", because: "it shows no collect counts" },
  { platform: "reddit", operation: "search", param: "sort", value: "most_collected", because: "it keeps saves private" },
  { platform: "youtube", operation: "search", param: "sort", value: "most_collected", because: "it shows no collect counts" },
];

/** Parameters of a typed operation as the catalog lists them: its route's body but `platform`, `platforms` (and `scope` where it means nothing). */
function typedParams(platform: Platform, name: TypedName): string[] {
  const body = Object.keys(OPERATIONS[TYPED[name].body].body?.params ?? {});
  return body.filter((p) => p !== "platform" && p !== "platforms" && (p !== "scope" || SCOPED.includes(platform)));
}

/** The capabilities fixture's answer: its operations are in the catalog as they are written there. */
const FIXTURE = FIXTURES[ROUTES.listCapabilities.defaultFixture ?? ""] as { operations?: OperationInfo[] } | undefined;
const FROM_FIXTURE = FIXTURE?.operations ?? [];

/**
 * Every operation of the mock's gateway, platform by platform (in the order of the platforms): the six typed ones
 * the platform offers (the fixture's entry where it has one), then the fixture's other ops of that platform.
 */
export const CATALOG: readonly OperationInfo[] = Object.freeze(
  PLATFORMS.flatMap((platform) => {
    const typed = OFFERS[platform].map(
      (name): OperationInfo =>
        FROM_FIXTURE.find((o) => o.op === `${platform}.${name}`) ?? {
          op: `${platform}.${name}` as OperationInfo["op"],
          platform,
          name,
          route: TYPED[name].route,
          description: TYPED[name].description(platform),
          charged: true,
          price_credits: 1,
          pricing: "standard",
          params: typedParams(platform, name),
        },
    );
    const others = FROM_FIXTURE.filter((o) => o.platform === platform && !typed.some((t) => t.op === o.op));
    return [...typed, ...others];
  }),
);

/** The catalog entry of `<platform>.<name>`, if the catalog has it. */
export function catalogEntry(op: string): OperationInfo | undefined {
  return CATALOG.find((o) => o.op === op);
}

/** Whether a platform offers an operation (by catalog name). */
export function offers(platform: string, name: string): boolean {
  return catalogEntry(`${platform}.${name}`) !== undefined;
}

/** The platforms that offer an operation, in the order of the platforms. */
export function platformsOffering(name: string): Platform[] {
  return PLATFORMS.filter((p) => offers(p, name));
}

/** Whether a catalog name is one of the six with a typed route. */
export function isTypedName(name: string): name is TypedName {
  return Object.hasOwn(TYPED, name);
}

/** The operation whose body `POST /v1/call/<platform>.<name>` of a typed name takes (`searchPost` for `search`). */
export function typedBody(name: TypedName): OperationId {
  return TYPED[name].body;
}

/** The catalog name a charging route of the typed family answers (`search` for both searches); undefined for the others. */
export function typedNameOf(op: OperationId): TypedName | undefined {
  const names: Partial<Record<OperationId, TypedName>> = { search: "search", searchPost: "search", trending: "trending", detail: "detail", comments: "comments", userProfile: "user_profile", userPosts: "user_posts" };
  return names[op];
}

const list = (names: readonly string[]) => (names.length <= 1 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`);
const verb = (names: readonly string[]) => (names.length === 1 ? "does" : "do");

/** The gap of `platform` for these parameters of `operation`, if it does not offer one of their values. */
export function valueGap(platform: string, operation: string, params: Readonly<Record<string, unknown>>): ValueGap | undefined {
  return VALUE_GAPS.find((g) => g.platform === platform && g.operation === operation && params[g.param] === g.value);
}

/** Why a platform cannot answer an operation with these parameters (the message of its `not_supported`), or undefined when it can. */
export function unsupported(platform: string, operation: string, params: Readonly<Record<string, unknown>>): string | undefined {
  if (!offers(platform, operation)) {
    const others = platformsOffering(operation);
    return others.length ? `${platform} does not offer ${operation}; ${list(others)} ${verb(others)}. Nothing was charged for ${platform}.` : `No platform offers ${operation}. Nothing was charged.`;
  }
  const gap = valueGap(platform, operation, params);
  if (!gap) return undefined;
  const others = platformsOffering(operation).filter((p) => !valueGap(p, operation, params) && p !== platform);
  return `${platform} ${operation} does not offer ${gap.param}=${gap.value}: ${gap.because}. ${others.length ? `${list(others)} ${verb(others)}. ` : ""}Nothing was charged for ${platform}.`;
}

/** What `platforms=all` means for an operation with these parameters: the platforms that can answer it, and why the others are left out. */
export function expandAll(operation: string, params: Readonly<Record<string, unknown>>): { platforms: Platform[]; left: Array<{ platform: Platform; why: string }> } {
  const platforms: Platform[] = [];
  const left: Array<{ platform: Platform; why: string }> = [];
  for (const p of PLATFORMS) {
    if (!offers(p, operation)) left.push({ platform: p, why: `does not offer ${operation}` });
    else {
      const gap = valueGap(p, operation, params);
      if (gap) left.push({ platform: p, why: `does not offer ${gap.param}=${gap.value}` });
      else platforms.push(p);
    }
  }
  return { platforms, left };
}

/** The warning of a `platforms=all` answer (D41): what it expanded to, and what it left out and why. */
export function expandedWarning(expanded: ReturnType<typeof expandAll>): string {
  const { platforms, left } = expanded;
  const out = left.length ? `; left out ${list(left.map((l) => `${l.platform} (${l.why})`))}` : "";
  return `platforms=all expanded to ${platforms.length} platforms: ${platforms.join(", ")}${out}`;
}
