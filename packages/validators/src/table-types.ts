/** Shapes of the generated operation table (src/generated/table.ts). */

/** One parameter of an operation, as the spec defines it. @group Parsing */
export interface ParamInfo {
  /** How a query-string value is turned into JSON before validation. */
  readonly coerce: "string" | "integer" | "number" | "boolean" | "list";
  readonly required: boolean;
  /** Allowed values, when the seed lists them (an enum, or the enum of a list's items). */
  readonly allowed?: readonly string[];
  /** For a list parameter: single words that stand for a whole list (`all`), not split on commas. */
  readonly words?: readonly string[];
  /** The constraint in the seed's words, e.g. "a whole number from 1 to 20". */
  readonly wording: string;
}

/** One operation of the spec: its route, its request parts and the HTTP statuses of its JSON answers. @group Parsing */
export interface OperationInfo {
  readonly operationId: string;
  readonly method: string;
  readonly path: string;
  /** True for the routes that need no key (capabilities, find, openapi.json). */
  readonly keyless: boolean;
  readonly query: Readonly<Record<string, ParamInfo>>;
  readonly headers: Readonly<Record<string, ParamInfo>>;
  readonly pathParams: Readonly<Record<string, ParamInfo>>;
  readonly body: { readonly required: boolean; readonly params: Readonly<Record<string, ParamInfo>> } | null;
  readonly responses: readonly number[];
}
