/**
 * Cutting an HTTP answer to the MCP size bound (D30): the rows are `items`, or `targets`, or every fanout entry's
 * `items` in entry order; an answer over the bound keeps the first rows that fit and gains a top-level `more`.
 */

/** About 60 KB of JSON: the largest MCP answer (seed, "MCP large-answer object"). */
export const MCP_ANSWER_BYTES = 60_000;

/** The `more.note` of every cut answer. */
export const MORE_NOTE = "Pass more.handle as `handle` to the same tool for the next rows; reading on is free.";

type Json = Record<string, unknown>;

/** The rows of an answer as a flat list, and a way to rebuild the answer holding only rows [from, to). */
interface Rows {
  total: number;
  slice(from: number, to: number): Json;
}

function rowsOf(answer: Json): Rows | null {
  if (Array.isArray(answer["items"])) {
    const items = answer["items"] as unknown[];
    return { total: items.length, slice: (from, to) => ({ ...answer, items: items.slice(from, to) }) };
  }
  if (Array.isArray(answer["targets"])) {
    const targets = answer["targets"] as unknown[];
    return { total: targets.length, slice: (from, to) => ({ ...answer, targets: targets.slice(from, to) }) };
  }
  const fanout = answer["fanout"];
  if (fanout && typeof fanout === "object") {
    const entries = Object.entries(fanout as Record<string, Json>);
    const offsets: number[] = [];
    let total = 0;
    for (const [, e] of entries) {
      offsets.push(total);
      total += Array.isArray(e["items"]) ? (e["items"] as unknown[]).length : 0;
    }
    return {
      total,
      slice(from, to) {
        const out: Record<string, Json> = {};
        entries.forEach(([platform, e], i) => {
          if (!Array.isArray(e["items"])) out[platform] = e;
          else {
            const start = offsets[i]!;
            out[platform] = { ...e, items: (e["items"] as unknown[]).slice(Math.max(0, from - start), Math.max(0, to - start)) };
          }
        });
        return { ...answer, fanout: out };
      },
    };
  }
  return null;
}

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");

/** What {@link fitAnswer} made of an answer: the MCP answer and the rows it carries. */
export interface Fitted {
  answer: Json;
  /** Rows in this answer. */
  rows: number;
  /** Rows of the whole result. */
  total: number;
}

/**
 * The answer from row `position` on, cut to the first rows that fit in `maxBytes` of JSON. With a `handle` a cut
 * answer gets `more` (`handle.position` of the next row, `rows_left`, note); without one (an answer that finished
 * inline: nothing is stored to read on from) the rows are cut and a warning says how many were left out.
 * At least one row is kept so that reading on always moves forward.
 */
export function fitAnswer(answer: Json, options: { handle: string | null; position: number; maxBytes: number }): Fitted {
  const rows = rowsOf(answer);
  const { handle, position, maxBytes } = options;
  if (!rows) return { answer, rows: 0, total: 0 };
  const from = Math.min(position, rows.total);
  const whole = rows.slice(from, rows.total);
  if (rows.total - from <= 1 || bytes(whole) <= maxBytes) return { answer: whole, rows: rows.total - from, total: rows.total };
  const build = (k: number): Json => {
    const cut = rows.slice(from, from + k);
    const left = rows.total - from - k;
    if (handle) return { ...cut, more: { handle: `${handle}.${from + k}`, rows_left: left, note: MORE_NOTE } };
    const warning = `This MCP answer holds ${k} of ${rows.total - from} rows to stay under ${maxBytes} bytes; nothing is stored to read on from (the call finished inline): ask for fewer platforms or a smaller count, or page with cursor.`;
    return { ...cut, warnings: [...(Array.isArray(cut["warnings"]) ? (cut["warnings"] as string[]) : []), warning] };
  };
  // The largest k (1 <= k < rows left) whose answer fits; sizes grow with k.
  let lo = 1;
  let hi = rows.total - from - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bytes(build(mid)) <= maxBytes) lo = mid;
    else hi = mid - 1;
  }
  const k = lo;
  return { answer: build(k), rows: k, total: rows.total };
}
