/** Validator wrappers over the precompiled ajv functions: typed results and type guards. */
import type { components, operations } from "@sdgw/types";
import type { RawValidator } from "./generated/standalone.js";
import { explainFailure, type InvalidParams, type RequestPart } from "./invalid-params.ts";
import type { OperationInfo } from "./table-types.ts";

/** One reason a value failed: where (a JSON pointer), what, and which schema keyword refused it. @group Answers */
export interface ValidationError {
  path: string;
  message: string;
  keyword: string;
}

/** The outcome of a validation: the value, typed, or why it failed. @group Answers */
export type Validation<T> = { ok: true; value: T } | { ok: false; errors: ValidationError[] };

/** A validator of one schema: call it for a result, or use `is` as a type guard. @group Answers */
export interface Validator<T> {
  (value: unknown): Validation<T>;
  /** True when the value is valid; narrows its type. */
  is(value: unknown): value is T;
}

/** The seed's `invalid_params` answer (HTTP 400). @group Requests */
export type InvalidParamsAnswer = components["schemas"]["ErrorInvalidParams"];

/** The outcome of validating one part of a request. On failure it also says how the seed answers it. @group Requests */
export type RequestValidation<T> =
  | { ok: true; value: T }
  | {
      ok: false;
      errors: ValidationError[];
      /** The parameter at fault, the seed's wording, and the allowed values where the seed lists them. */
      invalid: InvalidParams;
      /** The whole `invalid_params` answer a server sends for this failure. */
      answer(requestId: string): InvalidParamsAnswer;
    };

/** A validator of one request part of one operation. @group Requests */
export interface RequestValidator<T> {
  (value: unknown): RequestValidation<T>;
  /** True when the value is valid; narrows its type. */
  is(value: unknown): value is T;
}

export function toErrors(raw: RawValidator): ValidationError[] {
  return (raw.errors ?? []).map((e) => ({
    path: e.instancePath || "/",
    message: e.message ?? e.keyword,
    keyword: e.keyword,
  }));
}

/** The type guard of a precompiled validator (the generated `isX`): true when the value is valid. @group Type guards */
export function schemaGuard<T>(raw: RawValidator): (value: unknown) => value is T {
  return (value: unknown): value is T => raw(value);
}

/** Wraps a precompiled validator of one schema. @group Answers */
export function schemaValidator<T>(raw: RawValidator): Validator<T> {
  const validate = ((value: unknown): Validation<T> =>
    raw(value) ? { ok: true, value: value as T } : { ok: false, errors: toErrors(raw) }) as Validator<T>;
  validate.is = (value: unknown): value is T => raw(value);
  return validate;
}

/** Builds the seed's `invalid_params` answer. @group Requests */
export function invalidParamsAnswer(invalid: InvalidParams, requestId: string): InvalidParamsAnswer {
  const fix: InvalidParamsAnswer["fix"] = { param: invalid.param };
  if (invalid.allowed) fix.allowed = [...invalid.allowed];
  if (invalid.note) fix.note = invalid.note;
  return {
    request_id: requestId,
    schema_version: "v1",
    code: "invalid_params",
    message: invalid.message,
    retryable: false,
    fix,
  };
}

/**
 * Wraps a precompiled validator of one request part, adding the seed's `invalid_params` wording on failure. The
 * table and the operation's id come apart (not `OPERATIONS.search`): a bundler keeps a property read at the top
 * level, which would keep every request validator alive in a bundle that imports one schema validator.
 *
 * @group Requests
 */
export function requestValidator<T>(
  table: Readonly<Record<string, OperationInfo>>,
  operationId: string,
  part: RequestPart,
  raw: RawValidator,
): RequestValidator<T> {
  const validate = ((value: unknown): RequestValidation<T> => {
    if (raw(value)) return { ok: true, value: value as T };
    const invalid = explainFailure(table[operationId]!, part, raw.errors ?? [], value);
    return {
      ok: false,
      errors: toErrors(raw),
      invalid,
      answer: (requestId: string) => invalidParamsAnswer(invalid, requestId),
    };
  }) as RequestValidator<T>;
  validate.is = (value: unknown): value is T => raw(value);
  return validate;
}

type Ops = operations;
/** The query parameters of an operation, as JSON (after `parseQuery`). @group Requests */
export type QueryOf<O extends keyof Ops> = Ops[O] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
/** The headers an operation reads (lower-case names). @group Requests */
export type HeadersOf<O extends keyof Ops> = Ops[O] extends { parameters: { header?: infer H } }
  ? { [K in keyof NonNullable<H> as Lowercase<K & string>]: NonNullable<H>[K] }
  : never;
/** The path parameters of an operation. @group Requests */
export type PathOf<O extends keyof Ops> = Ops[O] extends { parameters: { path?: infer P } } ? NonNullable<P> : never;
/** The JSON body of an operation. @group Requests */
export type BodyOf<O extends keyof Ops> = Ops[O] extends { requestBody?: { content: { "application/json": infer B } } }
  ? B
  : never;
/** The JSON answer of an operation under one HTTP status. @group Answers */
export type AnswerOf<O extends keyof Ops, S extends number> = Ops[O] extends { responses: infer R }
  ? S extends keyof R
    ? R[S] extends { content: { "application/json": infer A } }
      ? A
      : never
    : never
  : never;

/** Validates an operation's answers: pick the validator of the HTTP status, refuse an undocumented status. @group Answers */
export interface ResponseValidator<M extends Record<number, Validator<unknown>>> {
  <St extends keyof M & number>(status: St, body: unknown): M[St] extends Validator<infer T> ? Validation<T> : never;
  (status: number, body: unknown): Validation<unknown>;
  /** The HTTP statuses this operation documents a JSON answer for. */
  readonly statuses: readonly number[];
}

export function responseValidator<M extends Record<number, Validator<unknown>>>(
  operationId: string,
  byStatus: M,
): ResponseValidator<M> {
  const validate = ((status: number, body: unknown) => {
    const v = (byStatus as Record<number, Validator<unknown>>)[status];
    if (!v)
      return {
        ok: false,
        errors: [
          { path: "/", keyword: "status", message: `${operationId} documents no JSON answer under HTTP ${status}` },
        ],
      };
    return v(body);
  }) as ResponseValidator<M>;
  Object.defineProperty(validate, "statuses", { value: Object.keys(byStatus).map(Number) });
  return validate;
}
