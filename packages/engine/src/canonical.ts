/** The canonical text of request parameters: the simulator's seeds, cursor bindings and cache keys (D115, D122). */

/** Canonical text of parameters (keys sorted) for seeding: `{k:v,…}`, arrays `[…]`, scalars as JSON. */
export function seedText(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "";
  let out: string;
  if (Array.isArray(value)) {
    out = "[";
    for (let i = 0; i < value.length; i++) out += (i > 0 ? "," : "") + (i in value ? seedText(value[i]) : "");
    return `${out}]`;
  }
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length > 1) keys.sort();
  out = "{";
  for (let i = 0; i < keys.length; i++) out += `${i > 0 ? "," : ""}${keys[i]!}:${seedText(o[keys[i]!])}`;
  return `${out}}`;
}
