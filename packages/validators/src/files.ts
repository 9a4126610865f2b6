/**
 * The seed's file formats of a finished result (D31): `csv` and `ndjson`. Rows are the answer's items in order; a
 * fanout or targets answer puts `platform` (and `target`) first in each row. Two renderings of one answer are
 * byte-identical.
 */

type Json = unknown;
type Row = Record<string, Json>;

/** The rows of a finished answer: its items; for a fanout or targets answer, each entry's items with where they came from. @group Answers */
export function resultRows(answer: Record<string, Json>): Row[] {
  const fanout = answer["fanout"] as Record<string, { items: Row[] }> | undefined;
  if (fanout)
    return Object.entries(fanout).flatMap(([platform, entry]) => entry.items.map((item) => ({ platform, ...item })));
  const targets = answer["targets"] as
    | Array<{ platform: string; target: string; result: { items: Row[] } }>
    | undefined;
  if (targets)
    return targets.flatMap((c) => c.result.items.map((item) => ({ platform: c.platform, target: c.target, ...item })));
  return (answer["items"] as Row[] | undefined) ?? [];
}

function flatten(value: Row, prefix: string, out: Map<string, Json>): void {
  for (const [k, v] of Object.entries(value)) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === "object" && !Array.isArray(v)) flatten(v as Row, name, out);
    else out.set(name, v);
  }
}

/**
 * One CSV cell: lists as JSON text, a leading `=`, `+`, `-`, `@`, tab or carriage return neutralised with `'`
 * (the seed's four and OWASP's two more, D53), RFC 4180 quoting.
 */
function cell(v: Json): string {
  if (v === undefined || v === null) return "";
  let s = Array.isArray(v) ? JSON.stringify(v) : String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The answer as CSV: a column for every field any row has (nested fields as `a.b`, in the order first met). @group Answers */
export function toCsv(answer: Record<string, Json>): string {
  const rows = resultRows(answer).map((r) => {
    const m = new Map<string, Json>();
    flatten(r, "", m);
    return m;
  });
  const seen = new Set<string>();
  for (const m of rows) for (const k of m.keys()) seen.add(k);
  const columns = [...seen];
  const lines = [columns.map(cell).join(","), ...rows.map((m) => columns.map((c) => cell(m.get(c))).join(","))];
  return `${lines.join("\n")}\n`;
}

/** The answer as NDJSON: one row per line. @group Answers */
export function toNdjson(answer: Record<string, Json>): string {
  const lines = resultRows(answer).map((r) => JSON.stringify(r));
  return `${lines.join("\n")}\n`;
}

/**
 * A finished answer as the file `format` asks for (D31): `csv` or `ndjson` rows of its items with their media type;
 * null for any other format (the answer is sent as JSON).
 * @group Answers
 */
export function resultFile(
  answer: Record<string, Json>,
  format: unknown,
): { contentType: string; text: string } | null {
  if (format === "csv") return { contentType: "text/csv; charset=utf-8", text: toCsv(answer) };
  if (format === "ndjson") return { contentType: "application/x-ndjson; charset=utf-8", text: toNdjson(answer) };
  return null;
}

/** Paths whose answers are the same for everyone and may be cached (D53): the contract and the capabilities. */
const CACHEABLE_PATHS = new Set(["/openapi.json", "/v1/capabilities"]);
const PUBLIC_HEADERS: Readonly<Record<string, string>> = Object.freeze({ "x-content-type-options": "nosniff" });
const PRIVATE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "x-content-type-options": "nosniff",
  "cache-control": "no-store",
});

/**
 * The headers every answer of the gateway carries besides its own (D53): `X-Content-Type-Options: nosniff`;
 * `Cache-Control: no-store` except on the two public documents (account, billing, results and errors are never
 * stored by a cache); and on a csv or ndjson answer `Content-Disposition: attachment` with a file name made of the
 * path's last segment (`h_….csv`, `batch_stats.ndjson`). The reference server and the mock both send them.
 * @group Answers
 */
export function answerHeaders(path: string, contentType: string | undefined): Readonly<Record<string, string>> {
  const q = path.indexOf("?");
  const pathname = q < 0 ? path : path.slice(0, q);
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  const ext = type === "text/csv" ? "csv" : type === "application/x-ndjson" ? "ndjson" : null;
  // Every answer but a file gets one of two fixed sets: nothing to build per request.
  if (!ext) return CACHEABLE_PATHS.has(pathname) ? PUBLIC_HEADERS : PRIVATE_HEADERS;
  const name =
    (pathname.split("/").filter(Boolean).pop() ?? "").replace(/[^A-Za-z0-9_-]/g, "").slice(0, 128) || "result";
  return {
    ...(CACHEABLE_PATHS.has(pathname) ? PUBLIC_HEADERS : PRIVATE_HEADERS),
    "content-disposition": `attachment; filename="${name}.${ext}"`,
  };
}
