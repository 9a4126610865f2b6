import { createFinalURL, createQuerySerializer } from "openapi-fetch";
import type {
  AccountAnswer,
  AccountWatchRequest,
  BatchStatsRequest,
  BrandBuzzRequest,
  CallRequest,
  CapabilitiesAnswer,
  CommentInsightsRequest,
  CommentsRequest,
  CreatorCardRequest,
  DataEnvelope,
  DetailRequest,
  ErrorCode,
  FanoutAnswer,
  FindAnswer,
  FindCreatorsRequest,
  FindRequest,
  FinishedAnswer,
  HandleAnswer,
  operations,
  ScheduleDeleted,
  ScheduleList,
  SearchEnvelope,
  SearchRequest,
  SuccessAnswer,
  TargetsAnswer,
  ToolAnswer,
  ToolQuoteAnswer,
  TrendingRequest,
  UserPostsRequest,
  UserProfileRequest,
  ViralFinderRequest,
} from "@sdgw/types";
import { SdgwAbortError, SdgwError, SdgwPollTimeoutError, SdgwTimeoutError, SdgwTransportError } from "./errors.ts";

/** Levels of {@link ClientOptions.logLevel}, most verbose first; `off` logs nothing. @category Calls */
export type LogLevel = "debug" | "info" | "warn" | "error" | "off";

/**
 * Where the client logs (`console` by default): `debug` each attempt and its answer, `info` each poll of a 202,
 * `warn` each retry, `error` a call that fails for good. Lines carry the method, the route template, the attempt,
 * the status and the request id; never the key, a header, a query or a body.
 * @category Calls
 */
export interface Logger {
  /** Each attempt's status and time. */
  debug(message: string, details: object): void;
  /** Each poll of a running (202) call. */
  info(message: string, details: object): void;
  /** Each retry, with its delay and reason. */
  warn(message: string, details: object): void;
  /** A call that fails for good. */
  error(message: string, details: object): void;
}

/** One retry, as `onRetry` sees it, before the client waits. @category Calls */
export interface RetryInfo {
  /** The number of the attempt about to be made: 2 for the first retry. */
  attempt: number;
  /** How long the client waits before it, in ms. */
  delayMs: number;
  /** Why: the API's error code (`rate_limited`, …), `timeout`, `network`, or `http_<status>` (an answer that is not the API's). */
  reason: string;
  /** The call's request id (see {@link SdgwTransportError.requestId}). */
  requestId: string | undefined;
  /** The failure being retried. */
  error: Error;
}

/** A successful call with its HTTP answer, from {@link SdgwPromise.withResponse}. @category Calls */
export interface WithResponse<T> {
  /** What the call answers. */
  data: T;
  /** The last HTTP answer (of a polled call: the read that finished it). Its body has been read. */
  response: Response;
  /** Its HTTP status. */
  status: number;
  /** Its headers. */
  headers: Headers;
  /** The answer's `request_id`, else the `X-Request-Id` header (a CSV or NDJSON text has no `request_id`). */
  requestId: string | undefined;
}

/** The promise every call answers: a plain promise of the answer, plus `withResponse()`. @category Calls */
export interface SdgwPromise<T> extends Promise<T> {
  /** The same call's answer with its status, headers and request id. Does not send the call again. */
  withResponse(): Promise<WithResponse<T>>;
}

/** Options of {@link createClient}. @category Calls */
export interface ClientOptions {
  /** The gateway's base address, e.g. `https://api.example.com`. Must not carry a key. */
  baseUrl: string;
  /** The API key. Sent in a header, never in a URL. */
  apiKey?: string | undefined;
  /** Which header carries the key: `X-API-Key` (default) or `Authorization: Bearer`. */
  auth?: "x-api-key" | "bearer" | undefined;
  /**
   * A fetch to use instead of `globalThis.fetch`. Without it, `globalThis.fetch` is looked up at each request, not
   * when the client is made: a client created before a mock (MSW's `server.listen()`) patches fetch still goes
   * through the mock.
   */
  fetch?: typeof fetch | undefined;
  /** Retries of one call after a retryable failure (default 3). The same Idempotency-Key is sent each time. */
  maxRetries?: number | undefined;
  /** First backoff delay for `internal_error`, `temporarily_unavailable` and network failures (default 500 ms). */
  retryBaseMs?: number | undefined;
  /** A wait longer than this is not retried automatically (default 60 000 ms): the error is thrown instead. */
  maxRetryDelayMs?: number | undefined;
  /** How long a call answered 202 is polled before {@link SdgwPollTimeoutError} (default 300 000 ms). */
  maxWaitMs?: number | undefined;
  /** The default budget of every charging call (`max_cost_credits`). */
  maxCostCredits?: number | undefined;
  /** Extra headers for every request. An `X-Request-Id` here is the request id of transport errors. */
  headers?: Record<string, string> | undefined;
  /**
   * How long one attempt may take, in ms, until its whole answer is read (default 60 000); a stream of
   * `results.rows` is timed until its headers. An attempt that times out is retried like a network failure; the
   * last one throws {@link SdgwTimeoutError}. Per call: `timeout`. `Infinity` (or more than 2^31 − 1 ms) sets no
   * timer and gives fetch no signal of the client's own, only the call's `signal` if any: the quickest path (on Node,
   * undici's own 300 s limits then end a hung request). Anything not above 0 is a `TypeError` naming `timeout`.
   */
  timeout?: number | undefined;
  /** Where to log (default `console`); nothing is logged unless `logLevel` or `logger` is given. */
  logger?: Logger | undefined;
  /** The least severe level logged: `"off"` by default, `"info"` when a `logger` is given. */
  logLevel?: LogLevel | undefined;
  /** Called before each retry of every call (the call's own `onRetry` is called too). */
  onRetry?: ((retry: RetryInfo) => void) | undefined;
}

