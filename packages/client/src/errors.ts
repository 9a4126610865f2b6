import type { ErrorCode, ErrorStructure, HandleAnswer } from "@sdgw/types";

/** The error structure of one code, as the API answers it under a non-200 HTTP status. */
type StructureOf<C extends ErrorCode> = Extract<ErrorStructure, { code: C }>;

/**
 * An error answered by the API under a non-200 HTTP status. It carries every field of the API's error structure
 * (`request_id`, `message`, `retryable`, `fix`, and the code's own: `reason`, `retry_after`, `quote_credits`,
 * `resets_at`, `retry_at`) plus the HTTP `status`. Narrow it by `code` with {@link isSdgwError}.
 * @category Errors
 */
export class SdgwError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = "SdgwError";
  /** One of the 19 error codes. */
  declare readonly code: C;
  /** Quote it when reporting problems. */
  declare readonly request_id: string;
  /** Whether the API says a retry can help. */
  declare readonly retryable: boolean;
  /** How to fix it: `param`, `allowed`, `note`, `action_url`, `example_call`. */
  declare readonly fix: StructureOf<ErrorCode>["fix"];

  /** The HTTP status of the answer (0 when it came inside an MCP tool result). */
  readonly status: number;
  /** The API's error structure, as answered. */
  readonly body: StructureOf<C>;

  constructor(status: number, body: StructureOf<C>) {
    super(`${body.code}: ${body.message}`);
    Object.assign(this, body);
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
export class SdgwTransportError extends Error {
  override readonly name: string = "SdgwTransportError";
  /** The HTTP status, when an answer came. */
  readonly status: number | undefined;
  /**
   * The request's id: the `X-Request-Id` the client sent, else the call's Idempotency-Key (a fresh UUID or yours);
   * undefined for a free call sent with neither. Quote it when reporting problems.
   */
  readonly requestId: string | undefined;
  /** How many attempts were made, the first included. */
  readonly attempts: number;

  constructor(
    message: string,
    status?: number,
    options: { cause?: unknown; requestId?: string; attempts?: number } = {},
  ) {
    super(message, options);
    this.status = status;
    this.requestId = options.requestId;
    this.attempts = options.attempts ?? 1;
  }
}

/**
 * The last attempt of a call got no complete answer within `timeout` ms (the client's or the call's). A
 * {@link SdgwTransportError}: it carries `requestId` and `attempts`. Attempts that time out are retried like
 * network failures (same Idempotency-Key) up to `maxRetries`; this is thrown when none is left.
 * @category Errors
 */
export class SdgwTimeoutError extends SdgwTransportError {
  override readonly name: string = "SdgwTimeoutError";
  /** The timeout of each attempt, in ms. */
  readonly timeoutMs: number;

  constructor(
    message: string,
    timeoutMs: number,
    options?: { cause?: unknown; requestId?: string; attempts?: number },
  ) {
    super(message, undefined, options);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Polling stopped at `maxWaitMs` while the run still goes on. The run is not lost: read it later with
 * `client.results.get(error.handle)` (free, for 24 hours after it ends).
 * @category Errors
 */
export class SdgwPollTimeoutError extends Error {
  override readonly name = "SdgwPollTimeoutError";
  /** The last running answer. */
  readonly last: HandleAnswer;
  /** How long polling lasted. */
  readonly waitedMs: number;

  constructor(last: HandleAnswer, waitedMs: number) {
    super(
      `the run ${last.handle} was still running after ${waitedMs} ms; read it later with results.get("${last.handle}")`,
    );
    this.last = last;
    this.waitedMs = waitedMs;
  }
  /** The results handle to read later. */
  get handle(): string {
    return this.last.handle;
  }
}
