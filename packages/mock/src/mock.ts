/**
 * `createMock()`: MSW 3 handlers for every operation of the contract, answering as the seed says a gateway does:
 * keys and their permission, request validation through @sdgw/validators, credits, 202 runs read by handle,
 * idempotency, paging; and any status or error code on demand (scenarios).
 */
import { Catalog, Finder, Simulator, TOOLS, cellOf, creditBilling, creditsFor, entryOf } from "@sdgw/engine";
import { finishedAnswer, followerReadings, fromBase64url, notSupportedEntry, planRoute, quoteOf } from "@sdgw/engine";
import {
  KEY_REFUSALS,
  MESSAGES,
  REFUSALS,
  refusalAnswer,
  runningAnswer,
  seedText,
  tooManySchedules,
} from "@sdgw/engine";
import { keyPrefix, presentedKey, purchaseRefusal, toolAnswer, toolQuoteAnswer } from "@sdgw/engine";
import type { CreditView, DataRouteId, EndedCall, PlanRefusal, PlannedCall, RefusalFields } from "@sdgw/engine";
import type { PlatformProvider, RunResult, RunningParts, ToolContext, ToolPlan, ToolRefusal } from "@sdgw/engine";
import type { OnStep } from "@sdgw/engine/tools";
import { ERROR_CATALOGUE, TOOL_NAMES } from "@sdgw/types";
import type { AccountAnswer, ErrorCode, OperationId, Platform, Schedule, Step, ToolName } from "@sdgw/types";
import { DEFAULT_URLS, admitRequest, answerHeaders, errorAnswer, invalidParamsAnswer } from "@sdgw/validators";
import { keyInQueryRefusal, keysInQuery, nextUtcMidnight, normalizeHeaders } from "@sdgw/validators";
import { requestValidators, responseValidators, toCsv, toNdjson, validateErrorStructure } from "@sdgw/validators";
import type { HttpErrorCode, InvalidParams, RequestValidation, ServiceUrls } from "@sdgw/validators";
import { http, HttpResponse, type HttpHandler } from "msw";
import { OPENAPI_DOCUMENT } from "./generated/openapi.ts";
import { FIXTURES, ROUTES } from "./generated/routes.ts";
import type { MockRoute } from "./route-types.ts";
import { forcedOutcome, ownError, parseScenarioHeader, SCENARIO_HEADER, SKIPPED_HEADER } from "./scenarios.ts";
import { STATUS_SCENARIOS } from "./scenarios.ts";
import type { Scenario } from "./scenarios.ts";
import { Store, type Charged, type Done, type MockState, type Outcome, type Run } from "./state.ts";
import { clone, isObject, newHandle, newRequestId, timestamp } from "./util.ts";

/** A key the mock accepts, and what it may do. */
export interface MockKey {
  /** `read_data` lets the key call data routes and tools (D26); without it they answer `403 key_scope_denied`. */
  permissions?: readonly "read_data"[];
}

/** Bytes that are not UTF-8 are refused, not replaced; a BOM is kept (and is then not JSON), as the server does. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A request's body as text, or null when its bytes are not UTF-8. */
async function textOf(request: Request): Promise<string | null> {
  try {
    return UTF8.decode(await request.arrayBuffer());
  } catch {
    return null;
  }
}

/** The keys a mock accepts unless told otherwise: `sdgw_test_key` (with `read_data`) and `sdgw_noscope_key` (without). */
export const DEFAULT_KEYS: Readonly<Record<string, MockKey>> = Object.freeze({
  sdgw_test_key: { permissions: ["read_data"] },
  sdgw_noscope_key: { permissions: [] },
});

/** What {@link MockOptions.slow} is asked about a call. */
export interface SlowCall {
  /** The operation called. */
  operationId: OperationId;
  /** The call's parameters: the query of `GET /v1/search`, the JSON body of the others. */
  params: Readonly<Record<string, unknown>>;
  /** Request headers, lower-case names. */
  headers: Readonly<Record<string, string>>;
}

/** Options of {@link createMock}. Every one has a default. */
export interface MockOptions {
  /**
   * The gateway's base address the handlers answer for, e.g. `http://127.0.0.1:8787` or
   * `https://api.example.com/gateway`. Default `*`: any origin.
   */
  baseUrl?: string;
  /** The keys the mock accepts. Default {@link DEFAULT_KEYS}. */
  keys?: Readonly<Record<string, MockKey>>;
  /** Credits at the start and after `reset()`. Default 100. */
  balance?: number;
  /** The workspace's schedules at the start and after `reset()`. Default: the two of the `listSchedules` fixture. */
  schedules?: readonly Schedule[];
  /** How many reads of a result answer 202 before it is finished. Default 2. */
  polls?: number;
  /**
   * Which calls go 202 (run in the background): a pattern matched against the call's parameters as JSON, or a
   * predicate. Default: parameters containing the word `slow` (`query: "slow coffee"`). A forced `running`
   * scenario goes 202 too.
   */
  slow?: RegExp | ((call: SlowCall) => boolean);
  /** Seconds of `Retry-After` on 202, 409 and `rate_limited`. Default 1. */
  retryAfter?: number;
  /** Pages a paged result has: single-platform search, comments and user posts answer `has_more: true` until the last. Default 3. */
  pages?: number;
  /** The clock, in milliseconds since 1970 (for time travel: a finished result expires 24 hours after it ended). Default `Date.now`. */
  now?: () => number;
  /**
   * Check every JSON answer against the contract (`responseValidators`) before it is sent, and throw a clear error
   * when one does not match, so that a broken fixture is never served silently. Default: on unless
   * `NODE_ENV` is `production`.
   */
  validate?: boolean;
  /**
   * Answer every other request to the base address as the gateway does: `404 not_found`, reason `no_such_route`,
   * `fix.allowed` the routes and `fix.example_call` `GET /v1/capabilities`. With a `baseUrl` that is every path
   * under it, `/v1/` or not (`/v2/search`, `/nothing`, the base itself; for `http://host:8787` the whole origin,
   * for `https://host/gateway` only what is under `/gateway`), so put handlers of your own for that address
   * before the mock's, or add them with `server.use(...)`; other origins are never answered. With the base `*`
   * there is no address of the mock's own, so only `/v1/` paths of any origin are (when turned on). Default: on
   * when `baseUrl` is given, off for `*` (where it would catch other APIs' calls).
   */
  unknownRoutes?: boolean;
  /**
   * A fixed moment the simulated platforms stand at (an RFC 3339 text or milliseconds), so that tests can compare
   * exact dates: every date in an answer is before it. Default: the start of the UTC day of `now`.
   */
  anchor?: string | number;
  /** The console, billing, sign-in and status addresses the errors point to. Default @sdgw/validators' `DEFAULT_URLS`. */
  urls?: ServiceUrls;
}

