/**
 * Text hygiene of a request (issue: bad bytes must not be charged as replaced text). A query string's names and
 * values must be valid percent-encoding of UTF-8 text without NUL; a JSON body's strings and names must be
 * well-formed Unicode (no lone surrogate) without NUL. Anything else is refused as `invalid_params` naming the
 * parameter, before the key is looked at (D50) — nothing runs, nothing is charged.
 */
import type { InvalidParams } from "./invalid-params.ts";

const NUL = "\u0000";

/** Whether a string has no lone surrogate (`String#isWellFormed`, which ES2022 browsers lack) and no NUL. */
function isText(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return false;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return false;
  }
  return true;
}

function decode(part: string): string | null {
  try {
    return decodeURIComponent(part.replace(/\+/g, " "));
  } catch {
    return null;
  }
}

/**
 * The first name or value of a raw query string (with or without `?`) that is not text: a `%` not followed by two
 * hex digits, bytes that are not UTF-8 (a cut sequence, a surrogate), or a NUL. Null when the whole query is text.
 * @group Requests
 */
export function queryTextProblem(rawQuery: string): InvalidParams | null {
  const raw = rawQuery.startsWith("?") ? rawQuery.slice(1) : rawQuery;
  // Most queries have no `%` at all, and then nothing can be wrong with them.
  if (!raw.includes("%")) return null;
  for (const pair of raw.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const name = decode(rawName);
    if (name === null || name.includes(NUL)) {
      return {
        param: rawName.slice(0, 100),
        message: `The name of a query parameter (${JSON.stringify(rawName.slice(0, 100))}) is not percent-encoded UTF-8 text.`,
        note: "Encode each name and value as UTF-8, then percent-encode it (encodeURIComponent).",
      };
    }
    const value = eq < 0 ? "" : decode(pair.slice(eq + 1));
    if (value === null) {
      return {
        param: name,
        message: `\`${name}\` is not percent-encoded UTF-8 text: a \`%\` must be followed by two hex digits, and the bytes must be UTF-8.`,
        note: "Encode the value as UTF-8, then percent-encode it (encodeURIComponent).",
      };
    }
    if (value.includes(NUL)) return { param: name, message: `\`${name}\` contains a NUL character (%00).` };
  }
  return null;
}

/**
 * The first string of a parsed JSON body (a value or a member name, at any depth) that is not well-formed
 * Unicode (a lone surrogate, e.g. `"\ud800"`) or holds a NUL; its top-level parameter is named. Null when all
 * strings are text.
 * @group Requests
 */
export function bodyTextProblem(body: unknown): InvalidParams | null {
  const bad = (s: string) => !isText(s);
  const walk = (v: unknown): boolean => {
    if (typeof v === "string") return bad(v);
    if (Array.isArray(v)) return v.some(walk);
    if (v !== null && typeof v === "object") return Object.entries(v).some(([k, x]) => bad(k) || walk(x));
    return false;
  };
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return walk(body)
      ? { param: "body", message: "The body holds text that is not well-formed Unicode, or a NUL." }
      : null;
  for (const [name, value] of Object.entries(body)) {
    if (bad(name))
      return { param: "body", message: "A member name of the body is not well-formed Unicode, or holds a NUL." };
    if (walk(value))
      return {
        param: name,
        message: `\`${name}\` holds text that is not well-formed Unicode (a lone surrogate such as \\ud800) or a NUL.`,
      };
  }
  return null;
}
