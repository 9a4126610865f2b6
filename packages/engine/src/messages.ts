/**
 * The gateway's words, in one table for the reference server and the mock: the long sentences of answers
 * (`MESSAGES`: `message`, `fix.note`, warnings) and the fields of the refusals both answer alike (`REFUSALS`: what
 * goes into `errorAnswer` besides the code). A function where the words take values. The wording is part of the
 * contract's examples and of the tests: change it here only. Pure.
 */
import type { InvalidParams, ServiceUrls } from "@sdgw/validators";

/** The fields of an error answer besides `code`, `request_id`, `schema_version` and `retryable`. */
export interface RefusalFields {
  reason?: string;
  message: string;
  fix: Record<string, unknown>;
  [field: string]: unknown;
}

const CAPABILITIES_CALL = { method: "GET", path: "/v1/capabilities" } as const;

/** Long sentences of answers, by name. */
export const MESSAGES = {
  /** D107: the 503 of a call whose limits could not be checked (the limits store, Redis, does not answer). */
  limitsUnavailable:
    "Calls are paused: the gateway cannot check its rate limits now (its limits store does not answer). " +
    "Nothing ran and nothing was charged.",
  /** D57: one connection over the cap of an address. */
  tooManyConnections: (cap: number) =>
    `This address holds ${cap} open connections, the most one address may; close some or reuse them (keep-alive).`,
  /** `fix.note` of a 431: the headers or URL too large. */
  headersTooLargeNote: "Send less: a cursor of up to 20,000 characters fits in the URL; long lists go in a POST body.",
  /** A request that is not HTTP/1.1 (400 before any route). */
  notHttp: "The request is not valid HTTP/1.1 (its request line or a header could not be read).",
  /** `fix.note` of `free_failure_limit`. */
  failedCallsNote: "Check the parameters of the failing calls; GET /v1/capabilities lists what each op takes.",
  /** `rate_limited`, reason `workspace_concurrency`: `most` calls of the workspace run already. */
  workspaceConcurrency: (most: number) => `Too many calls running at once in this workspace (at most ${most}).`,
  /** `rate_limited`, reason `address`: the keyless routes' rate of one network address. */
  addressRate: (perMinute: number) =>
    `Too many requests from this network address (at most ${perMinute} a minute on routes without a key).`,
  /** D74: the account's cap on calls started per UTC day. */
  dailyCap: (started: number, cap: number, resets: string) =>
    `This account has started ${started} of its ${cap} calls of today (its daily cap) and this request makes more; ` +
    `calls are accepted again at ${resets}. Nothing ran and nothing was charged.`,
  /** `fix.note` of the daily cap (D74). */
  dailyCapNote:
    "Send the same call again after resets_at, with the same Idempotency-Key; support can raise the account's cap.",
  /** `daily_limit_reached`: the key's or account's credits of today, over its daily limit with this quote. */
  dailyLimit: (o: { of: "key" | "account"; spent: number; limit: number; quote: number; resets: string }) =>
    `This ${o.of} has spent ${o.spent} of its daily limit of ${o.limit} credits and this call would cost ${o.quote}; ` +
    `it restarts at ${o.resets}.`,
  /** `fix.note` of `daily_limit_reached`: who can raise the limit. */
  dailyLimitNote: (of: "key" | "account") =>
    of === "key"
      ? "The account owner can raise or switch off the key's daily limit."
      : "The owner can raise or switch off the account's daily limit.",
  /** A replay under an Idempotency-Key whose charged answer was lost in a crash (500, nothing charged). */
  answerLost:
    "The first answer under this Idempotency-Key was charged but its stored copy is lost (a system crash); " +
    "nothing is charged for this request. Use a new key to call again.",
  /** D108: the gateway's shared database does not answer (503 `temporarily_unavailable`, reason `paused`). */
  databaseUnavailable:
    "Calls are paused: the gateway cannot reach its database now. Nothing ran and nothing was charged.",
  /** D113: a request that reached an instance after its stop began (SIGTERM): 503, reason `paused`. */
  shuttingDown: "Calls are paused on this instance: it is shutting down. Nothing ran and nothing was charged.",
  /** `fix.note` of the 503 of an instance that is shutting down. */
  shuttingDownNote:
    "Send the same call again, with the same Idempotency-Key, on a new connection: another instance answers it.",
  /** `fix.note` of a 503 `paused`: calls are paused (by support, or the limits store does not answer). */
  pausedNote: "Send the same call again later, with the same Idempotency-Key; the status page says when calls resume.",
  /** `max_cost_exceeded`: the quote over `max_cost_credits`; `more` follows the sentence (a tool's hint). */
  maxCostExceeded: (credits: number, maxCost: number, more: string) =>
    `This call's quote is ${credits} credits, over max_cost_credits ${maxCost}; nothing ran.${more}`,
  /** What follows `maxCostExceeded` for a tool: where to see its plan. */
  toolMaxCostHint: " Send confirm: false to see the plan.",
  /** D73: a tool's scale=large, named by `confirm` or by `scale`. */
  largeScaleConfirmNote:
    "Send confirm: false to see the plan and price of scale=large, or scale small or standard to run now.",
  /** `fix.note` of scale=large refused, named by `scale`. */
  largeScaleNote:
    "Send scale small or standard to run now, or confirm: false to see the plan and price of scale=large.",
  /** D58: a confirmed `batch_stats` on a free account. */
  batchesNeedPurchase: "Batches open after the first purchase (D58). Nothing ran and nothing was charged.",
  /** `fix.note` of `batches_need_purchase`. */
  batchesNeedPurchaseNote: "Buy credits to open batches; confirm: false shows the plan and price now.",
  /** D51: `account_watch` with `schedule` on a free account. */
  schedulesNeedPurchase:
    "Schedules open after the first purchase; this call without `schedule` runs now. " +
    "Nothing ran and nothing was charged.",
  /** D52: the warning of the call that created a schedule (its first run). */
  scheduleCreated: (s: { id: string; every: string; next_run_at: string }) =>
    `Schedule ${s.id} created: this account_watch call runs again every ${s.every} under this key, charged like this ` +
    `call (next at ${s.next_run_at}); GET /v1/schedules lists it, DELETE /v1/schedules/${s.id} stops it.`,
} as const;