/** A mock made by {@link createMock}. */
export interface Mock {
  /** MSW handlers of every operation: pass them to `setupServer(...)` (msw/node) or `setupWorker(...)` (msw/browser). */
  readonly handlers: HttpHandler[];
  /**
   * Turns scenarios on: `mock.use(scenario("rate_limited", { times: 1 }))`. Like MSW's `use`, they go before the
   * ones already on (the newest call wins; within one call, the first given wins).
   */
  use(...scenarios: Scenario[]): void;
  /** Turns every scenario off and clears the state: credits back to the start, no runs or idempotency keys. */
  reset(): void;
  /** What the mock remembers, and the knobs to steer it (balance, runs: expire, break, finish). */
  readonly state: MockState;
}

/** An answer before it becomes a Response. */
interface Reply {
  status: number;
  headers: Record<string, string>;
  json?: unknown;
  text?: string;
  contentType?: string;
}

/** A scenario turned on by `use`, with what is left of it. */
interface Active {
  scenario: Scenario;
  left: number;
}

/** What a forced scenario asks of one operation. */
type Forced =
  | { kind: "refusal"; code: HttpErrorCode; http: number }
  | { kind: "outcome"; outcome: Outcome }
  | { kind: "running" }
  | { kind: "noop" }
  | { kind: "skip"; reason: string };

/** A charging or result request on its way: its route, id, parameters and headers, and the scenario forced on it. */
interface Pending {
  route: MockRoute;
  requestId: string;
  forced: Forced | undefined;
  consume(): void;
  /** Why a forced scenario was not applied (the `x-sdgw-scenario-skipped` header). */
  skipped: string[];
  params: Record<string, unknown>;
  headers: Record<string, string>;
}

/** A request's parameters: the query of `GET /v1/search`, the JSON body of the others. */
type Params = Record<string, unknown>;

/** A charging call's plan, or its refusal and whether that is decided before the key (D50). */
type Planned = { call?: Charged; refusal?: Refusal; beforeKey?: boolean };

/** The generated validators of one operation, by part. */
type Validators = Record<string, (v: unknown) => RequestValidation<unknown>>;

const RETENTION_MS = 24 * 60 * 60 * 1000;
const isProduction = () =>
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.["NODE_ENV"] ===
  "production";

const decodePart = (v: string) => {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
};

class Refusal {
  readonly reply: Reply;
  constructor(reply: Reply) {
    this.reply = reply;
  }
}

/** Whether a code can stand inside the `error` of an answer of `op` (D13: not_found, invalid_target, temporarily_unavailable not on GET /v1/search). */
function envelopeAllows(code: ErrorCode, op: OperationId): boolean {
  const where = ERROR_CATALOGUE[code].envelope;
  return where === "all" || (where === "data" && op !== "search");
}

/**
 * Creates a mock of the Social Data Gateway: `handlers` for MSW, `use(...)` for scenarios, `reset()`, `state`.
 *
 * @example
 * ```ts
 * import { setupServer } from "msw/node";
 * import { createMock, scenario } from "@sdgw/mock";
 * const mock = createMock({ baseUrl: "http://127.0.0.1:8787" });
 * const server = setupServer(...mock.handlers);
 * server.listen({ onUnhandledFrame: "error" });
 * mock.use(scenario("rate_limited", { times: 1 }));
 * ```
 */
