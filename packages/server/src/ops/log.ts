/**
 * D113: the server's log lines. Each line that concerns a request carries its `request_id` (the contract's id,
 * `req_…`, the one its answer carries): the HTTP layer runs every request of the contract inside
 * {@link withRequestId}, and a line logged anywhere below it (a run that breaks after its 202 included) reads the id
 * from there. Two formats: human text (the default, as before: `[sdgw] message request_id=req_…` and the error) and
 * JSON lines (`SDGW_LOG_FORMAT=json`): one object per line with `time`, `level`, `msg`, `request_id` when there is
 * one, and `err` with `message` and `stack`. Secrets never reach a line: passwords in URLs and API key secrets
 * (`sdgw_` + 32 characters) are masked in every message and error before it is written.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { inspect } from "node:util";

/** How log lines are written: human text (default) or one JSON object per line. */
export type LogFormat = "text" | "json";

/** The formats `SDGW_LOG_FORMAT` takes. */
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json"];

/** Where failures of the server's side are reported (the gateway's `log`). */
export type LogFn = (message: string, error?: unknown) => void;

/** What a line is about, beside its message. */
interface LogContext {
  requestId: string;
}

const context = new AsyncLocalStorage<LogContext>();

/**
 * Runs `fn` as the work of the request `requestId`: every line logged within it, and within what it starts (a run
 * that goes on after its 202), carries that id.
 */
export function withRequestId<T>(requestId: string, fn: () => T): T {
  return context.run({ requestId }, fn);
}

/** The request id of the work running now, if it is a request's. */
export function currentRequestId(): string | undefined {
  return context.getStore()?.requestId;
}

/**
 * Runs `fn` outside any request: a timer or listener it sets up (a renewal loop started by the first call that
 * needed it) does not carry that first request's id into lines that are not about it.
 */
export function outsideRequests<T>(fn: () => T): T {
  return context.exit(fn);
}

/** A URL's password (`scheme://user:password@`), and an API key's secret after its 12-character display prefix. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:@/]*):[^\s@/]*@/gi;
const KEY_SECRET = /\b(sdgw_[A-Za-z0-9]{7})[A-Za-z0-9]{20,}/g;

/** Text as it may be logged: passwords in URLs as `***`, API key secrets cut to their display prefix and `…`. */
export function redact(text: string): string {
  return text.replace(URL_PASSWORD, "$1:***@").replace(KEY_SECRET, "$1…");
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** `text` (default) or `json`. */
  format?: LogFormat;
  /** Where each line goes (default: standard error). */
  write?: (line: string) => void;
  /** The clock of `time` (default `Date.now`). */
  now?: () => number;
}

/**
 * A logger for the gateway's `log`: `createLogger({ format: "json" })("run run_… broke", error)` writes
 * `{"time":"…","level":"error","msg":"run run_… broke","request_id":"req_…","err":{"message":"…","stack":"…"}}`.
 * A line with an error is `error`, one without is `info`.
 */
export function createLogger(options: LoggerOptions = {}): LogFn {
  const format = options.format ?? "text";
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const now = options.now ?? Date.now;
  return (message, error) => {
    const requestId = currentRequestId();
    const hasError = error !== undefined && error !== null && error !== "";
    if (format === "json") {
      const line: Record<string, unknown> = {
        time: new Date(now()).toISOString(),
        level: hasError ? "error" : "info",
        msg: redact(message),
      };
      if (requestId) line["request_id"] = requestId;
      if (hasError) line["err"] = errorFields(error);
      write(JSON.stringify(line));
      return;
    }
    const id = requestId && !message.includes(requestId) ? ` request_id=${requestId}` : "";
    write(redact(`[sdgw] ${message}${id}${hasError ? ` ${inspect(error, { depth: 4 })}` : ""}`));
  };
}

/** An error as a JSON line shows it: its message and stack (redacted), its code, and its cause's message. */
function errorFields(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: redact(typeof error === "string" ? error : inspect(error)) };
  const out: Record<string, unknown> = { message: redact(error.message) };
  if (error.name && error.name !== "Error") out["name"] = error.name;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") out["code"] = code;
  if (error.stack) out["stack"] = redact(error.stack);
  if (error.cause !== undefined)
    out["cause"] = redact(error.cause instanceof Error ? error.cause.message : String(error.cause));
  return out;
}
