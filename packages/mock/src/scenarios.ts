/** Scenarios: what a test or a frontend team forces the mock to answer, by name. */
import { isPlatformFailure, isoSeconds, platformFailure, purchaseRefusal, type ProviderOutcome } from "@sdgw/engine";
import { ERROR_CATALOGUE, ERROR_CODES, type EnvelopeError, type ErrorCode, type OperationId } from "@sdgw/types";
import { nextUtcMidnight, type HttpErrorCode, type ServiceUrls } from "@sdgw/validators";
import { refuse, type MockContext, type Req } from "./context.ts";
import { FIXTURES, ROUTES } from "./generated/routes.ts";
import type { MockRoute } from "./generated/route-types.ts";
import type { Charged, Outcome } from "./state.ts";

/** The statuses an answer can have: the five of a finished envelope, and `running` (HTTP 202). */
export const STATUS_SCENARIOS = ["ok", "empty", "error", "not_supported", "timeout", "running"] as const;

/** A status of {@link STATUS_SCENARIOS}. */
export type StatusScenario = (typeof STATUS_SCENARIOS)[number];

/**
 * Every name a scenario can have: the six statuses (`ok`, `empty`, `error`, `not_supported`, `timeout`,
 * `running`) and the 19 error codes. `not_supported` and `timeout` are both: the envelope status and its code.
 */
export const SCENARIO_NAMES: readonly ScenarioName[] = [
  ...new Set<ScenarioName>([...STATUS_SCENARIOS, ...ERROR_CODES]),
];

/** A status or an error code. */
export type ScenarioName = StatusScenario | ErrorCode;

/** Where and how often a scenario applies. */
export interface ScenarioOptions {
  /** Only this operation (its `operationId`, e.g. `search`, `getResult`); by default every operation that can answer it. */
  operation?: OperationId | undefined;
  /** How many answers it forces before it is used up; by default every answer until `reset()`. */
  times?: number | undefined;
  /**
   * The HTTP status to answer a code with, for the codes the seed answers in two ways: `200` puts it inside the
   * envelope (`scenario("rate_limited", { http: 200 })` is a `status: "error"` envelope whose error is
   * `rate_limited`), `503` answers `temporarily_unavailable` as a refusal on a data route (where D13 puts it at
   * 200 by default). By default a code is answered under its own non-200 status, except the codes that the seed
   * answers only at 200 (`invalid_target`, `upstream_error`, `timeout`) and, on data routes, `not_found` and
   * `temporarily_unavailable` (D13).
   */
  http?: number | undefined;
}

/** A forced answer: made by {@link scenario}, turned on by `mock.use(...)`; its options as {@link ScenarioOptions}. */
export interface Scenario extends Readonly<ScenarioOptions> {
  /** The status or error code it forces. */
  readonly name: ScenarioName;
}

/** True when `name` is a scenario name. */
export function isScenarioName(name: string): name is ScenarioName {
  return (SCENARIO_NAMES as readonly string[]).includes(name);
}

/**
 * A scenario: `scenario("rate_limited")` forces `429 rate_limited` on every operation that documents it until
 * `reset()`; `scenario("timeout", { operation: "search", times: 1 })` makes the next search answer a `timeout`
 * envelope. Turn it on with `mock.use(...)`.
 *
 * @example
 * ```ts
 * mock.use(scenario("rate_limited", { times: 1 })); // the next call answers 429 with Retry-After: 1
 * mock.use(scenario("timeout", { operation: "search" })); // every search answers a `timeout` envelope
 * mock.use(scenario("not_supported", { http: 400 })); // the 400 refusal instead of the envelope
 * ```
 */
export function scenario(name: ScenarioName, options: ScenarioOptions = {}): Scenario {
  if (!isScenarioName(name))
    throw new TypeError(`@sdgw/mock: no scenario "${String(name)}"; one of ${SCENARIO_NAMES.join(", ")}`);
  const { operation, times, http } = options;
  if (operation !== undefined && !(operation in ROUTES))
    throw new TypeError(`@sdgw/mock: no operation "${operation}"; one of ${Object.keys(ROUTES).join(", ")}`);
  if (times !== undefined && !(Number.isInteger(times) && times >= 1))
    throw new TypeError(`@sdgw/mock: times must be a whole number, 1 or more (got ${times})`);
  if (http !== undefined && !Number.isInteger(http))
    throw new TypeError(`@sdgw/mock: http must be an HTTP status (got ${http})`);
  // Only the options given: a scenario shows no `undefined` fields.
  const given = Object.entries({ operation, times, http }).filter(([, v]) => v !== undefined);
  return Object.freeze({ name, ...Object.fromEntries(given) });
}