export function createMock(options: MockOptions = {}): Mock {
  const base = (options.baseUrl ?? "*").replace(/\/+$/, "");
  const keys = options.keys ?? DEFAULT_KEYS;
  const polls = options.polls ?? 2;
  const retryAfter = Math.max(1, Math.ceil(options.retryAfter ?? 1));
  const pages = Math.max(1, options.pages ?? 3);
  const clock = options.now ?? (() => Date.now());
  const validate = options.validate ?? !isProduction();
  const urls = options.urls ?? DEFAULT_URLS;
  const slow = options.slow ?? /\bslow\b/i;
  const isSlow = (call: Parameters<Exclude<MockOptions["slow"], RegExp | undefined>>[0]) =>
    slow instanceof RegExp ? slow.test(JSON.stringify(call.params)) : slow(call);
  if (!(Number.isInteger(polls) && polls >= 0))
    throw new TypeError(`@sdgw/mock: polls must be a whole number, 0 or more (got ${polls})`);

  const store = new Store(options.balance ?? 100, options.schedules);
  const simulator = new Simulator({ now: clock, ...(options.anchor !== undefined ? { anchor: options.anchor } : {}) });
  const catalog = new Catalog(simulator.providers);
  const finder = new Finder(catalog);
  let active: Active[] = [];

  // ---------------------------------------------------------------------------------------------- scenarios

  /** The scenario for this request: the header's, else the newest `use`d one for this operation. */
  function pick(
    op: OperationId,
    fromHeader: Scenario | undefined,
  ): { scenario: Scenario; consume(): void } | undefined {
    if (fromHeader) return { scenario: fromHeader, consume: () => {} };
    const found = active.find((a) => a.left > 0 && (a.scenario.operation === undefined || a.scenario.operation === op));
    if (!found) return undefined;
    return {
      scenario: found.scenario,
      consume: () => {
        found.left -= 1;
        if (found.left <= 0) active = active.filter((a) => a !== found);
      },
    };
  }

  /** What a scenario means for one operation (before the call's shape is known). */
  function classify(s: Scenario, route: MockRoute): Forced {
    const op = route.operationId;
    const runs = route.charging || op === "getResult";
    const name = s.name;
    const isStatus = (STATUS_SCENARIOS as readonly string[]).includes(name);
    const asStatus = isStatus && (s.http === undefined || s.http === 200) && (name !== "not_supported" || runs);
    if (asStatus) {
      if (!runs) return name === "ok" ? { kind: "noop" } : { kind: "skip", reason: `${op} answers no ${name} status` };
      if (name === "running") return { kind: "running" };
      return { kind: "outcome", outcome: name === "error" ? "upstream_error" : name };
    }
    const code = name as ErrorCode;
    const row = ERROR_CATALOGUE[code];
    const non200 = row.http.find((h) => h !== 200);
    const dataRoute = route.charging && op !== "search";
    const wanted =
      s.http ??
      (non200 === undefined || ((code === "not_found" || code === "temporarily_unavailable") && dataRoute)
        ? 200
        : non200);
    if (wanted === 200) {
      if (runs && (op === "getResult" || envelopeAllows(code, op))) return { kind: "outcome", outcome: code };
      return { kind: "skip", reason: `${op} answers no ${code} inside an HTTP 200 answer` };
    }
    if ((row.http as readonly number[]).includes(wanted) && route.responses.includes(wanted))
      return { kind: "refusal", code: code as HttpErrorCode, http: wanted };
    return { kind: "skip", reason: `${op} documents no HTTP ${wanted} answer for ${code}` };
  }

  // ---------------------------------------------------------------------------------------------- error answers

  function reply(status: number, json: unknown, headers: Record<string, string> = {}): Reply {
    return { status, headers, json };
  }

  function refuse<C extends HttpErrorCode>(code: C, requestId: string, extra: Record<string, unknown> = {}): Refusal {
    const a = errorAnswer(code, requestId, extra as never, { urls, now: new Date(clock()) });
    return new Refusal(reply(a.status, a.body, a.headers));
  }

  function invalid(requestId: string, why: InvalidParams): Refusal {
    return new Refusal(reply(400, invalidParamsAnswer(why, requestId)));
  }

  /** A forced refusal: the operation's fixture of that code and status when it has one (times refreshed), else the catalogue's defaults. */
  function forcedRefusal(route: MockRoute, code: HttpErrorCode, status: number, requestId: string): Reply {
    const fixture = route.fixtures.find((f) => f.code === code && f.http === status && f.shape === "error");
    const extra: Record<string, unknown> = {};
    if (fixture) {
      for (const [k, v] of Object.entries(FIXTURES[fixture.file] as Record<string, unknown>)) {
        if (!["request_id", "schema_version", "code", "retryable"].includes(k)) extra[k] = clone(v);
      }
    }
    const tool = { accountWatch: "account_watch", batchStats: "batch_stats" } as const;
    const op = route.operationId as keyof typeof tool;
    // D11, D51, D58: what a free account gets (the mock's keys are paid ones; the scenario shows it).
    if (!fixture && code === "plan_limit" && tool[op]) Object.assign(extra, purchaseRefusal(tool[op], urls).extra);
    const now = new Date(clock());
    if ("resets_at" in extra) extra["resets_at"] = nextUtcMidnight(now);
    if ("retry_at" in extra) extra["retry_at"] = timestamp(now.getTime() + 300_000);
    if (code === "rate_limited" || code === "idempotency_in_progress") extra["retry_after"] = retryAfter;
    if (code === "temporarily_unavailable" && extra["reason"] === "daily_cap" && typeof extra["message"] === "string") {
      extra["message"] = extra["message"].replace(/\d{4}-\d\d-\d\dT[\d:]+Z/g, String(extra["resets_at"]));
    }
    if (code === "daily_limit_reached" && typeof extra["message"] === "string") {
      extra["message"] = extra["message"].replace(/\d{4}-\d\d-\d\dT[\d:]+Z/g, nextUtcMidnight(now));
    }
    const a = errorAnswer(code, requestId, extra as never, { urls, now });
    return reply(a.status, a.body, a.headers);
  }

  // ---------------------------------------------------------------------------------------------- auth

  /**
   * D25: a key in the URL (any of `KEY_QUERY_NAMES`, any case) is refused first, on every route and unknown path,
   * whatever headers came (a forced scenario's header included); each value is remembered as exposed.
   */
  function keyInUrl(url: URL, requestId: string): Reply | null {
    const values = keysInQuery(url.search);
    if (!values) return null;
    for (const v of values) if (v) store.exposed.add(v);
    const a = errorAnswer("unauthorized", requestId, keyInQueryRefusal(urls.console), { urls, now: new Date(clock()) });
    return reply(a.status, a.body, a.headers);
  }
  function refuseKeyInQuery(url: URL, requestId: string): void {
    const refused = keyInUrl(url, requestId);
    if (refused) throw new Refusal(refused);
  }

  function authenticate(route: MockRoute, headers: Record<string, string>, requestId: string): string {
    const presented = presentedKey(headers);
    const key = presented.ok ? keys[presented.key] : undefined;
    if (!presented.ok || !key)
      throw refuse(
        "unauthorized",
        requestId,
        REFUSALS.unauthorized(presented.ok ? KEY_REFUSALS.unknown : presented, urls),
      );
    if (route.charging && !(key.permissions ?? []).includes("read_data"))
      throw refuse("key_scope_denied", requestId, REFUSALS.keyScopeDenied(urls));
    return presented.key;
  }

  // ---------------------------------------------------------------------------------------------- the engine's calls

  /** The credits as answers show them (D7): runs going on hold their quote, part of today's spend; no daily limit. */
  const view = (): CreditView => {
    let held = 0;
    for (const run of store.runMap.values()) if (run.status === "running") held += run.call.quote;
    const todaySpend = store.spentToday + held;
    return { balance: store.balance, todaySpend, dailyLimit: null, dailyRemaining: null, held };
  };
  const toolContext = (providers: ToolContext["providers"]): ToolContext => ({
    providers,
    accountPlan: "paid",
    now: clock(),
    urls,
    followerHistory: (platform, accountId) => store.history(platform, accountId),
  });
  const failure = (o: Outcome, platform: string, params: object = {}) => forcedOutcome(o, platform, params, retryAfter);

  /** One planned call on its provider, or the outcome a scenario forces instead. */
  async function callOne(call: PlannedCall, scope: "search" | "data", forced: Outcome | undefined): Promise<EndedCall> {
    if (call.unsupported) return notSupportedEntry(call, call.unsupported, urls);
    if (forced && forced !== "ok") {
      const outcome = failure(forced, call.platform, call.params);
      if (outcome) return entryOf(call, outcome, scope, urls);
      const entry = { status: "error" as const, applied_params: call.applied, warnings: [...call.warnings], items: [] };
      return { call, entry: { ...entry, error: ownError(forced, call.platform, urls) }, cost: 0 };
    }
    const { platform, operation, params } = call;
    const outcome = await simulator.providers[platform].call({
      platform,
      operation,
      params,
      signal: new AbortController().signal,
    });
    return entryOf(call, outcome, scope, urls);
  }

  /** Runs a planned call: a data call's calls at once, a tool through `TOOLS[tool].run` (its steps after each wave). */
  async function execute(c: Charged, forced: Outcome | undefined): Promise<Done> {
    if (c.kind === "data") {
      const ended = await Promise.all(c.plan.calls.map((call) => callOne(call, c.plan.errorScope, forced)));
      return { kind: "data", ended };
    }
    let providers = simulator.providers;
    if (forced && forced !== "ok") {
      // A forced outcome replaces every provider call's; the codes no platform answers fail as upstream_error first.
      const wrap = (p: PlatformProvider): PlatformProvider => ({
        ...p,
        call: async (r) => failure(forced, r.platform, r.params) ?? failure("upstream_error", r.platform)!,
      });
      providers = Object.fromEntries(Object.entries(providers).map(([k, p]) => [k, wrap(p)])) as typeof providers;
    }
    const waves: Step[][] = [];
    const tool = TOOLS[c.plan.tool] as unknown as {
      run(r: unknown, ctx: ToolContext, onStep: OnStep): Promise<RunResult>;
    };
    let result = await tool.run(c.body, toolContext(providers), (steps) => waves.push(steps));
    if (forced && forced !== "ok" && !failure(forced, "") && result.status === "error") {
      result = { ...result, error: ownError(forced, c.plan.tool, urls) };
    }
    return { kind: "tool", result, waves };
  }

  /** Credits a run costs: each `ok` or `empty` call's price; a tool `creditsFor(calls_charged)`, at most its quote. */
  function costOf(c: Charged, done: Done): number {
    if (done.kind === "data") return done.ended.reduce((s, e) => s + e.cost, 0);
    const failed = ["error", "not_supported", "timeout"].includes(done.result.status);
    return failed ? 0 : Math.min(creditsFor(done.result.calls_charged), c.quote);
  }

  /** The same run when the balance no longer covers it: every call `insufficient_balance`, nothing charged. */
  function unpaid(done: Done): Done {
    const error = (platform: string) => ownError("insufficient_balance", platform, urls);
    if (done.kind === "tool")
      return { ...done, result: { ...done.result, status: "error", items: [], error: error("") } };
    const entry = (e: EndedCall) => ({
      ...e.entry,
      status: "error" as const,
      items: [],
      error: error(e.call.platform),
    });
    return { kind: "data", ended: done.ended.map((e) => ({ call: e.call, entry: entry(e), cost: 0 })) };
  }

  /** `options.pages`: that page answers `has_more: false` (a simulator's cursor holds the offset of the next). */
  function capPages(e: EndedCall): EndedCall {
    const cursor = e.entry.page?.has_more ? e.entry.page.cursor : undefined;
    const size = Number(e.call.params["limit"] ?? e.call.params["count"] ?? 20);
    const offset = cursor ? (JSON.parse(fromBase64url(cursor) ?? "{}") as { o?: number }).o : undefined;
    if (offset === undefined || Math.round(offset / size) < pages) return e;
    return { ...e, entry: { ...e.entry, page: { has_more: false } } };
  }

  /** Charges a run once (a balance that no longer covers it fails it, `insufficient_balance`) and answers it. */
  function settle(c: Charged, done: Done, requestId: string): { body: Record<string, unknown>; charged: number } {
    let charged = costOf(c, done);
    if (charged > store.balance) [done, charged] = [unpaid(done), 0];
    store.charge(charged, clock());
    const fetchedAt = timestamp(clock());
    if (c.kind === "data" && done.kind === "data") {
      const { body } = finishedAnswer(c.plan, done.ended.map(capPages), requestId, fetchedAt, charged, store.balance);
      return { body, charged };
    }
    const { plan, warnings } = c as Extract<Charged, { kind: "tool" }>;
    const result = (done as Extract<Done, { kind: "tool" }>).result;
    if (plan.tool === "account_watch") store.record(followerReadings(result));
    return {
      body: toolAnswer({ requestId, fetchedAt, plan, result, charged, view: view(), warnings }) as never,
      charged,
    };
  }

  function finishedReply(body: Record<string, unknown>, extraHeaders: Record<string, string> = {}): Reply {
    const headers: Record<string, string> = { ...extraHeaders };
    if (body["status"] === "timeout") headers["X-Should-Retry"] = "false";
    return reply(200, body, headers);
  }

  /** `batch_stats`' `format`: the media type of its answer, and the default of a read of its handle (D31). */
  const formatOf = (c: Charged): unknown =>
    c.kind === "tool" && c.plan.tool === "batch_stats" ? c.body["format"] : undefined;

  /** A finished answer in the media type asked for (D31): csv or ndjson rows of its items, else its JSON. */
  function fileReply(body: Record<string, unknown>, format: unknown, extraHeaders: Record<string, string> = {}): Reply {
    const r = finishedReply(body, extraHeaders);
    if (format === "csv")
      return { status: r.status, headers: r.headers, text: toCsv(body), contentType: "text/csv; charset=utf-8" };
    if (format === "ndjson")
      return { status: r.status, headers: r.headers, text: toNdjson(body), contentType: "application/x-ndjson" };
    return r;
  }

  /** Ends a run: charged once, its answer under the original call's `request_id` (D47). */
  function finish(run: Run): void {
    const { body, charged } = settle(run.call, run.done, run.requestId);
    Object.assign(run, { charged, finished: body, status: "finished", endedAt: clock() });
  }

  /** A finished result as read now: the same answer, its balance as of the read (D7). */
  function asRead(run: Run): Record<string, unknown> {
    const body = clone(run.finished!);
    const billing = body["billing"] as Record<string, unknown>;
    if ("balance" in billing) billing["balance"] = store.balance;
    else body["billing"] = creditBilling(view(), Number(billing["cost_credits"]));
    return body;
  }

  /**
   * The 202 answer of a run still going, the call's own and every read of it, under the call's `request_id` (D47):
   * after `reads` of `polls + 1`, that share of a fanout's or targets' cells ended (D5), of a tool's waves done (D6).
   */
  function running(run: Run): Reply {
    const { call: c, done } = run;
    const share = (n: number) => Math.floor((n * run.reads) / (polls + 1));
    const parts = { requestId: run.requestId, handle: run.handle, retryAfterSeconds: retryAfter, view: view() };
    let shown: Pick<RunningParts, "waves" | "steps" | "cells"> = { waves: { planned: 1, done: 0 } };
    if (c.kind === "tool" && done.kind === "tool") {
      const planned = c.plan.quote.waves_planned;
      const ended = Math.min(planned - 1, share(planned));
      const steps = (ended > 0 && done.waves[ended - 1]) || c.plan.quote.plan;
      shown = {
        steps,
        waves: { planned, done: steps.filter((s) => s.status === "done" || s.status === "failed").length },
      };
    } else if (c.kind === "data" && done.kind === "data" && c.plan.shape !== "single") {
      shown.cells = done.ended.slice(0, share(done.ended.length)).map((e) => cellOf(c.plan, e));
    }
    const body = runningAnswer({ ...parts, ...shown, quote: c.quote });
    return reply(202, body, { "Retry-After": String(retryAfter) });
  }

  // ---------------------------------------------------------------------------------------------- operations

  function account(apiKey: string, requestId: string): AccountAnswer {
    const fixture = clone(FIXTURES[ROUTES.getAccount.defaultFixture!]) as AccountAnswer;
    const permissions = [...(keys[apiKey]?.permissions ?? [])];
    const id = `key_${apiKey.replace(/[^A-Za-z0-9]/g, "").slice(-8) || "mock"}`;
    return {
      ...fixture,
      request_id: requestId,
      workspace: { ...fixture.workspace, schedules_count: store.scheduleList.length },
      key: {
        ...fixture.key,
        id,
        prefix: keyPrefix(apiKey),
        name: "mock key",
        permissions,
        daily_limit_credits: null,
        expires_at: null,
      },
      billing: creditBilling(view(), 0) as AccountAnswer["billing"],
    };
  }

  function find(body: Record<string, unknown>, requestId: string) {
    const platform = typeof body["platform"] === "string" ? { platform: body["platform"] as Platform } : {};
    const limit = typeof body["limit"] === "number" ? body["limit"] : 20;
    const matches = finder.find(String(body["query"]), { ...platform, limit });
    return { request_id: requestId, schema_version: "v1", query: body["query"], matches };
  }

  /** A data call's or a tool's refusal (D24, D41, D42) in the server's words (the engine's `refusalAnswer`). */
  function planRefusal(r: PlanRefusal | ToolRefusal, requestId: string): Refusal {
    const answer = refusalAnswer(r, urls);
    if (answer.code === "invalid_params") return invalid(requestId, answer.invalid);
    return refuse(answer.code, requestId, answer.extra);
  }

  /**
   * A charging call planned by the engine, as the server plans it: a data route's calls (`planRoute`) or a tool's
   * quote (`TOOLS[tool].plan`), or its refusal and whether it is decided before the key (D50: everything the
   * request alone decides; a tool's `scale=large` depends on the account).
   */
  function plan(route: MockRoute, params: Params, pathParams: Record<string, string>, requestId: string): Planned {
    if (route.tool) {
      const planned = TOOLS[route.tool as ToolName].plan(params as never, toolContext(simulator.providers));
      if (!planned.ok) {
        const r = planned.refusal;
        const beforeKey =
          r.code === "invalid_params" || (r.code === "not_supported" && r.reason === "no_such_capability");
        return { refusal: planRefusal(r, requestId), beforeKey };
      }
      const p = planned.plan;
      return { call: { kind: "tool", plan: p, body: params, quote: p.quote.quote_credits, warnings: [...p.warnings] } };
    }
    const op = pathParams["op"] ?? "";
    const planned = planRoute(catalog, route.operationId as DataRouteId, params, op, (routeOp, full) => {
      const v = (requestValidators[routeOp as keyof typeof requestValidators] as Validators)["body"]!(full);
      return v.ok ? null : v.invalid;
    });
    if (!planned.ok) return { refusal: planRefusal(planned.refusal, requestId), beforeKey: true };
    return { call: { kind: "data", plan: planned.plan, quote: quoteOf(planned.plan).credits } };
  }

  /** Why an outcome cannot be answered in this call's shape (D13: `search` answers and fanout entries take fewer codes). */
  function unanswerable(op: OperationId, c: Charged, outcome: Outcome): string | undefined {
    const where = (ERROR_CATALOGUE as Record<string, { envelope: string } | undefined>)[outcome]?.envelope;
    const scope = c.kind === "tool" ? "data" : c.plan.errorScope;
    if (!where || where === "all" || (where === "data" && scope === "data")) return undefined;
    if (c.kind === "data" && c.plan.shape === "fanout") return `a fanout answer's entries take no ${outcome} (D13)`;
    return `${op} answers no ${outcome} inside an HTTP 200 answer`;
  }

  /** A data or tool call, from its plan to its answer. */
  async function charging(
    req: Pending,
    c: Charged,
    apiKey: string,
    pathParams: Record<string, string>,
  ): Promise<Reply> {
    const { route, forced, consume, skipped, requestId, params, headers } = req;
    const op = route.operationId;
    const confirmed = params["confirm"] !== false;
    if (op === "accountWatch" && isObject(params["schedule"]) && confirmed && store.scheduleList.length >= 20) {
      throw invalid(requestId, tooManySchedules(20));
    }

    // idempotency (seed: 409 while running, the first answer again after, 422 with other parameters)
    const idemKey = headers["idempotency-key"];
    const slot = idemKey === undefined ? undefined : `${apiKey}\n${idemKey}`;
    const fingerprint = seedText({ op, path: pathParams, params });
    const record = slot === undefined ? undefined : store.idempotency.get(slot);
    if (record && record.params !== fingerprint) {
      throw refuse("idempotency_conflict", requestId, REFUSALS.idempotencyConflict());
    }
    if (record?.answer)
      return { ...clone(record.answer), headers: { ...record.answer.headers, "Idempotent-Replayed": "true" } };
    if (record?.handle) {
      const run = store.runMap.get(record.handle)!;
      if (run.status === "running" && run.reads < polls && !run.due) {
        run.reads += 1;
        throw refuse("idempotency_in_progress", requestId, REFUSALS.idempotencyInProgress(retryAfter));
      }
      if (run.status === "running") finish(run);
      if (run.status === "finished")
        return fileReply(clone(run.finished!), formatOf(run.call), { "Idempotent-Replayed": "true" });
      store.idempotency.delete(slot!); // broken or expired: the key starts a new call
    }

    const remember = (r: Reply): Reply => {
      if (slot !== undefined) store.idempotency.set(slot, { params: fingerprint, answer: clone(r) });
      return r;
    };

    if (c.kind === "tool" && !confirmed) {
      if (forced?.kind === "running" || forced?.kind === "outcome")
        skipped.push(`${op} with confirm: false answers the quote only`);
      return remember(reply(200, toolQuoteAnswer(requestId, c.plan, view())));
    }

    // budget: nothing runs over max_cost_credits or over the balance
    const maxCost = params["max_cost_credits"];
    if (typeof maxCost === "number" && maxCost < c.quote) {
      const more = c.kind === "tool" ? " Send confirm: false to see the plan." : "";
      throw refuse("max_cost_exceeded", requestId, REFUSALS.maxCostExceeded(c.quote, maxCost, more));
    }
    if (store.balance < c.quote)
      throw refuse("insufficient_balance", requestId, REFUSALS.insufficientBalance(c.quote, store.balance, urls));

    let outcome: Outcome | undefined;
    if (forced?.kind === "outcome") {
      const reason = unanswerable(op, c, forced.outcome);
      if (reason) skipped.push(reason);
      else {
        outcome = forced.outcome;
        consume();
      }
    }
    if (forced?.kind === "running") consume();

    if (c.kind === "tool" && op === "accountWatch" && isObject(params["schedule"])) {
      // D52: the call that creates a schedule is its first run, and its answer says so.
      const created = addSchedule(c.plan);
      c.warnings.unshift(MESSAGES.scheduleCreated(created));
    }

    // A call none of whose calls can run (D41) has nothing to wait for: it answers at once.
    // A tool quoted `background` (over 10 calls, D51) answers 202 at once; any call may pass the wait (`slow`).
    const runs = c.kind === "tool" || c.plan.calls.some((x) => !x.unsupported);
    const background =
      forced?.kind === "running" ||
      (c.kind === "tool" && c.plan.quote.mode === "background") ||
      (runs && isSlow({ operationId: op, params, headers }));
    const done = await execute(c, outcome);
    if (background) {
      const fresh = { reads: 0, status: "running" as const, due: false, charged: 0 };
      const run: Run = { handle: newHandle(), requestId, op, key: apiKey, call: c, done, ...fresh };
      store.runMap.set(run.handle, run);
      if (slot !== undefined) store.idempotency.set(slot, { params: fingerprint, handle: run.handle });
      return running(run);
    }
    return remember(fileReply(settle(c, done, requestId).body, formatOf(c)));
  }

  /**
   * Adds the schedule of a confirmed `account_watch` with `schedule` (D11, D52): its `params` are the call's applied
   * parameters without `schedule.every`, `confirm` and `max_cost_credits`; its next run is one period from now.
   */
  function addSchedule(plan: ToolPlan): Schedule {
    const every = String(plan.applied_params["schedule.every"]) as Schedule["every"];
    const hours = every === "1h" ? 1 : every === "6h" ? 6 : 24;
    const params = Object.fromEntries(
      Object.entries(plan.applied_params).filter(
        ([k]) => k !== "schedule.every" && k !== "confirm" && k !== "max_cost_credits",
      ),
    );
    const schedule: Schedule = {
      id: `sch_${newHandle().slice(2, 10)}`,
      tool: "account_watch",
      params: params as Schedule["params"],
      every,
      status: "active",
      created_at: timestamp(clock()),
      next_run_at: timestamp(clock() + hours * 3_600_000),
      last_run: null,
    };
    store.scheduleList.push(schedule);
    return schedule;
  }

  /** `GET /v1/results/{handle}`: 202 `polls` times, then the finished answer (charged once), then the same for free. */
  async function result(req: Pending, apiKey: string, handle: string, format: string | undefined): Promise<Reply> {
    const { forced, consume, skipped, requestId } = req;
    const run = store.runMap.get(handle);
    if (!run || run.key !== apiKey) {
      throw refuse("not_found", requestId, REFUSALS.noSuchHandle());
    }
    if (run.status === "finished" && clock() - run.endedAt! >= RETENTION_MS) run.status = "expired";
    if (run.status === "expired") throw refuse("handle_expired", requestId, REFUSALS.handleExpired());
    if (run.status === "broken") throw refuse("internal_error", requestId, REFUSALS.runBroken(handle));
    if (run.status === "running") {
      if (forced?.kind === "running") {
        consume();
        return running(run);
      }
      if (forced?.kind === "outcome") {
        const reason = unanswerable(run.op, run.call, forced.outcome);
        if (reason) skipped.push(reason);
        else {
          consume();
          run.done = await execute(run.call, forced.outcome);
          run.due = true;
        }
      }
      if (run.reads < polls && !run.due) {
        run.reads += 1;
        return running(run);
      }
      finish(run);
    } else if (forced && forced.kind !== "refusal" && forced.kind !== "skip") {
      skipped.push(`${handle} has already finished`);
    }
    const body = asRead(run);
    return fileReply(body, format ?? formatOf(run.call));
  }

  // ---------------------------------------------------------------------------------------------- the pipeline

  async function answer(route: MockRoute, request: Request, rawPathParams: Record<string, unknown>): Promise<Reply> {
    const op = route.operationId;
    const requestId = newRequestId();
    const url = new URL(request.url);
    const headers = normalizeHeaders(request.headers);
    // Only the route's own parameters: MSW also names the parts a `*` base matched ("0", "1", …).
    const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const pathParams = Object.fromEntries(names.map((k) => [k, decodePart(String(rawPathParams[k] ?? ""))]));
    const skipped: string[] = [];
    const headerValue = headers[SCENARIO_HEADER];
    const fromHeader = parseScenarioHeader(headerValue);
    if (headerValue !== undefined && !fromHeader) skipped.push(`no scenario "${headerValue}"`);
    const picked = pick(op, fromHeader);
    const forced = picked && classify(picked.scenario, route);
    const consume = picked?.consume ?? (() => {});
    if (forced?.kind === "skip") skipped.push(forced.reason);
    if (forced?.kind === "noop") consume();

    const done = (r: Reply): Reply =>
      skipped.length ? { ...r, headers: { ...r.headers, [SKIPPED_HEADER]: skipped.join("; ") } } : r;
    try {
      refuseKeyInQuery(url, requestId); // every route, keyless ones too: a key in a URL has leaked (D25)
      if (forced?.kind === "refusal") {
        consume();
        if (op === "getResult" && forced.code === "internal_error") {
          const run = store.runMap.get(pathParams["handle"] ?? "");
          if (run?.status === "running") run.status = "broken";
        }
        return done(forcedRefusal(route, forced.code, forced.http, requestId));
      }
      // D50: a key in the URL first (above), then the request is validated, then the key is authenticated.
      const checked = admitRequest(op, {
        rawQuery: url.search.slice(1),
        headers,
        ...(names.length > 0 ? { path: pathParams } : {}),
        ...(route.method === "POST"
          ? { body: { contentType: headers["content-type"], text: await textOf(request) } }
          : {}),
      });
      if (!checked.ok && route.responses.includes(400)) throw invalid(requestId, checked.invalid);
      const { query, body }: { query: Params; body: Params } = checked.ok ? checked : { query: {}, body: {} };
      const params = route.method === "GET" ? query : body;
      const pending: Pending = { route, requestId, forced, consume, skipped, params, headers };
      // D41, D50: what the request alone decides is refused before the key; the rest after it.
      const planned = route.charging ? plan(route, params, pathParams, requestId) : {};
      if (planned.refusal && planned.beforeKey) throw planned.refusal;
      const apiKey = route.keyless ? "" : authenticate(route, headers, requestId);
      if (planned.refusal) throw planned.refusal;

      switch (op) {
        case "listCapabilities":
          return done(
            reply(200, {
              request_id: requestId,
              schema_version: "v1",
              operations: catalog.operations,
              tools: catalog.tools,
            }),
          );
        case "getOpenApiDocument":
          return done(reply(200, OPENAPI_DOCUMENT));
        case "findOperation":
          return done(reply(200, find(body, requestId)));
        case "getAccount":
          return done(reply(200, account(apiKey, requestId)));
        case "listSchedules":
          return done(
            reply(200, { request_id: requestId, schema_version: "v1", schedules: store.schedules, limit: 20 }),
          );
        case "deleteSchedule": {
          const id = pathParams["schedule_id"] ?? "";
          const at = store.scheduleList.findIndex((s) => s.id === id);
          if (at < 0) {
            throw refuse("not_found", requestId, REFUSALS.noSuchSchedule(id));
          }
          store.scheduleList.splice(at, 1);
          return done(reply(200, { request_id: requestId, schema_version: "v1", deleted: true, schedule_id: id }));
        }
        case "getResult":
          return done(await result(pending, apiKey, pathParams["handle"] ?? "", query["format"] as string | undefined));
        default:
          return done(await charging(pending, planned.call!, apiKey, pathParams));
      }
    } catch (e) {
      if (e instanceof Refusal) return done(e.reply);
      throw e;
    }
  }

  /** Dev check: every JSON answer against the contract. */
  function conform(route: MockRoute | undefined, r: Reply): void {
    if (!validate || r.json === undefined) return;
    const result = route
      ? responseValidators[route.operationId as keyof typeof responseValidators](r.status, r.json)
      : validateErrorStructure(r.json);
    if (!result.ok) {
      const where = route ? `${route.method} ${route.path} (${route.operationId})` : "a refused route";
      throw new Error(
        `@sdgw/mock: the answer to ${where} under HTTP ${r.status} does not match the contract: ${result.errors.map((e) => `${e.path} ${e.message}`).join("; ")}. ` +
          `This is a bug in the mock or a broken fixture; nothing was sent.\n${JSON.stringify(r.json).slice(0, 2000)}`,
      );
    }
  }

  // The contract's path of a request: its URL's path without the base address's own path (D53 names files by it).
  const basePath = /^[a-z][\w+.-]*:\/\//i.test(base) ? new URL(base).pathname.replace(/\/$/, "") : "";
  const contractPath = (request: Request) => {
    const pathname = new URL(request.url).pathname;
    return basePath && pathname.startsWith(basePath) ? pathname.slice(basePath.length) : pathname;
  };

  function toResponse(r: Reply, path: string): Response {
    const type = r.text !== undefined ? (r.contentType ?? "text/plain") : "application/json";
    const headers = { ...answerHeaders(path, type), ...r.headers };
    if (r.text !== undefined)
      return new HttpResponse(r.text, { status: r.status, headers: { ...headers, "Content-Type": type } });
    return HttpResponse.json(r.json as never, { status: r.status, headers });
  }

  const handlers: HttpHandler[] = (Object.values(ROUTES) as MockRoute[]).map((route) => {
    const method = route.method.toLowerCase() as "get" | "post" | "delete";
    return http[method](`${base}${route.mswPath}`, async ({ request, params }) => {
      const r = await answer(route, request, params as Record<string, unknown>);
      conform(route, r);
      return toResponse(r, contractPath(request));
    });
  });

  /** 404 `not_found` of a path the contract has no route for (after D25's key check), checked like every answer. */
  function notFound(request: Request, refusal: RefusalFields): Response {
    const requestId = newRequestId();
    const exposed = keyInUrl(new URL(request.url), requestId);
    if (exposed) return toResponse(exposed, contractPath(request));
    const a = errorAnswer("not_found", requestId, refusal as never, { urls });
    const r = reply(a.status, a.body, a.headers);
    conform(undefined, r);
    return toResponse(r, contractPath(request));
  }

  // An unknown tool (D14 no_such_tool), and with a base address any other path under it (no_such_route).
  handlers.push(
    http.post(`${base}/v1/tools/:tool`, ({ params, request }) =>
      notFound(request, REFUSALS.noSuchTool(String(params["tool"]), TOOL_NAMES)),
    ),
  );
  if (options.unknownRoutes ?? base !== "*") {
    const routes = (Object.values(ROUTES) as MockRoute[]).map((r) => `${r.method} ${r.path}`);
    const noSuchRoute = ({ request }: { request: Request }) =>
      notFound(request, REFUSALS.noSuchRoute(request.method, new URL(request.url).pathname, routes));
    // Every path under the base address (its whole origin when it has no path of its own), never other origins.
    if (base === "*") handlers.push(http.all("*/v1/*", noSuchRoute));
    else {
      handlers.push(http.all(`${base}/*`, noSuchRoute));
      if (base !== "" && !/^[a-z][\w+.-]*:\/\/[^/]*$/i.test(base)) handlers.push(http.all(base, noSuchRoute)); // the base's own path
    }
  }

  return {
    handlers,
    use(...scenarios: Scenario[]) {
      active = [...scenarios.map((s) => ({ scenario: s, left: s.times ?? Number.POSITIVE_INFINITY })), ...active];
    },
    reset() {
      active = [];
      store.clear();
    },
    state: store,
  };
}
