/**
 * Cutting an HTTP answer to the MCP size bound (D30): the rows are `items`, or `targets`, or every fanout entry's
 * `items` in entry order; an answer over the bound keeps the first rows that fit and gains a top-level `more`.
 * A page of a fanout holds only the entries that are valid on it (D55): an `ok` entry with rows on the page, and
 * the entries without rows (`empty`, failed) on the first page only, so no page has an `ok` entry with 0 items.
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
          const items = Array.isArray(e["items"]) ? (e["items"] as unknown[]) : [];
          const start = offsets[i]!;
          const mine = items.slice(Math.max(0, from - start), Math.max(0, to - start));
          // An entry with rows on this page carries them; one without rows of its own (empty, error,
          // not_supported, timeout) is shown once, on the first page; an ok entry never appears without rows.
          if (mine.length > 0) out[platform] = { ...e, items: mine };
          else if (items.length === 0 && from === 0) out[platform] = e;
        });
        return { ...answer, fanout: out };
      },
    };
  }
  return null;
}

const utf8 = new TextEncoder();
/** The UTF-8 bytes of a text (no Node Buffer: the engine runs in browsers too). */
const byteLength = (text: string) => utf8.encode(text).length;
const bytes = (v: unknown) => byteLength(JSON.stringify(v));

/**
 * The rows of a whole answer (its `items`, its `targets`, or all its fanout entries' `items`), or null for an answer
 * without rows (a quote, a running answer, an error structure). `more.handle` positions count these rows.
 */
export function rowCount(answer: Json): number | null {
  return rowsOf(answer)?.total ?? null;
}

/** What {@link fitAnswer} made of an answer: the MCP answer and the rows it carries. */
export interface Fitted {
  answer: Json;
  /** Rows in this answer. */
  rows: number;
  /** Rows of the whole result. */
  total: number;
  /** The rows of this answer written by `render` (a csv or ndjson file), when a renderer was given. */
  text?: string;
}

/** Options of {@link fitAnswer}. */
export interface FitOptions {
  /**
   * The handle the result is stored under, for `more.handle`; null when nothing is stored to read on from; or a
   * function called only when the answer must be cut, that stores it and gives its handle (or null).
   */
  handle: string | null | (() => string | null);
  /** The first row of this answer (the part of `more.handle` after the dot; 0 for a first answer). */
  position: number;
  /** The size bound in bytes. */
  maxBytes: number;
  /**
   * Writes the rows of one page as text (batch_stats' csv or ndjson; it must write the rows only, not `more`). The
   * page's size is then its JSON plus that text, and {@link Fitted.text} holds the text of the page returned.
   */
  render?: (page: Json) => string;
  /**
   * The size of what is sent for one page, in bytes (D78: the whole serialized tool result, its structuredContent,
   * text copies and links together). Default: the page's JSON plus the text `render` writes of it.
   */
  measure?: (page: Json) => number;
}

/**
 * The answer from row `position` on, cut to the first rows that fit in `maxBytes` (as `measure` counts it; by
 * default its JSON plus the text `render` writes of it). With a `handle` a cut answer gets `more` (`handle.position` of the next row,
 * `rows_left`, note). Without one nothing is stored to read on from, so nothing is cut: the answer is whole, over
 * the bound, with a warning (rows that were paid for are never dropped, D55). At least one row is kept so that
 * reading on always moves forward. A `position` past the last row gives the answer with no rows: callers refuse
 * such a position first (see `rowCount` in this module).
 */
export function fitAnswer(answer: Json, options: FitOptions): Fitted {
  const rows = rowsOf(answer);
  const { position, maxBytes, render, measure } = options;
  if (!rows) return { answer, rows: 0, total: 0, ...(render ? { text: "" } : {}) };
  const from = Math.min(position, rows.total);
  const size = measure ?? ((page: Json) => bytes(page) + (render ? byteLength(render(page)) : 0));
  const done = (page: Json, k: number): Fitted => ({
    answer: page,
    rows: k,
    total: rows.total,
    ...(render ? { text: render(page) } : {}),
  });
  const whole = rows.slice(from, rows.total);
  if (rows.total - from <= 1 || size(whole) <= maxBytes) return done(whole, rows.total - from);
  const handle = typeof options.handle === "function" ? options.handle() : options.handle;
  if (!handle) {
    const warning =
      `This MCP answer is over the ${maxBytes}-byte bound: nothing could be stored to ` +
      `read on from, so all ${rows.total - from} rows are given at once rather than dropping rows ` +
      `that were paid for.`;
    return done(
      { ...whole, warnings: [...(Array.isArray(whole["warnings"]) ? (whole["warnings"] as string[]) : []), warning] },
      rows.total - from,
    );
  }
  const build = (k: number): Json => ({
    ...rows.slice(from, from + k),
    more: { handle: `${handle}.${from + k}`, rows_left: rows.total - from - k, note: MORE_NOTE },
  });
  // The largest k (1 <= k < rows left) whose answer fits; sizes grow with k.
  let lo = 1;
  let hi = rows.total - from - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (size(build(mid)) <= maxBytes) lo = mid;
    else hi = mid - 1;
  }
  return done(build(lo), lo);
}
