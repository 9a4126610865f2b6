/**
 * `createMock()`: MSW 3 handlers for every operation of the contract, answering as the seed says a gateway does:
 * keys and their permission, request validation through @sdgw/validators, credits, 202 runs read by handle,
 * idempotency, paging; and any status or error code on demand (scenarios).
 */
import { Catalog, DAY_MS, EVERY_MS, Finder, KEY_REFUSALS, MESSAGES, REFUSALS, Simulator, TOOLS } from "@sdgw/engine";
import { cellOf, creditBilling, entryOf, finishedAnswer, followerReadings, fromBase64url } from "@sdgw/engine";
import { keyPrefix, notSupportedEntry, planRoute, presentedKey, purchaseRefusal, quoteOf } from "@sdgw/engine";
import { refusalAnswer, runningAnswer, scheduleParams, seedText, tooManySchedules, toolAnswer } from "@sdgw/engine";
import { isoSeconds, toolCharge, toolQuoteAnswer } from "@sdgw/engine";
import type { CreditView, DataRouteId, EndedCall, PlanRefusal, PlatformProvider, RefusalFields } from "@sdgw/engine";
import type { RunningParts, ToolContext, ToolPlan, ToolRefusal } from "@sdgw/engine";
import { ERROR_CATALOGUE, TOOL_NAMES } from "@sdgw/types";
import type { AccountAnswer, ErrorCode, OperationId, Platform, Schedule, Step, ToolName } from "@sdgw/types";
import { DEFAULT_URLS, admitRequest, answerHeaders, bodyProblem, errorAnswer } from "@sdgw/validators";
import {
  invalidParamsAnswer,
  keyInQueryRefusal,
  keysInQuery,
  nextUtcMidnight,
  normalizeHeaders,
} from "@sdgw/validators";
import { resultFile, responseValidators, validateErrorStructure } from "@sdgw/validators";
import type { HttpErrorCode, InvalidParams, ServiceUrls } from "@sdgw/validators";
import { http, HttpResponse, type HttpHandler } from "msw";
import { OPENAPI_DOCUMENT } from "./generated/openapi.ts";
import { FIXTURES, ROUTES } from "./generated/routes.ts";
import type { MockRoute } from "./route-types.ts";
import { forcedOutcome, ownError, parseScenarioHeader, SCENARIO_HEADER, SKIPPED_HEADER } from "./scenarios.ts";
import { STATUS_SCENARIOS } from "./scenarios.ts";
import type { Scenario } from "./scenarios.ts";
import { Store, type Charged, type Done, type MockState, type Outcome, type Reply, type Run } from "./state.ts";
import { newHandle, newRequestId } from "./util.ts";

/** A key the mock accepts, and what it may do. */
export interface MockKey {
  /** `read_data` lets the key call data routes and tools (D26); without it they answer `403 key_scope_denied`. */
  permissions?: readonly "read_data"[];
}

/** Bytes that are not UTF-8 are refused, not replaced; a BOM is kept (and is then not JSON), as the server does. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A request's body as text, or null when its bytes are not UTF-8. */
const textOf = (request: Request) =>
  request
    .arrayBuffer()
    .then((b) => UTF8.decode(b))
    .catch(() => null);

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

/** A scenario turned on by `use`, with what is left of it. */
type Active = { scenario: Scenario; left: number };

/** What a forced scenario asks of one operation; `take()` counts it as answered. */
type Forced = (
  | { kind: "refusal"; code: HttpErrorCode; http: number }
  | { kind: "outcome"; outcome: Outcome }
  | { kind: "running" }
) & { take(): void };

/** A request's parameters: the query of `GET /v1/search`, the JSON body of the others. */
type Params = Record<string, unknown>;

/** A request past its checks: its route, id, parameters, headers and key, and the scenario forced on it. */
interface Req {
  route: MockRoute;
  requestId: string;
  params: Params;
  headers: Record<string, string>;
  pathParams: Record<string, string>;
  apiKey: string;
  forced: Forced | undefined;
  /** Why a forced scenario was not applied (the `x-sdgw-scenario-skipped` header). */
  skipped: string[];
}

