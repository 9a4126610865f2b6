/** Opaque cursors of live connectors (D115): bound, versioned, refused when foreign or garbled, never thrown on. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_CURSOR_LENGTH, decodeCursor, encodeCursor, paramsHash } from "../../src/connectors/cursor.ts";

const scalar = fc.oneof(fc.string({ maxLength: 40 }), fc.integer(), fc.boolean());
const params = fc.dictionary(
  fc.constantFrom("query", "sort", "time_range", "scope", "id", "type", "content_type"),
  scalar,
);
const binding = fc.record({
  platform: fc.constantFrom("youtube", "reddit", "x"),
  operation: fc.constantFrom("search", "comments", "user_posts", "trending"),
  params,
});
const state = fc.dictionary(fc.constantFrom("t", "a", "u", "r"), fc.oneof(fc.string({ maxLength: 300 }), fc.nat()));

describe("connector cursors", () => {
  it("read back what they carry, for the call they were written for", () => {
    fc.assert(
      fc.property(binding, state, (b, s) => {
        const c = encodeCursor(b, s)!;
        expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodeCursor(b, c)).toEqual(s);
      }),
    );
  });

  it("are refused for another platform, operation or parameters, but not for another count or limit", () => {
    fc.assert(
      fc.property(binding, state, binding, (b, s, other) => {
        const c = encodeCursor(b, s)!;
        const same =
          other.platform === b.platform &&
          other.operation === b.operation &&
          paramsHash(other.params) === paramsHash(b.params);
        expect(decodeCursor(other, c) !== null).toBe(same);
        expect(decodeCursor({ ...b, params: { ...b.params, count: 20, limit: 5, cursor: "x" } }, c)).toEqual(s);
      }),
    );
  });

  it("any other text is refused, never thrown on", () => {
    const b = { platform: "youtube", operation: "search", params: { query: "q" } };
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        expect(() => decodeCursor(b, text)).not.toThrow();
        const c = encodeCursor(b, { t: "CAoQAA" })!;
        if (text !== c) expect(decodeCursor(b, text)).toBeNull();
      }),
    );
    for (const garbled of ["", "e30", "bnVsbA", "W10", "eyJ2IjoyfQ", "A".repeat(MAX_CURSOR_LENGTH + 1)])
      expect(decodeCursor(b, garbled), garbled.slice(0, 20)).toBeNull();
  });

  it("stay within the contract's 20 000 characters: too long a state writes no cursor", () => {
    const b = { platform: "youtube", operation: "comments", params: { id: "kY7bQ2xLm0A" } };
    expect(encodeCursor(b, { t: "x".repeat(14_000) })!.length).toBeLessThanOrEqual(MAX_CURSOR_LENGTH);
    expect(encodeCursor(b, { t: "x".repeat(15_100) })).toBeNull();
  });
});
