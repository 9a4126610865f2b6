/**
 * The one HTTP helper of every connector (D116): an idempotent GET on the platform's `fetch`, with the call's
 * `AbortSignal` passed through (an abandoned call cancels its upstream request), the budget taken before each
 * attempt (D121), jittered retries on 408/429/5xx and network errors only while the call's time allows, `Retry-After`
 * and rate-limit headers read, and nothing secret in what it logs.
 */
import type { BudgetAnswer, BudgetCharge, ConnectorContext } from "./context.ts";
import { redactText, redactUrl } from "./redact.ts";

/** One upstream read. */
export interface UpstreamRequest {
  platform: string;
  /** The upstream method, for logs (`videos.list`). */
  method: string;
  /** Base URL and path, without a query. */
  url: string;
  /** Query parameters; undefined ones are left out. */
  query?: Readonly<Record<string, string | number | undefined>>;
  headers?: Readonly<Record<string, string>>;
  /** Units taken from the platform's budget before each attempt (D121). */
  cost?: readonly BudgetCharge[];
  /** The call's signal: aborting it cancels the request in flight and any wait before a retry. */
  signal: AbortSignal;
  /** When the call's time runs out (ms since the epoch, `Date.now()`'s clock); no retry starts after it. */
  deadline?: number;
  /** Secret values (an API key) kept out of anything logged. */
  secrets?: readonly string[];
  /** Attempts at most (default 3). */
  attempts?: number;
}

/** What rate-limit headers said, if any. */
export interface RateLimitInfo {
  /** Requests left in the platform's window. */
  remaining?: number;
  /** When the window starts again (ms since the epoch). */
  resetAt?: number;
}

/** Why an upstream read failed. */
export type UpstreamFault =
  | { kind: "http"; status: number; body: unknown; retryAfter?: number; rateLimit: RateLimitInfo }
  | { kind: "network"; message: string }
  | { kind: "timeout" }
  | { kind: "budget"; refusal: Exclude<BudgetAnswer, { ok: true }> }
  | { kind: "body"; status: number; message: string };

/** What an upstream read spent: requests sent and budget units taken. */
export interface UpstreamSpend {
  requests: number;
  units: number;
}

/** The answer of an upstream read: a 2xx JSON body, or the fault of its last attempt. */
export type UpstreamResult = (
  | { ok: true; status: number; headers: Headers; body: unknown; rateLimit: RateLimitInfo }
  | { ok: false; fault: UpstreamFault }
) &
  UpstreamSpend;

/**
 * Thrown by a replaying `fetch` (D123) for a request it has no recording of: never retried nor mapped to an
 * answer, so the call breaks loudly instead of answering something no recording said.
 */
export class UpstreamReplayMiss extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UpstreamReplayMiss";
  }
}

const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
/** The first wait before a retry (before jitter), doubling each time up to `MAX_BACKOFF_MS`. */
const BASE_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 4000;
/** A retry starts only if this much time is left after its wait. */
const MIN_ATTEMPT_MS = 1000;

