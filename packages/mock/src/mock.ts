/**
 * `createMock()`: MSW 3 handlers for every operation of the contract, answering as the seed says a gateway does:
 * keys and their permission, request validation through @sdgw/validators, credits, 202 runs read by handle,
 * idempotency, paging; and any status or error code on demand (scenarios).
 */
import { Catalog, Finder, REFUSALS, Simulator, type RefusalFields } from "@sdgw/engine";
import { TOOL_NAMES, type OperationId, type Schedule } from "@sdgw/types";
import { answerHeaders, responseValidators, validateErrorStructure, type ServiceUrls } from "@sdgw/validators";
import { DEFAULT_URLS } from "@sdgw/validators";
import { http, HttpResponse, type HttpHandler } from "msw";
import { keyInUrl, newRequestId, refuse, type MockContext } from "./context.ts";
import { checkCorsOrigins, corsAnswerHeaders, originOf, preflight, type CorsOrigins } from "./cors.ts";
import { ROUTES } from "./generated/routes.ts";
import { mcpHandlers, type McpKept } from "./mcp.ts";
import { answer } from "./pipeline.ts";
import type { MockRoute } from "./generated/route-types.ts";
import type { Scenario } from "./scenarios.ts";
import { Store, type MockState, type Reply } from "./state.ts";

