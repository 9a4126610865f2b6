/**
 * {@include ../README.md}
 *
 * @packageDocumentation
 * @module @sdgw/types
 */
import type { components, operations, paths } from "./generated/openapi.ts";

export type { components, operations, paths };
export {
  ANSWER_STATUSES,
  ERROR_CATALOGUE,
  ERROR_CODES,
  ITEM_KINDS,
  PLATFORMS,
  TOOL_NAMES,
  type ErrorCatalogueRow,
} from "./generated/catalogue.ts";

type Schemas = components["schemas"];

// ------------------------------------------------------------------------------------------------ scalars

/** One of the ten platforms: `xiaohongshu`, `douyin`, `x`, `reddit`, `wechat`, `weibo`, `bilibili`, `zhihu`, `kuaishou`, `youtube`. */
export type Platform = Schemas["Platform"];

/** One of the 19 error codes (none is charged). Their HTTP statuses and meanings: `ERROR_CATALOGUE`. */
export type ErrorCode = Schemas["ErrorCode"];

/** Status of a finished answer: `ok`, `empty`, `error`, `not_supported` or `timeout`. */
export type AnswerStatus = Schemas["AnswerStatus"];

/** One of the seven tools of `POST /v1/tools/{tool}`. */
export type ToolName = Schemas["ToolName"];

/** The `kind` of an item: `item`, `profile_card`, `leaderboard`, `distribution` or `timeseries`. */
export type ItemKind = Item["kind"];

/** The parameters as the server applied them (D1): strings, numbers, booleans or lists of those. */
export type AppliedParams = Schemas["AppliedParams"];

// ------------------------------------------------------------------------------------------------ envelopes

/**
 * The answer of `GET /v1/search` (and `POST /v1/search`) for one platform. Narrow on `status`: `ok` has
 * non-empty `items` and no `error`; `empty` no items; `error` an `error` with one of the seed's four codes
 * (`rate_limited`, `insufficient_balance`, `upstream_error`, `invalid_params`); `not_supported` and `timeout`
 * an `error` with that code. Failures cost 0.
 */
export type SearchEnvelope = Schemas["SearchEnvelope"];

/**
 * The answer of a data route other than search (trending, detail, comments, user profile, user posts, `call`)
 * for one target: as {@link SearchEnvelope}, and status `error` also takes `not_found`, `invalid_target` and
 * `temporarily_unavailable`, each with a `fix` (D13).
 */
export type DataEnvelope = Schemas["DataEnvelope"];

/** The answer for several platforms (`platforms`): one {@link FanoutEntry} per platform; `status` derives from them (D4). */
export type FanoutAnswer = Schemas["FanoutAnswer"];

/** One platform's result in a {@link FanoutAnswer}: the envelope's fields without the top-level ones; narrow on `status`. */
export type FanoutEntry = Schemas["FanoutEntry"];

/** One target's result in a {@link TargetsAnswer}: as {@link FanoutEntry}, with the error codes of D13. */
export type TargetEntry = Schemas["TargetEntry"];

/** The answer for a list of `id`s or `url`s (or a tool's `targets`): one {@link TargetCell} per value, in request order (D5). */
export type TargetsAnswer = Schemas["TargetsAnswer"];

/** A platform's result that has ended, in the `cells` of a 202 answer of a fanout (D5). */
export type PlatformCell = Schemas["PlatformCell"];

/** A target's result: an element of `TargetsAnswer.targets`, or of the `cells` of a 202 answer (D5). */
export type TargetCell = Schemas["TargetCell"];

/** A result that has already ended while the call goes on: a {@link PlatformCell} or a {@link TargetCell}. */
export type Cell = Schemas["Cell"];

/** A finished result as `GET /v1/results/{handle}` answers it: exactly what the original call would have answered. */
export type FinishedAnswer = Schemas["FinishedAnswer"];

/** The 202 answer of a call that goes on: read `handle` with `GET /v1/results/{handle}` after `retry_after_seconds`. Charge 0. */
export type HandleAnswer = Schemas["HandleAnswer"];

/** The finished answer of a tool run (D8), with the envelope's status rules; narrow on `status`. */
export type ToolAnswer = Schemas["ToolAnswer"];

/** The plan and price of a tool call sent with `confirm: false`; nothing ran, nothing was charged (D8). */
export type ToolQuoteAnswer = Schemas["ToolQuoteAnswer"];

/** `{ has_more: true, cursor }` or `{ has_more: false, cursor? }`: pass `cursor` to go on. */
export type Page = Schemas["Page"];

/** MCP only (D30): the rest of a result cut at about 60 KB; pass `handle` to the same tool to read on. */
export type More = Schemas["More"];

