/**
 * The console's Playground forms (packages/console/src/generated/forms.ts): for each POST operation with a JSON
 * body (the data routes and the seven tools), its fields as the contract gives them — name, kind, enum values,
 * bounds, required, default, description. The console builds its forms from this table and checks a request with
 * @sdgw/validators before sending it; nothing here is written by hand.
 *
 * Field kinds: `text`, `integer`, `boolean`, `enum` (one of `options`), `enums` (several of `options`, or `all`
 * when `all` is set), `text_or_integer` (QueryValue), `list` (one value or several, one a line; `single` when one
 * value may be sent alone), and `json` (anything else). An object property whose only property is an enum (the
 * `schedule` of account_watch) becomes one `enum` field named `schedule.every`.
 */
import type { GeneratedFile } from "./generate.ts";
import { BANNER } from "./generate.ts";
import { operations, type OpenApiDoc } from "./spec.ts";
// The form types are the console's own (packages/console/src/form-types.ts); the generated file re-exports them.
import type { FormField, FormOperation } from "../../packages/console/src/form-types.ts";
export type { FormField, FormOperation };

type Schema = Record<string, unknown>;

function resolver(doc: OpenApiDoc) {
  const resolve = (s: unknown): Schema => {
    let cur = s as Schema;
    const merged: Schema = {};
    // A $ref with siblings (description, default) keeps the siblings over the target's.
    while (typeof cur?.["$ref"] === "string") {
      for (const [k, v] of Object.entries(cur)) if (k !== "$ref" && !(k in merged)) merged[k] = v;
      const name = (cur["$ref"] as string).replace("#/components/schemas/", "");
      cur = doc.components.schemas[name] as Schema;
    }
    return { ...cur, ...merged };
  };
  return resolve;
}

const MAX_SAFE = 9007199254740991;

function fieldOf(name: string, raw: unknown, required: boolean, resolve: (s: unknown) => Schema): FormField[] {
  const s = resolve(raw);
  const base: FormField = { name, kind: "json", required };
  if (typeof s["description"] === "string") base.description = s["description"] as string;
  if (s["default"] !== undefined) base.default = s["default"];
  const num = (f: FormField, t: Schema) => {
    if (typeof t["minimum"] === "number") f.min = t["minimum"] as number;
    if (typeof t["maximum"] === "number" && t["maximum"] !== MAX_SAFE) f.max = t["maximum"] as number;
  };
  const str = (f: FormField, t: Schema) => {
    if (typeof t["minLength"] === "number") f.minLength = t["minLength"] as number;
    if (typeof t["maxLength"] === "number") f.maxLength = t["maxLength"] as number;
  };
  const branches = (s["oneOf"] ?? s["anyOf"]) as unknown[] | undefined;
  if (branches) {
    const bs = branches.map(resolve);
    const arr = bs.find((b) => b["type"] === "array");
    const items = arr ? resolve(arr["items"]) : undefined;
    if (arr && items?.["enum"] && bs.some((b) => b["const"] === "all")) {
      return [
        {
          ...base,
          kind: "enums",
          options: items["enum"] as string[],
          all: true,
          ...(typeof arr["maxItems"] === "number" ? { maxItems: arr["maxItems"] as number } : {}),
        },
      ];
    }
    if (arr && items?.["type"] === "string" && bs.some((b) => b["type"] === "string")) {
      const f: FormField = { ...base, kind: "list", single: true };
      if (typeof arr["maxItems"] === "number") f.maxItems = arr["maxItems"] as number;
      str(f, items);
      return [f];
    }
    const text = bs.find((b) => b["type"] === "string");
    const int = bs.find((b) => b["type"] === "integer");
    if (text && int) {
      const f: FormField = { ...base, kind: "text_or_integer" };
      str(f, text);
      return [f];
    }
    return [base];
  }
  if (Array.isArray(s["enum"]) && s["type"] === "string")
    return [{ ...base, kind: "enum", options: s["enum"] as string[] }];
  switch (s["type"]) {
    case "string": {
      const f: FormField = { ...base, kind: "text" };
      str(f, s);
      return [f];
    }
    case "integer": {
      const f: FormField = { ...base, kind: "integer" };
      num(f, s);
      return [f];
    }
    case "boolean":
      return [{ ...base, kind: "boolean" }];
    case "array": {
      const items = resolve(s["items"]);
      if (Array.isArray(items["enum"]))
        return [
          {
            ...base,
            kind: "enums",
            options: items["enum"] as string[],
            ...(typeof s["maxItems"] === "number" ? { maxItems: s["maxItems"] as number } : {}),
          },
        ];
      if (items["type"] === "string") {
        const f: FormField = { ...base, kind: "list" };
        if (typeof s["maxItems"] === "number") f.maxItems = s["maxItems"] as number;
        str(f, items);
        return [f];
      }
      return [base];
    }
    case "object": {
      const props = Object.entries((s["properties"] ?? {}) as Record<string, unknown>);
      if (props.length === 1) {
        const [sub, subSchema] = props[0]!;
        const inner = fieldOf(`${name}.${sub}`, subSchema, false, resolve)[0]!;
        if (inner.kind === "enum")
          return [{ ...inner, required, ...(base.description ? { description: base.description } : {}) }];
      }
      return [base];
    }
  }
  return [base];
}

/** The forms of every POST operation with a JSON body. */
export function formsOf(doc: OpenApiDoc): FormOperation[] {
  const resolve = resolver(doc);
  const out: FormOperation[] = [];
  for (const { method, path, op } of operations(doc)) {
    if (method !== "post" || path.includes("{")) continue;
    const schema = op.requestBody?.content["application/json"]?.schema;
    if (!schema || path === "/v1/find") continue;
    const body = resolve(schema);
    const required = new Set((body["required"] as string[] | undefined) ?? []);
    const fields = Object.entries((body["properties"] ?? {}) as Record<string, unknown>).flatMap(([name, s]) =>
      fieldOf(name, s, required.has(name), resolve),
    );
    out.push({
      operationId: op.operationId,
      method: "POST",
      path,
      summary: op.summary,
      tool: path.startsWith("/v1/tools/"),
      fields,
    });
  }
  return out;
}

export function generateForms(doc: OpenApiDoc): GeneratedFile[] {
  const forms = formsOf(doc);
  const content = `${BANNER}/* eslint-disable */
import type { FormOperation } from "../form-types.ts";
export type { FormField, FormOperation } from "../form-types.ts";

/** The Playground's forms, in the contract's order. */
export const FORMS: FormOperation[] = ${JSON.stringify(forms, null, 2)};
`;
  return [{ path: "packages/console/src/generated/forms.ts", content }];
}