/** A key the mock accepts, and what it may do. */
export interface MockKey {
  /** `read_data` lets the key call data routes and tools (D26); without it they answer `403 key_scope_denied`. */
  permissions?: readonly "read_data"[] | undefined;
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
  baseUrl?: string | undefined;
  /** The keys the mock accepts. Default {@link DEFAULT_KEYS}. */
  keys?: Readonly<Record<string, MockKey>> | undefined;
  /** Credits at the start and after `reset()`. Default 100. */
  balance?: number | undefined;
  /** The workspace's schedules at the start and after `reset()`. Default: the two of the `listSchedules` fixture. */
  schedules?: readonly Schedule[] | undefined;
  /** How many reads of a result answer 202 before it is finished. Default 2. */
  polls?: number | undefined;
  /**
   * Which calls go 202 (run in the background): a pattern matched against the call's parameters as JSON, or a
   * predicate. Default: parameters containing the word `slow` (`query: "slow coffee"`). A forced `running`
   * scenario goes 202 too.
   */
  slow?: (RegExp | ((call: SlowCall) => boolean)) | undefined;
  /** Seconds of `Retry-After` on 202, 409 and `rate_limited`. Default 1. */
  retryAfter?: number | undefined;
  /** Pages a paged result has: single-platform search, comments and user posts answer `has_more: true` until the last. Default 3. */
  pages?: number | undefined;
  /** The clock, in milliseconds since 1970 (for time travel: a finished result expires 24 hours after it ended). Default `Date.now`. */
  now?: (() => number) | undefined;
  /**
   * Check every JSON answer against the contract (`responseValidators`) before it is sent, and throw a clear error
   * when one does not match, so that a broken fixture is never served silently. Default: on unless
   * `NODE_ENV` is `production`.
   */
  validate?: boolean | undefined;
  /**
   * Answer every other request to the base address as the gateway does: `404 not_found`, reason `no_such_route`,
   * `fix.allowed` the routes and `fix.example_call` `GET /v1/capabilities`. With a `baseUrl` that is every path
   * under it, `/v1/` or not (`/v2/search`, `/nothing`, the base itself; for `http://host:8787` the whole origin,
   * for `https://host/gateway` only what is under `/gateway`), so put handlers of your own for that address
   * before the mock's, or add them with `server.use(...)`; other origins are never answered. With the base `*`
   * there is no address of the mock's own, so only `/v1/` paths of any origin are (when turned on). Default: on
   * when `baseUrl` is given, off for `*` (where it would catch other APIs' calls).
   */
  unknownRoutes?: boolean | undefined;
  /**
   * A fixed moment the simulated platforms stand at (an RFC 3339 text or milliseconds), so that tests can compare
   * exact dates: every date in an answer is before it. Default: the start of the UTC day of `now`.
   */
  anchor?: string | number | undefined;
  /** The console, billing, sign-in and status addresses the errors point to. Default @sdgw/validators' `DEFAULT_URLS`. */
  urls?: ServiceUrls | undefined;
  /**
   * The origins whose pages may call the mock across origins (CORS, D117), as the reference server's
   * `SDGW_CORS_ORIGINS` lets them: `"*"` any origin, a list of exact origins (`["http://localhost:5173"]`), or
   * `false` for no CORS at all. A request that carries `Origin` from a listed origin gets
   * `Access-Control-Allow-Origin` and `Access-Control-Expose-Headers` (`Retry-After`, `Idempotent-Replayed`,
   * `X-Should-Retry`, `X-Request-Id`, `Content-Disposition`, `X-Sdgw-Scenario-Skipped`) on every answer, and its preflight (`OPTIONS`)
   * is answered 204 with the methods and the headers the API reads (`X-API-Key`, `Authorization`,
   * `Idempotency-Key`, `Content-Type`, and the mock's `X-Sdgw-Scenario`). Never credentials. Default `"*"`: a
   * frontend test's page (happy-dom's `http://localhost:3000`, a dev server's port) calls the gateway's address as
   * the app does.
   */
  corsOrigins?: "*" | readonly string[] | false | undefined;
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

/** @internal A mock's options resolved, once: what its parts read, its state and simulated platforms (`MockContext`). */
export function createContext(options: MockOptions) {
  const base = (options.baseUrl ?? "*").replace(/\/+$/, "");
  const polls = options.polls ?? 2;
  const clock = options.now ?? (() => Date.now());
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const slow = options.slow ?? /\bslow\b/i;
  if (!(Number.isInteger(polls) && polls >= 0))
    throw new TypeError(`@sdgw/mock: polls must be a whole number, 0 or more (got ${polls})`);
  const cors: CorsOrigins = checkCorsOrigins(options.corsOrigins);
  const store = new Store(options.balance ?? 100, options.schedules);
  const simulator = new Simulator({ now: clock, ...(options.anchor !== undefined ? { anchor: options.anchor } : {}) });
  const catalog = new Catalog(simulator.providers);
  return {
    base,
    keys: options.keys ?? DEFAULT_KEYS,
    polls,
    retryAfter: Math.max(1, Math.ceil(options.retryAfter ?? 1)),
    pages: Math.max(1, options.pages ?? 3),
    clock,
    validate: options.validate ?? env?.["NODE_ENV"] !== "production",
    urls: options.urls ?? DEFAULT_URLS,
    cors,
    isSlow: (call: SlowCall) => (slow instanceof RegExp ? slow.test(JSON.stringify(call.params)) : slow(call)),
    store,
    simulator,
    catalog,
    finder: new Finder(catalog),
    /** The scenarios turned on by `use`, newest first, with what is left of each. */
    active: [] as { scenario: Scenario; left: number }[],
    /** Answers finished at once and cut to the MCP size bound, kept under their handles for `more`. */
    mcpKept: new Map() as McpKept,
    /** The base address's own path (`""` for `*` or a bare origin): a request's contract path is its path after it. */
    basePath: /^[a-z][\w+.-]*:\/\//i.test(base) ? new URL(base).pathname.replace(/\/$/, "") : "",
  };
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
  const ctx = createContext(options);
  const { base, store } = ctx;
  const handlers: HttpHandler[] = (Object.values(ROUTES) as MockRoute[]).map((route) => {
    const method = route.method.toLowerCase() as "get" | "post" | "delete";
    return http[method](`${base}${route.mswPath}`, async ({ request, params }) =>
      toResponse(ctx, route, await answer(ctx, route, request, params), request),
    );
  });
  // An unknown tool (D14 no_such_tool), and with a base address any other path under it (no_such_route).
  handlers.push(
    http.post(`${base}/v1/tools/:tool`, ({ params, request }) =>
      notFound(ctx, request, REFUSALS.noSuchTool(String(params["tool"]), TOOL_NAMES)),
    ),
  );
  // MCP at {base}/mcp: the same tools, answered by the routes above.
  handlers.push(...mcpHandlers(ctx));
  // The paths the mock answers: its routes, and with `unknownRoutes` every other path under the base address.
  const paths = new Set([...(Object.values(ROUTES) as MockRoute[]).map((r) => r.mswPath), "/v1/tools/:tool", "/mcp"]);
  const unknownPatterns: string[] = [];
  if (options.unknownRoutes ?? base !== "*") {
    const routes = (Object.values(ROUTES) as MockRoute[]).map((r) => `${r.method} ${r.path}`);
    const noSuchRoute = ({ request }: { request: Request }) =>
      notFound(ctx, request, REFUSALS.noSuchRoute(request.method, new URL(request.url).pathname, routes));
    // Every path under the base address (its whole origin when it has no path of its own), never other origins.
    if (base === "*") unknownPatterns.push("*/v1/*");
    else {
      unknownPatterns.push(`${base}/*`);
      if (base !== "" && !/^[a-z][\w+.-]*:\/\/[^/]*$/i.test(base)) unknownPatterns.push(base); // the base's own path
    }
    for (const pattern of unknownPatterns) handlers.push(http.all(pattern, noSuchRoute));
  }
  // D117: preflights of every path the mock answers, before the handlers (an unknown route's `all` included).
  if (ctx.cors !== false) {
    const answerPreflight = ({ request }: { request: Request }) => {
      const origin = originOf(request);
      return origin === null ? undefined : preflight(ctx.cors, origin); // an OPTIONS from no origin goes on, as before
    };
    const patterns = [...[...paths].map((p) => `${base}${p}`), ...unknownPatterns];
    handlers.unshift(...patterns.map((pattern) => http.options(pattern, answerPreflight)));
  }

  return {
    handlers,
    use(...scenarios: Scenario[]) {
      const fresh = scenarios.map((s) => ({ scenario: s, left: s.times ?? Number.POSITIVE_INFINITY }));
      ctx.active = [...fresh, ...ctx.active.filter((a) => a.left > 0)];
    },
    reset() {
      ctx.active = [];
      store.clear();
      ctx.mcpKept.clear();
    },
    state: store,
  };
}

/** Dev check (`validate`): a JSON answer that does not match the contract is thrown, never sent. */
function conform(ctx: MockContext, route: MockRoute | undefined, { status, json }: Reply): void {
  if (!ctx.validate || json === undefined) return;
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
function toResponse(ctx: MockContext, route: MockRoute | undefined, r: Reply, request: Request): Response {
  conform(ctx, route, r);
  const { status, headers, json, file } = r;
  // The contract's path (D53 names files by it): the URL's path without the base address's own path.
  const { pathname } = new URL(request.url);
  const path = ctx.basePath && pathname.startsWith(ctx.basePath) ? pathname.slice(ctx.basePath.length) : pathname;
  const all = {
    ...answerHeaders(path, file?.contentType ?? "application/json"),
    ...headers,
    ...corsAnswerHeaders(ctx.cors, originOf(request)),
  };
  if (!file) return HttpResponse.json(json as never, { status, headers: all });
  return new HttpResponse(file.text, { status, headers: { ...all, "Content-Type": file.contentType } });
}

/** 404 `not_found` of a path the contract has no route for (after D25's key check), checked like every answer. */
function notFound(ctx: MockContext, request: Request, refusal: RefusalFields): Response {
  const requestId = newRequestId();
  const r = keyInUrl(ctx, new URL(request.url), requestId) ?? refuse(ctx, "not_found", requestId, refusal).reply;
  return toResponse(ctx, undefined, r, request);
}