/** One step of a tool run (D6): wave, name, status and calls. */
export type Step = Schemas["Step"];

/** The plan and price of a tool call; `mode: "background"` answers 202 when confirmed. */
export type Quote = Schemas["Quote"];

/** Waves of a run, planned and done. */
export type Waves = Schemas["Waves"];

/** What a tool run was quoted and charged: `charged_credits` is 0 for failures. */
export type Charge = Schemas["ChargeCharged"] | Schemas["ChargeFree"];

// ------------------------------------------------------------------------------------------------ billing

/**
 * Billing of data answers (D7): `{ cost, balance, unit: "credits", pricing? }`. `cost` is greater than 0 on
 * `ok` and `empty` answers and exactly `0` on failures.
 */
export type Billing = Schemas["BillingCharged"] | Schemas["BillingFree"];

/**
 * Credit billing of runs, tool answers and the account (D7): cost, balance, today's spend and the daily limit
 * (`null` when no limit is set), and a `display` line.
 */
export type CreditBilling = Schemas["CreditBilling"];

// ------------------------------------------------------------------------------------------------ items

/** One row of an answer; narrow on `kind`. */
export type Item = Schemas["Item"];

/** A post, video, article or comment (`kind: "item"`; comments have `parent_id`). */
export type ContentItem = Schemas["ContentItem"];

/** An account (`kind: "profile_card"`). */
export type ProfileCard = Schemas["ProfileCard"];

/** A ranked entry: a trending topic or a top post (`kind: "leaderboard"`, with `rank`). */
export type LeaderboardItem = Schemas["LeaderboardItem"];

/** Shares or counts over the labels of one dimension (`kind: "distribution"`, with `buckets`). */
export type DistributionItem = Schemas["DistributionItem"];

/** Values of one metric over time (`kind: "timeseries"`, with `points`). */
export type TimeseriesItem = Schemas["TimeseriesItem"];

/** The author of a {@link ContentItem}. */
export type Author = Schemas["Author"];

/** Engagement counters of a {@link ContentItem}. */
export type Metrics = Schemas["Metrics"];

/** A video, image or audio file of a {@link ContentItem}. */
export type Media = Schemas["Media"];

// ------------------------------------------------------------------------------------------------ errors

/**
 * Any error answered under a non-200 HTTP status (D12): a flat object whose `code` narrows every other field
 * (`if (e.code === "max_cost_exceeded") e.quote_credits`). Holds 16 of the 19 codes: `invalid_target`,
 * `upstream_error` and `timeout` only stand inside envelopes ({@link EnvelopeError}).
 */
export type ErrorStructure = Schemas["ErrorStructure"];

/**
 * The {@link ErrorStructure} of one code, e.g. `ErrorOf<"rate_limited">` with `reason` and `retry_after`.
 * `never` for the three codes that are only answered inside HTTP 200 envelopes (`invalid_target`,
 * `upstream_error`, `timeout`).
 */
export type ErrorOf<C extends ErrorCode> = Extract<ErrorStructure, { code: C }>;

/**
 * The `error` object inside an HTTP 200 answer (envelope, fanout or target entry, tool answer): the seed's
 * closed objects (`code`, `message`, `retryable`, and `retry_after` or `action_url` by code) and, on routes other
 * than GET /v1/search, `not_found`, `invalid_target` and `temporarily_unavailable` with a `fix` (D13, D36).
 */
export type EnvelopeError = Schemas["DataErrorObject"] | Schemas["EnvErrorNotSupported"] | Schemas["EnvErrorTimeout"];

/** The {@link EnvelopeError} of one code; `never` for codes that never stand inside an envelope. */
export type EnvelopeErrorOf<C extends ErrorCode> = Extract<EnvelopeError, { code: C }>;

/** How to fix an error: at least one of `param`, `allowed`, `note`, `action_url`, `example_call`. */
export type Fix = Schemas["Fix"];

// ------------------------------------------------------------------------------------------------ account, discovery

/** `GET /v1/account`: the account, the workspace, this key (by prefix) and credit billing (D10). */
export type AccountAnswer = Schemas["AccountAnswer"];

/** A standing `account_watch` call (D11). */
export type Schedule = Schemas["Schedule"];

/** `GET /v1/schedules`: the workspace's schedules (at most 20). */
export type ScheduleList = Schemas["ScheduleList"];

/** `DELETE /v1/schedules/{schedule_id}`: the schedule was removed. */
export type ScheduleDeleted = Schemas["ScheduleDeleted"];