/** The request header that forces a scenario for one request: `x-sdgw-scenario: rate_limited` (or `rate_limited@200`). */
export const SCENARIO_HEADER = "x-sdgw-scenario";

/** The answer header that says a forced scenario could not be answered by this operation, and why. */
export const SKIPPED_HEADER = "x-sdgw-scenario-skipped";

/** Reads the value of the `x-sdgw-scenario` header: a name, optionally `@` and an HTTP status. Undefined if not a scenario. */
export function parseScenarioHeader(value: string | undefined): Scenario | undefined {
  if (!value) return undefined;
  const m = /^\s*([a-z_]+)(?:@(\d{3}))?\s*$/.exec(value);
  if (!m || !isScenarioName(m[1]!)) return undefined;
  return scenario(m[1], m[2] ? { http: Number(m[2]) } : {});
}

/**
 * @internal A forced outcome as a platform answers it, in place of the simulated platform's answer; undefined for
 * `ok` and for the codes no platform answers (`invalid_params`, `insufficient_balance`: see {@link ownError}).
 */
export function forcedOutcome(o: Outcome, p: string, params: object, retryAfter: number): ProviderOutcome | undefined {
  if (!isPlatformFailure(o)) return undefined;
  return platformFailure(o, p, { param: "url" in params ? "url" : "id", retryAfter });
}

/** @internal The error objects no platform answers: `insufficient_balance`, else `invalid_params`. */
export function ownError(code: Outcome, platform: string, urls: ServiceUrls): EnvelopeError {
  if (code !== "insufficient_balance") {
    const message = `${platform} refused the parameters; nothing was charged.`;
    return { code: "invalid_params", message, retryable: false };
  }
  const message = `The balance does not cover this ${platform} call; nothing ran and nothing was charged.`;
  return { code, message, retryable: false, action_url: urls.billing } as EnvelopeError;
}

/** @internal What a forced scenario asks of one operation; `take()` counts it as answered. */
export type Forced = (
  | { kind: "refusal"; code: HttpErrorCode; http: number }
  | { kind: "outcome"; outcome: Outcome }
  | { kind: "running" }
) & { take(): void };

/**
 * @internal The scenario forced on a request (its `header`'s, else the newest `use`d one for its operation) as its
 * operation answers it, before the call's shape is known; undefined when none applies (`skipped` then says why).
 */
export function force(ctx: MockContext, route: MockRoute, skipped: string[], header?: string): Forced | undefined {
  const op = route.operationId;
  const fromHeader = parseScenarioHeader(header);
  if (header !== undefined && !fromHeader) skipped.push(`no scenario "${header}"`);
  const on = fromHeader
    ? { scenario: fromHeader, left: 1 }
    : ctx.active.find((a) => a.left > 0 && (a.scenario.operation ?? op) === op);
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

/** @internal The outcome forced on a call, if its shape can answer it (D13: fewer codes in `search` and fanouts). */
export function forcedOn(req: Req, op: OperationId, c: Charged): Outcome | undefined {
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

/** @internal A forced refusal: the route's fixture of that code and status (times refreshed), else the catalogue's. */
export function forcedRefusal(ctx: MockContext, route: MockRoute, code: HttpErrorCode, status: number, id: string) {
  const fixture = route.fixtures.find((f) => f.code === code && f.http === status && f.shape === "error");
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries((fixture ? FIXTURES[fixture.file] : {}) as object)) {
    if (!["request_id", "schema_version", "code", "retryable"].includes(k)) extra[k] = structuredClone(v);
  }
  // D11, D51, D58: what a free account gets (the mock's keys are paid ones; the scenario shows it).
  const tool = route.tool === "account_watch" || route.tool === "batch_stats" ? route.tool : undefined;
  if (!fixture && code === "plan_limit" && tool) Object.assign(extra, purchaseRefusal(tool, ctx.urls).extra);
  const now = new Date(ctx.clock());
  if ("retry_at" in extra) extra["retry_at"] = isoSeconds(now.getTime() + 300_000);
  if (code === "rate_limited" || code === "idempotency_in_progress") extra["retry_after"] = ctx.retryAfter;
  if (typeof extra["resets_at"] === "string" && typeof extra["message"] === "string") {
    // A daily limit or cap: it restarts at the next UTC midnight, and its message says when.
    const resetsAt = nextUtcMidnight(now);
    extra["resets_at"] = resetsAt;
    extra["message"] = extra["message"].replace(/\d{4}-\d\d-\d\dT[\d:]+Z/g, resetsAt);
  }
  return refuse(ctx, code, id, extra).reply;
}
