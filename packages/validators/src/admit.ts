/**
 * One request's checks before any work, in D50's order, as the reference server and the mock make them: the query's
 * text, its parameters, the headers, the path parameters, then the body (UTF-8, JSON, nested at most
 * `MAX_BODY_DEPTH` levels (D112), one object, its text, its parameters). The first failure is the answer: `400 invalid_params` naming the parameter.
 */
import { bodyDepthProblem } from "./depth.ts";
import { requestValidators } from "./generated/bindings.ts";
import { OPERATIONS } from "./generated/table.ts";
import { invalidBody, type InvalidParams } from "./invalid-params.ts";
import { parseQuery } from "./query.ts";
import { bodyTextProblem, queryTextProblem } from "./text.ts";

/** An operation of the contract, by its `operationId`. */
type OperationId = keyof typeof OPERATIONS;

/** A request as it arrived, before any check. @group Requests */
export interface ArrivedRequest {
  /** The URL's query after `?`, as sent (percent-encoded). */
  rawQuery: string;
  /** The headers, lower-case names (`normalizeHeaders`). */
  headers: Record<string, string>;
  /** The path parameters, decoded; checked when given. */
  path?: Record<string, string>;
  /**
   * The body, for an operation that takes one: its `Content-Type` and its text, `null` when its bytes are not UTF-8.
   * Anything but `application/json` is not one JSON object.
   */
  body?: { contentType: string | undefined; text: string | null };
}

/** A request that passed its checks, its parts as the validators accepted them; or the first failure. @group Requests */
export type Admission =
  | { ok: true; query: Record<string, unknown>; headers: Record<string, string>; body: Record<string, unknown> }
  | { ok: false; invalid: InvalidParams };

/** The answer of bytes that are not UTF-8: refused, never replaced (D56). */
const NOT_UTF8: InvalidParams = {
  param: "body",
  message: "The body is not UTF-8 text.",
  note: "Send one JSON object encoded as UTF-8.",
};

type PartValidator = (value: unknown) => { ok: true } | { ok: false; invalid: InvalidParams };

/**
 * The first thing wrong with `body` as the JSON body of `operationId` (its generated validator), or null when it is
 * valid or the operation takes no body. Pure.
 * @group Requests
 */
export function bodyProblem(operationId: OperationId, body: unknown): InvalidParams | null {
  const v = (requestValidators[operationId] as unknown as Record<string, PartValidator | undefined>)["body"]?.(body);
  return v && !v.ok ? v.invalid : null;
}

/**
 * Checks a request of `operationId` in D50's order and answers the parts as the validators accepted them, or the
 * first thing wrong (`invalidParamsAnswer(result.invalid, requestId)` is its answer). Pure.
 *
 * @example
 * ```ts
 * const r = admitRequest("search", { rawQuery: "platform=x&query=coffee", headers: {} });
 * if (!r.ok) console.log(r.invalid.param);
 * ```
 * @group Requests
 */
export function admitRequest(operationId: OperationId, request: ArrivedRequest): Admission {
  const validators = requestValidators[operationId] as unknown as Record<string, PartValidator | undefined>;
  const failed = (part: string, value: unknown): InvalidParams | null => {
    const v = validators[part]?.(value);
    return v && !v.ok ? v.invalid : null;
  };
  const notText = queryTextProblem(request.rawQuery);
  if (notText) return { ok: false, invalid: notText };
  const query = parseQuery(OPERATIONS[operationId], request.rawQuery);
  const early = failed("query", query) ?? failed("headers", request.headers);
  if (early) return { ok: false, invalid: early };
  const onPath = request.path ? failed("path", request.path) : null;
  if (onPath) return { ok: false, invalid: onPath };
  if (!request.body || !validators["body"]) return { ok: true, query, headers: request.headers, body: {} };
  const { contentType, text } = request.body;
  if (text === null) return { ok: false, invalid: NOT_UTF8 };
  if ((contentType ?? "").split(";")[0]!.trim().toLowerCase() !== "application/json")
    return { ok: false, invalid: invalidBody() };
  // D112: before anything that recurses over the parsed body (its text checks, its validator, a fingerprint).
  const tooDeep = bodyDepthProblem(text);
  if (tooDeep) return { ok: false, invalid: tooDeep };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, invalid: invalidBody() };
  }
  const invalid = bodyTextProblem(body) ?? failed("body", body);
  if (invalid) return { ok: false, invalid };
  return { ok: true, query, headers: request.headers, body: body as Record<string, unknown> };
}