/** Options of one call. @category Calls */
export interface CallOptions {
  /** The Idempotency-Key of this call; by default a fresh UUID, kept across retries. */
  idempotencyKey?: string | undefined;
  /** This call's budget (`max_cost_credits`); overrides the client's. */
  maxCostCredits?: number | undefined;
  /** Stops the call, its retries and its polling. */
  signal?: AbortSignal | undefined;
  /** Polling deadline for this call (overrides the client's `maxWaitMs`). */
  maxWaitMs?: number | undefined;
  /** Called with every running (202) answer while polling: `cells`, `steps`, `waves`, `billing`. */
  onProgress?: ((running: HandleAnswer) => void) | undefined;
  /** `false`: answer the 202 handle instead of polling. */
  wait?: boolean | undefined;
  /** This call's timeout of each attempt in ms (overrides the client's `timeout`). */
  timeout?: number | undefined;
  /** This call's retries (overrides the client's `maxRetries`; 0: none). */
  maxRetries?: number | undefined;
  /** Called before each retry of this call. */
  onRetry?: ((retry: RetryInfo) => void) | undefined;
}

/** A typed call: it answers the finished answer, or with `{ wait: false }` possibly its 202 handle answer. @category Calls */
export interface Call<P, T> {
  (params: P, opts?: CallOptions & { wait?: true | undefined }): SdgwPromise<T>;
  (params: P, opts: CallOptions & { wait: false }): SdgwPromise<T | HandleAnswer>;
}

/**
 * A typed tool call. `confirm: false` answers the tool quote (nothing runs, nothing is charged); otherwise the
 * tool runs and answers its result, polled to its end (or, with `{ wait: false }`, possibly its 202 handle). Only a
 * `confirm` whose value is not known when compiling leaves both answers possible.
 * @category Calls
 */
export interface ToolCall<P> {
  (params: P & { confirm: false }, opts?: CallOptions): SdgwPromise<ToolQuoteAnswer>;
  (
    params: P & { confirm?: true | undefined },
    opts?: CallOptions & { wait?: true | undefined },
  ): SdgwPromise<ToolAnswer>;
  (
    params: P & { confirm?: true | undefined },
    opts: CallOptions & { wait: false },
  ): SdgwPromise<ToolAnswer | HandleAnswer>;
  (params: P, opts?: CallOptions & { wait?: true | undefined }): SdgwPromise<ToolAnswer | ToolQuoteAnswer>;
  (params: P, opts: CallOptions & { wait: false }): SdgwPromise<ToolAnswer | ToolQuoteAnswer | HandleAnswer>;
}

/**
 * The query of `GET /v1/search` (the contract's parameters of operation `search`): `query`, and `platform` or
 * `platforms`, with `type`, `sort`, `time_range`, `content_type`, `scope`, `count`, `cursor`.
 * @category Calls
 */
export type SearchQuery = NonNullable<operations["search"]["parameters"]["query"]>;

/**
 * A search of one platform (`platform`): it answers the single-platform envelope, which pages (D19).
 * @category Calls
 */
export type OnePlatformSearch = SearchQuery & { platform: string; platforms?: never };

/**
 * A search of several platforms (`platforms`, or `all`): it answers the fanout answer, one entry per platform.
 * @category Calls
 */
export type ManyPlatformsSearch = SearchQuery & { platforms: NonNullable<SearchQuery["platforms"]>; platform?: never };

/**
 * What a data call answers when it finishes: the envelope, or the fanout answer of a call given `platforms`.
 * @category Calls
 */
export type DataOrFanout = DataEnvelope | FanoutAnswer;

/**
 * What a data call of one or more targets answers when it finishes: the envelope, or the targets answer of a call
 * given a list.
 * @category Calls
 */
export type DataOrTargets = DataEnvelope | TargetsAnswer;

/**
 * The contract itself, as `GET /openapi.json` answers it.
 * @category Calls
 */
export type OpenApiDocument = SuccessAnswer<"getOpenApiDocument">;

/**
 * The seven multi-step tools of {@link Client.tools}. Each call is quoted first: `confirm: false` answers the quote
 * only (nothing runs, nothing is charged); otherwise the tool runs within `max_cost_credits`.
 * @category Calls
 */
