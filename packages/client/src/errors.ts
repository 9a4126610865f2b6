import type { ErrorCode, ErrorStructure, HandleAnswer } from "@sdgw/types";

/** The error structure of one code, as the API answers it under a non-200 HTTP status. */
type StructureOf<C extends ErrorCode> = Extract<ErrorStructure, { code: C }>;

/** What every error of the SDK may carry besides its message: the answer's headers, the request id, a cause. */
interface ErrorDetails {
  cause?: unknown;
  /** The HTTP answer's headers, when an answer came. */
  headers?: Headers | undefined;
  requestId?: string | undefined;
  attempts?: number | undefined;
}

/**
 * The base class of every error the SDK throws of its own (but `TypeError`s of bad options, named by parameter):
 * {@link SdgwError} (the API refused), {@link SdgwTransportError} and its {@link SdgwTimeoutError} (no answer),
 * {@link SdgwAbortError} (the caller's signal) and {@link SdgwPollTimeoutError} (a 202 still running).
 * `e instanceof SdgwBaseError` tells them from other errors; each carries `requestId` and, where an HTTP answer
 * came, its `headers`.
 * @category Errors
 */
export class SdgwBaseError extends Error {
  override readonly name: string = "SdgwBaseError";
  /**
   * The request's id, to quote when reporting problems: the answer's `request_id` (or its `X-Request-Id` header),
   * else the `X-Request-Id` the client sent, else the call's Idempotency-Key; undefined for a free call that
   * got no answer and was sent with neither.
   */
  declare readonly requestId: string | undefined;
  /** The headers of the HTTP answer that failed, when one came (never for MCP results). */
  declare readonly headers: Headers | undefined;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details); // `cause`, when given
    this.requestId = details.requestId;
    this.headers = details.headers;
  }
}

/**
 * An error answered by the API under a non-200 HTTP status. It carries every field of the API's error structure
 * (`request_id`, `retryable`, `fix`, and the code's own: `reason`, `retry_after`, `quote_credits`, `resets_at`,
 * `retry_at`) plus the HTTP `status`, the answer's `headers` and `requestId`. Its `message` is the code and the
 * API's words (`insufficient_balance: Not enough credits…`), the words alone are `body.message`. Narrow it by
 * `code` with {@link isSdgwError}.
 * @category Errors
 */
export class SdgwError<C extends ErrorCode = ErrorCode> extends SdgwBaseError {
  override readonly name = "SdgwError";
  /** One of the 19 error codes. */
  declare readonly code: C;
  /** Quote it when reporting problems (the same as `requestId`). */
  declare readonly request_id: string;
  /** Whether the API says a retry can help. */
  declare readonly retryable: boolean;
  /** How to fix it: `param`, `allowed`, `note`, `action_url`, `example_call`. */
  declare readonly fix: StructureOf<ErrorCode>["fix"];
  /** The answer's `request_id`. */
  declare readonly requestId: string;

  /** The HTTP status of the answer (0 when it came inside an MCP tool result). */
  declare readonly status: number;
  /** The API's error structure, as answered; `body.message` is the API's words alone. */
  declare readonly body: StructureOf<C>;

  /**
   * @param status The HTTP status (0 for an MCP tool result).
   * @param body The API's error structure.
   * @param options The answer's headers, and a cause.
   */
  constructor(status: number, body: StructureOf<C>, options: { headers?: Headers | undefined; cause?: unknown } = {}) {
    super(`${body.code}: ${body.message}`, { ...options, requestId: body.request_id });
    // The structure's fields but `message`, which keeps the code (the API's words stay in `body.message`).
    const { message: _words, ...fields } = body as StructureOf<C> & { message?: string };
    Object.assign(this, fields);
    this.status = status;
    this.body = body;
  }
}

/** The error of one code, with that code's own fields typed. @category Errors */
export type SdgwErrorOf<C extends ErrorCode> = SdgwError<C> & Omit<StructureOf<C>, "message">;

/** Every error as a union by code, so that `e.code === "rate_limited"` narrows `e`. @category Errors */
export type AnySdgwError = { [C in ErrorCode]: SdgwErrorOf<C> }[ErrorCode];

/** True when `e` is an error the API answered (optionally: with one of these codes); narrows by `code`. @category Errors */
export function isSdgwError<C extends ErrorCode = ErrorCode>(
  e: unknown,
  ...codes: C[]
): e is SdgwErrorOf<C> & AnySdgwError {
  return e instanceof SdgwError && (codes.length === 0 || codes.includes(e.code as C));
}

/** No answer could be had: the network failed, or the answer was not the API's JSON. Nothing is known to have run. @category Errors */
export class SdgwTransportError extends SdgwBaseError {
  override readonly name: string = "SdgwTransportError";
  /** The HTTP status, when an answer came (its `headers` then too). */
  declare readonly status: number | undefined;
  /** How many attempts were made, the first included. */
  declare readonly attempts: number;

  constructor(message: string, status?: number, options: ErrorDetails = {}) {
    super(message, options);
    this.status = status;
    this.attempts = options.attempts ?? 1;
  }
}

/**
 * The last attempt of a call got no complete answer within `timeout` ms (the client's or the call's). A
 * {@link SdgwTransportError}: it carries `requestId`, `attempts` and, as `cause`, what fetch threw when the
 * attempt's timer aborted it. Attempts that time out are retried like network failures (same Idempotency-Key) up
 * to `maxRetries`; this is thrown when none is left.
 * @category Errors
 */
export class SdgwTimeoutError extends SdgwTransportError {
  override readonly name: string = "SdgwTimeoutError";
  /** The timeout of each attempt, in ms. */
  declare readonly timeoutMs: number;

  constructor(message: string, timeoutMs: number, options?: ErrorDetails) {
    super(message, undefined, options);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The call's `signal` aborted it: during an attempt, a wait before a retry, polling, or a stream of rows. Nothing
 * more is sent. `cause` is the signal's reason (a `DOMException` named `AbortError`, `TimeoutError` for
 * `AbortSignal.timeout(…)`, or what you passed to `abort(reason)`). Its `name` is `"AbortError"`, as fetch's own,
 * so code that ignores aborts by name keeps working.
 * @category Errors
 */
export class SdgwAbortError extends SdgwBaseError {
  override readonly name: string = "AbortError";
}

/**
 * Polling stopped at `maxWaitMs` while the run still goes on. The run is not lost: read it later with
 * `client.results.get(error.handle)` (free, for 24 hours after it ends).
 * @category Errors
 */
export class SdgwPollTimeoutError extends SdgwBaseError {
  override readonly name = "SdgwPollTimeoutError";
  /** The last running answer. */
  declare readonly last: HandleAnswer;
  /** How long polling lasted. */
  declare readonly waitedMs: number;

  constructor(last: HandleAnswer, waitedMs: number, options: { headers?: Headers | undefined } = {}) {
    super(
      `the run ${last.handle} was still running after ${waitedMs} ms; read it later with results.get("${last.handle}")`,
      { requestId: last.request_id, headers: options.headers },
    );
    this.last = last;
    this.waitedMs = waitedMs;
  }
  /** The results handle to read later. */
  get handle(): string {
    return this.last.handle;
  }
}
