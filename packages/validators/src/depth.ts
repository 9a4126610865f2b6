/**
 * D112: how deep a JSON body may nest. `JSON.parse` takes any depth, but what reads the parsed value afterwards
 * (text checks, the generated validators, the idempotency fingerprint) recurses, and a body of a few kilobytes of
 * brackets overflowed the stack (`RangeError`, answered 500). A body nested deeper than {@link MAX_BODY_DEPTH} is
 * refused before it is parsed, by a scan of its text that uses no recursion.
 */
import type { InvalidParams } from "./invalid-params.ts";

/**
 * The deepest a JSON body may nest arrays and objects, the body's own object counting as level 1 (D112). The
 * contract's deepest body nests 2 levels (a list parameter such as `targets`, the `schedule` object); a JSON-RPC
 * message to `/mcp` carrying such arguments, 5.
 * @group Requests
 */
export const MAX_BODY_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * Whether a JSON text nests arrays and objects deeper than `limit` levels. Counted over the text in one pass, without
 * recursion: brackets inside strings do not count (a string is skipped to its closing quote, escapes included), and
 * the scan stops at the first bracket past the limit. Linear in the text's length; a text that is not JSON gets some
 * answer, and is refused by `JSON.parse` if it is under the limit.
 *
 * @example
 * ```ts
 * nestsDeeperThan('{"a":[[1]]}', 2); // true: 3 levels
 * nestsDeeperThan('{"a":"[[[["}', 1); // false: the brackets are text
 * ```
 * @group Requests
 */
export function nestsDeeperThan(text: string, limit: number = MAX_BODY_DEPTH): boolean {
  // A text with no more characters than the limit cannot open more brackets than it.
  if (text.length <= limit) return false;
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip to the closing quote: the next quote not escaped (preceded by an even number of backslashes).
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return false; // an unterminated string: not JSON, JSON.parse refuses it
        let k = j - 1;
        while (text.charCodeAt(k) === BACKSLASH) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}

/**
 * The `invalid_params` answer's reason for a JSON body (its text) nested deeper than {@link MAX_BODY_DEPTH}: `fix.param`
 * `body`, the message saying how deep a body may nest (D112). Null for any other text.
 * @group Requests
 */
export function bodyDepthProblem(text: string): InvalidParams | null {
  if (!nestsDeeperThan(text, MAX_BODY_DEPTH)) return null;
  return {
    param: "body",
    message: `The body nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels; a body may nest at most ${MAX_BODY_DEPTH}.`,
    note: "Send one JSON object with the parameters of the call; none of them nests more than two levels.",
  };
}