export interface ClientTools {
  /** `POST /v1/tools/brand_buzz`: share of voice, volume over time, top posts and top voices of a query. */
  brandBuzz: ToolCall<BrandBuzzRequest>;
  /** `POST /v1/tools/comment_insights`: keywords, sentiment and the most liked comments of 1 to 20 posts. */
  commentInsights: ToolCall<CommentInsightsRequest>;
  /** `POST /v1/tools/account_watch`: follower and engagement series of 1 to 20 accounts; with `schedule`, repeated (D11). */
  accountWatch: ToolCall<AccountWatchRequest>;
  /** `POST /v1/tools/find_creators`: the authors of a topic, ranked by relevant reach. */
  findCreators: ToolCall<FindCreatorsRequest>;
  /** `POST /v1/tools/creator_card`: one `profile_card` per account (1 to 20). */
  creatorCard: ToolCall<CreatorCardRequest>;
  /** `POST /v1/tools/batch_stats`: current metrics of 1 to 20 posts; `format` also answers CSV or NDJSON. */
  batchStats: ToolCall<BatchStatsRequest>;
  /** `POST /v1/tools/viral_finder`: posts of a topic whose engagement is far above their author's usual. */
  viralFinder: ToolCall<ViralFinderRequest>;
}

/**
 * The schedules of {@link Client.schedules} (made by `account_watch`).
 * @category Calls
 */
export interface ClientSchedules {
  /** `GET /v1/schedules`: the account's schedules. Free. */
  list(opts?: CallOptions): SdgwPromise<ScheduleList>;
  /** `DELETE /v1/schedules/{schedule_id}`: stops a schedule. Free; not retried once it may have run (D68). */
  delete(scheduleId: string, opts?: CallOptions): SdgwPromise<ScheduleDeleted>;
}

/**
 * The results of {@link Client.results}: a handle's answer, as JSON or as a file, free and repeatable.
 * @category Calls
 */
export interface ClientResults {
  /**
   * Reads a result by handle (free, repeatable): the finished JSON answer, or with `format` `csv`/`ndjson` the file
   * text. A run still going answers its 202 handle answer. Never re-runs the call.
   */
  get(handle: string, opts?: CallOptions & { format?: "json" | undefined }): SdgwPromise<FinishedAnswer | HandleAnswer>;
  /** With `format` `csv` or `ndjson`: the file's text (or the 202 handle answer of a run still going). */
  get(handle: string, opts: CallOptions & { format: "csv" | "ndjson" }): SdgwPromise<string | HandleAnswer>;
  /** The rows of a finished result, read as NDJSON and parsed one line at a time. */
  rows(handle: string, opts?: CallOptions): AsyncGenerator<Record<string, unknown>>;
}

/**
 * A client of the Social Data Gateway, made by {@link createClient}: one method per operation of the contract.
 * Charging calls send an Idempotency-Key (kept across retries) and the budget (`maxCostCredits`); a call answered
 * 202 is polled to its end unless `{ wait: false }`; errors are thrown as {@link SdgwError}.
 *
 * @example
 * ```ts
 * import { createClient } from "@sdgw/client";
 * const sdgw = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.SDGW_API_KEY });
 * const one = await sdgw.search({ platform: "reddit", query: "typescript" }); // SearchEnvelope
 * const many = await sdgw.search({ platforms: ["x", "reddit"], query: "typescript" }); // FanoutAnswer
 * const quote = await sdgw.tools.brandBuzz({ query: "Acme", confirm: false }); // nothing charged
 * ```
 * @category Calls
 */