/** Why a key presented is refused (`401 unauthorized`, D25), after it was read: its `reason`, `message` and note. */
export const KEY_REFUSALS = {
  unknown: {
    reason: "invalid",
    message: "This key is not valid.",
    note: "Check the key, or create one in the console.",
  },
  revoked: { reason: "revoked", message: "This key was revoked.", note: "Create a new key in the console." },
  exposed: {
    reason: "key_in_query",
    message: "This key was sent in a URL and is treated as exposed; it is refused until replaced.",
    note: "Revoke this key, create a new one and send it in a header, never in the URL.",
  },
  expired: { reason: "expired", message: "This key has expired.", note: "Create a new key in the console." },
  keySuspended: {
    reason: "suspended",
    message: "This key is paused by support.",
    note: "Write to support@sdgw.dev to have it resumed.",
  },
  accountSuspended: {
    reason: "suspended",
    message: "This account is suspended.",
    note: "Write to support@sdgw.dev about the account.",
  },
} as const;

/** The fields of refusals that the reference server and the mock answer alike, by code and situation. */
export const REFUSALS = {
  /** `401 unauthorized`: a key refused for `why` (`KEY_REFUSALS` or `presentedKey`'s reasons). */
  unauthorized: (why: { reason: string; message: string; note: string }, urls: ServiceUrls): RefusalFields => ({
    reason: why.reason,
    message: why.message,
    fix: { action_url: urls.console, note: why.note },
  }),
  /** `403 key_scope_denied` (D26): a data route or tool called with a key without `read_data`. */
  keyScopeDenied: (urls: ServiceUrls): RefusalFields => ({
    message: "This key lacks the permission read_data.",
    fix: {
      allowed: ["read_data"],
      action_url: urls.console,
      note: "Give the key read_data in the console; it holds from the next call.",
    },
  }),
  /** `404 not_found`: a handle this key did not start (or never issued). */
  noSuchHandle: (): RefusalFields => ({
    reason: "no_such_handle",
    message: "No result under this handle for this key.",
    fix: {
      param: "handle",
      note: "A handle is read by the key that started the call, for 24 hours after its run ended.",
    },
  }),
  /** `410 handle_expired`: a result past its 24 hours. */
  handleExpired: (): RefusalFields => ({
    message: "This result is no longer kept (24 hours after the run ended).",
    fix: { param: "handle", note: "Send the call again; a new call is a new charge." },
  }),
  /** `500 internal_error` of a run that broke on the service's side (read by its handle, or the call itself). */
  runBroken: (handle?: string): RefusalFields =>
    handle
      ? {
          message: `The run behind ${handle} broke on the service's side; nothing was charged.`,
          fix: {
            param: "handle",
            note: "Send the original call again; under the same Idempotency-Key it is never charged twice.",
          },
        }
      : {
          message: "The run broke on the service's side; nothing was charged.",
          fix: { note: "Send the call again; under the same Idempotency-Key it is never charged twice." },
        },
  /** `409 idempotency_in_progress`: the call under this Idempotency-Key still runs. */
  idempotencyInProgress: (retryAfterSeconds: number): RefusalFields => ({
    message: "The call under this Idempotency-Key still runs.",
    retry_after: retryAfterSeconds,
    fix: { note: "Ask again after Retry-After seconds; the first answer comes back with no new charge." },
  }),
  /** `422 idempotency_conflict`: the Idempotency-Key was used with other parameters. */
  idempotencyConflict: (): RefusalFields => ({
    message: "This Idempotency-Key was used with other parameters.",
    fix: { param: "Idempotency-Key", note: "Use a new key for a new call; the same key replays only the same call." },
  }),
  /** `402 insufficient_balance`: the quote over the credits available (the balance less what runs hold). */
  insufficientBalance: (quote: number, available: number, urls: ServiceUrls): RefusalFields => ({
    message: `This call costs ${quote} credits and ${available} are available; nothing ran.`,
    quote_credits: quote,
    fix: { action_url: urls.billing, note: "Buy credits and send the same request again." },
  }),
  /** `402 max_cost_exceeded`: the quote over `max_cost_credits`; `more` follows the sentence (a tool's hint). */
  maxCostExceeded: (quote: number, maxCost: number, more = ""): RefusalFields => ({
    message: MESSAGES.maxCostExceeded(quote, maxCost, more),
    quote_credits: quote,
    fix: { param: "max_cost_credits", note: "Send a value at least the quote, or leave it out." },
  }),
  /** `404 not_found`: no schedule of this id in the workspace. */
  noSuchSchedule: (id: string): RefusalFields => ({
    reason: "no_such_schedule",
    message: `The workspace has no schedule ${id.slice(0, 128)}.`,
    fix: { param: "schedule_id", example_call: { method: "GET", path: "/v1/schedules" } },
  }),
  /** `404 not_found`: a tool name that is no tool. */
  noSuchTool: (name: string, tools: readonly string[]): RefusalFields => ({
    reason: "no_such_tool",
    message: `There is no tool ${name.slice(0, 100)}.`,
    fix: { param: "tool", allowed: [...tools], example_call: CAPABILITIES_CALL },
  }),
  /** `404 not_found`: a method and path of no route; `allowed` lists the routes. */
  noSuchRoute: (method: string, path: string, routes: readonly string[]): RefusalFields => ({
    reason: "no_such_route",
    message: `There is no route ${method} ${path.slice(0, 200)}.`,
    fix: { allowed: [...routes], example_call: CAPABILITIES_CALL },
  }),
} as const;

/** `400 invalid_params` of a confirmed `account_watch` with `schedule` in a workspace that holds `cap` schedules. */
export function tooManySchedules(cap: number): InvalidParams {
  const note = "DELETE /v1/schedules/{schedule_id} removes one; GET /v1/schedules lists them.";
  return { param: "schedule", message: `A workspace has at most ${cap} schedules.`, note };
}
