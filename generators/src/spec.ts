/**
 * Loads `spec/openapi.yaml` and turns its component schemas into one JSON Schema 2020-12 document that ajv
 * (and any other 2020-12 validator) can compile. Shared by the tests of the contract and by the generators.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

export const SPEC_PATH = fileURLToPath(new URL("../../spec/openapi.yaml", import.meta.url));

/** The `$id` of the schema document built from the spec's components. */
export const SCHEMA_ID = "https://sdgw.dev/schemas/v1.json";

export interface OpenApiDoc {
  openapi: string;
  info: { version: string; [k: string]: unknown };
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, unknown>;
    responses: Record<string, ResponseObject>;
    parameters: Record<string, Parameter>;
    headers: Record<string, unknown>;
    securitySchemes: Record<string, unknown>;
  };
  "x-error-catalogue": Record<string, CatalogueRow>;
  [k: string]: unknown;
}

export interface CatalogueRow {
  http: number[];
  retry: boolean | "depends";
  envelope: "all" | "data" | "none";
  meaning: string;
}

export interface Parameter {
  name: string;
  in: "query" | "header" | "path";
  required?: boolean;
  schema: unknown;
  description?: string;
  $ref?: string;
}

export interface MediaType {
  schema?: unknown;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}

export interface ResponseObject {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, MediaType>;
  $ref?: string;
}

export interface Operation {
  operationId: string;
  summary: string;
  description: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, MediaType> };
  responses: Record<string, ResponseObject>;
  security?: unknown[];
  [k: string]: unknown;
}

export const HTTP_METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** Reads and parses the spec (a fresh copy each call, so callers may mutate it). */
export function loadSpec(path: string = SPEC_PATH): OpenApiDoc {
  return parse(readFileSync(path, "utf8")) as OpenApiDoc;
}

/** Every operation of the spec with its method and path. */
export function operations(doc: OpenApiDoc): Array<{ method: string; path: string; op: Operation }> {
  const out: Array<{ method: string; path: string; op: Operation }> = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (op) out.push({ method, path, op });
    }
  }
  return out;
}

/** Follows a local `$ref` (`#/components/...`) inside the spec. */
export function deref<T>(doc: OpenApiDoc, node: T): T {
  let cur: unknown = node;
  while (cur && typeof cur === "object" && "$ref" in cur && typeof (cur as { $ref: unknown }).$ref === "string") {
    const ref = (cur as { $ref: string }).$ref;
    if (!ref.startsWith("#/")) throw new Error(`only local $refs are supported, got ${ref}`);
    cur = ref
      .slice(2)
      .split("/")
      .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], doc);
    if (cur === undefined) throw new Error(`dangling $ref ${ref}`);
  }
  return cur as T;
}

const REF_PREFIX = "#/components/schemas/";

/** Rewrites `#/components/schemas/X` to `#/$defs/X` and drops OpenAPI-only annotations. */
function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "example" || k.startsWith("x-")) continue;
    if (k === "$ref" && typeof v === "string" && v.startsWith(REF_PREFIX)) {
      out[k] = `#/$defs/${v.slice(REF_PREFIX.length)}`;
    } else {
      out[k] = toJsonSchema(v);
    }
  }
  return out;
}

/**
 * One JSON Schema 2020-12 document holding every component schema under `$defs`.
 * Refer to a schema as `${SCHEMA_ID}#/$defs/<Name>`.
 */
export function schemaDocument(doc: OpenApiDoc): { $id: string; $schema: string; $defs: Record<string, unknown> } {
  return {
    $id: SCHEMA_ID,
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $defs: toJsonSchema(doc.components.schemas) as Record<string, unknown>,
  };
}

/** Converts an inline schema of the spec (from a parameter or a response) to JSON Schema. */
export function inlineSchema(schema: unknown): unknown {
  return absolutize(toJsonSchema(schema));
}

function absolutize(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(absolutize);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = k === "$ref" && typeof v === "string" && v.startsWith("#/$defs/") ? SCHEMA_ID + v : absolutize(v);
  }
  return out;
}

/** The operation with this operationId, or an error naming it. */
export function operationById(doc: OpenApiDoc, operationId: string): { method: string; path: string; op: Operation } {
  const found = operations(doc).find((o) => o.op.operationId === operationId);
  if (!found) throw new Error(`no operation ${operationId} in the spec`);
  return found;
}

/** The schema of an operation's answer for one HTTP status and media type (JSON Schema, refs absolute). */
export function responseSchema(
  doc: OpenApiDoc,
  operationId: string,
  status: number,
  mediaType = "application/json",
): unknown {
  const { op } = operationById(doc, operationId);
  const resp = op.responses[String(status)];
  if (!resp) throw new Error(`${operationId} documents no ${status} answer`);
  const media = deref(doc, resp).content?.[mediaType];
  if (!media?.schema) throw new Error(`${operationId} ${status} has no ${mediaType} schema`);
  return inlineSchema(media.schema);
}