export interface Client {
  /**
   * `GET /v1/search`: one platform (`platform`, answers the {@link SearchEnvelope}) or several (`platforms`,
   * answers the {@link FanoutAnswer}).
   *
   * @example
   * ```ts
   * const one = await sdgw.search({ platform: "reddit", query: "typescript", count: 5 });
   * if (one.status === "ok") console.log(one.items.length, one.page?.has_more, one.billing.cost);
   * const many = await sdgw.search({ platforms: ["x", "reddit"], query: "typescript" });
   * for (const [platform, entry] of fanoutEntries(many)) console.log(platform, entry.status, entry.page?.cursor);
   * ```
   */
  search(query: ManyPlatformsSearch, opts?: CallOptions & { wait?: true | undefined }): SdgwPromise<FanoutAnswer>;
  /** Several platforms with `{ wait: false }`: the fanout answer, or the 202 handle answer of a run still going. */
  search(query: ManyPlatformsSearch, opts: CallOptions & { wait: false }): SdgwPromise<FanoutAnswer | HandleAnswer>;
  /** One platform with `{ wait: false }`: the envelope, or the 202 handle answer of a run still going. */
  search(query: OnePlatformSearch, opts: CallOptions & { wait: false }): SdgwPromise<SearchEnvelope | HandleAnswer>;
  // The single-platform signature is last: it is the one `pages(client.search, …)` infers (only it pages, D19).
  /** One platform: the {@link SearchEnvelope}, which pages (`page.cursor`; see {@link pages} and {@link items}). */
  search(query: OnePlatformSearch, opts?: CallOptions & { wait?: true | undefined }): SdgwPromise<SearchEnvelope>;
  /** `POST /v1/search`: the same search with its parameters in a JSON body. */
  searchPost: Call<SearchRequest, DataOrFanout>;
  /** `POST /v1/trending`: trending topics (`leaderboard` items). */
  trending: Call<TrendingRequest, DataOrFanout>;
  /** `POST /v1/detail`: posts by `id` or `url`; a list answers the targets answer. */
  detail: Call<DetailRequest, DataOrTargets>;
  /** `POST /v1/comments`: comments of a post. */
  comments: Call<CommentsRequest, DataOrTargets>;
  /** `POST /v1/user_profile`: profiles of accounts. */
  userProfile: Call<UserProfileRequest, DataOrTargets>;
  /** `POST /v1/user_posts`: posts of an account. */
  userPosts: Call<UserPostsRequest, DataOrTargets>;
  /** `POST /v1/call/{op}`: any operation of the catalog, by `<platform>.<name>`. */
  call(op: string, body?: CallRequest, opts?: CallOptions & { wait?: true | undefined }): SdgwPromise<DataOrTargets>;
  /** With `{ wait: false }`: the finished answer, or the 202 handle answer of a run still going. */
  call(op: string, body: CallRequest, opts: CallOptions & { wait: false }): SdgwPromise<DataOrTargets | HandleAnswer>;
  /**
   * The seven multi-step tools; each call is quoted first (`confirm: false` answers the quote only).
   *
   * @example
   * ```ts
   * const quote = await sdgw.tools.brandBuzz({ query: "瑞幸咖啡", platforms: ["weibo", "douyin"], confirm: false }); // free
   * const run = await sdgw.tools.brandBuzz({ query: "瑞幸咖啡", platforms: ["weibo", "douyin"] }, { maxCostCredits: quote.quote.quote_credits });
   * console.log(run.charge.charged_credits, run.billing.display);
   * ```
   */
  tools: ClientTools;
  /** `POST /v1/find`: operations ranked by how well they match what you describe. Free; needs no key. */
  find(body: FindRequest, opts?: CallOptions): SdgwPromise<FindAnswer>;
  /** `GET /v1/capabilities`: every operation and tool. Free; needs no key. */
  capabilities(opts?: CallOptions): SdgwPromise<CapabilitiesAnswer>;
  /** `GET /v1/account`: the account, this key and the credits. Free. */
  account(opts?: CallOptions): SdgwPromise<AccountAnswer>;
  /** `GET /v1/schedules` and `DELETE /v1/schedules/{schedule_id}`. */
  schedules: ClientSchedules;
  /**
   * `GET /v1/results/{handle}`: a result as JSON, as a file, or row by row. Free and repeatable for 24 hours.
   *
   * @example
   * ```ts
   * const started = await sdgw.search({ platform: "weibo", query: "双十一" }, { wait: false });
   * if (started.status === "running") {
   *   const csv = await sdgw.results.get(started.handle, { format: "csv" }); // text, or the 202 answer while it runs
   *   for await (const row of sdgw.results.rows(started.handle)) console.log(row);
   * }
   * ```
   */
  results: ClientResults;
  /** `GET /openapi.json`: the contract. */
  openapi(opts?: CallOptions): SdgwPromise<OpenApiDocument>;
}

type Ops = operations;
type Body<O extends keyof Ops> = Ops[O] extends { requestBody?: { content: { "application/json": infer B } } }
  ? B
  : never;
type Query<O extends keyof Ops> = Ops[O] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type Ok<O extends keyof Ops> = Ops[O] extends { responses: { 200: { content: { "application/json": infer A } } } }
  ? A
  : never;

type Method = "GET" | "POST" | "DELETE";
interface Req {
  method: Method;
  path: string;
  query?: Record<string, unknown>;
  pathParams?: Record<string, string>;
  body?: unknown;
  /** A charging call: gets an Idempotency-Key and the budget. */
  charging?: boolean;
  parseAs?: "json" | "text" | "stream";
  /** Retry `internal_error` (a results read answering 500 is a broken run: final). */
  retryServerErrors?: boolean;
  /** The request id of a poll: the polled call's. */
  id?: string | undefined;
}
/** A 2xx answer of {@link send}, with the request id it was sent under. */
interface Sent {
  data: unknown;
  response: Response;
  id?: string | undefined;
}

const RETRY_AFTER_CODES: readonly ErrorCode[] = ["rate_limited", "idempotency_in_progress"];
const BACKOFF_CODES: readonly ErrorCode[] = ["internal_error", "temporarily_unavailable"];

/** Waits `ms`, or rejects with the signal's reason when it aborts. @category Calls */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = () => {
      signal?.removeEventListener("abort", stop);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", stop, { once: true });
  });
}

/** The {@link SdgwAbortError} of a call whose signal aborted it: its reason is the `cause`, its words in the message. */
const abortError = (what: string, signal: AbortSignal, requestId: string | undefined) =>
  new SdgwAbortError(`${what} was aborted: ${(signal.reason as Error | undefined)?.message ?? signal.reason}`, {
    cause: signal.reason,
    requestId,
  });

