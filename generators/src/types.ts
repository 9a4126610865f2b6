/**
 * The generator of `@sdgw/types`: from the parsed spec it writes
 *
 * - `packages/types/src/generated/openapi.ts`: `paths`, `components` and `operations` by openapi-typescript, and
 * - `packages/types/src/generated/catalogue.ts`: the runtime constants (platforms, error codes and the
 *   `x-error-catalogue`, tool names, answer statuses, item kinds).
 *
 * The hand-written `packages/types/src/index.ts` names the types users need on top of these two files.
 * Output is deterministic: no timestamps, no absolute paths, order as in the spec.
 */
import openapiTS, { astToString, NEVER, oapiRef, QUESTION_TOKEN, UNKNOWN } from "openapi-typescript";
import type { OpenAPI3, OpenAPITSOptions, TransformNodeOptions } from "openapi-typescript";
import ts from "typescript";
// A value import from generate.ts closes an import cycle (generate.ts imports this file). It is safe: BANNER is
// read only inside generateTypes, which runs after both modules have been evaluated, and generateTypes is a
// function declaration, so generate.ts can list it before this module's body has run.
import { BANNER, type GeneratedFile } from "./generate.ts";
import type { OpenApiDoc } from "./spec.ts";

export const TYPES_DIR = "packages/types/src/generated";

const SCHEMA_PREFIX = "#/components/schemas/";

type Schema = Record<string, unknown>;

function isObject(v: unknown): v is Schema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function schemaAt(doc: OpenApiDoc, name: string): Schema {
  const s = doc.components.schemas[name];
  if (!isObject(s)) throw new Error(`spec: components.schemas.${name} is missing`);
  return s;
}

/** The `enum` of a string schema, checked to be non-empty strings. */
function stringEnum(doc: OpenApiDoc, name: string): string[] {
  const values = schemaAt(doc, name)["enum"];
  if (!Array.isArray(values) || values.length === 0 || !values.every((v) => typeof v === "string" && v.length > 0)) {
    throw new Error(`spec: components.schemas.${name} must be a string enum`);
  }
  return values as string[];
}

function refName(ref: unknown, where: string): string {
  if (typeof ref !== "string" || !ref.startsWith(SCHEMA_PREFIX))
    throw new Error(`spec: ${where} must be a $ref to a component schema`);
  return ref.slice(SCHEMA_PREFIX.length);
}

// ------------------------------------------------------------------------------------------------ openapi.ts

/**
 * `oneOf: [{ required: [a] }, { required: [b] }]` on an object ("exactly one of a, b": SearchRequest,
 * DetailRequest, …). openapi-typescript renders each branch as `unknown`, giving `{…} & (unknown | unknown)`,
 * which accepts both or neither. This returns the branches' required keys when the schema has that shape.
 */
function exactlyOneOfKeys(schema: Schema): string[][] | undefined {
  const { oneOf } = schema;
  if (schema["type"] !== "object" || !isObject(schema["properties"]) || !Array.isArray(oneOf) || oneOf.length < 2)
    return undefined;
  const branches: string[][] = [];
  for (const b of oneOf) {
    if (!isObject(b) || Object.keys(b).some((k) => k !== "required")) return undefined;
    if (!Array.isArray(b["required"]) || !b["required"].every((k) => typeof k === "string")) return undefined;
    branches.push(b["required"] as string[]);
  }
  return branches;
}

/**
 * `dependentSchemas: { a: { not: { required: [c] } } }` ("no c together with a": no `cursor` with `platforms`,
 * D19): the keys each key forbids. Other kinds of dependent schema are left to the validators.
 */
function forbiddenWith(schema: Schema): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (!isObject(schema["dependentSchemas"])) return out;
  for (const [key, dep] of Object.entries(schema["dependentSchemas"])) {
    if (!isObject(dep) || Object.keys(dep).length !== 1 || !isObject(dep["not"])) continue;
    const { required } = dep["not"];
    if (Array.isArray(required) && required.every((k) => typeof k === "string")) out.set(key, required as string[]);
  }
  return out;
}

const propertyNode = (name: string, optional: boolean, type: ts.TypeNode): ts.PropertySignature =>
  ts.factory.createPropertySignature(
    undefined,
    /^[A-Za-z_$][\w$]*$/.test(name) ? name : ts.factory.createStringLiteral(name),
    optional ? QUESTION_TOKEN : undefined,
    type,
  );

