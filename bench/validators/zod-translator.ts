/**
 * A mechanical JSON Schema 2020-12 → zod 4 translator for the keywords the contract uses. Written because zod's own
 * `z.fromJSONSchema` (zod 4.6) refuses `not` and `if`/`then`/`else`, which 7 of the 13 answer schemas need.
 *
 * - `type: object` → `z.strictObject` (additionalProperties false), `z.looseObject` (absent or true), or
 *   `z.object(shape).catchall(x)` (a schema); `propertyNames`, `minProperties`, `maxProperties` and required names
 *   missing from `properties` become refinements.
 * - `oneOf` with the `discriminator` the generator injects → `z.discriminatedUnion`; `oneOf` of a schema and
 *   `{type: null}` → `.nullable()`; any other `oneOf` → `z.xor` (exactly one); `anyOf` → `z.union`.
 * - `const` → `z.literal`, `enum` → `z.enum` (strings) or a union of literals; `integer` → `z.int()` with bounds;
 *   strings: min/max length, `pattern` (with the `u` flag, as ajv), `format: date-time` →
 *   `z.iso.datetime({ offset: true })`, `format: uri` → `z.url()`; arrays: min/max items, `uniqueItems`, `contains`.
 * - `allOf`, `not` and `if`/`then`/`else` become refinements over the other translated schemas (zod has no
 *   native form); keywords of a kind without `type` (`{ required, properties }`) apply only to values of that kind,
 *   as JSON Schema says.
 * - Annotations (`description`, `default`, `discriminator`, `$id`, `$schema`) are ignored: ajv applies no
 *   defaults either.
 *
 * Known differences from ajv: zod counts string length in UTF-16 code units (ajv: code points); `z.url()` is
 * WHATWG URL parsing (ajv-formats: the RFC 3986 grammar). Neither changes the verdict on the workloads.
 */
import { z } from "zod";

type Schema = Record<string, unknown>;
type Zod = z.ZodType;

const ANNOTATIONS = new Set([
  "description",
  "default",
  "discriminator",
  "$id",
  "$schema",
  "$comment",
  "title",
  "examples",
  "$defs",
  "readOnly",
  "writeOnly",
]);
const OBJECT_KEYS = [
  "properties",
  "required",
  "additionalProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
];
const ARRAY_KEYS = ["items", "minItems", "maxItems", "uniqueItems", "contains"];
const STRING_KEYS = ["minLength", "maxLength", "pattern", "format"];
const NUMBER_KEYS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];
type Kind = "object" | "array" | "string" | "number" | "integer" | "boolean" | "null";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isKind: Record<"object" | "array" | "string" | "number", (v: unknown) => boolean> = {
  object: isObject,
  array: Array.isArray,
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number",
};

/** Adds one refinement: `ok(value)` must hold, else one custom issue with `message`. */
function refine<T extends Zod>(base: T, ok: (v: unknown) => boolean, message: string): T {
  return base.superRefine((v, ctx) => {
    if (!ok(v)) ctx.addIssue({ code: "custom", message });
  }) as unknown as T;
}

/** An injective text of a JSON value, for `uniqueItems`. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(",")}}`;
  return JSON.stringify(v);
}

/** Translates every `$defs` entry of a schema document on demand (memoized; cycles through `z.lazy`). */
export class ZodTranslator {
  private readonly defs: Record<string, Schema>;
  private readonly done = new Map<string, Zod>();
  private readonly busy = new Set<string>();

  constructor(doc: { $defs: Record<string, unknown> }) {
    this.defs = doc.$defs as Record<string, Schema>;
  }

  /** The zod schema of `$defs/<name>`. */
  named(name: string): Zod {
    const hit = this.done.get(name);
    if (hit) return hit;
    if (this.busy.has(name)) return z.lazy(() => this.done.get(name)!);
    const def = this.defs[name];
    if (def === undefined) throw new Error(`no schema ${name} in $defs`);
    this.busy.add(name);
    const out = this.schema(def);
    this.busy.delete(name);
    this.done.set(name, out);
    return out;
  }

