/**
 * `createMock()`: MSW 3 handlers for every operation of the contract, answering as the seed says a gateway does:
 * keys and their permission, request validation through @sdgw/validators, credits, 202 runs read by handle,
 * idempotency, paging; and any status or error code on demand (scenarios).
 */
import {
  ERROR_CATALOGUE,
  TOOL_NAMES,
  type AccountAnswer,
  type ErrorCode,
  type OperationId,
  type Schedule,
} from "@sdgw/types";
import {
  DEFAULT_URLS,
  errorAnswer,
  invalidBody,
  invalidParamsAnswer,
  nextUtcMidnight,
  normalizeHeaders,
  OPERATIONS,
  parseQuery,
  queryTextProblem,
  requestValidators,
  responseValidators,
  answerHeaders,
  bodyTextProblem,
  keyInQueryRefusal,
  keysInQuery,
  toCsv,
  toNdjson,
  validateErrorStructure,
  type HttpErrorCode,
  type InvalidParams,
  type RequestValidation,
  type ServiceUrls,
} from "@sdgw/validators";
import { http, HttpResponse, type HttpHandler } from "msw";
import { CATALOG, catalogEntry, expandAll, isTypedName, platformsOffering, typedBody, typedNameOf } from "./catalog.ts";
import { OPENAPI_DOCUMENT } from "./generated/openapi.ts";
import { FIXTURES, ROUTES } from "./generated/routes.ts";
import { planCall, type Plan } from "./plan.ts";
import { costOf, creditBilling, renderFinished, renderQuote, renderRunning, type Outcome, type RenderContext } from "./render.ts";
import type { MockRoute } from "./route-types.ts";
import { parseScenarioHeader, SCENARIO_HEADER, SKIPPED_HEADER, STATUS_SCENARIOS, type Scenario } from "./scenarios.ts";
import { Store, type MockState, type Run } from "./state.ts";
import { isToolName, largeScaleRefusal, planTool, refusedBeforeKey, type ToolRefusal } from "./tools.ts";
import { base64url, clone, isObject, newHandle, newRequestId, stableJson, timestamp } from "./util.ts";

/** A key the mock accepts, and what it may do. */
export interface MockKey {
  /** `read_data` lets the key call data routes and tools (D26); without it they answer `403 key_scope_denied`. */
  permissions?: readonly "read_data"[];
}

/** Bytes that are not UTF-8 are refused, not replaced; a BOM is kept (and is then not JSON), as the server does. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

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
  /** Turns every scenario off and clears the state: credits back to the start, no runs, idempotency keys or cursors. */
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

