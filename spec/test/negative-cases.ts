/**
 * Negative payloads (shared by the spec tests and the generated validators' tests): each breaks exactly one rule of
 * the seed (or of a decision) and must be rejected, while the
 * valid base it was made from is accepted. Written as `[rule, schema, make]` rows so a new rule is one line.
 */
export type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- test payloads are free-form JSON

/** Drops the `undefined` members the rows use to delete a field. */
export const strip = (v: Json): Json => JSON.parse(JSON.stringify(v));

const item = (): Json => ({
  kind: "item",
  id: "6734a1f2000000001d03b7c4",
  url: "https://www.xiaohongshu.com/explore/6734a1f2000000001d03b7c4",
  author: {
    name: "山野小鹿",
    id: "5f1c2a3b",
    url: "https://www.xiaohongshu.com/user/profile/5f1c2a3b",
    followers: 48210,
  },
  published_at: "2026-11-18T12:04:00+08:00",
  metrics: { likes: 3120, collects: 2890, comments: 214, shares: 96, views: 88000 },
  media: [{ type: "video", url: "https://sns-video.xhscdn.com/a.mp4", duration_s: 42.5 }],
  reply_count: 3,
  platform_extra: { note_type: "video", tags: ["露营", "装备"] },
  title: "第一次露营必备清单",
  text: "新手不踩坑",
});
const ok = (): Json => ({
  request_id: "req_01JD3Y2K8M5Q",
  schema_version: "v1",
  fetched_at: "2026-11-21T08:30:00Z",
  status: "ok",
  applied_params: { platform: "xiaohongshu", query: "露营", count: 10, platforms: ["x", "reddit"], fresh: true },
  warnings: [],
  items: [item()],
  page: { has_more: true, cursor: "eyJwIjoyfQ" },
  platform: "xiaohongshu",
  billing: { cost: 1, balance: 4999, unit: "credits", pricing: "standard" },
});
const failed = (status: string, error: Json): Json => ({
  ...ok(),
  status,
  items: [],
  page: undefined,
  error,
  billing: { cost: 0, balance: 4999, unit: "credits" },
});
const rateLimited = (): Json =>
  failed("error", { code: "rate_limited", message: "Too many calls.", retryable: true, retry_after: 2 });
const leaderboard = (): Json => ({
  kind: "leaderboard",
  rank: 1,
  title: "#双十一#",
  heat: 4821337,
  url: "https://s.weibo.com/weibo?q=%23%E5%8F%8C%E5%8D%81%E4%B8%80%23",
  query: "双十一",
});
const distribution = (): Json => ({
  kind: "distribution",
  dimension: "platform",
  unit: "ratio",
  buckets: [
    { label: "weibo", value: 0.6 },
    { label: "douyin", value: 0.4 },
  ],
});
const timeseries = (): Json => ({
  kind: "timeseries",
  metric: "mentions",
  unit: "posts",
  points: [{ t: "2026-11-20T00:00:00Z", value: 120 }],
});
const profile = (): Json => ({ kind: "profile_card", id: "vercel", name: "Vercel", followers: 500000, verified: true });
const entry = (status: string): Json =>
  status === "ok"
    ? { status, applied_params: {}, warnings: [], items: [item()] }
    : status === "empty"
      ? { status, applied_params: {}, warnings: [], items: [] }
      : {
          status,
          applied_params: {},
          warnings: [],
          items: [],
          error: {
            code: status === "error" ? "invalid_params" : status,
            message: "m",
            retryable: false,
            ...(status === "not_supported" ? { action_url: "https://console.sdgw.dev/docs" } : {}),
          },
        };