/** The refusal of a key in a URL (the base URL or a call's query): keys travel in a header only. */
const KEY_IN_URL = "refusing a key in the URL: pass apiKey, the client sends it in a header";

/**
 * The contract's path parameters (`handle`, `schedule_id`, `op`) are strings in the simple style: each `{name}` is
 * the value percent-encoded, as openapi-fetch's `defaultPathSerializer` writes a string (whose matrix, label and
 * exploded styles the contract never uses, and which cost 200 B of the 4 KB budget).
 */
const pathSerializer = (path: string, params: Record<string, unknown>) =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(params[name])));

/** The longest delay a timer can wait: 2^31 − 1 ms, about 24.8 days. A longer `timeout` (or `Infinity`) means none. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A `timeout` as given, or a TypeError naming it: a number of milliseconds above 0, or `Infinity` for none. */
function checkTimeout(timeout: unknown): number {
  if (!(typeof timeout === "number" && timeout > 0))
    throw new TypeError(`timeout: ms above 0, or Infinity (got ${timeout})`);
  return timeout;
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  return text ? JSON.parse(text) : undefined;
}

/**
 * How long an answer asks to be waited for, in ms: `retry-after-ms`, else `Retry-After` (seconds or an HTTP date),
 * or the body's `retry_after` / `retry_after_seconds` when longer.
 */
function retryAfterMs(res: Response, body?: { retry_after?: number; retry_after_seconds?: number }): number {
  const ms = res.headers.get("retry-after-ms");
  const s = res.headers.get("retry-after");
  const header = ms ? +ms : s ? (Number.isNaN(+s) ? Date.parse(s) - Date.now() : 1000 * +s) : 0;
  return Math.max(header || 0, 1000 * Math.max(body?.retry_after ?? 0, body?.retry_after_seconds ?? 0));
}

const LEVELS = ["debug", "info", "warn", "error"] as const;

/**
 * Creates a client of the Social Data Gateway. Every call is typed by the contract; a call answered 202 is polled
 * until it ends; retryable failures are retried with the same Idempotency-Key; errors are thrown as
 * {@link SdgwError} (typed by `code`), while failures inside an HTTP 200 answer (`status` `error`,
 * `not_supported`, `timeout`) are returned as the answer they are (D38). Every call answers an
 * {@link SdgwPromise}: `await sdgw.account().withResponse()` gives the status, headers and request id too.
 *
 * @example
 * ```ts
 * import { createClient, isSdgwError } from "@sdgw/client";
 *
 * const sdgw = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.SDGW_API_KEY, maxCostCredits: 20 });
 * const answer = await sdgw.search({ platform: "xiaohongshu", query: "露营装备", count: 5 });
 * if (answer.status === "ok") console.log(answer.items.length, answer.billing.cost);
 * try {
 *   await sdgw.tools.brandBuzz({ query: "瑞幸咖啡", platforms: ["weibo", "douyin"] });
 * } catch (e) {
 *   if (isSdgwError(e, "max_cost_exceeded")) console.log(`quoted ${e.quote_credits} credits`);
 * }
 * ```
 * @category Calls
 */
