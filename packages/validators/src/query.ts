/** Turns a query string into the JSON the query validators check, by the types the spec gives each parameter. */
import type { OperationInfo } from "./table-types.ts";

/** A query string as a URLSearchParams, a string (with or without `?`), or a record of values. @group Parsing */
export type QueryInput = URLSearchParams | string | Readonly<Record<string, string | readonly string[] | undefined>>;

function entries(input: QueryInput): Array<[string, string]> {
  if (typeof input === "string") return [...new URLSearchParams(input.startsWith("?") ? input.slice(1) : input)];
  if (input instanceof URLSearchParams) return [...input];
  return Object.entries(input).flatMap(([k, v]) =>
    v === undefined
      ? []
      : typeof v === "string"
        ? [[k, v] as [string, string]]
        : v.map((x) => [k, x] as [string, string]),
  );
}

/**
 * Parses a query string for one operation: whole numbers become numbers, `true`/`false` booleans, and list
 * parameters collect repeated values and comma-separated values (`platforms=x,reddit`, D17) — except a lone
 * allowed word such as `all`. Anything that does not parse stays text, so the validator names it.
 * @group Parsing
 */
export function parseQuery(op: OperationInfo, input: QueryInput): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const grouped = new Map<string, string[]>();
  for (const [k, v] of entries(input)) grouped.set(k, [...(grouped.get(k) ?? []), v]);
  for (const [name, values] of grouped) {
    const info = Object.hasOwn(op.query, name) ? op.query[name] : undefined;
    const last = values[values.length - 1]!;
    switch (info?.coerce) {
      case "integer":
        own(out, name, /^-?\d+$/.test(last) ? Number(last) : last);
        break;
      case "number":
        own(out, name, last.trim() !== "" && Number.isFinite(Number(last)) ? Number(last) : last);
        break;
      case "boolean":
        own(out, name, last === "true" ? true : last === "false" ? false : last);
        break;
      case "list": {
        const isWord = values.length === 1 && (info.words ?? []).includes(last);
        own(out, name, isWord ? last : values.flatMap((v) => v.split(",")).map((v) => v.trim()));
        break;
      }
      default:
        own(out, name, values.length > 1 ? values : last);
    }
  }
  return out;
}

/**
 * Sets an own, enumerable property, whatever its name: `out["__proto__"] = v` would set the prototype instead
 * (and drop a string), so a parameter named `__proto__` would vanish and never be refused as unknown.
 */
function own(out: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
}

/** Header names lower-cased, from a Headers object or a record. @group Parsing */
export function normalizeHeaders(
  input: Headers | Readonly<Record<string, string | readonly string[] | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof Headers !== "undefined" && input instanceof Headers) {
    input.forEach((v, k) => {
      own(out, k.toLowerCase(), v);
    });
    return out;
  }
  for (const [k, v] of Object.entries(input)) {
    if (v !== undefined) own(out, k.toLowerCase(), typeof v === "string" ? v : v.join(", "));
  }
  return out;
}
