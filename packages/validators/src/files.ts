/**
 * The seed's file formats of a finished result (D31): `csv` and `ndjson`. Rows are the answer's items in order; a
 * fanout or targets answer puts `platform` (and `target`) first in each row. Two renderings of one answer are
 * byte-identical.
 */

type Json = unknown;
type Row = Record<string, Json>;

/** The rows of a finished answer: its items; for a fanout or targets answer, each entry's items with where they came from. */
export function resultRows(answer: Record<string, Json>): Row[] {
  const fanout = answer["fanout"] as Record<string, { items: Row[] }> | undefined;
  if (fanout) return Object.entries(fanout).flatMap(([platform, entry]) => entry.items.map((item) => ({ platform, ...item })));
  const targets = answer["targets"] as Array<{ platform: string; target: string; result: { items: Row[] } }> | undefined;
  if (targets) return targets.flatMap((c) => c.result.items.map((item) => ({ platform: c.platform, target: c.target, ...item })));
  return (answer["items"] as Row[] | undefined) ?? [];
}

function flatten(value: Row, prefix: string, out: Map<string, Json>): void {
  for (const [k, v] of Object.entries(value)) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === "object" && !Array.isArray(v)) flatten(v as Row, name, out);
    else out.set(name, v);
  }
}

/** One CSV cell: lists as JSON text, a leading `=`, `+`, `-` or `@` neutralised with `'`, RFC 4180 quoting. */
function cell(v: Json): string {
  if (v === undefined || v === null) return "";
  let s = Array.isArray(v) ? JSON.stringify(v) : String(v);
  if (/^[=+\-@]/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The answer as CSV: a column for every field any row has (nested fields as `a.b`, in the order first met). */
export function toCsv(answer: Record<string, Json>): string {
  const rows = resultRows(answer).map((r) => {
    const m = new Map<string, Json>();
    flatten(r, "", m);
    return m;
  });
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const m of rows) for (const k of m.keys()) if (!seen.has(k)) (seen.add(k), columns.push(k));
  return [columns.map(cell).join(","), ...rows.map((m) => columns.map((c) => cell(m.get(c))).join(","))].join("\n") + "\n";
}

/** The answer as NDJSON: one row per line. */
export function toNdjson(answer: Record<string, Json>): string {
  return resultRows(answer).map((r) => JSON.stringify(r)).join("\n") + "\n";
}