const fanout = (status: string, entries: Record<string, string>): Json => ({
  request_id: "req_1",
  schema_version: "v1",
  fetched_at: "2026-11-21T08:30:00Z",
  status,
  warnings: [],
  billing: { cost: status === "ok" || status === "empty" ? 2 : 0, balance: 10, unit: "credits" },
  fanout: Object.fromEntries(Object.entries(entries).map(([p, s]) => [p, entry(s)])),
});
const handle = (): Json => ({
  request_id: "req_2",
  schema_version: "v1",
  status: "running",
  handle: "h_8QkL2mZr4x",
  retry_after_seconds: 5,
  billing: {
    cost_credits: 0,
    balance_credits: 5000,
    today_spend_credits: 3,
    daily_limit_credits: null,
    daily_remaining_credits: null,
    display: "5000 credits left.",
  },
  waves: { planned: 2, done: 1 },
  charge: { quote_credits: 3, charged_credits: 0 },
});
const err = (code: string, extra: Json = {}): Json => ({
  request_id: "req_3",
  schema_version: "v1",
  code,
  message: "m",
  ...extra,
});
const search = (): Json => ({ platform: "weibo", query: "双十一", count: 20, cursor: "c" });

/** [rule broken, schema, valid base, broken payload] */
export const CASES: Array<[string, string, () => Json, (v: Json) => Json]> = [
  ["a field not in the seed", "SearchEnvelope", ok, (v) => ({ ...v, source: "cache" })],
  ["ok with no items", "SearchEnvelope", ok, (v) => ({ ...v, items: [] })],
  [
    "empty with an item",
    "SearchEnvelope",
    () => ({ ...ok(), status: "empty", items: [] }),
    (v) => ({ ...v, items: [item()] }),
  ],
  ["ok with cost 0", "SearchEnvelope", ok, (v) => ({ ...v, billing: { ...v.billing, cost: 0 } })],
  [
    "empty with cost 0",
    "SearchEnvelope",
    () => ({ ...ok(), status: "empty", items: [] }),
    (v) => ({ ...v, billing: { ...v.billing, cost: 0 } }),
  ],
  ["error with cost > 0", "SearchEnvelope", rateLimited, (v) => ({ ...v, billing: { ...v.billing, cost: 1 } })],
  ["error without an error object", "SearchEnvelope", rateLimited, (v) => ({ ...v, error: undefined })],
  ["ok with an error object", "SearchEnvelope", ok, (v) => ({ ...v, error: rateLimited().error })],
  ["error with items", "SearchEnvelope", rateLimited, (v) => ({ ...v, items: [item()] })],
  [
    "search error with a code outside the four (not_found)",
    "SearchEnvelope",
    rateLimited,
    (v) => ({ ...v, error: { code: "not_found", message: "m", retryable: false } }),
  ],
  [
    "not_supported status with a timeout code",
    "SearchEnvelope",
    () =>
      failed("not_supported", {
        code: "not_supported",
        message: "m",
        retryable: false,
        action_url: "https://sdgw.dev/d",
      }),
    (v) => ({ ...v, error: { code: "timeout", message: "m", retryable: false } }),
  ],
  [
    "timeout status with an upstream_error code",
    "SearchEnvelope",
    () => failed("timeout", { code: "timeout", message: "m", retryable: false }),
    (v) => ({
      ...v,
      error: { code: "upstream_error", message: "m", retryable: true, action_url: "https://sdgw.dev/s" },
    }),
  ],
  ["status outside the five (running in an envelope)", "SearchEnvelope", ok, (v) => ({ ...v, status: "running" })],
  ["has_more true without cursor", "SearchEnvelope", ok, (v) => ({ ...v, page: { has_more: true } })],
  ["an empty cursor", "SearchEnvelope", ok, (v) => ({ ...v, page: { has_more: false, cursor: "" } })],
  ["an eleventh platform", "SearchEnvelope", ok, (v) => ({ ...v, platform: "tiktok" })],
  ["an empty warning", "SearchEnvelope", ok, (v) => ({ ...v, warnings: [""] })],
  ["schema_version other than v1", "SearchEnvelope", ok, (v) => ({ ...v, schema_version: "v2" })],
  ["an empty request_id", "SearchEnvelope", ok, (v) => ({ ...v, request_id: "" })],
  ["fetched_at without a time zone", "SearchEnvelope", ok, (v) => ({ ...v, fetched_at: "2026-11-21T08:30:00" })],
  ["fetched_at on 2025-02-30", "SearchEnvelope", ok, (v) => ({ ...v, fetched_at: "2025-02-30T08:30:00Z" })],
  [
    "fetched_at on 2025-02-29 (not a leap year)",
    "SearchEnvelope",
    ok,
    (v) => ({ ...v, fetched_at: "2025-02-29T00:00:00Z" }),
  ],
  [
    "billing unit other than credits",
    "SearchEnvelope",
    ok,
    (v) => ({ ...v, billing: { ...v.billing, unit: "coins" } }),
  ],
  ["a field not in billing", "SearchEnvelope", ok, (v) => ({ ...v, billing: { ...v.billing, currency: "CNY" } })],
  ["a negative balance", "SearchEnvelope", ok, (v) => ({ ...v, billing: { ...v.billing, balance: -1 } })],
  [
    "pricing outside standard/placeholder",
    "SearchEnvelope",
    ok,
    (v) => ({ ...v, billing: { ...v.billing, pricing: "free" } }),
  ],
  [
    "applied_params holding an object (D1)",
    "SearchEnvelope",
    ok,
    (v) => ({ ...v, applied_params: { filter: { a: 1 } } }),
  ],
  ["applied_params holding null (D1)", "SearchEnvelope", ok, (v) => ({ ...v, applied_params: { cursor: null } })],
  ["likes of 2^53", "ContentItem", item, (v) => ({ ...v, metrics: { likes: 9007199254740992 } })],
  ["negative views", "ContentItem", item, (v) => ({ ...v, metrics: { views: -1 } })],
  ["a fractional follower count", "ContentItem", item, (v) => ({ ...v, author: { ...v.author, followers: 1.5 } })],
  ["an item without id", "ContentItem", item, (v) => ({ ...v, id: undefined })],
  ["an item with an empty title", "ContentItem", item, (v) => ({ ...v, title: "" })],
  ["a field not in items", "ContentItem", item, (v) => ({ ...v, score: 0.9 })],
  ["an author without name", "ContentItem", item, (v) => ({ ...v, author: { id: "a" } })],
  ["media of type gif", "ContentItem", item, (v) => ({ ...v, media: [{ type: "gif", url: "https://a.b/c.gif" }] })],
  [
    "media whose url is not a URI",
    "ContentItem",
    item,
    (v) => ({ ...v, media: [{ type: "image", url: "not a uri" }] }),
  ],
  [
    "a negative media duration",
    "ContentItem",
    item,
    (v) => ({ ...v, media: [{ type: "audio", url: "https://a.b/c.mp3", duration_s: -1 }] }),
  ],
  ["published_at of 2026-13-01", "ContentItem", item, (v) => ({ ...v, published_at: "2026-13-01T00:00:00Z" })],
  ["a kind outside the five", "Item", item, (v) => ({ ...v, kind: "video" })],
  ["rank 0", "LeaderboardItem", leaderboard, (v) => ({ ...v, rank: 0 })],
  ["negative heat", "LeaderboardItem", leaderboard, (v) => ({ ...v, heat: -5 })],
  ["a leaderboard without title", "LeaderboardItem", leaderboard, (v) => ({ ...v, title: undefined })],
  ["a distribution with no buckets", "DistributionItem", distribution, (v) => ({ ...v, buckets: [] })],
  ["a distribution unit of percent", "DistributionItem", distribution, (v) => ({ ...v, unit: "percent" })],
  ["a bucket without label", "DistributionItem", distribution, (v) => ({ ...v, buckets: [{ value: 1 }] })],
  ["a timeseries with no points", "TimeseriesItem", timeseries, (v) => ({ ...v, points: [] })],
  [
    "a timeseries point on 2026-11-31",
    "TimeseriesItem",
    timeseries,
    (v) => ({ ...v, points: [{ t: "2026-11-31T00:00:00Z", value: 1 }] }),
  ],
  ["a profile card without name", "ProfileCard", profile, (v) => ({ ...v, name: undefined })],
  ["verified as a string", "ProfileCard", profile, (v) => ({ ...v, verified: "yes" })],
  [
    "rate_limited without retry_after",
    "SearchEnvelope",
    rateLimited,
    (v) => ({ ...v, error: { ...v.error, retry_after: undefined } }),
  ],
  [
    "rate_limited with retry_after 0",
    "SearchEnvelope",
    rateLimited,
    (v) => ({ ...v, error: { ...v.error, retry_after: 0 } }),
  ],
  [
    "insufficient_balance without action_url",
    "SearchEnvelope",
    () =>
      failed("error", {
        code: "insufficient_balance",
        message: "m",
        retryable: false,
        action_url: "https://console.sdgw.dev/billing",
      }),
    (v) => ({ ...v, error: { ...v.error, action_url: undefined } }),
  ],
  [
    "an error object with a field not in the seed (fix)",
    "SearchEnvelope",
    rateLimited,
    (v) => ({ ...v, error: { ...v.error, fix: { note: "wait" } } }),
  ],
  [
    "an error message that is empty",
    "SearchEnvelope",
    rateLimited,
    (v) => ({ ...v, error: { ...v.error, message: "" } }),
  ],
  [
    "fanout ok with no ok platform (D4)",
    "FanoutAnswer",
    () => fanout("ok", { x: "ok", reddit: "timeout" }),
    (v) => ({ ...v, fanout: { reddit: v.fanout.reddit } }),
  ],
  [
    "fanout keyed by a non-platform",
    "FanoutAnswer",
    () => fanout("ok", { x: "ok" }),
    (v) => ({ ...v, fanout: { ...v.fanout, tiktok: entry("ok") } }),
  ],
  [
    "fanout error when every platform timed out (D4)",
    "FanoutAnswer",
    () => fanout("timeout", { x: "timeout", reddit: "timeout" }),
    (v) => ({ ...v, status: "error" }),
  ],
  [
    "fanout empty while a platform is ok (D4)",
    "FanoutAnswer",
    () => fanout("ok", { x: "ok", reddit: "empty" }),
    (v) => ({ ...v, status: "empty" }),
  ],
  [
    "fanout failure charged",
    "FanoutAnswer",
    () => fanout("error", { x: "error", reddit: "timeout" }),
    (v) => ({ ...v, billing: { ...v.billing, cost: 1 } }),
  ],
  [
    "a fanout entry with a field not in the seed",
    "FanoutAnswer",
    () => fanout("ok", { x: "ok" }),
    (v) => ({ ...v, fanout: { x: { ...v.fanout.x, platform: "x" } } }),
  ],
  ["a fanout with no platforms", "FanoutAnswer", () => fanout("ok", { x: "ok" }), (v) => ({ ...v, fanout: {} })],
  ["a 202 that charged", "HandleAnswer", handle, (v) => ({ ...v, charge: { ...v.charge, charged_credits: 1 } })],
  ["a 202 with billing cost", "HandleAnswer", handle, (v) => ({ ...v, billing: { ...v.billing, cost_credits: 3 } })],
  ["a 202 with status ok", "HandleAnswer", handle, (v) => ({ ...v, status: "ok" })],
  ["a 202 with retry_after_seconds 0", "HandleAnswer", handle, (v) => ({ ...v, retry_after_seconds: 0 })],
  ["a 202 with a fractional retry_after_seconds", "HandleAnswer", handle, (v) => ({ ...v, retry_after_seconds: 1.5 })],
  ["a 202 without waves", "HandleAnswer", handle, (v) => ({ ...v, waves: undefined })],
  [
    "a daily limit with a remaining of null",
    "HandleAnswer",
    handle,
    (v) => ({ ...v, billing: { ...v.billing, daily_limit_credits: 100 } }),
  ],
  [
    "a handle with a dot (positions belong to more.handle)",
    "HandleAnswer",
    handle,
    (v) => ({ ...v, handle: "h_1.20" }),
  ],
  [
    "an unknown error code",
    "ErrorStructure",
    () => err("internal_error", { retryable: true, fix: { note: "Retry." } }),
    (v) => ({ ...v, code: "teapot" }),
  ],
  [
    "invalid_params marked retryable",
    "ErrorStructure",
    () => err("invalid_params", { retryable: false, fix: { param: "query" } }),
    (v) => ({ ...v, retryable: true }),
  ],
  [
    "invalid_params without fix.param",
    "ErrorStructure",
    () => err("invalid_params", { retryable: false, fix: { param: "query" } }),
    (v) => ({ ...v, fix: { note: "n" } }),
  ],
  [
    "an error without fix",
    "ErrorStructure",
    () => err("handle_expired", { retryable: false, fix: { note: "Send the call again." } }),
    (v) => ({ ...v, fix: undefined }),
  ],
  [
    "an error with an empty fix",
    "ErrorStructure",
    () => err("handle_expired", { retryable: false, fix: { note: "Send the call again." } }),
    (v) => ({ ...v, fix: {} }),
  ],
  [
    "an error without request_id",
    "ErrorStructure",
    () => err("handle_expired", { retryable: false, fix: { note: "n" } }),
    (v) => ({ ...v, request_id: undefined }),
  ],
  [
    "key_scope_denied allowing another permission",
    "ErrorStructure",
    () => err("key_scope_denied", { retryable: false, fix: { allowed: ["read_data"] } }),
    (v) => ({ ...v, fix: { allowed: ["write_data"] } }),
  ],
  [
    "rate_limited without reason",
    "ErrorStructure",
    () => err("rate_limited", { retryable: true, reason: "key_qps", retry_after: 1, fix: { note: "n" } }),
    (v) => ({ ...v, reason: undefined }),
  ],
  [
    "rate_limited with an unknown reason",
    "ErrorStructure",
    () => err("rate_limited", { retryable: true, reason: "key_qps", retry_after: 1, fix: { note: "n" } }),
    (v) => ({ ...v, reason: "too_fast" }),
  ],
  [
    "max_cost_exceeded without quote_credits",
    "ErrorStructure",
    () => err("max_cost_exceeded", { retryable: false, quote_credits: 33, fix: { param: "max_cost_credits" } }),
    (v) => ({ ...v, quote_credits: undefined }),
  ],
  [
    "max_cost_exceeded naming another parameter",
    "ErrorStructure",
    () => err("max_cost_exceeded", { retryable: false, quote_credits: 33, fix: { param: "max_cost_credits" } }),
    (v) => ({ ...v, fix: { param: "count" } }),
  ],
  [
    "daily_limit_reached with reason workspace",
    "ErrorStructure",
    () =>
      err("daily_limit_reached", {
        retryable: false,
        reason: "key",
        resets_at: "2026-11-22T00:00:00Z",
        fix: { action_url: "https://console.sdgw.dev/keys" },
      }),
    (v) => ({ ...v, reason: "workspace" }),
  ],
  [
    "daily_limit_reached without resets_at",
    "ErrorStructure",
    () =>
      err("daily_limit_reached", {
        retryable: false,
        reason: "key",
        resets_at: "2026-11-22T00:00:00Z",
        fix: { action_url: "https://console.sdgw.dev/keys" },
      }),
    (v) => ({ ...v, resets_at: undefined }),
  ],
  [
    "temporarily_unavailable daily_cap without resets_at",
    "ErrorStructure",
    () =>
      err("temporarily_unavailable", {
        retryable: true,
        reason: "daily_cap",
        resets_at: "2026-11-22T00:00:00Z",
        fix: { action_url: "https://status.sdgw.dev" },
      }),
    (v) => ({ ...v, resets_at: undefined }),
  ],
  [
    "unauthorized with a reason outside the seed's",
    "ErrorStructure",
    () =>
      err("unauthorized", {
        retryable: false,
        reason: "key_in_query",
        fix: { action_url: "https://console.sdgw.dev/keys" },
      }),
    (v) => ({ ...v, reason: "banned" }),
  ],
  [
    "free_failure_limit without retry_at",
    "ErrorStructure",
    () => err("free_failure_limit", { retryable: true, retry_at: "2026-11-21T08:35:00Z", fix: { note: "n" } }),
    (v) => ({ ...v, retry_at: undefined }),
  ],
  [
    "timeout as a non-200 error structure",
    "ErrorStructure",
    () => err("internal_error", { retryable: true, fix: { note: "Retry." } }),
    (v) => ({ ...v, code: "timeout", retryable: false }),
  ],
  [
    "more.handle without a position",
    "More",
    () => ({ handle: "h_8QkL2m.200", rows_left: 120, note: "Pass more.handle to the same tool." }),
    (v) => ({ ...v, handle: "h_8QkL2m" }),
  ],
  [
    "more with no rows left",
    "More",
    () => ({ handle: "h_8QkL2m.200", rows_left: 120, note: "Go on." }),
    (v) => ({ ...v, rows_left: 0 }),
  ],
  ["count 21", "SearchRequest", search, (v) => ({ ...v, count: 21 })],
  ["count 0", "SearchRequest", search, (v) => ({ ...v, count: 0 })],
  ["an empty query", "SearchRequest", search, (v) => ({ ...v, query: "" })],
  ["a query of 501 characters", "SearchRequest", search, (v) => ({ ...v, query: "搜".repeat(501) })],
  ["a negative whole-number query", "SearchRequest", search, (v) => ({ ...v, query: -3 })],
  [
    "six platforms",
    "SearchRequest",
    () => ({ platforms: ["x", "reddit"], query: "q" }),
    (v) => ({ ...v, platforms: ["x", "reddit", "weibo", "douyin", "zhihu", "bilibili"] }),
  ],
  [
    "duplicate platforms",
    "SearchRequest",
    () => ({ platforms: ["x", "reddit"], query: "q" }),
    (v) => ({ ...v, platforms: ["x", "x"] }),
  ],
  [
    "platforms as a string other than all",
    "SearchRequest",
    () => ({ platforms: "all", query: "q" }),
    (v) => ({ ...v, platforms: "some" }),
  ],
  ["both platform and platforms (D17)", "SearchRequest", search, (v) => ({ ...v, platforms: ["x"] })],
  ["neither platform nor platforms (D17)", "SearchRequest", search, (v) => ({ ...v, platform: undefined })],
  [
    "cursor with platforms (D19)",
    "SearchRequest",
    () => ({ platforms: ["x"], query: "q" }),
    (v) => ({ ...v, cursor: "c" }),
  ],
  ["a cursor of 20001 characters", "SearchRequest", search, (v) => ({ ...v, cursor: "c".repeat(20001) })],
  ["max_cost_credits -1", "SearchRequest", search, (v) => ({ ...v, max_cost_credits: -1 })],
  ["max_cost_credits 1.5", "SearchRequest", search, (v) => ({ ...v, max_cost_credits: 1.5 })],
  ["a parameter not of this call", "SearchRequest", search, (v) => ({ ...v, limit: 5 })],
  ["sort outside the five", "SearchRequest", search, (v) => ({ ...v, sort: "random" })],
  [
    "both id and url",
    "DetailRequest",
    () => ({ platform: "bilibili", id: "BV1xK4y1a7Zq" }),
    (v) => ({ ...v, url: "https://www.bilibili.com/video/BV1xK4y1a7Zq" }),
  ],
  [
    "neither id nor url",
    "DetailRequest",
    () => ({ platform: "bilibili", id: "BV1xK4y1a7Zq" }),
    (v) => ({ ...v, id: undefined }),
  ],
  [
    "21 ids in one request",
    "DetailRequest",
    () => ({ platform: "bilibili", id: ["a"] }),
    (v) => ({ ...v, id: Array.from({ length: 21 }, (_, i) => `BV${i}`) }),
  ],
  ["limit 51", "CommentsRequest", () => ({ platform: "reddit", id: "t3_1", limit: 50 }), (v) => ({ ...v, limit: 51 })],
  [
    "cursor with a list of targets",
    "CommentsRequest",
    () => ({ platform: "reddit", id: "t3_1", cursor: "c" }),
    (v) => ({ ...v, id: ["t3_1", "t3_2"] }),
  ],
  [
    "21 targets",
    "BatchStatsRequest",
    () => ({ targets: ["https://b23.tv/x"] }),
    (v) => ({ ...v, targets: Array.from({ length: 21 }, (_, i) => `https://b23.tv/${i}`) }),
  ],
  [
    "format xlsx",
    "BatchStatsRequest",
    () => ({ targets: ["https://b23.tv/x"], format: "csv" }),
    (v) => ({ ...v, format: "xlsx" }),
  ],
  [
    "include comments on creator_card",
    "CreatorCardRequest",
    () => ({ accounts: ["https://x.com/vercel"], include: ["posts"] }),
    (v) => ({ ...v, include: ["comments"] }),
  ],
  ["window 14d", "BrandBuzzRequest", () => ({ query: "瑞幸", window: "7d" }), (v) => ({ ...v, window: "14d" })],
  [
    "range 1y",
    "AccountWatchRequest",
    () => ({ accounts: ["https://x.com/vercel"], range: "today" }),
    (v) => ({ ...v, range: "1y" }),
  ],
  [
    "confirm as a string",
    "BrandBuzzRequest",
    () => ({ query: "瑞幸", confirm: false }),
    (v) => ({ ...v, confirm: "no" }),
  ],
  ["an Idempotency-Key with a space", "IdempotencyKey", () => "k-1", () => "k 1"],
];

