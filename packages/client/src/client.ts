import { createFinalURL, createQuerySerializer, defaultPathSerializer } from "openapi-fetch";
import type {
  AccountAnswer, CapabilitiesAnswer, DataEnvelope, ErrorCode, FanoutAnswer, FindAnswer, FinishedAnswer, HandleAnswer,
  operations, ScheduleDeleted, ScheduleList, SearchEnvelope, TargetsAnswer, ToolAnswer, ToolQuoteAnswer,
} from "@sdgw/types";
import { SdgwError, SdgwPollTimeoutError, SdgwTransportError } from "./errors.ts";

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** The gateway's base address, e.g. `https://api.example.com`. Must not carry a key. */
  baseUrl: string;
  /** The API key. Sent in a header, never in a URL. */
  apiKey?: string;
  /** Which header carries the key: `X-API-Key` (default) or `Authorization: Bearer`. */
  auth?: "x-api-key" | "bearer";
  /**
   * A fetch to use instead of `globalThis.fetch`. Without it, `globalThis.fetch` is looked up at each request, not
   * when the client is made: a client created before a mock (MSW's `server.listen()`) patches fetch still goes
   * through the mock.
   */
  fetch?: typeof fetch;
  /** Retries of one call after a retryable failure (default 3). The same Idempotency-Key is sent each time. */
  maxRetries?: number;
  /** First backoff delay for `internal_error`, `temporarily_unavailable` and network failures (default 500 ms). */
  retryBaseMs?: number;
  /** A wait longer than this is not retried automatically (default 60 000 ms): the error is thrown instead. */
  maxRetryDelayMs?: number;
  /** How long a call answered 202 is polled before {@link SdgwPollTimeoutError} (default 300 000 ms). */
  maxWaitMs?: number;
  /** The default budget of every charging call (`max_cost_credits`). */
  maxCostCredits?: number;
  /** Extra headers for every request. */
  headers?: Record<string, string>;
}

/** Options of one call. */
export interface CallOptions {
  /** The Idempotency-Key of this call; by default a fresh UUID, kept across retries. */
  idempotencyKey?: string;
  /** This call's budget (`max_cost_credits`); overrides the client's. */
  maxCostCredits?: number;
  /** Stops the call, its retries and its polling. */
  signal?: AbortSignal;
  /** Polling deadline for this call (overrides the client's `maxWaitMs`). */
  maxWaitMs?: number;
  /** Called with every running (202) answer while polling: `cells`, `steps`, `waves`, `billing`. */
  onProgress?: (running: HandleAnswer) => void;
  /** `false`: answer the 202 handle instead of polling. */
  wait?: boolean;
}

/** A typed call: it answers the finished answer, or with `{ wait: false }` possibly its 202 handle answer. */
export interface Call<P, T> {
  (params: P, opts?: CallOptions & { wait?: true }): Promise<T>;
  (params: P, opts: CallOptions & { wait: false }): Promise<T | HandleAnswer>;
}

/**
 * A typed tool call. `confirm: false` answers the tool quote (nothing runs, nothing is charged); otherwise the
 * tool runs and answers its result, polled to its end (or, with `{ wait: false }`, possibly its 202 handle). Only a
 * `confirm` whose value is not known when compiling leaves both answers possible.
 */
export interface ToolCall<P> {
  (params: P & { confirm: false }, opts?: CallOptions): Promise<ToolQuoteAnswer>;
  (params: P & { confirm?: true }, opts?: CallOptions & { wait?: true }): Promise<ToolAnswer>;
  (params: P & { confirm?: true }, opts: CallOptions & { wait: false }): Promise<ToolAnswer | HandleAnswer>;
  (params: P, opts?: CallOptions & { wait?: true }): Promise<ToolAnswer | ToolQuoteAnswer>;
  (params: P, opts: CallOptions & { wait: false }): Promise<ToolAnswer | ToolQuoteAnswer | HandleAnswer>;
}

