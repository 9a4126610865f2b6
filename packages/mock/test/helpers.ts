/** Shared by the mock's tests: a request helper, and one valid request of every operation. */
import type { OperationId } from "@sdgw/types";

/** The base address the tests' mocks answer for (no such host: MSW answers it). */
export const BASE = "http://gw.test";
/** The default key with `read_data`. */
export const KEY = "sdgw_test_key";
/** The default key without `read_data`. */
export const NOSCOPE = "sdgw_noscope_key";

let seq = 0;
/** A fresh Idempotency-Key. */
export const idem = (): string => `test-${process.pid}-${++seq}`;

/** What came back. */
export interface Got {
  status: number;
  headers: Headers;
  /** The JSON body (undefined for text answers). */
  body: any;
  text: string;
}

/** One request. */
export interface Req {
  method?: "GET" | "POST" | "DELETE";
  path: string;
  query?: Record<string, string | string[]>;
  body?: unknown;
  /** The raw body text (overrides `body`). */
  raw?: string;
  headers?: Record<string, string>;
  /** The key sent in X-API-Key; `null` sends none. Default {@link KEY}. */
  key?: string | null;
}

/** Sends a request to the mocked gateway (at `base`: default the in-process mock's {@link BASE}). */
export async function send(req: Req, base: string = BASE): Promise<Got> {
  const url = new URL(req.path, base);
  for (const [k, v] of Object.entries(req.query ?? {})) for (const x of [v].flat()) url.searchParams.append(k, x);
  const headers: Record<string, string> = { ...req.headers };
  const key = req.key === undefined ? KEY : req.key;
  if (key !== null) headers["X-API-Key"] = key;
  const init: RequestInit = { method: req.method ?? "GET", headers };
  if (req.raw !== undefined || req.body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = req.raw ?? JSON.stringify(req.body);
  }
  const res = await fetch(url, init);
  const text = await res.text();
  const json = (res.headers.get("content-type") ?? "").includes("application/json");
  return { status: res.status, headers: res.headers, body: json && text ? JSON.parse(text) : undefined, text };
}

/** A valid request of one operation, and what shape its answer has. */
export interface Sample {
  op: OperationId;
  label: string;
  req: Req;
  /** The answer is a fanout answer (entries take the search table's codes only). */
  fanout?: boolean;
  /** The answer is a targets answer. */
  targets?: boolean;
}

const post = (path: string, body: unknown, key?: string | null): Req => ({
  method: "POST",
  path,
  body,
  ...(key !== undefined ? { key } : {}),
});

/** One request of every operation (and the fanout and targets shapes), valid by the contract; every tool's plan inline (≤ 10 calls, D51). */
export const SAMPLES: Sample[] = [
  {
    op: "search",
    label: "search (one platform)",
    req: { path: "/v1/search", query: { platform: "xiaohongshu", query: "露营装备" } },
  },
  {
    op: "search",
    label: "search (fanout)",
    fanout: true,
    req: { path: "/v1/search", query: { platforms: "x,reddit", query: "typescript 7" } },
  },
  { op: "searchPost", label: "searchPost", req: post("/v1/search", { platform: "bilibili", query: "老房改造" }) },
  { op: "trending", label: "trending", req: post("/v1/trending", { platform: "weibo" }) },
  {
    op: "trending",
    label: "trending (fanout)",
    fanout: true,
    req: post("/v1/trending", { platforms: ["douyin", "bilibili"] }),
  },
  {
    op: "detail",
    label: "detail",
    req: post("/v1/detail", { platform: "bilibili", url: "https://www.bilibili.com/video/BV1xK4y1a7Zq" }),
  },
  {
    op: "detail",
    label: "detail (targets)",
    targets: true,
    req: post("/v1/detail", { platform: "xiaohongshu", id: ["6afd23b0000000001d03b7c4", "6af9a615000000001e0347a2"] }),
  },
  { op: "comments", label: "comments", req: post("/v1/comments", { platform: "reddit", id: "t3_1gq8x2k", limit: 5 }) },
  {
    op: "userProfile",
    label: "userProfile",
    req: post("/v1/user_profile", { platform: "zhihu", id: "zhang-jia-wei" }),
  },
  {
    op: "userPosts",
    label: "userPosts",
    req: post("/v1/user_posts", {
      platform: "douyin",
      url: "https://www.douyin.com/user/MS4wLjABAAAAv7iSuuXDJGDvJkmH",
    }),
  },
  {
    op: "callOperation",
    label: "callOperation",
    req: post("/v1/call/bilibili.video_danmaku", { bvid: "BV1xK4y1a7Zq", limit: 10 }),
  },
  {
    op: "brandBuzz",
    label: "brandBuzz",
    req: post("/v1/tools/brand_buzz", { query: "瑞幸咖啡", platforms: ["xiaohongshu", "weibo", "douyin"] }),
  },
  {
    op: "commentInsights",
    label: "commentInsights",
    req: post("/v1/tools/comment_insights", { targets: ["https://www.bilibili.com/video/BV1xK4y1a7Zq"] }),
  },
  {
    op: "accountWatch",
    label: "accountWatch",
    req: post("/v1/tools/account_watch", { accounts: ["https://x.com/vercel"], range: "7d" }),
  },
  {
    op: "findCreators",
    label: "findCreators",
    req: post("/v1/tools/find_creators", { query: "home espresso", platforms: ["youtube", "reddit"], count: 3 }),
  },
  {
    op: "creatorCard",
    label: "creatorCard",
    req: post("/v1/tools/creator_card", { accounts: ["https://space.bilibili.com/946974"], include: ["metrics"] }),
  },
  {
    op: "batchStats",
    label: "batchStats",
    req: post("/v1/tools/batch_stats", { targets: ["https://www.douyin.com/video/7301234567890123456"] }),
  },
  {
    op: "viralFinder",
    label: "viralFinder",
    req: post("/v1/tools/viral_finder", { query: "AI 绘画", platforms: ["douyin", "kuaishou"], count: 3 }),
  },
  { op: "findOperation", label: "findOperation", req: post("/v1/find", { query: "弹幕", limit: 3 }, null) },
  { op: "listCapabilities", label: "listCapabilities", req: { path: "/v1/capabilities", key: null } },
  { op: "getAccount", label: "getAccount", req: { path: "/v1/account" } },
  { op: "listSchedules", label: "listSchedules", req: { path: "/v1/schedules" } },
  { op: "deleteSchedule", label: "deleteSchedule", req: { method: "DELETE", path: "/v1/schedules/sch_4Fw1Qz8T" } },
  // The handle is filled in by the test from a fresh run (a slow POST /v1/search, single platform).
  { op: "getResult", label: "getResult", req: { path: "/v1/results/{handle}" } },
  { op: "getOpenApiDocument", label: "getOpenApiDocument", req: { path: "/openapi.json", key: null } },
];

/** Starts a run (202) with a slow single-platform POST /v1/search; answers its handle. */
export async function startRun(key: string = KEY): Promise<string> {
  const got = await send({
    method: "POST",
    path: "/v1/search",
    body: { platform: "bilibili", query: "slow 老房改造" },
    key,
    headers: { "Idempotency-Key": idem() },
  });
  if (got.status !== 202) throw new Error(`expected 202, got ${got.status}: ${got.text}`);
  return got.body.handle as string;
}