/**
 * `{…} & (unknown | unknown)` becomes `{…} & ({ a: unknown; b?: never } | { b: unknown; a?: never; c?: never })`:
 * intersected with the object, each branch makes its key required and the other keys (and the keys that key
 * forbids) absent, so `{ platform, platforms }`, `{}` and `{ platforms, cursor }` are type errors, as in the spec.
 */
function exactlyOneOfType(
  name: string,
  type: ts.TypeNode,
  branches: string[][],
  forbidden: Map<string, string[]>,
): ts.TypeNode {
  if (!ts.isIntersectionTypeNode(type) || type.types.length !== 2 || !ts.isTypeLiteralNode(type.types[0]!)) {
    throw new Error(
      `openapi-typescript rendered ${name} in an unexpected shape; update exactlyOneOfType in generators/src/types.ts`,
    );
  }
  const all = [...new Set(branches.flat())];
  const members = branches.map((required) => {
    const absent = [...all.filter((k) => !required.includes(k)), ...required.flatMap((k) => forbidden.get(k) ?? [])];
    return ts.factory.createTypeLiteralNode([
      ...required.map((k) => propertyNode(k, false, UNKNOWN)),
      ...[...new Set(absent)].filter((k) => !required.includes(k)).map((k) => propertyNode(k, true, NEVER)),
    ]);
  });
  return ts.factory.createIntersectionTypeNode([
    type.types[0]!,
    ts.factory.createParenthesizedType(ts.factory.createUnionTypeNode(members)),
  ]);
}

/**
 * An object whose keys are a string enum (`propertyNames: { $ref: Platform }`, FanoutMap) and whose values are one
 * schema: openapi-typescript drops `propertyNames` and renders `{ [key: string]: V }`. This renders
 * `{ [K in Platform]?: V }`, so `fanout.reddit` is typed and `fanout.twitter` is an error.
 */
function enumKeyedMapType(doc: OpenApiDoc, name: string, schema: Schema): ts.TypeNode | undefined {
  const { propertyNames, additionalProperties } = schema;
  if (!isObject(propertyNames) || typeof propertyNames["$ref"] !== "string" || !isObject(additionalProperties))
    return undefined;
  if (schema["properties"] !== undefined || schema["patternProperties"] !== undefined) {
    throw new Error(
      `spec: ${name} mixes propertyNames with properties; update enumKeyedMapType in generators/src/types.ts`,
    );
  }
  stringEnum(doc, refName(propertyNames["$ref"], `${name}.propertyNames`));
  const value = oapiRef(SCHEMA_PREFIX + refName(additionalProperties["$ref"], `${name}.additionalProperties`));
  return ts.factory.createMappedTypeNode(
    undefined,
    ts.factory.createTypeParameterDeclaration(undefined, "K", oapiRef(propertyNames["$ref"])),
    undefined,
    QUESTION_TOKEN,
    value,
    undefined,
  );
}

/**
 * Options of openapi-typescript, each chosen on purpose:
 *
 * - `exportType: true`: `export type paths = {…}` rather than `interface`. The contract is closed: a type alias
 *   cannot be widened by declaration merging somewhere in a consumer.
 * - `enum: false`, `enumValues: false`, `makePathsEnum: false`: enums stay string-literal unions. A TS `enum` is
 *   runtime code that Node's type stripping rejects (`erasableSyntaxOnly` is on); the runtime lists live in
 *   catalogue.ts, as plain `as const` arrays.
 * - `immutable: false`: answers are plain JSON objects that the SDK, the mock and the server build and change; a
 *   `readonly` on every member would make `Item[]` and friends awkward to produce, and buys nothing at runtime.
 * - `alphabetize: false`: members keep the spec's order (status before items, error last, oneOf branches in spec
 *   order), which is the order a reader of the spec expects; the output is deterministic either way.
 * - `defaultNonNullable: false`: a property with a `default` stays optional. With the default (`true`) a request
 *   body member such as `BrandBuzzRequest.scale` or `AccountWatchRequest.range` would become required, which is
 *   wrong for the caller: the server applies the default.
 * - `arrayLength: false`: `minItems`/`maxItems` do not become tuples. `items` of an `ok` envelope stays `Item[]`
 *   (a tuple type would make every array operation awkward), and 1..20-element lists would explode into unions.
 * - `emptyObjectsUnknown: true`: `type: object` with no members (OpenApiDocument.paths) means "any object", so it
 *   is `Record<string, unknown>`, not the default `Record<string, never>`.
 * - `additionalProperties: false` (the default): objects are as closed as the spec says; open ones say so.
 * - `rootTypes: false`: no `SchemaFoo` alias per schema; index.ts names the types users need, with docs.
 * - `excludeDeprecated: false`, `pathParamsAsTypes: false`, `propertiesRequiredByDefault: false`: defaults.
 * - `silent: true`: no console output from the generator.
 *
 * Two schema shapes are rendered more precisely than openapi-typescript does by itself, through `postTransform`:
 * "exactly one of" request bodies (exactlyOneOfType) and objects keyed by an enum (enumKeyedMapType).
 */
