/**
 * The two run-time helpers of ajv's standalone code, as plain ES module functions: the generated module imports
 * them by name (not ajv's CommonJS files through an interop wrapper), so a bundle keeps only what it calls and
 * needs no annotation to drop the rest. Same code as ajv 8's `ajv/dist/runtime/ucs2length` and
 * `ajv/dist/runtime/equal` (fast-deep-equal 3.1.3, MIT, Evgeny Poberezkin); test/runtime.test.ts compares them.
 */

/** The length of a string in Unicode code points (a surrogate pair counts once), as JSON Schema counts it. */
export function ucs2length(str: string): number {
  const len = str.length;
  let length = 0;
  let pos = 0;
  let value: number;
  while (pos < len) {
    length++;
    value = str.charCodeAt(pos++);
    if (value >= 0xd800 && value <= 0xdbff && pos < len) {
      // high surrogate, and there is a next character
      value = str.charCodeAt(pos);
      if ((value & 0xfc00) === 0xdc00) pos++; // low surrogate
    }
  }
  return length;
}

/** Deep equality of JSON values (`const`, `enum` and `uniqueItems` on objects and arrays). */
// biome-ignore lint/suspicious/noExplicitAny: the two values may be any JSON; the function reads their fields as it finds them
export function equal(a: any, b: any): boolean {
  if (a === b) return true;
  if (a && b && typeof a === "object" && typeof b === "object") {
    if (a.constructor !== b.constructor) return false;
    let length: number, i: number;
    if (Array.isArray(a)) {
      length = a.length;
      if (length !== b.length) return false;
      for (i = length; i-- !== 0; ) if (!equal(a[i], b[i])) return false;
      return true;
    }
    if (a.constructor === RegExp) return a.source === b.source && a.flags === b.flags;
    if (a.valueOf !== Object.prototype.valueOf) return a.valueOf() === b.valueOf();
    if (a.toString !== Object.prototype.toString) return a.toString() === b.toString();
    const keys = Object.keys(a);
    length = keys.length;
    if (length !== Object.keys(b).length) return false;
    for (i = length; i-- !== 0; ) if (!Object.hasOwn(b, keys[i]!)) return false;
    for (i = length; i-- !== 0; ) {
      const key = keys[i]!;
      if (!equal(a[key], b[key])) return false;
    }
    return true;
  }
  // true if both NaN, false otherwise
  return Number.isNaN(a) && Number.isNaN(b);
}