export function createClient(options: ClientOptions): Client {
  const base = new URL(options.baseUrl);
  if (base.searchParams.has("key")) throw new TypeError(KEY_IN_URL);
  const headers: Record<string, string> = { ...options.headers };
  const sentRequestId = Object.entries(headers).find(([k]) => k.toLowerCase() === "x-request-id")?.[1];
  if (options.apiKey) {
    if (options.auth === "bearer") headers["Authorization"] = `Bearer ${options.apiKey}`;
    else headers["X-API-Key"] = options.apiKey;
  }
  if (options.timeout !== undefined) checkTimeout(options.timeout);
  const baseUrl = options.baseUrl.replace(/\/$/, "");
  // openapi-fetch's serializers write paths and query strings by the contract's styles (form, explode: repeated
  // `platforms=x&platforms=reddit`). The request itself is one fetch(url, init): openapi-fetch's own client builds
  // a Request and fetch builds a second from it, which measured +20–40 µs per call (bench/client).
  const querySerializer = createQuerySerializer();
  const maxRetries = options.maxRetries ?? 3;
  const retryBaseMs = options.retryBaseMs ?? 500;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
  const level = LEVELS.indexOf((options.logLevel ?? (options.logger ? "info" : "off")) as never); // -1: off
  /** Logs at level `l` (an index of LEVELS); never given the key, headers, query or body. */
  const log = (l: number, message: string, details: object) =>
    level >= 0 && l >= level && (options.logger ?? console)[LEVELS[l]!](`[sdgw] ${message}`, details);

  /** Sends one request, retrying what the seed says may be retried; answers the 2xx response. */
  async function send(req: Req, opts: CallOptions = {}): Promise<Sent> {
    const query = { ...req.query };
    if ("key" in query) throw new TypeError(KEY_IN_URL);
    const key = req.charging ? (opts.idempotencyKey ?? crypto.randomUUID()) : undefined;
    const budget = req.charging ? (opts.maxCostCredits ?? options.maxCostCredits) : undefined;
    const requestId = sentRequestId ?? key ?? req.id;
    const retries = opts.maxRetries ?? maxRetries;
    const timeout = checkTimeout(opts.timeout ?? options.timeout ?? 60_000);
    // Past what a timer can wait (Infinity: none), no timer and no signal of ours: fetch gets the caller's signal
    // alone, if any (D106).
    const timed = timeout <= MAX_TIMER_MS;
    const what = `${req.method} ${req.path}`;
    let body = req.body;
    if (budget !== undefined) {
      if (req.method === "GET") query["max_cost_credits"] ??= budget;
      else body = { max_cost_credits: budget, ...(body as object) };
    }
    const url = createFinalURL(req.path, {
      baseUrl,
      params: { query, path: req.pathParams },
      querySerializer,
      pathSerializer,
    });
    const init: RequestInit = {
      method: req.method,
      headers: {
        ...headers,
        ...(key ? { "Idempotency-Key": key } : {}),
        ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
      },
    };
    if (body !== undefined) init.body = JSON.stringify(body);
    for (let attempt = 1; ; attempt++) {
      if (opts.signal?.aborted) throw abortError(what, opts.signal, requestId);
      const started = Date.now();
      // One controller per attempt: aborted by the attempt's timeout or by the caller's signal.
      const controller = timed ? new AbortController() : undefined;
      const timer = controller && setTimeout(() => controller.abort(), timeout);
      const stop = () => controller!.abort(opts.signal!.reason);
      if (controller) opts.signal?.addEventListener("abort", stop);
      init.signal = controller?.signal ?? opts.signal ?? null;
      let response: Response | undefined;
      let data: unknown;
      let error: Error;
      let wait: number | undefined;
      let reason: string;
      try {
        response = await (options.fetch ?? globalThis.fetch)(url, init);
        if (response.ok)
          data =
            req.parseAs === "stream"
              ? response.body
              : req.parseAs === "text"
                ? await response.text()
                : await readJson(response);
        else data = await readJson(response).catch(() => undefined);
      } catch (cause) {
        if (opts.signal?.aborted) throw abortError(what, opts.signal, requestId);
        response = undefined;
        const timedOut = controller?.signal.aborted ?? false;
        const o = { cause, requestId, attempts: attempt };
        error = timedOut
          ? new SdgwTimeoutError(`no answer from ${what} within ${timeout} ms`, timeout, o)
          : new SdgwTransportError(`no answer from ${what}`, undefined, o);
        reason = timedOut ? "timeout" : "network";
        // A DELETE is not sent again after it may have run (its retry's 404 would mislead); every other call
        // carries an Idempotency-Key or only reads (D68).
        if (key || req.method !== "DELETE") wait = backoff(attempt);
      } finally {
        clearTimeout(timer);
        // A stream being read stays tied to the caller's signal.
        if (req.parseAs !== "stream" || !response?.ok) opts.signal?.removeEventListener("abort", stop);
      }
      if (response) {
        if (!level) log(0, `${what} answered ${response.status} in ${Date.now() - started} ms`, { attempt, requestId });
        if (response.ok) return { data, response, id: requestId };
        const err = data as { code?: ErrorCode; retry_after?: number } | undefined;
        if (!err || typeof err !== "object" || typeof err.code !== "string") {
          error = new SdgwTransportError(
            `${what} answered HTTP ${response.status} without the API's error structure`,
            response.status,
            {
              requestId: response.headers.get("x-request-id") ?? requestId,
              attempts: attempt,
              headers: response.headers,
            },
          );
          reason = `http_${response.status}`;
          if (response.status >= 500) wait = backoff(attempt);
        } else {
          error = new SdgwError(response.status, err as never, { headers: response.headers });
          reason = err.code;
          if (RETRY_AFTER_CODES.includes(err.code)) wait = 0;
          else if (BACKOFF_CODES.includes(err.code) && (req.retryServerErrors ?? true)) wait = backoff(attempt);
        }
        // X-Should-Retry overrides the code: `false` never retries, `true` retries what would not be.
        const should = response.headers.get("x-should-retry");
        if (should === "false") wait = undefined;
        else if (should === "true") wait ??= backoff(attempt);
        if (wait !== undefined) wait = Math.max(wait, retryAfterMs(response, err));
      }
      if (wait === undefined || wait > maxRetryDelayMs || attempt > retries) {
        log(3, `${what} failed: ${reason!}`, { attempt, requestId });
        throw error!;
      }
      const retry: RetryInfo = { attempt: attempt + 1, delayMs: wait, reason: reason!, requestId, error: error! };
      log(2, `retrying ${what} in ${Math.round(wait)} ms (${reason!})`, retry);
      options.onRetry?.(retry);
      opts.onRetry?.(retry);
      await sleep(wait, opts.signal).catch(() => {}); // an abort is thrown at the top of the loop
    }
  }

  /** Jittered exponential backoff: between half and all of base·2^(attempt-1). */
  function backoff(attempt: number): number {
    return retryBaseMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
  }

  /**
   * Polls a 202 answer through the same client until the run ends; answers the finished answer. It never waits past
   * `maxWaitMs`: a wait that would is cut to the deadline, where it reads once more before giving up.
   */
  async function pollUntilFinished(running: HandleAnswer, { response, id }: Sent, opts: CallOptions): Promise<Sent> {
    const started = Date.now();
    const deadline = started + (opts.maxWaitMs ?? options.maxWaitMs ?? 300_000);
    for (let last = false; ; ) {
      opts.onProgress?.(running);
      if (last) throw new SdgwPollTimeoutError(running, Date.now() - started, { headers: response.headers });
      const left = deadline - Date.now();
      const delay = retryAfterMs(response, running);
      const wait = Math.max(0, Math.min(delay, left));
      last = delay >= left;
      log(1, `${running.handle} is running; reading it in ${wait} ms`, { requestId: id });
      await sleep(wait, opts.signal).catch(() => {}); // an abort is thrown by `send`, before it sends
      let data: unknown;
      ({ data, response } = await send(
        {
          method: "GET",
          path: "/v1/results/{handle}",
          pathParams: { handle: running.handle },
          retryServerErrors: false,
          id,
        },
        opts,
      ));
      if (response.status !== 202) return { data, response };
      running = data as HandleAnswer;
    }
  }

  /** Answers the data of a sent call as an {@link SdgwPromise}; `poll` polls a 202 first. */
  function wrap<T>(sent: Promise<Sent>, poll?: CallOptions): SdgwPromise<T> {
    let response: Response;
    const done = (r: Sent) => {
      response = r.response;
      return r.data;
    };
    const out = sent.then((r) =>
      poll && r.response.status === 202 && poll.wait !== false
        ? pollUntilFinished(r.data as HandleAnswer, r, poll).then(done)
        : done(r),
    ) as SdgwPromise<T>;
    out.withResponse = () =>
      out.then((data) => ({
        data,
        response,
        status: response.status,
        headers: response.headers,
        requestId:
          (data as { request_id?: string } | null)?.request_id ?? response.headers.get("x-request-id") ?? undefined,
      }));
    return out;
  }

  /** Sends a call and, unless `wait: false`, polls a 202 until the run ends. */
  function call(req: Req, opts: CallOptions = {}): SdgwPromise<never> {
    return wrap(send(req, opts), opts);
  }

  const post = <O extends keyof Ops>(path: string) =>
    ((body: Body<O>, opts?: CallOptions) => call({ method: "POST", path, body, charging: true }, opts)) as Call<
      Body<O>,
      Ok<O>
    >;

  const tool = <O extends keyof Ops>(name: string) =>
    ((body: Body<O>, opts?: CallOptions) =>
      call({ method: "POST", path: `/v1/tools/${name}`, body, charging: true }, opts)) as ToolCall<Body<O>>;

  type SearchQuery = Query<"search">;
  type OnePlatform = SearchQuery & { platform: string; platforms?: never };
  type ManyPlatforms = SearchQuery & { platforms: NonNullable<SearchQuery["platforms"]>; platform?: never };
  function search(query: ManyPlatforms, opts?: CallOptions & { wait?: true | undefined }): SdgwPromise<FanoutAnswer>;
  function search(query: ManyPlatforms, opts: CallOptions & { wait: false }): SdgwPromise<FanoutAnswer | HandleAnswer>;
  function search(query: OnePlatform, opts: CallOptions & { wait: false }): SdgwPromise<SearchEnvelope | HandleAnswer>;
  // The single-platform signature is last: it is the one `pages(client.search, …)` infers (only it pages, D19).
  function search(query: OnePlatform, opts?: CallOptions & { wait?: true | undefined }): SdgwPromise<SearchEnvelope>;
  function search(query: SearchQuery, opts?: CallOptions): SdgwPromise<unknown> {
    return call({ method: "GET", path: "/v1/search", query, charging: true }, opts);
  }

  return {
    /** `GET /v1/search`: one platform (`platform`, the envelope) or several (`platforms`, the fanout answer). */
    search,
    /** `POST /v1/search`: the same search with its parameters in a JSON body. */
    searchPost: post<"searchPost">("/v1/search"),
    /** `POST /v1/trending`: trending topics (`leaderboard` items). */
    trending: post<"trending">("/v1/trending"),
    /** `POST /v1/detail`: posts by `id` or `url`; a list answers the targets answer. */
    detail: post<"detail">("/v1/detail"),
    /** `POST /v1/comments`: comments of a post. */
    comments: post<"comments">("/v1/comments"),
    /** `POST /v1/user_profile`: profiles of accounts. */
    userProfile: post<"userProfile">("/v1/user_profile"),
    /** `POST /v1/user_posts`: posts of an account. */
    userPosts: post<"userPosts">("/v1/user_posts"),
    /** `POST /v1/call/{op}`: any operation of the catalog, by `<platform>.<name>`. */
    call: ((op: string, body: Body<"callOperation"> = {}, opts?: CallOptions) =>
      call({ method: "POST", path: "/v1/call/{op}", pathParams: { op }, body, charging: true }, opts)) as {
      (
        op: string,
        body?: Body<"callOperation">,
        opts?: CallOptions & { wait?: true | undefined },
      ): SdgwPromise<DataEnvelope | TargetsAnswer>;
      (
        op: string,
        body: Body<"callOperation">,
        opts: CallOptions & { wait: false },
      ): SdgwPromise<DataEnvelope | TargetsAnswer | HandleAnswer>;
    },
    /** The seven multi-step tools; each call is quoted first (`confirm: false` answers the quote only). */
    tools: {
      brandBuzz: tool<"brandBuzz">("brand_buzz"),
      commentInsights: tool<"commentInsights">("comment_insights"),
      accountWatch: tool<"accountWatch">("account_watch"),
      findCreators: tool<"findCreators">("find_creators"),
      creatorCard: tool<"creatorCard">("creator_card"),
      batchStats: tool<"batchStats">("batch_stats"),
      viralFinder: tool<"viralFinder">("viral_finder"),
    },
    /** `POST /v1/find`: operations ranked by how well they match what you describe. Free; needs no key. */
    find: (body: Body<"findOperation">, opts?: CallOptions): SdgwPromise<FindAnswer> =>
      call({ method: "POST", path: "/v1/find", body }, opts),
    /** `GET /v1/capabilities`: every operation and tool. Free; needs no key. */
    capabilities: (opts?: CallOptions): SdgwPromise<CapabilitiesAnswer> =>
      call({ method: "GET", path: "/v1/capabilities" }, opts),
    /** `GET /v1/account`: the account, this key and the credits. Free. */
    account: (opts?: CallOptions): SdgwPromise<AccountAnswer> => call({ method: "GET", path: "/v1/account" }, opts),
    schedules: {
      /** `GET /v1/schedules`. */
      list: (opts?: CallOptions): SdgwPromise<ScheduleList> => call({ method: "GET", path: "/v1/schedules" }, opts),
      /** `DELETE /v1/schedules/{schedule_id}`. */
      delete: (scheduleId: string, opts?: CallOptions): SdgwPromise<ScheduleDeleted> =>
        call({ method: "DELETE", path: "/v1/schedules/{schedule_id}", pathParams: { schedule_id: scheduleId } }, opts),
    },
    results: {
      /**
       * Reads a result by handle (free, repeatable): the finished JSON answer, or with `format` `csv`/`ndjson`
       * the file text. A run still going answers its 202 handle answer. Never re-runs the call.
       */
      get: ((handle: string, opts: CallOptions & { format?: "json" | "csv" | "ndjson" } = {}) =>
        wrap(
          send(
            {
              method: "GET",
              path: "/v1/results/{handle}",
              pathParams: { handle },
              query: opts.format ? { format: opts.format } : {},
              parseAs: opts.format && opts.format !== "json" ? "text" : "json",
              retryServerErrors: false,
            },
            opts,
          ).then((r) =>
            r.response.status === 202 && typeof r.data === "string" ? { ...r, data: JSON.parse(r.data) } : r,
          ),
        )) as {
        (
          handle: string,
          opts?: CallOptions & { format?: "json" | undefined },
        ): SdgwPromise<FinishedAnswer | HandleAnswer>;
        (handle: string, opts: CallOptions & { format: "csv" | "ndjson" }): SdgwPromise<string | HandleAnswer>;
      },
      /** The rows of a finished result, read as NDJSON and parsed one line at a time. */
      async *rows(handle: string, opts: CallOptions = {}): AsyncGenerator<Record<string, unknown>> {
        const { data, response } = await send(
          {
            method: "GET",
            path: "/v1/results/{handle}",
            pathParams: { handle },
            query: { format: "ndjson" },
            parseAs: "stream",
            retryServerErrors: false,
          },
          opts,
        );
        if (response.status === 202) throw new TypeError(`the run ${handle} is still running; wait for it first`);
        // byte chunks, typed loosely: DOM and Node type them differently
        const reader = (data as ReadableStream).pipeThrough(new TextDecoderStream()).getReader();
        let rest = "";
        for (;;) {
          const { value, done } = await reader.read().catch((e: unknown) => {
            throw opts.signal?.aborted ? abortError(`GET /v1/results/${handle}`, opts.signal, undefined) : e;
          });
          const lines = (rest + (value ?? "")).split("\n");
          rest = done ? "" : lines.pop()!;
          for (const line of lines) if (line.trim()) yield JSON.parse(line) as Record<string, unknown>;
          if (done) return;
        }
      },
    },
    /** `GET /openapi.json`: the contract. */
    openapi: (opts?: CallOptions): SdgwPromise<Ok<"getOpenApiDocument">> =>
      call({ method: "GET", path: "/openapi.json" }, opts),
  };
}