/** A signal never aborted: the simulated platforms always answer. */
const SIGNAL = new AbortController().signal;

const decodePart = (v: string) => {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
};

/** A refusal thrown on the way: its answer. */
class Refusal {
  readonly reply: Reply;
  constructor(reply: Reply) {
    this.reply = reply;
  }
}

const reply = (status: number, json: unknown, headers: Record<string, string> = {}) => ({ status, headers, json });

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
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const validate = options.validate ?? env?.["NODE_ENV"] !== "production";
  const urls = options.urls ?? DEFAULT_URLS;
  const slow = options.slow ?? /\bslow\b/i;
  const isSlow = (call: SlowCall) => (slow instanceof RegExp ? slow.test(JSON.stringify(call.params)) : slow(call));
  if (!(Number.isInteger(polls) && polls >= 0))
    throw new TypeError(`@sdgw/mock: polls must be a whole number, 0 or more (got ${polls})`);

  const store = new Store(options.balance ?? 100, options.schedules);
  const simulator = new Simulator({ now: clock, ...(options.anchor !== undefined ? { anchor: options.anchor } : {}) });
  const catalog = new Catalog(simulator.providers);
  const finder = new Finder(catalog);
  let active: Active[] = [];

  /**
   * The scenario forced on a request (the header's, else the newest `use`d one for its operation) as its operation
   * answers it, before the call's shape is known; undefined when none applies (`skipped` then says why).
   */
  function force(route: MockRoute, headers: Record<string, string>, skipped: string[]): Forced | undefined {
    const op = route.operationId;
    const header = headers[SCENARIO_HEADER];
    const fromHeader = parseScenarioHeader(header);
    if (header !== undefined && !fromHeader) skipped.push(`no scenario "${header}"`);
    const on = fromHeader
      ? { scenario: fromHeader, left: 1 }
      : active.find((a) => a.left > 0 && (a.scenario.operation ?? op) === op);
    if (!on) return undefined;
    const { name, http } = on.scenario;
    const take = () => void on.left--;
    const skip = (reason: string) => void skipped.push(reason);
    const runs = route.charging || op === "getResult";
    const isStatus = (STATUS_SCENARIOS as readonly string[]).includes(name);
    if (isStatus && (http ?? 200) === 200 && (name !== "not_supported" || runs)) {
      if (!runs) return name === "ok" ? take() : skip(`${op} answers no ${name} status`);
      if (name === "running") return { kind: "running", take };
      return { kind: "outcome", outcome: name === "error" ? "upstream_error" : name, take };
    }
    const code = name as ErrorCode;
    const row = ERROR_CATALOGUE[code];
    // D13: on data routes, not_found and temporarily_unavailable stand inside the envelope unless asked otherwise.
    const inside = (code === "not_found" || code === "temporarily_unavailable") && route.charging && op !== "search";
    const wanted = http ?? (inside ? 200 : (row.http.find((h) => h !== 200) ?? 200));
    // D13: not_found, invalid_target and temporarily_unavailable stand in no answer of GET /v1/search.
    const inEnvelope = row.envelope === "all" || (row.envelope === "data" && op !== "search");
    if (wanted === 200) {
      if (runs && (op === "getResult" || inEnvelope)) return { kind: "outcome", outcome: code, take };
      return skip(`${op} answers no ${code} inside an HTTP 200 answer`);
    }
    if ((row.http as readonly number[]).includes(wanted) && route.responses.includes(wanted))
      return { kind: "refusal", code: code as HttpErrorCode, http: wanted, take };
    return skip(`${op} documents no HTTP ${wanted} answer for ${code}`);
  }

  /** The outcome forced on a call, when its shape can answer it (D13: `search` answers and fanout entries take fewer codes). */
  function forcedOn(req: Req, op: OperationId, c: Charged): Outcome | undefined {
    const { forced } = req;
    if (forced?.kind !== "outcome") return undefined;
    const where = (ERROR_CATALOGUE as Record<string, { envelope: string } | undefined>)[forced.outcome]?.envelope;
    const scope = c.kind === "tool" ? "data" : c.plan.errorScope;
    if (!where || where === "all" || (where === "data" && scope === "data")) {
      forced.take();
      return forced.outcome;
    }
    const o = forced.outcome;
    const fanout = c.kind === "data" && c.plan.shape === "fanout";
    req.skipped.push(
      fanout ? `a fanout answer's entries take no ${o} (D13)` : `${op} answers no ${o} inside an HTTP 200 answer`,
    );
    return undefined;
  }

  function refuse<C extends HttpErrorCode>(code: C, requestId: string, extra: Record<string, unknown> = {}): Refusal {
    const a = errorAnswer(code, requestId, extra as never, { urls, now: new Date(clock()) });
    return new Refusal(reply(a.status, a.body, a.headers));
  }

  const invalid = (requestId: string, why: InvalidParams) =>
    new Refusal(reply(400, invalidParamsAnswer(why, requestId)));

  /** A data call's or a tool's refusal (D24, D41, D42) in the server's words (the engine's `refusalAnswer`). */
  function planRefusal(r: PlanRefusal | ToolRefusal, requestId: string): Refusal {
    const answer = refusalAnswer(r, urls);
    return answer.code === "invalid_params"
      ? invalid(requestId, answer.invalid)
      : refuse(answer.code, requestId, answer.extra);
  }

  /** A forced refusal: the operation's fixture of that code and status when it has one (times refreshed), else the catalogue's defaults. */
  function forcedRefusal(route: MockRoute, code: HttpErrorCode, status: number, requestId: string): Reply {
    const fixture = route.fixtures.find((f) => f.code === code && f.http === status && f.shape === "error");
    const extra: Record<string, unknown> = {};
    for (const [k, v] of Object.entries((fixture ? FIXTURES[fixture.file] : {}) as object)) {
      if (!["request_id", "schema_version", "code", "retryable"].includes(k)) extra[k] = structuredClone(v);
    }
    // D11, D51, D58: what a free account gets (the mock's keys are paid ones; the scenario shows it).
    const tool = route.tool === "account_watch" || route.tool === "batch_stats" ? route.tool : undefined;
    if (!fixture && code === "plan_limit" && tool) Object.assign(extra, purchaseRefusal(tool, urls).extra);
    const now = new Date(clock());
    if ("retry_at" in extra) extra["retry_at"] = isoSeconds(now.getTime() + 300_000);
    if (code === "rate_limited" || code === "idempotency_in_progress") extra["retry_after"] = retryAfter;
    if (typeof extra["resets_at"] === "string" && typeof extra["message"] === "string") {
      // A daily limit or cap: it restarts at the next UTC midnight, and its message says when.
      const resetsAt = nextUtcMidnight(now);
      extra["resets_at"] = resetsAt;
      extra["message"] = extra["message"].replace(/\d{4}-\d\d-\d\dT[\d:]+Z/g, resetsAt);
    }
    return refuse(code, requestId, extra).reply;
  }

  /**
   * D25: a key in the URL (any of `KEY_QUERY_NAMES`, any case) is refused first, on every route and unknown path,
   * whatever headers came (a forced scenario's header included); each value is remembered as exposed.
   */
  function keyInUrl(url: URL, requestId: string): Reply | null {
    const values = keysInQuery(url.search);
    if (!values) return null;
    for (const v of values) if (v) store.exposed.add(v);
    return refuse("unauthorized", requestId, keyInQueryRefusal(urls.console)).reply;
  }

  function authenticate(route: MockRoute, headers: Record<string, string>, requestId: string): string {
    const presented = presentedKey(headers);
    const key = presented.ok ? keys[presented.key] : undefined;
    if (!presented.ok || !key) {
      const why = REFUSALS.unauthorized(presented.ok ? KEY_REFUSALS.unknown : presented, urls);
      throw refuse("unauthorized", requestId, why);
    }
    if (route.charging && !(key.permissions ?? []).includes("read_data"))
      throw refuse("key_scope_denied", requestId, REFUSALS.keyScopeDenied(urls));
    return presented.key;
  }

  /** The credits as answers show them (D7): runs going on hold their quote, part of today's spend; no daily limit. */
  const view = (): CreditView => {
    let held = 0;
    for (const run of store.runMap.values()) if (run.status === "running") held += run.quoteCredits;
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

  /**
   * Runs a planned call: a data call's calls at once, a tool through `TOOLS[tool].run` (its steps after each wave).
   * A forced outcome replaces every provider call's; the codes no platform answers fail as upstream_error, then
   * get their own error object.
   */
  async function execute(c: Charged, forced: Outcome | undefined): Promise<Done> {
    let providers = simulator.providers;
    let own: ((platform: string) => ReturnType<typeof ownError>) | undefined;
    if (forced && forced !== "ok") {
      const call: PlatformProvider["call"] = async (r) =>
        failure(forced, r.platform, r.params) ?? failure("upstream_error", r.platform)!;
      const wrapped = Object.entries(providers).map(([k, p]) => [k, { ...p, call }]);
      providers = Object.fromEntries(wrapped) as typeof providers;
      if (!failure(forced, "")) own = (platform) => ownError(forced, platform, urls);
    }
    if (c.kind === "tool") {
      const waves: Step[][] = [];
      const result = await TOOLS[c.plan.tool].run(c.body as never, toolContext(providers), (s) => waves.push(s));
      if (own && result.status === "error") result.error = own(c.plan.tool);
      return { kind: "tool", result, waves };
    }
    const ended = await Promise.all(
      c.plan.calls.map(async (call): Promise<EndedCall> => {
        if (call.unsupported) return notSupportedEntry(call, call.unsupported, urls);
        const { platform, operation, params } = call;
        const outcome = await providers[platform].call({ platform, operation, params, signal: SIGNAL });
        const ended = entryOf(call, outcome, c.plan.errorScope, urls);
        if (own) ended.entry.error = own(platform);
        return ended;
      }),
    );
    return { kind: "data", ended };
  }

  /** The same run when the balance no longer covers it: every call `insufficient_balance`, nothing charged. */
  function unpaid(done: Done): Done {
    const failed = (platform: string) => ({
      status: "error" as const,
      items: [],
      error: ownError("insufficient_balance", platform, urls),
    });
    if (done.kind === "tool") return { ...done, result: { ...done.result, ...failed("") } };
    const ended = done.ended.map((e) => ({ call: e.call, entry: { ...e.entry, ...failed(e.call.platform) }, cost: 0 }));
    return { kind: "data", ended };
  }

  /** `options.pages`: that page answers `has_more: false` (a simulator's cursor holds the offset of the next). */
  function capPages(e: EndedCall): EndedCall {
    const cursor = e.entry.page?.has_more ? e.entry.page.cursor : undefined;
    const size = Number(e.call.params["limit"] ?? e.call.params["count"] ?? 20);
    const offset = cursor ? (JSON.parse(fromBase64url(cursor) ?? "{}") as { o?: number }).o : undefined;
    if (offset === undefined || Math.round(offset / size) < pages) return e;
    return { ...e, entry: { ...e.entry, page: { has_more: false } } };
  }

  /**
   * Charges a run once (a balance that no longer covers it fails it, `insufficient_balance`) and answers it: each
   * `ok` or `empty` call's price, a tool's `toolCharge`.
   */
  function settle(c: Charged, done: Done, requestId: string): { body: Record<string, unknown>; charged: number } {
    let charged = done.kind === "data" ? done.ended.reduce((s, e) => s + e.cost, 0) : toolCharge(done.result, c.quote);
    if (charged > store.balance) [done, charged] = [unpaid(done), 0];
    store.charge(charged, clock());
    const fetchedAt = isoSeconds(clock());
    if (c.kind === "data" && done.kind === "data") {
      const { body } = finishedAnswer(c.plan, done.ended.map(capPages), requestId, fetchedAt, charged, store.balance);
      return { body, charged };
    }
    const { plan, warnings } = c as Extract<Charged, { kind: "tool" }>;
    const result = (done as Extract<Done, { kind: "tool" }>).result;
    if (plan.tool === "account_watch") store.record(followerReadings(result));
    const body = toolAnswer({ requestId, fetchedAt, plan, result, charged, view: view(), warnings });
    return { body: body as never, charged };
  }

  /** `batch_stats`' `format`: the media type of its answer, and the default of a read of its handle (D31). */
  const formatOf = (c: Charged) => (c.kind === "tool" && c.plan.tool === "batch_stats" ? c.body["format"] : undefined);

  /** A finished answer in the media type asked for (D31): csv or ndjson rows of its items, else its JSON. */
  function fileReply(body: Record<string, unknown>, format: unknown): Reply {
    const headers: Record<string, string> = body["status"] === "timeout" ? { "X-Should-Retry": "false" } : {};
    const file = resultFile(body, format);
    return file ? { status: 200, headers, file } : reply(200, body, headers);
  }

  const replayed = (r: Reply): Reply => ({ ...r, headers: { ...r.headers, "Idempotent-Replayed": "true" } });

  /** Ends a run: charged once, its answer under the original call's `request_id` (D47). */
  function finish(run: Run): void {
    const { body, charged } = settle(run.call, run.done, run.requestId);
    Object.assign(run, { chargedCredits: charged, finished: body, status: "finished", endedAt: clock() });
  }

  /** A finished result as read now: the same answer, its balance as of the read (D7). */
  function asRead(run: Run): Record<string, unknown> {
    const body = structuredClone(run.finished!);
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
      const wavesDone = steps.filter((s) => s.status === "done" || s.status === "failed").length;
      shown = { steps, waves: { planned, done: wavesDone } };
    } else if (c.kind === "data" && done.kind === "data" && c.plan.shape !== "single") {
      shown.cells = done.ended.slice(0, share(done.ended.length)).map((e) => cellOf(c.plan, e));
    }
    const body = runningAnswer({ ...parts, ...shown, quote: c.quote });
    return reply(202, body, { "Retry-After": String(retryAfter) });
  }

  function account(apiKey: string, requestId: string): AccountAnswer {
    const fixture = structuredClone(FIXTURES[ROUTES.getAccount.defaultFixture!]) as AccountAnswer;
    const permissions = [...(keys[apiKey]?.permissions ?? [])];
    const id = `key_${apiKey.replace(/[^A-Za-z0-9]/g, "").slice(-8) || "mock"}`;
    const key = { ...fixture.key, id, prefix: keyPrefix(apiKey), name: "mock key", permissions };
    const workspace = { ...fixture.workspace, schedules_count: store.scheduleList.length };
    const billing = creditBilling(view(), 0) as AccountAnswer["billing"];
    // The mock's keys have no daily limit and never expire.
    const unlimited = { daily_limit_credits: null, expires_at: null };
    return { ...fixture, request_id: requestId, workspace, key: { ...key, ...unlimited }, billing };
  }

  /**
   * A charging call planned by the engine, as the server plans it: a data route's calls (`planRoute`) or a tool's
   * quote (`TOOLS[tool].plan`). A refusal the request alone decides is thrown, before the key (D50); the one
   * that depends on the account (a tool's `scale=large`) is returned, to be answered after it.
   */
  function plan(route: MockRoute, params: Params, op: string, requestId: string): Charged | Refusal {
    if (route.tool) {
      const planned = TOOLS[route.tool as ToolName].plan(params as never, toolContext(simulator.providers));
      if (!planned.ok) {
        const r = planned.refusal;
        const refusal = planRefusal(r, requestId);
        if (r.code === "invalid_params" || (r.code === "not_supported" && r.reason === "no_such_capability"))
          throw refusal;
        return refusal;
      }
      const p = planned.plan;
      return { kind: "tool", plan: p, body: params, quote: p.quote.quote_credits, warnings: [...p.warnings] };
    }
    const planned = planRoute(catalog, route.operationId as DataRouteId, params, op, bodyProblem);
    if (!planned.ok) throw planRefusal(planned.refusal, requestId);
    return { kind: "data", plan: planned.plan, quote: quoteOf(planned.plan).credits };
  }

  /** A data or tool call, from its plan to its answer. */
  async function charging(req: Req, c: Charged): Promise<Reply> {
    const { route, forced, skipped, requestId, params, headers, pathParams, apiKey } = req;
    const op = route.operationId;
    const confirmed = params["confirm"] !== false;
    const schedule = c.kind === "tool" && op === "accountWatch" && confirmed && params["schedule"] !== undefined;
    if (schedule && store.scheduleList.length >= 20) throw invalid(requestId, tooManySchedules(20));

    // idempotency (seed: 409 while running, the first answer again after, 422 with other parameters)
    const idemKey = headers["idempotency-key"];
    const slot = idemKey === undefined ? undefined : `${apiKey}\n${idemKey}`;
    const fingerprint = seedText({ op, path: pathParams, params });
    const record = slot === undefined ? undefined : store.idempotency.get(slot);
    if (record && record.params !== fingerprint)
      throw refuse("idempotency_conflict", requestId, REFUSALS.idempotencyConflict());
    if (record?.answer) return replayed(structuredClone(record.answer));
    if (record?.handle) {
      const run = store.runMap.get(record.handle)!;
      if (run.status === "running" && run.reads < polls && !run.due) {
        run.reads += 1;
        throw refuse("idempotency_in_progress", requestId, REFUSALS.idempotencyInProgress(retryAfter));
      }
      if (run.status === "running") finish(run);
      if (run.status === "finished") return replayed(fileReply(structuredClone(run.finished!), formatOf(run.call)));
      store.idempotency.delete(slot!); // broken or expired: the key starts a new call
    }
    const remember = (r: Reply): Reply => {
      if (slot !== undefined) store.idempotency.set(slot, { params: fingerprint, answer: structuredClone(r) });
      return r;
    };

    if (c.kind === "tool" && !confirmed) {
      if (forced) skipped.push(`${op} with confirm: false answers the quote only`);
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

    const outcome = forcedOn(req, op, c);
    if (forced?.kind === "running") forced.take();
    // D52: the call that creates a schedule is its first run, and its answer says so.
    if (schedule) c.warnings.unshift(MESSAGES.scheduleCreated(addSchedule(c.plan)));

    // A call none of whose calls can run (D41) has nothing to wait for: it answers at once.
    // A tool quoted `background` (over 10 calls, D51) answers 202 at once; any call may pass the wait (`slow`).
    const runs = c.kind === "tool" || c.plan.calls.some((x) => !x.unsupported);
    const background =
      forced?.kind === "running" ||
      (c.kind === "tool" && c.plan.quote.mode === "background") ||
      (runs && isSlow({ operationId: op, params, headers }));
    const done = await execute(c, outcome);
    if (background) {
      const fresh = { reads: 0, status: "running" as const, due: false, quoteCredits: c.quote, chargedCredits: 0 };
      const run: Run = { handle: newHandle(), requestId, operationId: op, key: apiKey, call: c, done, ...fresh };
      store.runMap.set(run.handle, run);
      if (slot !== undefined) store.idempotency.set(slot, { params: fingerprint, handle: run.handle });
      return running(run);
    }
    return remember(fileReply(settle(c, done, requestId).body, formatOf(c)));
  }

  /** Adds the schedule of a confirmed `account_watch` with `schedule` (D11, D52); its next run is one period from now. */
  function addSchedule(plan: ToolPlan): Schedule {
    const every = String(plan.applied_params["schedule.every"]) as Schedule["every"];
    const id = `sch_${newHandle().slice(2, 10)}`;
    const params = scheduleParams(plan.applied_params) as Schedule["params"];
    const times = { created_at: isoSeconds(clock()), next_run_at: isoSeconds(clock() + EVERY_MS[every]) };
    const schedule: Schedule = { id, tool: "account_watch", params, every, status: "active", ...times, last_run: null };
    store.scheduleList.push(schedule);
    return schedule;
  }

  /** `GET /v1/results/{handle}`: 202 `polls` times, then the finished answer (charged once), then the same for free. */
  async function result(req: Req, format: unknown): Promise<Reply> {
    const { forced, requestId } = req;
    const handle = req.pathParams["handle"] ?? "";
    const run = store.runMap.get(handle);
    if (!run || run.key !== req.apiKey) throw refuse("not_found", requestId, REFUSALS.noSuchHandle());
    if (run.status === "finished" && clock() - run.endedAt! >= DAY_MS) run.status = "expired";
    if (run.status === "expired") throw refuse("handle_expired", requestId, REFUSALS.handleExpired());
    if (run.status === "broken") throw refuse("internal_error", requestId, REFUSALS.runBroken(handle));
    if (run.status === "running") {
      const outcome = forcedOn(req, run.operationId, run.call);
      if (outcome) {
        run.done = await execute(run.call, outcome);
        run.due = true;
      }
      if (forced?.kind === "running") forced.take();
      else if (run.reads < polls && !run.due) run.reads += 1;
      else finish(run);
      if (run.status === "running") return running(run);
    } else if (forced) req.skipped.push(`${handle} has already finished`);
    return fileReply(asRead(run), format ?? formatOf(run.call));
  }

  /** The answer to a request of a route: D25's key check, a forced refusal, D50's checks, then the operation. */
  async function answer(route: MockRoute, request: Request, rawPathParams: Record<string, unknown>): Promise<Reply> {
    const op = route.operationId;
    const requestId = newRequestId();
    const url = new URL(request.url);
    const headers = normalizeHeaders(request.headers);
    // Only the route's own parameters: MSW also names the parts a `*` base matched ("0", "1", …).
    const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const pathParams = Object.fromEntries(names.map((k) => [k, decodePart(String(rawPathParams[k] ?? ""))]));
    const skipped: string[] = [];
    const forced = force(route, headers, skipped);

    const respond = async (): Promise<Reply> => {
      const exposed = keyInUrl(url, requestId); // every route, keyless ones too: a key in a URL has leaked (D25)
      if (exposed) return exposed;
      if (forced?.kind === "refusal") {
        forced.take();
        if (op === "getResult" && forced.code === "internal_error") {
          const run = store.runMap.get(pathParams["handle"] ?? "");
          if (run?.status === "running") run.status = "broken";
        }
        return forcedRefusal(route, forced.code, forced.http, requestId);
      }
      // D50: a key in the URL first (above), then the request is validated, then the key is authenticated.
      const sent =
        route.method === "POST" ? { contentType: headers["content-type"], text: await textOf(request) } : undefined;
      const checked = admitRequest(op, { rawQuery: url.search.slice(1), headers, path: pathParams, body: sent });
      if (!checked.ok && route.responses.includes(400)) throw invalid(requestId, checked.invalid);
      const { query, body }: { query: Params; body: Params } = checked.ok ? checked : { query: {}, body: {} };
      const params = route.method === "GET" ? query : body;
      // D41, D50: what the request alone decides is refused before the key (`plan` throws it); the rest after it.
      const planned = route.charging ? plan(route, params, pathParams["op"] ?? "", requestId) : undefined;
      const apiKey = route.keyless ? "" : authenticate(route, headers, requestId);
      if (planned instanceof Refusal) throw planned;
      const req: Req = { route, requestId, params, headers, pathParams, apiKey, forced, skipped };
      const v1 = { request_id: requestId, schema_version: "v1" };

      switch (op) {
        case "listCapabilities":
          return reply(200, { ...v1, operations: catalog.operations, tools: catalog.tools });
        case "getOpenApiDocument":
          return reply(200, OPENAPI_DOCUMENT);
        case "findOperation": {
          const limit = (body["limit"] as number | undefined) ?? 20;
          const matches = finder.find(String(body["query"]), { platform: body["platform"] as Platform, limit });
          return reply(200, { ...v1, query: body["query"], matches });
        }
        case "getAccount":
          return reply(200, account(apiKey, requestId));
        case "listSchedules":
          return reply(200, { ...v1, schedules: store.schedules, limit: 20 });
        case "deleteSchedule": {
          const id = pathParams["schedule_id"] ?? "";
          const at = store.scheduleList.findIndex((s) => s.id === id);
          if (at < 0) throw refuse("not_found", requestId, REFUSALS.noSuchSchedule(id));
          store.scheduleList.splice(at, 1);
          return reply(200, { ...v1, deleted: true, schedule_id: id });
        }
        case "getResult":
          return result(req, query["format"]);
        default:
          return charging(req, planned!);
      }
    };
    const r = await respond().catch((e: unknown) => {
      if (e instanceof Refusal) return e.reply;
      throw e;
    });
    return skipped.length ? { ...r, headers: { ...r.headers, [SKIPPED_HEADER]: skipped.join("; ") } } : r;
  }

  // The contract's path of a request: its URL's path without the base address's own path (D53 names files by it).
  const basePath = /^[a-z][\w+.-]*:\/\//i.test(base) ? new URL(base).pathname.replace(/\/$/, "") : "";
  const contractPath = (request: Request) => {
    const pathname = new URL(request.url).pathname;
    return basePath && pathname.startsWith(basePath) ? pathname.slice(basePath.length) : pathname;
  };

  /** Dev check (`validate`): a JSON answer that does not match the contract is thrown, never sent. */
  function conform(route: MockRoute | undefined, { status, json }: Reply): void {
    if (!validate || json === undefined) return;
    const result = route
      ? responseValidators[route.operationId as keyof typeof responseValidators](status, json)
      : validateErrorStructure(json);
    if (result.ok) return;
    const where = route ? `${route.method} ${route.path} (${route.operationId})` : "a refused route";
    throw new Error(
      `@sdgw/mock: the answer to ${where} under HTTP ${status} does not match the contract: ${result.errors.map((e) => `${e.path} ${e.message}`).join("; ")}. ` +
        `This is a bug in the mock or a broken fixture; nothing was sent.\n${JSON.stringify(json).slice(0, 2000)}`,
    );
  }

  /** The Response of an answer, checked against the contract first. */
  function toResponse(route: MockRoute | undefined, r: Reply, request: Request): Response {
    conform(route, r);
    const { status, headers, json, file } = r;
    const all = { ...answerHeaders(contractPath(request), file?.contentType ?? "application/json"), ...headers };
    if (!file) return HttpResponse.json(json as never, { status, headers: all });
    return new HttpResponse(file.text, { status, headers: { ...all, "Content-Type": file.contentType } });
  }

  const handlers: HttpHandler[] = (Object.values(ROUTES) as MockRoute[]).map((route) => {
    const method = route.method.toLowerCase() as "get" | "post" | "delete";
    return http[method](`${base}${route.mswPath}`, async ({ request, params }) =>
      toResponse(route, await answer(route, request, params as Record<string, unknown>), request),
    );
  });

  /** 404 `not_found` of a path the contract has no route for (after D25's key check), checked like every answer. */
  function notFound(request: Request, refusal: RefusalFields): Response {
    const requestId = newRequestId();
    const r = keyInUrl(new URL(request.url), requestId) ?? refuse("not_found", requestId, refusal).reply;
    return toResponse(undefined, r, request);
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
      const fresh = scenarios.map((s) => ({ scenario: s, left: s.times ?? Number.POSITIVE_INFINITY }));
      active = [...fresh, ...active.filter((a) => a.left > 0)];
    },
    reset() {
      active = [];
      store.clear();
    },
    state: store,
  };
}
