/** The ESM copies of ajv's run-time helpers (src/runtime.ts) answer as ajv's own. */
import ajvEqualModule from "ajv/dist/runtime/equal.js";
import ajvUcs2lengthModule from "ajv/dist/runtime/ucs2length.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { equal, ucs2length } from "../src/runtime.ts";

type Fn<A extends unknown[], R> = (...args: A) => R;
/** A CommonJS module's function, whichever way the loader hands it over. */
const fnOf = <F>(m: unknown): F =>
  (m as { default?: unknown }).default && typeof (m as { default: unknown }).default === "function"
    ? (m as { default: F }).default
    : ((m as { default: { default: F } }).default?.default ?? (m as F));
const ajvEqual = fnOf<Fn<[unknown, unknown], boolean>>(ajvEqualModule);
const ajvUcs2length = fnOf<Fn<[string], number>>(ajvUcs2lengthModule);

/** The value, or that it threw (both throw on an object whose own `toString` is not a function). */
const outcome = (f: () => unknown) => {
  try {
    return f();
  } catch (e) {
    return `throws ${(e as Error).name}`;
  }
};

describe("runtime helpers", () => {
  it("ucs2length counts code points as ajv's does", () => {
    expect(ucs2length("a😀b\uD800")).toBe(4);
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }), fc.string()), (s) => {
        expect(ucs2length(s)).toBe(ajvUcs2length(s));
      }),
      { numRuns: 5_000 },
    );
  });

  it("equal compares JSON values as ajv's (fast-deep-equal) does", () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    fc.assert(
      fc.property(json, json, (a, b) => {
        expect(outcome(() => equal(a, b))).toBe(outcome(() => ajvEqual(a, b)));
        const copy = structuredClone(a);
        expect(outcome(() => equal(a, copy))).toBe(outcome(() => ajvEqual(a, copy)));
      }),
      { numRuns: 3_000 },
    );
    expect(equal({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(equal([1, 2], [2, 1])).toBe(false);
    expect(equal(Number.NaN, Number.NaN)).toBe(true);
  });
});