/** `POST /v1/find`: operations and tools that match a query, best first. */
export type FindAnswer = Schemas["FindAnswer"];

/** `GET /v1/capabilities`: every platform with where its data comes from, every platform operation and the seven tools. */
export type CapabilitiesAnswer = Schemas["CapabilitiesAnswer"];

/** A platform and where its data comes from: `live`, `simulated` or `plugged` (D114). */
export type PlatformSource = Schemas["PlatformSource"];

/** One operation of the catalog (`<platform>.<name>`), its route, parameters and price. */
export type OperationInfo = Schemas["OperationInfo"];

/** One tool of the catalog and its parameters. */
export type ToolInfo = Schemas["ToolInfo"];

// ------------------------------------------------------------------------------------------------ requests

/** Body of `POST /v1/search` (the query of `GET /v1/search`): `query` and exactly one of `platform`, `platforms`; no `cursor` with `platforms`. */
export type SearchRequest = Schemas["SearchRequest"];

/** Body of `POST /v1/trending`: exactly one of `platform`, `platforms`; no `cursor` with `platforms`. */
export type TrendingRequest = Schemas["TrendingRequest"];

/** Body of `POST /v1/detail`: `platform` and exactly one of `id`, `url` (each one value or a list of 1 to 20). */
export type DetailRequest = Schemas["DetailRequest"];

/** Body of `POST /v1/comments`: `platform`, exactly one of `id`, `url`, and `limit`, `cursor`, `sort`. */
export type CommentsRequest = Schemas["CommentsRequest"];

/** Body of `POST /v1/user_profile`: `platform` and exactly one of `id`, `url`. */
export type UserProfileRequest = Schemas["UserProfileRequest"];

/** Body of `POST /v1/user_posts`: `platform`, exactly one of `id`, `url`, and `limit`, `cursor`, `sort`. */
export type UserPostsRequest = Schemas["UserPostsRequest"];

/** Body of `POST /v1/call/{op}`: the operation's parameters as one flat object, plus `max_cost_credits`. */
export type CallRequest = Schemas["CallRequest"];

/** Body of `POST /v1/find`. */
export type FindRequest = Schemas["FindRequest"];

/** Body of the `brand_buzz` tool. */
export type BrandBuzzRequest = Schemas["BrandBuzzRequest"];

/** Body of the `comment_insights` tool. */
export type CommentInsightsRequest = Schemas["CommentInsightsRequest"];

/** Body of the `account_watch` tool; with `schedule` it also creates a schedule (D11). */
export type AccountWatchRequest = Schemas["AccountWatchRequest"];

/** Body of the `find_creators` tool. */
export type FindCreatorsRequest = Schemas["FindCreatorsRequest"];

/** Body of the `creator_card` tool. */
export type CreatorCardRequest = Schemas["CreatorCardRequest"];

/** Body of the `batch_stats` tool. */
export type BatchStatsRequest = Schemas["BatchStatsRequest"];

/** Body of the `viral_finder` tool. */
export type ViralFinderRequest = Schemas["ViralFinderRequest"];

/** The body of `POST /v1/tools/{T}`, read from the contract's paths: `ToolRequest<"brand_buzz">` is {@link BrandBuzzRequest}. */
export type ToolRequest<T extends ToolName> = T extends ToolName
  ? paths[`/v1/tools/${T}`] extends { post: { requestBody: { content: { "application/json": infer B } } } }
    ? B
    : never
  : never;

// ------------------------------------------------------------------------------------------------ operations

/** The `operationId` of every operation of the contract (`search`, `searchPost`, `brandBuzz`, `getResult`, …). */
export type OperationId = keyof operations;

type JsonBody<R> = R extends { content: { "application/json": infer B } } ? B : never;

/** The JSON request body of an operation; `never` for operations without one. */
export type RequestBody<Op extends OperationId> = operations[Op] extends { requestBody: infer R } ? JsonBody<R> : never;

/** The JSON body an operation answers under HTTP status `S` (a union when `S` is). */
export type Answer<Op extends OperationId, S extends keyof operations[Op]["responses"]> = JsonBody<
  operations[Op]["responses"][S]
>;

/** The JSON body of an operation's HTTP 200 answer, e.g. `SearchEnvelope | FanoutAnswer` for `search`. */
export type SuccessAnswer<Op extends OperationId> = operations[Op]["responses"] extends { 200: infer R }
  ? JsonBody<R>
  : never;

/** The error structures an operation can answer (every documented status but 200 and 202). */
export type ErrorAnswer<Op extends OperationId> = JsonBody<
  operations[Op]["responses"][Exclude<keyof operations[Op]["responses"], 200 | 202>]
>;