  /** Translates one schema. */
  schema(node: unknown): Zod {
    if (node === true) return z.unknown();
    if (node === false) return z.never();
    const s = node as Schema;
    const parts: Zod[] = [];
    const ref = s["$ref"];
    if (typeof ref === "string") {
      if (!ref.startsWith("#/$defs/")) throw new Error(`unsupported $ref ${ref}`);
      parts.push(this.named(ref.slice(8)));
    }
    const typed = this.typed(s);
    if (typed) parts.push(typed);
    if (Array.isArray(s["oneOf"]))
      parts.push(this.oneOf(s["oneOf"] as Schema[], s["discriminator"] as { propertyName: string } | undefined));
    if (Array.isArray(s["anyOf"])) {
      const opts = (s["anyOf"] as Schema[]).map((b) => this.schema(b));
      parts.push(opts.length === 1 ? opts[0]! : z.union(opts as [Zod, Zod, ...Zod[]]));
    }
    const checks: Array<[(v: unknown) => boolean, string]> = [];
    if (Array.isArray(s["allOf"])) {
      for (const sub of (s["allOf"] as Schema[]).map((b) => this.schema(b))) parts.push(sub);
    }
    if (s["not"] !== undefined) {
      const inner = this.schema(s["not"]);
      checks.push([(v) => !inner.safeParse(v).success, "must not match the `not` schema"]);
    }
    if (s["if"] !== undefined) {
      const cond = this.schema(s["if"]);
      const then = s["then"] === undefined ? undefined : this.schema(s["then"]);
      const otherwise = s["else"] === undefined ? undefined : this.schema(s["else"]);
      checks.push([
        (v) =>
          cond.safeParse(v).success ? (then?.safeParse(v).success ?? true) : (otherwise?.safeParse(v).success ?? true),
        "if/then/else failed",
      ]);
    }
    for (const key of Object.keys(s)) {
      const known =
        ANNOTATIONS.has(key) ||
        OBJECT_KEYS.includes(key) ||
        ARRAY_KEYS.includes(key) ||
        STRING_KEYS.includes(key) ||
        NUMBER_KEYS.includes(key);
      if (
        !known &&
        !["$ref", "type", "const", "enum", "oneOf", "anyOf", "allOf", "not", "if", "then", "else"].includes(key)
      ) {
        throw new Error(`unsupported keyword ${key}`);
      }
    }
    // The first part keeps its zod class (an object stays an object, so it can be a discriminatedUnion option);
    // the others are checked on the value as refinements.
    let base: Zod = parts[0] ?? z.unknown();
    for (const other of parts.slice(1))
      checks.unshift([(v) => other.safeParse(v).success, "allOf / sibling schema failed"]);
    for (const [ok, message] of checks) base = refine(base, ok, message);
    return base;
  }

  private oneOf(branches: Schema[], discriminator: { propertyName: string } | undefined): Zod {
    const opts = branches.map((b) => this.schema(b));
    if (discriminator) {
      return z.discriminatedUnion(discriminator.propertyName, opts as unknown as [z.ZodObject, ...z.ZodObject[]]);
    }
    const nullAt = branches.findIndex((b) => b["type"] === "null" && Object.keys(b).length === 1);
    if (branches.length === 2 && nullAt !== -1) return opts[1 - nullAt]!.nullable();
    return z.xor(opts as [Zod, Zod, ...Zod[]]);
  }

  /** The `type`, `const`, `enum` and kind-specific keywords of one schema, or undefined when there are none. */
  private typed(s: Schema): Zod | undefined {
    if (s["const"] !== undefined) {
      const c = s["const"];
      if (c === null || typeof c !== "object") return z.literal(c as string | number | boolean | null);
      const want = canonical(c);
      return refine(z.unknown(), (v) => canonical(v) === want, "must equal the const");
    }
    if (Array.isArray(s["enum"])) {
      const vals = s["enum"] as Array<string | number | boolean | null>;
      if (vals.every((v) => typeof v === "string")) return z.enum(vals as [string, ...string[]]);
      return vals.length === 1
        ? z.literal(vals[0]!)
        : z.union(vals.map((v) => z.literal(v)) as unknown as [Zod, Zod, ...Zod[]]);
    }
    const type = s["type"];
    if (typeof type === "string") return this.ofKind(type as Kind, s);
    if (Array.isArray(type)) return z.union((type as Kind[]).map((t) => this.ofKind(t, s)) as [Zod, Zod, ...Zod[]]);
    // No `type`: each kind's keywords constrain only values of that kind.
    const guards: Zod[] = [];
    for (const [kind, keys] of [
      ["object", OBJECT_KEYS],
      ["array", ARRAY_KEYS],
      ["string", STRING_KEYS],
      ["number", NUMBER_KEYS],
    ] as const) {
      if (!keys.some((k) => s[k] !== undefined)) continue;
      const inner = this.ofKind(kind, s);
      const is = isKind[kind];
      guards.push(refine(z.unknown(), (v) => !is(v) || inner.safeParse(v).success, `${kind} keywords failed`));
    }
    if (guards.length > 1) throw new Error("keywords of several kinds without `type` are not supported");
    return guards[0];
  }