/** Seconds a `Retry-After` asks for (seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - now) / 1000)) : undefined;
}

/** The rate-limit headers of the usual spellings (`x-ratelimit-*`, `x-rate-limit-*`, `ratelimit-*`). */
export function rateLimitOf(headers: Headers, now = Date.now()): RateLimitInfo {
  const first = (names: string[]) => {
    for (const n of names) {
      const v = headers.get(n);
      if (v !== null && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
    }
    return undefined;
  };
  const out: RateLimitInfo = {};
  const remaining = first(["x-ratelimit-remaining", "x-rate-limit-remaining", "ratelimit-remaining"]);
  if (remaining !== undefined) out.remaining = Math.max(0, Math.floor(remaining));
  const reset = first(["x-ratelimit-reset", "x-rate-limit-reset", "ratelimit-reset"]);
  // An epoch in seconds (X) or seconds from now (Reddit, the IETF draft).
  if (reset !== undefined) out.resetAt = reset > 1e9 ? reset * 1000 : now + reset * 1000;
  return out;
}

/** The full URL of a request (its query in the order given). */
export function requestUrl(r: Pick<UpstreamRequest, "url" | "query">): string {
  const u = new URL(r.url);
  for (const [k, v] of Object.entries(r.query ?? {})) if (v !== undefined) u.searchParams.append(k, String(v));
  return u.href;
}

function describe(fault: UpstreamFault): string {
  switch (fault.kind) {
    case "http":
      return `HTTP ${fault.status}`;
    case "network":
      return `a network error (${fault.message})`;
    case "timeout":
      return "no answer in time";
    case "budget":
      return "the budget refused";
    case "body":
      return `an unreadable body (HTTP ${fault.status}: ${fault.message})`;
  }
}

/** Waits `ms`; false when the signal aborted meanwhile. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      resolve(ok);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** One attempt: the response read as JSON, or its fault. Rethrows a replay miss. */
async function attempt(
  ctx: ConnectorContext,
  r: UpstreamRequest,
  url: string,
): Promise<
  | { ok: true; status: number; headers: Headers; body: unknown; rateLimit: RateLimitInfo }
  | { ok: false; fault: UpstreamFault }
> {
  let res: Response;
  try {
    res = await ctx.fetch(url, {
      method: "GET",
      headers: { accept: "application/json", ...r.headers },
      signal: r.signal,
      redirect: "error",
    });
  } catch (e) {
    if (e instanceof UpstreamReplayMiss) throw e;
    if (r.signal.aborted) return { ok: false, fault: { kind: "timeout" } };
    const message = e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e);
    return { ok: false, fault: { kind: "network", message: redactText(message, r.secrets ?? []) } };
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    if (r.signal.aborted) return { ok: false, fault: { kind: "timeout" } };
    return { ok: false, fault: { kind: "network", message: e instanceof Error ? e.message : String(e) } };
  }
  const rateLimit = rateLimitOf(res.headers);
  let body: unknown = text;
  try {
    body = text === "" ? null : JSON.parse(text);
  } catch {
    if (res.ok) return { ok: false, fault: { kind: "body", status: res.status, message: "not JSON" } };
  }
  if (res.ok) return { ok: true, status: res.status, headers: res.headers, body, rateLimit };
  let retryAfter = retryAfterSeconds(res.headers.get("retry-after"));
  if (retryAfter === undefined && res.status === 429 && rateLimit.resetAt !== undefined)
    retryAfter = Math.max(1, Math.ceil((rateLimit.resetAt - Date.now()) / 1000));
  return {
    ok: false,
    fault: { kind: "http", status: res.status, body, rateLimit, ...(retryAfter !== undefined ? { retryAfter } : {}) },
  };
}

/**
 * Sends an idempotent GET, retrying a 408, 429 or 5xx answer or a network error with full-jitter backoff
 * (250 ms doubling to 4 s, at least the `Retry-After` asked), only while a retry can still end before the deadline.
 * The budget is taken before each attempt; a refused take ends the read (a first one as a `budget` fault).
 */
export async function upstreamGet(ctx: ConnectorContext, r: UpstreamRequest): Promise<UpstreamResult> {
  const url = requestUrl(r);
  const shown = () => redactText(redactUrl(url), r.secrets ?? []);
  const attempts = Math.max(1, r.attempts ?? 3);
  const random = ctx.random ?? Math.random;
  const spent: UpstreamSpend = { requests: 0, units: 0 };
  let last: UpstreamFault | undefined;
  for (let n = 1; n <= attempts; n++) {
    if (r.signal.aborted) return { ok: false, fault: { kind: "timeout" }, ...spent };
    if (r.cost?.length) {
      const taken = await ctx.budget.take(r.platform, r.cost);
      if (!taken.ok) return { ok: false, fault: last ?? { kind: "budget", refusal: taken }, ...spent };
      spent.units += r.cost.reduce((sum, c) => sum + c.units, 0);
    }
    spent.requests += 1;
    const got = await attempt(ctx, r, url);
    if (got.ok) return { ...got, ...spent };
    last = got.fault;
    const retryable =
      (last.kind === "http" && RETRY_STATUSES.has(last.status)) || last.kind === "network" || last.kind === "body";
    if (!retryable || n === attempts) break;
    const backoff = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** (n - 1));
    let wait = Math.round(random() * backoff);
    if (last.kind === "http" && last.retryAfter !== undefined) wait = Math.max(wait, last.retryAfter * 1000);
    const left = (r.deadline ?? Number.POSITIVE_INFINITY) - Date.now();
    if (wait + MIN_ATTEMPT_MS > left) break;
    ctx.log.info(
      `${r.platform} ${r.method}: ${describe(last)} from GET ${shown()}; retrying in ${wait} ms (attempt ${n + 1} of ${attempts})`,
    );
    if (!(await pause(wait, r.signal))) return { ok: false, fault: { kind: "timeout" }, ...spent };
  }
  return { ok: false, fault: last!, ...spent };
}
