/** Test helpers: the spec compiled with ajv (2020-12, formats on), as a server team would validate with it. */
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { loadSpec, responseSchema, schemaDocument, SCHEMA_ID, type OpenApiDoc } from "../../generators/src/spec.ts";

export const spec: OpenApiDoc = loadSpec();

export function makeAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
  addFormats.default(ajv, { mode: "full" });
  ajv.addSchema(schemaDocument(spec));
  return ajv;
}

export const ajv = makeAjv();

const cache = new Map<string, ValidateFunction>();

/** A validator of the component schema `name`. */
export function schemaValidator(name: string): ValidateFunction {
  const key = `schema:${name}`;
  let v = cache.get(key);
  if (!v) {
    v = ajv.compile({ $ref: `${SCHEMA_ID}#/$defs/${name}` });
    cache.set(key, v);
  }
  return v;
}

/** A validator of an operation's answer for one HTTP status and media type. */
export function responseValidator(
  operationId: string,
  status: number,
  mediaType = "application/json",
): ValidateFunction {
  const key = `resp:${operationId}:${status}:${mediaType}`;
  let v = cache.get(key);
  if (!v) {
    v = ajv.compile(responseSchema(spec, operationId, status, mediaType) as object);
    cache.set(key, v);
  }
  return v;
}

/** Readable ajv errors, for assertion messages. */
export function explain(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword}`).join("; ");
}