  private ofKind(kind: Kind, s: Schema): Zod {
    switch (kind) {
      case "null":
        return z.null();
      case "boolean":
        return z.boolean();
      case "integer":
      case "number": {
        let n = kind === "integer" ? z.int() : z.number();
        if (typeof s["minimum"] === "number") n = n.gte(s["minimum"]);
        if (typeof s["maximum"] === "number") n = n.lte(s["maximum"]);
        if (typeof s["exclusiveMinimum"] === "number") n = n.gt(s["exclusiveMinimum"]);
        if (typeof s["exclusiveMaximum"] === "number") n = n.lt(s["exclusiveMaximum"]);
        if (typeof s["multipleOf"] === "number") n = n.multipleOf(s["multipleOf"]);
        return n;
      }
      case "string": {
        const format = s["format"];
        let str = format === "date-time" ? z.iso.datetime({ offset: true }) : format === "uri" ? z.url() : z.string();
        if (format !== undefined && format !== "date-time" && format !== "uri")
          throw new Error(`unsupported format ${String(format)}`);
        if (typeof s["minLength"] === "number") str = str.min(s["minLength"]);
        if (typeof s["maxLength"] === "number") str = str.max(s["maxLength"]);
        if (typeof s["pattern"] === "string") str = str.regex(new RegExp(s["pattern"], "u"));
        return str;
      }
      case "array": {
        let arr = z.array(s["items"] === undefined ? z.unknown() : this.schema(s["items"]));
        if (typeof s["minItems"] === "number") arr = arr.min(s["minItems"]);
        if (typeof s["maxItems"] === "number") arr = arr.max(s["maxItems"]);
        let out: Zod = arr;
        if (s["uniqueItems"] === true) {
          out = refine(
            out,
            (v) => {
              const seen = (v as unknown[]).map(canonical);
              return new Set(seen).size === seen.length;
            },
            "items must be unique",
          );
        }
        if (s["contains"] !== undefined) {
          const c = this.schema(s["contains"]);
          out = refine(
            out,
            (v) => (v as unknown[]).some((x) => c.safeParse(x).success),
            "must contain a matching item",
          );
        }
        return out;
      }
      case "object": {
        const props = (s["properties"] ?? {}) as Record<string, unknown>;
        const required = new Set((s["required"] ?? []) as string[]);
        const shape: Record<string, Zod> = {};
        for (const [k, v] of Object.entries(props))
          shape[k] = required.has(k) ? this.schema(v) : this.schema(v).optional();
        const extra = s["additionalProperties"];
        let out: Zod =
          extra === false
            ? z.strictObject(shape)
            : extra === undefined || extra === true
              ? z.looseObject(shape)
              : z.object(shape).catchall(this.schema(extra));
        const missing = [...required].filter((k) => !(k in props));
        if (missing.length)
          out = refine(out, (v) => missing.every((k) => k in (v as object)), `requires ${missing.join(", ")}`);
        if (s["propertyNames"] !== undefined) {
          const names = this.schema(s["propertyNames"]);
          out = refine(out, (v) => Object.keys(v as object).every((k) => names.safeParse(k).success), "property names");
        }
        const minP = s["minProperties"];
        const maxP = s["maxProperties"];
        if (typeof minP === "number")
          out = refine(out, (v) => Object.keys(v as object).length >= minP, `at least ${minP} properties`);
        if (typeof maxP === "number")
          out = refine(out, (v) => Object.keys(v as object).length <= maxP, `at most ${maxP} properties`);
        return out;
      }
      default:
        throw new Error(`unsupported type ${String(kind)}`);
    }
  }
}
