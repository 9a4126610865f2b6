/**
 * Builds the API's error answers from the one catalogue in the spec (`x-error-catalogue`, generated into
 * @sdgw/types): the HTTP status, the headers the seed requires, and a body with the fields each code requires.
 * The mock and the reference server answer through these, so both say the same thing the same way.
 */
import { ERROR_CATALOGUE, type ErrorOf, type ErrorStructure } from "@sdgw/types";

/** Addresses the error structures point to (`{console_url}`, `{billing_url}`, `{sign_in_url}`, `{status_url}`). @group Answers */
export interface ServiceUrls {
  console: string;
  billing: string;
  signIn: string;
  status: string;
}

/** The service's own pages that error answers point to, unless a server configures its own. @group Answers */
export const DEFAULT_URLS: ServiceUrls = {
  console: "https://console.sdgw.dev/keys",
  billing: "https://console.sdgw.dev/billing",
  signIn: "https://console.sdgw.dev/sign-in",
  status: "https://status.sdgw.dev",
};

/** Codes answered under a non-200 HTTP status (16 of the 19). @group Answers */
export type HttpErrorCode = ErrorStructure["code"];

/** The non-200 HTTP status of a code (the seed's table; `not_found` 404, `temporarily_unavailable` 503). @group Answers */
export function httpStatusOf(code: HttpErrorCode): number {
  return ERROR_CATALOGUE[code].http.find((s) => s !== 200)!;
}

/** The next UTC midnight after `now`, when daily limits restart. @group Answers */
export function nextUtcMidnight(now: Date = new Date()): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1))
    .toISOString()
    .replace(".000Z", "Z");
}

type Extra<C extends HttpErrorCode> = Partial<Omit<ErrorOf<C>, "code" | "request_id" | "schema_version" | "retryable">>;

/** Default fields per code, in the seed's words; callers override what they know. */
function defaults(code: HttpErrorCode, urls: ServiceUrls, now: Date): Record<string, unknown> {
  const retry = (seconds: number) => ({ retry_after: seconds });
  switch (code) {
    case "invalid_params":
      return { message: "A parameter is missing or wrong; nothing ran.", fix: { param: "body" } };
    case "not_supported":
      return {
        message: "The platform does not offer this action.",
        reason: "no_such_capability",
        fix: { allowed: [] },
      };
    case "unauthorized":
      return {
        message: "A valid key is required.",
        reason: "missing",
        fix: { action_url: urls.console, note: "Send your key in the X-API-Key header or as Authorization: Bearer." },
      };
    case "insufficient_balance":
      return {
        message: "Not enough credits; nothing ran.",
        fix: { action_url: urls.billing, note: "Buy credits and send the same request again." },
      };
    case "max_cost_exceeded":
      return {
        message: "The quote is over max_cost_credits; nothing ran.",
        quote_credits: 0,
        fix: { param: "max_cost_credits", note: "Send a value at least the quote, or leave it out." },
      };
    case "plan_limit":
      return {
        message: "A free account has used up its calls.",
        reason: "free_calls_used",
        fix: { action_url: urls.billing },
      };
    case "key_scope_denied":
      return {
        message: "This key lacks the permission read_data.",
        fix: { allowed: ["read_data"], action_url: urls.console },
      };
    case "not_found":
      return {
        message: "Nothing found here.",
        reason: "no_such_route",
        fix: { example_call: { method: "GET", path: "/v1/capabilities" } },
      };
    case "idempotency_in_progress":
      return {
        message: "The call under this Idempotency-Key still runs.",
        ...retry(2),
        fix: { note: "Ask again after Retry-After seconds." },
      };
    case "handle_expired":
      return {
        message: "This result is no longer kept (24 hours after the run ended).",
        fix: { param: "handle", note: "Send the call again; a new call is a new charge." },
      };
    case "idempotency_conflict":
      return {
        message: "This Idempotency-Key was used with other parameters.",
        fix: { param: "Idempotency-Key", note: "Use a new key for a new call." },
      };
    case "daily_limit_reached":
      return {
        message: "The daily limit of this key is reached.",
        reason: "key",
        resets_at: nextUtcMidnight(now),
        fix: { action_url: urls.console, note: "The owner can raise or switch off the limit." },
      };
    case "free_failure_limit":
      return {
        message: "Too many failed calls in a short time.",
        retry_at: new Date(now.getTime() + 300_000).toISOString().replace(/\.\d+Z$/, "Z"),
        fix: { note: "Wait until retry_at." },
      };
    case "rate_limited":
      return {
        message: "Too many calls per second for this key.",
        reason: "key_qps",
        ...retry(1),
        fix: { note: "Wait Retry-After seconds." },
      };
    case "internal_error":
      return {
        message: "Something failed on our side; nothing was charged.",
        fix: { note: "Retry; under the same Idempotency-Key it is never charged twice." },
      };
    case "temporarily_unavailable":
      return { message: "Calls are paused.", reason: "paused", fix: { action_url: urls.status } };
  }
}

/** An error answer: HTTP status, headers, and the body. @group Answers */
export interface ErrorAnswer<C extends HttpErrorCode = HttpErrorCode> {
  status: number;
  headers: Record<string, string>;
  body: ErrorOf<C>;
}

/**
 * The answer of an error code: `errorAnswer("rate_limited", "req_1", { reason: "workspace_concurrency" })`.
 * `Retry-After` is set on 409, 429 and 503 answers (D32): from `retry_after`, or the seconds until `resets_at` /
 * `retry_at`.
 * @group Answers
 */
export function errorAnswer<C extends HttpErrorCode>(
  code: C,
  requestId: string,
  extra: Extra<C> = {},
  options: { urls?: ServiceUrls; now?: Date } = {},
): ErrorAnswer<C> {
  const now = options.now ?? new Date();
  const base = defaults(code, options.urls ?? DEFAULT_URLS, now);
  const body = {
    request_id: requestId,
    schema_version: "v1",
    code,
    retryable: ERROR_CATALOGUE[code].retry === true,
    ...base,
    ...extra,
  } as unknown as ErrorOf<C>;
  const status = httpStatusOf(code);
  const headers: Record<string, string> = {};
  if (status === 409 || status === 429 || status === 503) {
    const b = body as { retry_after?: number; resets_at?: string; retry_at?: string };
    const until = b.resets_at ?? b.retry_at;
    const seconds = b.retry_after ?? (until ? (Date.parse(until) - now.getTime()) / 1000 : 1);
    headers["Retry-After"] = String(Math.max(1, Math.ceil(seconds)));
  }
  return { status, headers, body };
}