const RETENTION_MS = 24 * 60 * 60 * 1000;
const isProduction = () => (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.["NODE_ENV"] === "production";

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

/** The outcome a status scenario forces on every unit. */
function statusOutcome(name: string): Outcome {
  return name === "error" ? { status: "error", code: "upstream_error" } : { status: name as Outcome["status"] };
}

/** The outcome of an error code answered inside an HTTP 200 answer. */
function codeOutcome(code: ErrorCode): Outcome {
  return code === "timeout" || code === "not_supported" ? { status: code } : { status: "error", code };
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
  if (!(Number.isInteger(polls) && polls >= 0)) throw new TypeError(`@sdgw/mock: polls must be a whole number, 0 or more (got ${polls})`);

  const store = new Store(options.balance ?? 100);
  let active: Active[] = [];

  // ---------------------------------------------------------------------------------------------- scenarios

  /** The scenario for this request: the header's, else the newest `use`d one for this operation. */
  function pick(op: OperationId, fromHeader: Scenario | undefined): { scenario: Scenario; consume(): void } | undefined {
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
      return { kind: "outcome", outcome: statusOutcome(name) };
    }
    const code = name as ErrorCode;
    const row = ERROR_CATALOGUE[code];
    const non200 = row.http.find((h) => h !== 200);
    const dataRoute = route.charging && op !== "search";
    const wanted = s.http ?? (non200 === undefined || ((code === "not_found" || code === "temporarily_unavailable") && dataRoute) ? 200 : non200);
    if (wanted === 200) {
      if (runs && (op === "getResult" || envelopeAllows(code, op))) return { kind: "outcome", outcome: codeOutcome(code) };
      return { kind: "skip", reason: `${op} answers no ${code} inside an HTTP 200 answer` };
    }
    if ((row.http as readonly number[]).includes(wanted) && route.responses.includes(wanted)) return { kind: "refusal", code: code as HttpErrorCode, http: wanted };
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
    if (!fixture && code === "plan_limit" && route.operationId === "accountWatch") {
      // D11, D51: what a free account gets for a schedule (the mock's keys are paid ones; the scenario shows it).
      Object.assign(extra, {
        reason: "schedules_need_purchase",
        message: "Schedules open after the first purchase; this call without `schedule` runs now. Nothing ran and nothing was charged.",
        fix: { param: "schedule", action_url: urls.billing, note: "Buy credits to open schedules." },
      });
    }
    if (!fixture && code === "plan_limit" && route.operationId === "batchStats") {
      // D58: what a free account gets for a confirmed batch_stats (the mock's keys are paid ones; the scenario shows it).
      Object.assign(extra, {
        reason: "batches_need_purchase",
        message: "Batches open after the first purchase (D58). Nothing ran and nothing was charged.",
        fix: { param: "targets", action_url: urls.billing, note: "Buy credits to open batches; confirm: false shows the plan and price now." },
      });
    }
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
    const xKey = headers["x-api-key"];
    const authorization = headers["authorization"];
    let bearer: string | undefined;
    if (authorization !== undefined) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!m) {
        throw refuse("unauthorized", requestId, { reason: "invalid", message: "The Authorization header is not `Bearer <key>`.", fix: { action_url: urls.console, note: "Send Authorization: Bearer <key>, or the key in X-API-Key." } });
      }
      bearer = m[1];
    }
    if (xKey !== undefined && bearer !== undefined && xKey !== bearer) {
      throw refuse("unauthorized", requestId, { reason: "invalid", message: "X-API-Key and Authorization carry two different keys.", fix: { action_url: urls.console, note: "Send one key: in X-API-Key or as Authorization: Bearer, not two different ones." } });
    }
    const apiKey = xKey ?? bearer;
    if (!apiKey) throw refuse("unauthorized", requestId, { reason: "missing", message: "No key was sent.", fix: { action_url: urls.console, note: "Send your key in the X-API-Key header or as Authorization: Bearer <key>." } });
    const key = keys[apiKey];
    if (!key) throw refuse("unauthorized", requestId, { reason: "invalid", message: "This key is not valid.", fix: { action_url: urls.console, note: "Check the key, or create one in the console." } });
    if (route.charging && !(key.permissions ?? []).includes("read_data")) {
      throw refuse("key_scope_denied", requestId, {
        message: "This key lacks the permission read_data, which data calls need.",
        fix: { allowed: ["read_data"], action_url: urls.console, note: "Give the key read_data in the console; the change holds from the next call." },
      });
    }
    return apiKey;
  }

  // ---------------------------------------------------------------------------------------------- validation

  function check<T>(route: MockRoute, result: RequestValidation<T>, requestId: string): void {
    if (!result.ok && route.responses.includes(400)) throw new Refusal(reply(400, result.answer(requestId)));
  }

  /** The JSON body of a request: one sent without `Content-Type: application/json` is refused like bad JSON (seed invalid_params case 1). */
  /** The JSON body, or why it is none: not JSON (`invalidBody`), or bytes that are not UTF-8 (issue: never replaced). */
  async function readBody(request: Request, contentType: string | undefined): Promise<{ ok: true; value: unknown } | { ok: false; why?: InvalidParams }> {
    if ((contentType ?? "").split(";")[0]!.trim().toLowerCase() !== "application/json") return { ok: false };
    let text: string;
    try {
      text = UTF8.decode(await request.arrayBuffer());
    } catch {
      return { ok: false, why: { param: "body", message: "The body is not UTF-8 text.", note: "Send one JSON object encoded as UTF-8." } };
    }
    if (text.trim() === "") return { ok: false };
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch {
      return { ok: false };
    }
  }

  // ---------------------------------------------------------------------------------------------- rendering helpers

  function context(requestId: string): RenderContext {
    return {
      requestId,
      now: clock(),
      balance: store.balance,
      spentToday: store.spentToday,
      pages,
      retryAfter,
      urls,
      issueCursor(op, platform, page) {
        const family = op === "searchPost" ? "search" : op;
        const cursor = base64url(JSON.stringify({ v: 1, op: family, platform, page }));
        store.cursors.set(cursor, { family, platform, page });
        return cursor;
      },
    };
  }

  function finishedReply(body: Record<string, unknown>, extraHeaders: Record<string, string> = {}): Reply {
    const headers: Record<string, string> = { ...extraHeaders };
    if (body["status"] === "timeout") headers["X-Should-Retry"] = "false";
    return reply(200, body, headers);
  }

  /** Ends a run: charges it once (1 credit per ok or empty unit; a balance that no longer covers it fails it with `insufficient_balance`). */
  function finish(run: Run): void {
    let outcomes = run.outcomes;
    let cost = costOf(run.plan, outcomes);
    if (cost > store.balance) {
      outcomes = outcomes.map(() => ({ status: "error", code: "insufficient_balance" }));
      cost = 0;
    }
    store.charge(cost, clock());
    run.charged = cost;
    run.outcomes = outcomes;
    run.finished = renderFinished(run.plan, outcomes, context(run.requestId)); // D47: the original call's request_id
    run.status = "finished";
    run.endedAt = clock();
  }

  /** A finished result as read now: the same answer, its balance as of the read (D7). */
  function asRead(run: Run): Record<string, unknown> {
    const body = clone(run.finished!);
    const billing = body["billing"] as Record<string, unknown>;
    if ("balance" in billing) billing["balance"] = store.balance;
    else Object.assign(billing, creditBilling(Number(billing["cost_credits"]), store.balance, store.spentToday));
    return body;
  }

  /** The 202 answer of a run still going: the call's own, and every read of it, under the call's `request_id` (D47). */
  function running(run: Run): Reply {
    return reply(202, renderRunning(run.plan, run.outcomes, run.handle, run.reads, polls + 1, context(run.requestId)), { "Retry-After": String(retryAfter) });
  }

  // ---------------------------------------------------------------------------------------------- operations

  /** The catalog (./catalog.ts): what every capability gap the mock answers is read from. */
  function capabilities(requestId: string) {
    return { ...(clone(FIXTURES[ROUTES.listCapabilities.defaultFixture!]) as Record<string, unknown>), request_id: requestId, operations: clone(CATALOG) };
  }

  function account(apiKey: string, requestId: string): AccountAnswer {
    const fixture = clone(FIXTURES[ROUTES.getAccount.defaultFixture!]) as AccountAnswer;
    const permissions = [...(keys[apiKey]?.permissions ?? [])];
    return {
      ...fixture,
      request_id: requestId,
      workspace: { ...fixture.workspace, schedules_count: store.scheduleList.length },
      key: { ...fixture.key, id: `key_${apiKey.replace(/[^A-Za-z0-9]/g, "").slice(-8) || "mock"}`, prefix: apiKey.slice(0, 9), name: "mock key", permissions, daily_limit_credits: null, expires_at: null },
      billing: creditBilling(0, store.balance, store.spentToday) as AccountAnswer["billing"],
    };
  }

  function find(body: Record<string, unknown>, requestId: string) {
    const fixture = clone(FIXTURES[ROUTES.findOperation.defaultFixture!]) as { matches: Array<{ platform: string | null }> };
    const matches = fixture.matches.filter((m) => body["platform"] === undefined || m.platform === body["platform"] || m.platform === null);
    return { ...fixture, request_id: requestId, query: body["query"], matches: matches.slice(0, typeof body["limit"] === "number" ? body["limit"] : 20) };
  }

  /** `400 not_supported`, reason `no_such_capability`: `fix.allowed` the platforms that offer `name` (D36, D41, D42). */
  function noSuchCapability(message: string, name: string, requestId: string, param?: string): Refusal {
    const allowed = platformsOffering(name);
    return refuse("not_supported", requestId, {
      reason: "no_such_capability",
      message,
      fix: {
        ...(param ? { param } : {}),
        allowed,
        note: allowed.length ? `${allowed.map((p) => `${p}.${name}`).join(", ")} ${allowed.length === 1 ? "is" : "are"} in the catalog; GET /v1/capabilities lists every op.` : "GET /v1/capabilities lists every op.",
        example_call: { method: "GET", path: "/v1/capabilities" },
      },
    });
  }

  /** A tool's refusal (D24, D41) in the server's words: `invalid_params`, or `400 not_supported` with `fix.param` and `fix.allowed`. */
  function toolRefusal(r: ToolRefusal, requestId: string): Refusal {
    if (r.code === "invalid_params") return invalid(requestId, { param: r.param, message: r.message, ...(r.allowed ? { allowed: r.allowed } : {}) });
    return refuse("not_supported", requestId, {
      reason: r.reason,
      message: `${r.message} Nothing ran and nothing was charged.`,
      fix: {
        param: r.param,
        ...(r.allowed ? { allowed: r.allowed } : {}),
        note:
          r.reason !== "not_available_yet"
            ? "GET /v1/capabilities lists the platforms of each operation."
            : r.param === "confirm"
              ? "Send confirm: false to see the plan and price of scale=large, or scale small or standard to run now."
              : "Send scale small or standard to run now, or confirm: false to see the plan and price of scale=large.",
        example_call: { method: "GET", path: "/v1/capabilities" },
      },
    });
  }

  /**
   * The capability refusals of a charging call, decided from the request alone like validation (before the key,
   * D50): a platform without the operation (D41) or an op the catalog lacks (D42) is `400 not_supported`, as is
   * `platforms=all` when no platform can answer; `POST /v1/call/{op}` takes the op's own parameters (D23), a typed
   * op its route's. A platform with the operation but not a parameter value is answered later, inside HTTP 200.
   */
  function checkCapabilities(route: MockRoute, params: Record<string, unknown>, pathParams: Record<string, string>, requestId: string): void {
    const op = route.operationId;
    if (op === "callOperation") {
      const opName = pathParams["op"] ?? "";
      const [platform, name] = [opName.slice(0, opName.indexOf(".")), opName.slice(opName.indexOf(".") + 1)];
      const entry = catalogEntry(opName);
      if (!entry) {
        const allowed = platformsOffering(name);
        throw noSuchCapability(
          allowed.length
            ? `The catalog has no op ${opName}: ${platform} does not offer ${name}; ${allowed.join(", ")} ${allowed.length === 1 ? "does" : "do"}. Nothing ran and nothing was charged.`
            : `The catalog has no op ${opName}. Nothing ran and nothing was charged.`,
          name,
          requestId,
        );
      }
      if (isTypedName(name)) {
        // A typed op by name: its route's parameters and rules (no `platform`: the op names it).
        const body = typedBody(name);
        const allowed = Object.keys(OPERATIONS[body].body?.params ?? {}).filter((p) => p !== "platform" && p !== "platforms");
        const unknown = Object.keys(params).find((k) => !allowed.includes(k));
        if (unknown) throw invalid(requestId, { param: unknown, message: `\`${unknown}\` is not a parameter of ${opName}.`, allowed });
        const validators = requestValidators[body as keyof typeof requestValidators] as Record<string, (v: unknown) => RequestValidation<unknown>>;
        check(route, validators["body"]!({ ...params, platform }), requestId);
        return;
      }
      const unknown = Object.keys(params).find((k) => !entry.params.includes(k));
      if (unknown) throw invalid(requestId, { param: unknown, message: `\`${unknown}\` is not a parameter of ${opName}.`, allowed: entry.params });
      return;
    }
    if (route.tool && isToolName(route.tool)) {
      // D41, D50, D51: a wrong link or include, and a platform or target without the operation the tool reads.
      const planned = planTool(route.tool, params);
      if (!planned.ok && refusedBeforeKey(planned.refusal)) throw toolRefusal(planned.refusal, requestId);
      return;
    }
    const name = typedNameOf(op);
    if (!name) return;
    const platform = params["platform"];
    if (typeof platform === "string" && !catalogEntry(`${platform}.${name}`)) {
      const allowed = platformsOffering(name);
      throw noSuchCapability(`${platform} does not offer ${name}; ${allowed.join(", ")} ${allowed.length === 1 ? "does" : "do"}. Nothing ran and nothing was charged.`, name, requestId, "platform");
    }
    if (params["platforms"] === "all") {
      const rest = { ...params };
      delete rest["platforms"];
      if (expandAll(name, rest).platforms.length === 0) throw noSuchCapability(`No platform offers ${name} with these parameters. Nothing ran and nothing was charged.`, name, requestId, "platforms");
    }
  }

  /** A data or tool call, from validated parameters to its answer. */
  function charging(route: MockRoute, forced: Forced | undefined, consume: () => void, skipped: string[], apiKey: string, params: Record<string, unknown>, pathParams: Record<string, string>, headers: Record<string, string>, requestId: string): Reply {
    const op = route.operationId;
    // paging: a cursor must be one the mock gave out, for this route family and platform (D19)
    let page = 1;
    if (typeof params["cursor"] === "string") {
      const pos = store.cursors.get(params["cursor"]);
      const family = op === "searchPost" ? "search" : op;
      if (!pos || pos.family !== family || pos.platform !== params["platform"]) {
        throw invalid(requestId, { param: "cursor", message: "`cursor` is invalid or expired; restart without `cursor`." });
      }
      page = pos.page;
    }
    if (op === "brandBuzz" && params["scale"] === "large" && params["confirm"] !== false) {
      // D73: a confirmed scale=large is not available yet; its quote (confirm: false) is planned below.
      const fixture = params["confirm"] === true ? undefined : route.fixtures.find((f) => f.code === "not_supported" && f.http === 400);
      throw fixture ? new Refusal(forcedRefusal(route, "not_supported", 400, requestId)) : toolRefusal(largeScaleRefusal(params["confirm"] === true), requestId);
    }
    if (op === "accountWatch" && isObject(params["schedule"]) && params["confirm"] !== false && store.scheduleList.length >= 20) {
      throw invalid(requestId, { param: "schedule", message: "A workspace has at most 20 schedules.", note: "DELETE /v1/schedules/{schedule_id} removes one; GET /v1/schedules lists them." });
    }
    const plan = planCall(op, params, pathParams, page);

    // idempotency (seed: 409 while running, the first answer again after, 422 with other parameters)
    const idemKey = headers["idempotency-key"];
    const slot = idemKey === undefined ? undefined : `${apiKey}\n${idemKey}`;
    const fingerprint = stableJson({ op, path: pathParams, params });
    const record = slot === undefined ? undefined : store.idempotency.get(slot);
    if (record && record.params !== fingerprint) {
      throw refuse("idempotency_conflict", requestId, {
        message: "This Idempotency-Key was used with other parameters.",
        fix: { param: "Idempotency-Key", note: "Use a new key for a new call, or send the same parameters again." },
      });
    }
    if (record?.answer) return reply(record.answer.status, clone(record.answer.body), { ...record.answer.headers, "Idempotent-Replayed": "true" });
    if (record?.handle) {
      const run = store.runMap.get(record.handle)!;
      if (run.status === "running" && (run.reads < polls && !run.due)) {
        run.reads += 1;
        throw refuse("idempotency_in_progress", requestId, {
          message: "The call under this Idempotency-Key is still running.",
          retry_after: retryAfter,
          fix: { param: "Idempotency-Key", note: `Ask again with the same key and parameters after ${retryAfter} seconds, or read ${run.handle}; it is charged once.` },
        });
      }
      if (run.status === "running") finish(run);
      if (run.status === "finished") return finishedReply(clone(run.finished!), { "Idempotent-Replayed": "true" });
      store.idempotency.delete(slot!); // broken or expired: the key starts a new call
    }

    const remember = (r: Reply): Reply => {
      if (slot !== undefined) store.idempotency.set(slot, { params: fingerprint, answer: { status: r.status, headers: { ...r.headers }, body: clone(r.json) } });
      return r;
    };
    // A call none of whose units can run (D41) has nothing to wait for: it answers at once.
    // A tool quoted `background` (over 10 calls, D51) answers 202 at once; any call may pass the wait (`slow`).
    const background = forced?.kind === "running" || plan.toolQuote?.mode === "background" || (plan.units.some((u) => !u.unsupported) && isSlow({ operationId: op, params, headers }));

    if (plan.quoteOnly) {
      if (forced?.kind === "running" || forced?.kind === "outcome") skipped.push(`${op} with confirm: false answers the quote only`);
      return remember(reply(200, renderQuote(plan, context(requestId))));
    }

    // budget: nothing runs over max_cost_credits or over the balance
    if (plan.maxCost !== undefined && plan.maxCost < plan.quote) {
      throw refuse("max_cost_exceeded", requestId, {
        message: `This call's quote of ${plan.quote} credits is over max_cost_credits ${plan.maxCost}; nothing ran.`,
        quote_credits: plan.quote,
        fix: { param: "max_cost_credits", note: `Send max_cost_credits of at least ${plan.quote}, or leave it out.` },
      });
    }
    if (store.balance < plan.quote) {
      throw refuse("insufficient_balance", requestId, {
        message: `This call costs up to ${plan.quote} credits and the balance is ${store.balance}; nothing ran.`,
        quote_credits: plan.quote,
        fix: { action_url: urls.billing, note: "Buy credits and send the same request again." },
      });
    }

    let outcomes: Outcome[] = plan.units.map((u) => (u.unsupported ? { status: "not_supported", message: u.unsupported } : { status: "ok" }));
    if (forced?.kind === "outcome") {
      const reason = unanswerable(plan, forced.outcome);
      if (reason) skipped.push(reason);
      else {
        outcomes = plan.units.map(() => ({ ...forced.outcome }));
        consume();
      }
    }
    if (forced?.kind === "running") consume();

    if (plan.tool === "account_watch" && isObject(params["schedule"])) {
      // D52: the call that creates a schedule is its first run, and its answer says so.
      const created = addSchedule(plan);
      plan.warnings.unshift(
        `Schedule ${created.id} created: this account_watch call runs again every ${created.every} under this key, charged like this call (next at ${created.next_run_at}); GET /v1/schedules lists it, DELETE /v1/schedules/${created.id} stops it.`,
      );
    }

    if (background) {
      const run: Run = { handle: newHandle(), requestId, op, key: apiKey, plan, outcomes, reads: 0, status: "running", due: false, charged: 0 };
      store.runMap.set(run.handle, run);
      if (slot !== undefined) store.idempotency.set(slot, { params: fingerprint, handle: run.handle });
      return running(run);
    }
    const cost = costOf(plan, outcomes);
    store.charge(cost, clock());
    return remember(finishedReply(renderFinished(plan, outcomes, context(requestId))));
  }

  /** Why an outcome cannot be answered in this call's shape (fanout entries take the search table's codes only). */
  function unanswerable(plan: Plan, outcome: Outcome): string | undefined {
    if (outcome.status === "error" && outcome.code && !envelopeAllows(outcome.code, plan.op)) return `${plan.op} answers no ${outcome.code} inside an HTTP 200 answer`;
    if (plan.shape === "fanout" && outcome.status === "error" && outcome.code && ERROR_CATALOGUE[outcome.code].envelope !== "all") {
      return `a fanout answer's entries take no ${outcome.code} (D13)`;
    }
    return undefined;
  }

  /**
   * Adds the schedule of a confirmed `account_watch` with `schedule` (D11, D52): its `params` are the call's applied
   * parameters without `schedule.every`, `confirm` and `max_cost_credits`; its next run is one period from now.
   */
  function addSchedule(plan: Plan): Schedule {
    const every = String(plan.applied["schedule.every"]) as Schedule["every"];
    const hours = every === "1h" ? 1 : every === "6h" ? 6 : 24;
    const params = Object.fromEntries(Object.entries(plan.applied).filter(([k]) => k !== "schedule.every" && k !== "confirm" && k !== "max_cost_credits"));
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
  function result(forced: Forced | undefined, consume: () => void, skipped: string[], apiKey: string, handle: string, format: string | undefined, requestId: string): Reply {
    const run = store.runMap.get(handle);
    if (!run || run.key !== apiKey) {
      throw refuse("not_found", requestId, {
        reason: "no_such_handle",
        message: `No result ${handle} was started by this key.`,
        fix: { param: "handle", note: "A result is read only by the key that started the call; check the handle and the key." },
      });
    }
    if (run.status === "finished" && clock() - run.endedAt! >= RETENTION_MS) run.status = "expired";
    if (run.status === "expired") {
      throw refuse("handle_expired", requestId, {
        message: `The result ${handle} is no longer kept (24 hours after the run ended).`,
        fix: { param: "handle", note: "Send the call again; a new call is a new charge." },
      });
    }
    if (run.status === "broken") {
      throw refuse("internal_error", requestId, {
        message: `The run behind ${handle} broke on the service's side; nothing was charged.`,
        fix: { param: "handle", note: "Send the original call again; under the same Idempotency-Key it is never charged twice." },
      });
    }
    if (run.status === "running") {
      if (forced?.kind === "running") {
        consume();
        return running(run);
      }
      if (forced?.kind === "outcome") {
        const reason = unanswerable(run.plan, forced.outcome);
        if (reason) skipped.push(reason);
        else {
          consume();
          run.outcomes = run.plan.units.map(() => ({ ...forced.outcome }));
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
    const fileHeaders: Record<string, string> = body["status"] === "timeout" ? { "X-Should-Retry": "false" } : {};
    if (format === "csv") return { status: 200, headers: fileHeaders, text: toCsv(body), contentType: "text/csv; charset=utf-8" };
    if (format === "ndjson") return { status: 200, headers: fileHeaders, text: toNdjson(body), contentType: "application/x-ndjson" };
    return finishedReply(body);
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

    const done = (r: Reply): Reply => (skipped.length ? { ...r, headers: { ...r.headers, [SKIPPED_HEADER]: skipped.join("; ") } } : r);
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
      const info = OPERATIONS[op as keyof typeof OPERATIONS];
      const validators = requestValidators[op as keyof typeof requestValidators] as Record<string, (v: unknown) => RequestValidation<unknown>>;
      if (validators["path"]) check(route, validators["path"](pathParams), requestId);
      const notText = queryTextProblem(url.search);
      if (notText) throw invalid(requestId, notText);
      const query = parseQuery(info, url.search);
      check(route, validators["query"]!(query), requestId);
      check(route, validators["headers"]!(headers), requestId);
      let body: Record<string, unknown> = {};
      if (validators["body"]) {
        const read = await readBody(request, headers["content-type"]);
        if (!read.ok) throw invalid(requestId, read.why ?? invalidBody());
        const notText = bodyTextProblem(read.value);
        if (notText) throw invalid(requestId, notText);
        check(route, validators["body"](read.value), requestId);
        body = read.value as Record<string, unknown>;
      }
      if (route.charging) checkCapabilities(route, route.method === "GET" ? query : body, pathParams, requestId);
      const apiKey = route.keyless ? "" : authenticate(route, headers, requestId);

      switch (op) {
        case "listCapabilities":
          return done(reply(200, capabilities(requestId)));
        case "getOpenApiDocument":
          return done(reply(200, OPENAPI_DOCUMENT));
        case "findOperation":
          return done(reply(200, find(body, requestId)));
        case "getAccount":
          return done(reply(200, account(apiKey, requestId)));
        case "listSchedules":
          return done(reply(200, { request_id: requestId, schema_version: "v1", schedules: store.schedules, limit: 20 }));
        case "deleteSchedule": {
          const id = pathParams["schedule_id"] ?? "";
          const at = store.scheduleList.findIndex((s) => s.id === id);
          if (at < 0) {
            throw refuse("not_found", requestId, { reason: "no_such_schedule", message: `The workspace has no schedule ${id}.`, fix: { param: "schedule_id", example_call: { method: "GET", path: "/v1/schedules" } } });
          }
          store.scheduleList.splice(at, 1);
          return done(reply(200, { request_id: requestId, schema_version: "v1", deleted: true, schedule_id: id }));
        }
        case "getResult":
          return done(result(forced, consume, skipped, apiKey, pathParams["handle"] ?? "", query["format"] as string | undefined, requestId));
        default:
          return done(charging(route, forced, consume, skipped, apiKey, route.method === "GET" ? query : body, pathParams, headers, requestId));
      }
    } catch (e) {
      if (e instanceof Refusal) return done(e.reply);
      throw e;
    }
  }

  /** Dev check: every JSON answer against the contract. */
  function conform(route: MockRoute | undefined, r: Reply): void {
    if (!validate || r.json === undefined) return;
    const result = route ? responseValidators[route.operationId as keyof typeof responseValidators](r.status, r.json) : validateErrorStructure(r.json);
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
    if (r.text !== undefined) return new HttpResponse(r.text, { status: r.status, headers: { ...headers, "Content-Type": type } });
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

  // An unknown tool (D14 no_such_tool), and with a base address any other path under it (no_such_route).
  handlers.push(
    http.post(`${base}/v1/tools/:tool`, ({ params, request }) => {
      const requestId = newRequestId();
      const exposed = keyInUrl(new URL(request.url), requestId);
      if (exposed) return toResponse(exposed, contractPath(request));
      const a = errorAnswer("not_found", requestId, {
        reason: "no_such_tool",
        message: `There is no tool ${String(params["tool"])}.`,
        fix: { allowed: [...TOOL_NAMES], example_call: { method: "GET", path: "/v1/capabilities" } },
      }, { urls });
      const r = reply(a.status, a.body, a.headers);
      conform(undefined, r);
      return toResponse(r, contractPath(request));
    }),
  );
  if (options.unknownRoutes ?? base !== "*") {
    const routes = (Object.values(ROUTES) as MockRoute[]).map((r) => `${r.method} ${r.path}`);
    const noSuchRoute = ({ request }: { request: Request }) => {
      const requestId = newRequestId();
      const exposed = keyInUrl(new URL(request.url), requestId);
      if (exposed) return toResponse(exposed, contractPath(request));
      const a = errorAnswer("not_found", requestId, {
        reason: "no_such_route",
        message: `There is no route ${request.method} ${new URL(request.url).pathname.slice(0, 200)}.`,
        fix: { allowed: routes, example_call: { method: "GET", path: "/v1/capabilities" } },
      }, { urls });
      const r = reply(a.status, a.body, a.headers);
      conform(undefined, r);
      return toResponse(r, contractPath(request));
    };
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