/** Boundaries that are valid: [what, schema, value]. */
export const VALID: Array<[string, string, Json]> = [
  ["2024-02-29 (a leap day)", "ContentItem", { ...item(), published_at: "2024-02-29T23:59:59.123+08:00" }],
  ["likes of 2^53 - 1", "ContentItem", { ...item(), metrics: { likes: 9007199254740991 } }],
  ["count 1 and 20", "SearchRequest", { platform: "x", query: "q", count: 20 }],
  ["a query of 500 characters", "SearchRequest", { platform: "x", query: "搜".repeat(500) }],
  ["a whole-number query (D22)", "SearchRequest", { platform: "x", query: 2026 }],
  ["platforms all", "SearchRequest", { platforms: "all", query: "q" }],
  ["five platforms", "SearchRequest", { platforms: ["x", "reddit", "weibo", "douyin", "zhihu"], query: "q" }],
  ["a cursor of 20000 characters", "SearchRequest", { platform: "x", query: "q", cursor: "c".repeat(20000) }],
  ["max_cost_credits 0", "SearchRequest", { platform: "x", query: "q", max_cost_credits: 0 }],
  [
    "20 urls",
    "DetailRequest",
    { platform: "x", url: Array.from({ length: 20 }, (_, i) => `https://x.com/a/status/${i}`) },
  ],
  ["has_more false with a cursor", "Page", { has_more: false, cursor: "c" }],
  ["has_more false without a cursor", "Page", { has_more: false }],
  [
    "a fanout with mixed failures answering error (D4)",
    "FanoutAnswer",
    fanout("error", { x: "not_supported", reddit: "timeout" }),
  ],
  [
    "a fanout where every platform is not_supported",
    "FanoutAnswer",
    fanout("not_supported", { x: "not_supported", wechat: "not_supported" }),
  ],
  [
    "a 202 with a daily limit",
    "HandleAnswer",
    { ...handle(), billing: { ...handle().billing, daily_limit_credits: 100, daily_remaining_credits: 97 } },
  ],
  ["a 255-character Idempotency-Key", "IdempotencyKey", "~".repeat(255)],
];