type Ops = operations;
type Body<O extends keyof Ops> = Ops[O] extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;
type Query<O extends keyof Ops> = Ops[O] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type Ok<O extends keyof Ops> = Ops[O] extends { responses: { 200: { content: { "application/json": infer A } } } } ? A : never;

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
}

const RETRY_AFTER_CODES: readonly ErrorCode[] = ["rate_limited", "idempotency_in_progress"];
const BACKOFF_CODES: readonly ErrorCode[] = ["internal_error", "temporarily_unavailable"];

/** Waits `ms`, or rejects with the signal's reason when it aborts. */
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

/** The JSON of an answer (undefined when it has no body). */
async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  return text ? JSON.parse(text) : undefined;
}

const retryAfterMs = (res: Response, body: { retry_after?: number; retry_after_seconds?: number } | undefined) =>
  1000 * Math.max(Number(res.headers.get("retry-after")) || 0, body?.retry_after ?? 0, body?.retry_after_seconds ?? 0);

/**
 * Creates a client of the Social Data Gateway. Every call is typed by the contract; a call answered 202 is polled
 * until it ends; retryable failures are retried with the same Idempotency-Key; errors are thrown as
 * {@link SdgwError} (typed by `code`), while failures inside an HTTP 200 answer (`status` `error`,
 * `not_supported`, `timeout`) are returned as the answer they are (D38).
 */