function openapiOptions(doc: OpenApiDoc): OpenAPITSOptions {
  return {
    exportType: true,
    enum: false,
    enumValues: false,
    makePathsEnum: false,
    immutable: false,
    alphabetize: false,
    defaultNonNullable: false,
    arrayLength: false,
    emptyObjectsUnknown: true,
    additionalProperties: false,
    rootTypes: false,
    excludeDeprecated: false,
    pathParamsAsTypes: false,
    propertiesRequiredByDefault: false,
    silent: true,
    postTransform(type: ts.TypeNode, options: TransformNodeOptions) {
      const path = options.path ?? "";
      if (!path.startsWith(SCHEMA_PREFIX)) return undefined;
      const name = path.slice(SCHEMA_PREFIX.length);
      if (name.includes("/")) return undefined;
      const schema = doc.components.schemas[name];
      if (!isObject(schema)) return undefined;
      const branches = exactlyOneOfKeys(schema);
      if (branches) return exactlyOneOfType(name, type, branches, forbiddenWith(schema));
      return enumKeyedMapType(doc, name, schema);
    },
  };
}

/** TSDoc for the three root types openapi-typescript writes without one (the typedoc build requires it). */
const ROOT_DOCS: Array<[RegExp, string]> = [
  [
    /^export type paths = /m,
    "/** Every path of the contract: its operations, parameters, request bodies and answers by HTTP status. */",
  ],
  [
    /^export type components = /m,
    "/** The contract's reusable parts: `schemas`, `responses`, `parameters`, `headers`, `securitySchemes`. */",
  ],
  [
    /^export interface operations /m,
    "/** Every operation of the contract by operationId: parameters, request body and answers by HTTP status. */",
  ],
];

function documentRoots(code: string): string {
  for (const [at, doc] of ROOT_DOCS) {
    if (!at.test(code)) throw new Error(`openapi-typescript output has no ${at.source}: update ROOT_DOCS`);
    code = code.replace(at, (m) => `${doc}\n${m}`);
  }
  return code;
}

async function openapiFile(doc: OpenApiDoc): Promise<string> {
  // openapi-typescript (through redocly) may annotate the document it is given; the validators generator reads
  // the same object at the same time, so it gets a copy.
  const copy = structuredClone(doc) as unknown as OpenAPI3;
  const ast = await openapiTS(copy, openapiOptions(doc));
  const body = documentRoots(astToString(ast));
  return (
    BANNER +
    "// Types of every path, operation and component schema of the contract, by openapi-typescript (options and\n" +
    "// their reasons: generators/src/types.ts). Import the named types from `@sdgw/types`, not from this file.\n\n" +
    body
  );
}

// ------------------------------------------------------------------------------------------------ catalogue.ts

/** The `kind` of each branch of `Item`, in the spec's order. */
function itemKinds(doc: OpenApiDoc): string[] {
  const oneOf = schemaAt(doc, "Item")["oneOf"];
  if (!Array.isArray(oneOf) || oneOf.length === 0) throw new Error("spec: components.schemas.Item must be a oneOf");
  return oneOf.map((branch, i) => {
    const name = refName(isObject(branch) ? branch["$ref"] : undefined, `Item.oneOf[${i}]`);
    const props = schemaAt(doc, name)["properties"];
    const kind = isObject(props) && isObject(props["kind"]) ? props["kind"]["const"] : undefined;
    if (typeof kind !== "string") throw new Error(`spec: ${name}.properties.kind must have a string const`);
    return kind;
  });
}

const lit = (v: string): string => JSON.stringify(v);
const list = (values: readonly string[]): string => `[${values.map(lit).join(", ")}]`;