export function createClient(options: ClientOptions) {
  const base = new URL(options.baseUrl);
  if (base.searchParams.has("key")) throw new TypeError("refusing a key in the URL: pass apiKey, it is sent in a header");
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey) {
    if (options.auth === "bearer") headers["Authorization"] = `Bearer ${options.apiKey}`;
    else headers["X-API-Key"] = options.apiKey;
  }
  const baseUrl = options.baseUrl.replace(/\/$/, "");
  // openapi-fetch's serializers write paths and query strings by the contract's styles (form, explode: repeated
  // `platforms=x&platforms=reddit`). The request itself is one fetch(url, init): openapi-fetch's own client builds
  // a Request and fetch builds a second from it, which measured +20–40 µs per call (bench/client).
  const querySerializer = createQuerySerializer();
  const maxRetries = options.maxRetries ?? 3;
  const retryBaseMs = options.retryBaseMs ?? 500;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;

  /** Sends one request, retrying what the seed says may be retried; answers the 2xx response. */
  async function send(req: Req, opts: CallOptions = {}): Promise<{ data: unknown; response: Response }> {
    const query = { ...req.query };
    if ("key" in query) throw new TypeError("refusing a key in the URL: the client sends the key in a header");
    const key = req.charging ? (opts.idempotencyKey ?? crypto.randomUUID()) : undefined;
    const budget = req.charging ? (opts.maxCostCredits ?? options.maxCostCredits) : undefined;
    let body = req.body;
    if (budget !== undefined) {
      if (req.method === "GET") query["max_cost_credits"] ??= budget;
      else body = { max_cost_credits: budget, ...(body as object) };
    }
    for (let attempt = 0; ; attempt++) {
      let result: { data?: unknown; error?: unknown; response: Response };
      try {
        const url = createFinalURL(req.path, { baseUrl, params: { query, path: req.pathParams }, querySerializer, pathSerializer: defaultPathSerializer });
        const init: RequestInit = { method: req.method, headers: { ...headers, ...(key ? { "Idempotency-Key": key } : {}), ...(body !== undefined ? { "Content-Type": "application/json" } : {}) } };
        if (body !== undefined) init.body = JSON.stringify(body);
        if (opts.signal) init.signal = opts.signal;
        const response = await (options.fetch ?? globalThis.fetch)(url, init);
        result = { response };
        if (response.ok) result.data = req.parseAs === "stream" ? response.body : req.parseAs === "text" ? await response.text() : await readJson(response);
        else result.error = await readJson(response).catch(() => undefined);
      } catch (cause) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (attempt >= maxRetries) throw new SdgwTransportError(`no answer from ${req.method} ${req.path}`, undefined, { cause });
        await sleep(backoff(attempt), opts.signal);
        continue;
      }
      const { response } = result;
      if (response.ok) return { data: result.data, response };
      const err = result.error as { code?: ErrorCode; retry_after?: number } | undefined;
      if (!err || typeof err !== "object" || typeof err.code !== "string") {
        const error = new SdgwTransportError(`${req.method} ${req.path} answered HTTP ${response.status} without the API's error structure`, response.status);
        if (response.status < 500 || attempt >= maxRetries) throw error;
        await sleep(backoff(attempt), opts.signal);
        continue;
      }
      const error = new SdgwError(response.status, err as never);
      const wait = RETRY_AFTER_CODES.includes(err.code)
        ? retryAfterMs(response, err)
        : BACKOFF_CODES.includes(err.code) && (req.retryServerErrors ?? true)
          ? Math.max(backoff(attempt), retryAfterMs(response, err))
          : undefined;
      if (wait === undefined || wait > maxRetryDelayMs || attempt >= maxRetries) throw error;
      await sleep(wait, opts.signal);
    }
  }

  /** Jittered exponential backoff: between half and all of base·2^attempt. */
  function backoff(attempt: number): number {
    return retryBaseMs * 2 ** attempt * (0.5 + Math.random() / 2);
  }

  /** Polls a 202 answer through the same client until the run ends; answers the finished answer. */
  async function pollUntilFinished(running: HandleAnswer, response: Response, opts: CallOptions): Promise<unknown> {
    const started = Date.now();
    const deadline = started + (opts.maxWaitMs ?? options.maxWaitMs ?? 300_000);
    for (;;) {
      opts.onProgress?.(running);
      const delay = retryAfterMs(response, running);
      if (Date.now() + delay > deadline) throw new SdgwPollTimeoutError(running, Date.now() - started);
      await sleep(delay, opts.signal);
      ({ data: running as unknown, response } = await send(
        { method: "GET", path: "/v1/results/{handle}", pathParams: { handle: running.handle }, retryServerErrors: false },
        opts,
      ));
      if (response.status !== 202) return running;
    }
  }

  /** Sends a call and, unless `wait: false`, polls a 202 until the run ends. */
  async function call(req: Req, opts: CallOptions = {}): Promise<never> {
    const { data, response } = await send(req, opts);
    if (response.status === 202 && opts.wait !== false) return (await pollUntilFinished(data as HandleAnswer, response, opts)) as never;
    return data as never;
  }

  const post = <O extends keyof Ops>(path: string) =>
    ((body: Body<O>, opts?: CallOptions) => call({ method: "POST", path, body, charging: true }, opts)) as Call<Body<O>, Ok<O>>;

  const tool = <O extends keyof Ops>(name: string) =>
    ((body: Body<O>, opts?: CallOptions) => call({ method: "POST", path: `/v1/tools/${name}`, body, charging: true }, opts)) as ToolCall<Body<O>>;

  type SearchQuery = Query<"search">;
  type OnePlatform = SearchQuery & { platform: string; platforms?: never };
  type ManyPlatforms = SearchQuery & { platforms: NonNullable<SearchQuery["platforms"]>; platform?: never };
  function search(query: ManyPlatforms, opts?: CallOptions & { wait?: true }): Promise<FanoutAnswer>;
  function search(query: ManyPlatforms, opts: CallOptions & { wait: false }): Promise<FanoutAnswer | HandleAnswer>;
  function search(query: OnePlatform, opts: CallOptions & { wait: false }): Promise<SearchEnvelope | HandleAnswer>;
  // The single-platform signature is last: it is the one `pages(client.search, …)` infers (only it pages, D19).
  function search(query: OnePlatform, opts?: CallOptions & { wait?: true }): Promise<SearchEnvelope>;
  function search(query: SearchQuery, opts?: CallOptions): Promise<unknown> {
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
      (op: string, body?: Body<"callOperation">, opts?: CallOptions & { wait?: true }): Promise<DataEnvelope | TargetsAnswer>;
      (op: string, body: Body<"callOperation">, opts: CallOptions & { wait: false }): Promise<DataEnvelope | TargetsAnswer | HandleAnswer>;
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
    find: (body: Body<"findOperation">, opts?: CallOptions): Promise<FindAnswer> => call({ method: "POST", path: "/v1/find", body }, opts),
    /** `GET /v1/capabilities`: every operation and tool. Free; needs no key. */
    capabilities: (opts?: CallOptions): Promise<CapabilitiesAnswer> => call({ method: "GET", path: "/v1/capabilities" }, opts),
    /** `GET /v1/account`: the account, this key and the credits. Free. */
    account: (opts?: CallOptions): Promise<AccountAnswer> => call({ method: "GET", path: "/v1/account" }, opts),
    schedules: {
      /** `GET /v1/schedules`. */
      list: (opts?: CallOptions): Promise<ScheduleList> => call({ method: "GET", path: "/v1/schedules" }, opts),
      /** `DELETE /v1/schedules/{schedule_id}`. */
      delete: (scheduleId: string, opts?: CallOptions): Promise<ScheduleDeleted> =>
        call({ method: "DELETE", path: "/v1/schedules/{schedule_id}", pathParams: { schedule_id: scheduleId } }, opts),
    },
    results: {
      /**
       * Reads a result by handle (free, repeatable): the finished JSON answer, or with `format` `csv`/`ndjson`
       * the file text. A run still going answers its 202 handle answer. Never re-runs the call.
       */
      get: ((handle: string, opts: CallOptions & { format?: "json" | "csv" | "ndjson" } = {}) =>
        send(
          { method: "GET", path: "/v1/results/{handle}", pathParams: { handle }, query: opts.format ? { format: opts.format } : {}, parseAs: opts.format && opts.format !== "json" ? "text" : "json", retryServerErrors: false },
          opts,
        ).then((r) => (r.response.status === 202 && typeof r.data === "string" ? JSON.parse(r.data) : r.data))) as {
        (handle: string, opts?: CallOptions & { format?: "json" }): Promise<FinishedAnswer | HandleAnswer>;
        (handle: string, opts: CallOptions & { format: "csv" | "ndjson" }): Promise<string | HandleAnswer>;
      },
      /** The rows of a finished result, read as NDJSON and parsed one line at a time. */
      async *rows(handle: string, opts: CallOptions = {}): AsyncGenerator<Record<string, unknown>> {
        const { data, response } = await send(
          { method: "GET", path: "/v1/results/{handle}", pathParams: { handle }, query: { format: "ndjson" }, parseAs: "stream", retryServerErrors: false },
          opts,
        );
        if (response.status === 202) throw new TypeError(`the run ${handle} is still running; wait for it first`);
        const reader = (data as ReadableStream).pipeThrough(new TextDecoderStream()).getReader(); // byte chunks, typed loosely: DOM and Node type them differently
        let rest = "";
        for (;;) {
          const { value, done } = await reader.read();
          const lines = (rest + (value ?? "")).split("\n");
          rest = done ? "" : lines.pop()!;
          for (const line of lines) if (line.trim()) yield JSON.parse(line) as Record<string, unknown>;
          if (done) return;
        }
      },
    },
    /** `GET /openapi.json`: the contract. */
    openapi: (opts?: CallOptions): Promise<Ok<"getOpenApiDocument">> => call({ method: "GET", path: "/openapi.json" }, opts),
  };
}

/** A client made by {@link createClient}. */
export type Client = ReturnType<typeof createClient>;