function catalogueRows(doc: OpenApiDoc, codes: string[]): string[] {
  const catalogue = doc["x-error-catalogue"];
  if (!isObject(catalogue)) throw new Error("spec: the root x-error-catalogue is missing");
  const keys = Object.keys(catalogue);
  const missing = codes.filter((c) => !keys.includes(c));
  const extra = keys.filter((k) => !codes.includes(k));
  if (missing.length || extra.length) {
    throw new Error(
      `spec: x-error-catalogue and ErrorCode differ (missing: ${missing.join(", ") || "none"}; extra: ${extra.join(", ") || "none"})`,
    );
  }
  // In ErrorCode's order, so that ERROR_CODES and ERROR_CATALOGUE read alike.
  return codes.map((code) => {
    const row: unknown = catalogue[code];
    if (!isObject(row)) throw new Error(`spec: x-error-catalogue.${code} must be an object`);
    const { http, retry, envelope, meaning } = row;
    if (!Array.isArray(http) || http.length === 0 || !http.every((s) => Number.isInteger(s) && s >= 200 && s <= 599)) {
      throw new Error(`spec: x-error-catalogue.${code}.http must be a list of HTTP statuses`);
    }
    if (retry !== true && retry !== false && retry !== "depends")
      throw new Error(`spec: x-error-catalogue.${code}.retry must be true, false or "depends"`);
    if (envelope !== "all" && envelope !== "data" && envelope !== "none")
      throw new Error(`spec: x-error-catalogue.${code}.envelope must be all, data or none`);
    if (typeof meaning !== "string" || meaning.length === 0)
      throw new Error(`spec: x-error-catalogue.${code}.meaning must be a non-empty string`);
    const retryText = typeof retry === "string" ? lit(retry) : String(retry);
    return `  ${code}: { http: [${(http as number[]).join(", ")}], retry: ${retryText}, envelope: ${lit(envelope)}, meaning: ${lit(meaning)} },`;
  });
}

function catalogueFile(doc: OpenApiDoc): string {
  const platforms = stringEnum(doc, "Platform");
  const codes = stringEnum(doc, "ErrorCode");
  const tools = stringEnum(doc, "ToolName");
  const statuses = stringEnum(doc, "AnswerStatus");
  const kinds = itemKinds(doc);
  return `${BANNER}// Runtime constants of the contract. Each list is checked against the spec's own type (a value outside it does not
// compile); packages/types/test checks that the lists are complete.
import type { components } from "./openapi.ts";

type Schemas = components["schemas"];

/** One row of the spec's error table (\`x-error-catalogue\`). */
export interface ErrorCatalogueRow {
  /** HTTP statuses the code is answered with; 200 means inside an HTTP 200 answer (an envelope's \`error\`). */
  readonly http: readonly number[];
  /** Whether a retry can help; \`"depends"\`: the error's own \`retryable\` says. */
  readonly retry: boolean | "depends";
  /** Where the code can stand inside an envelope's \`error\`: every data answer, data routes other than GET /v1/search and tools, or never. */
  readonly envelope: "all" | "data" | "none";
  /** What the code means, in one sentence. */
  readonly meaning: string;
}

/** The ten platforms, in the spec's order. */
export const PLATFORMS = ${list(platforms)} as const satisfies readonly Schemas["Platform"][];

/** The ${codes.length} error codes, in the spec's order. None is charged. */
export const ERROR_CODES = ${list(codes)} as const satisfies readonly Schemas["ErrorCode"][];

/** The spec's error table: for each code its HTTP statuses, whether a retry helps, where it stands in envelopes, and its meaning. */
export const ERROR_CATALOGUE = {
${catalogueRows(doc, codes).join("\n")}
} as const satisfies { readonly [C in Schemas["ErrorCode"]]: ErrorCatalogueRow };

/** The seven tools of \`POST /v1/tools/{tool}\`. */
export const TOOL_NAMES = ${list(tools)} as const satisfies readonly Schemas["ToolName"][];

/** Statuses of a finished answer. */
export const ANSWER_STATUSES = ${list(statuses)} as const satisfies readonly Schemas["AnswerStatus"][];

/** The \`kind\` of each item shape, in the order of the spec's \`Item\`. */
export const ITEM_KINDS = ${list(kinds)} as const satisfies readonly Schemas["Item"]["kind"][];
`;
}

/** Every file of `@sdgw/types` that the spec gives. */
export async function generateTypes(doc: OpenApiDoc): Promise<GeneratedFile[]> {
  return [
    { path: `${TYPES_DIR}/catalogue.ts`, content: catalogueFile(doc) },
    { path: `${TYPES_DIR}/openapi.ts`, content: await openapiFile(doc) },
  ];
}
