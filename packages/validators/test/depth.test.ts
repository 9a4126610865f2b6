/**
 * D112: a JSON body nested deeper than MAX_BODY_DEPTH is refused by admitRequest with `invalid_params` naming `body`,
 * before anything that recurses over the parsed value runs (5 000 levels in a few KB overflowed the stack: 500).
 * The depth is counted over the text without recursion; brackets inside strings do not count.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_BODY_DEPTH, admitRequest, bodyDepthProblem, nestsDeeperThan } from "../src/index.ts";
import { BODY_OPERATIONS, deepBody, nest } from "./deep-json.ts";

/** The nesting of a parsed JSON value, counted with an explicit stack (the reference the scan must agree with). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    deepest = Math.max(deepest, d + 1);
    for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push([x, d + 1]);
  }
  return deepest;
}

/** JSON values with nested arrays and objects and strings full of brackets, quotes and backslashes. */
const tricky = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.stringMatching(/^[[\]{}"\\a]{0,8}$/),
    fc.integer(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.stringMatching(/^[[\]{}"\\a]{0,4}$/), tie("value"), { maxKeys: 3 }),
  ),
})).value;

describe("nestsDeeperThan", () => {
  it("agrees with the nesting of the parsed value, for any limit, whatever brackets the strings hold", () => {
    fc.assert(
      fc.property(tricky, fc.integer({ min: 0, max: 12 }), fc.boolean(), (value, limit, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        expect(nestsDeeperThan(text, limit)).toBe(depthOf(value) > limit);
      }),
      { numRuns: 2000 },
    );
  });

  it("counts the body's own object as level 1, and stops at the bound", () => {
    expect(nestsDeeperThan(nest(MAX_BODY_DEPTH, "array"))).toBe(false);
    expect(nestsDeeperThan(nest(MAX_BODY_DEPTH + 1, "array"))).toBe(true);
    expect(nestsDeeperThan(nest(MAX_BODY_DEPTH, "object"))).toBe(false);
    expect(nestsDeeperThan(nest(MAX_BODY_DEPTH + 1, "mixed"))).toBe(true);
    expect(nestsDeeperThan(JSON.stringify({ query: "[".repeat(5000) }))).toBe(false);
    expect(nestsDeeperThan(`{"q":"\\\\"${"[".repeat(100)}`)).toBe(true); // an escaped backslash ends the string
    expect(nestsDeeperThan(`{"q":"\\"${"[".repeat(100)}"}`)).toBe(false); // an escaped quote does not
    expect(nestsDeeperThan("[".repeat(1_000_000))).toBe(true);
  });

  it("says how deep a body may nest", () => {
    expect(bodyDepthProblem(nest(100, "object"))).toEqual({
      param: "body",
      message: `The body nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels; a body may nest at most ${MAX_BODY_DEPTH}.`,
      note: "Send one JSON object with the parameters of the call; none of them nests more than two levels.",
    });
    expect(bodyDepthProblem('{"platform":"x","query":"coffee"}')).toBeNull();
  });
});

describe("admitRequest refuses a body nested too deep (D112)", () => {
  it.each(BODY_OPERATIONS.map((o) => [o.operationId, o] as const))(
    "%s: at the top or in any parameter, arrays, objects or both → invalid_params naming body",
    (_id, op) => {
      fc.assert(
        fc.property(deepBody(op), (deep) => {
          const r = admitRequest(op.operationId as never, {
            rawQuery: "",
            headers: { "idempotency-key": "deep-1" },
            ...(op.pathParams["op"] ? { path: { op: "xiaohongshu.search" } } : {}),
            body: { contentType: "application/json", text: deep.text },
          });
          expect(r.ok).toBe(false);
          if (!r.ok) expect(r.invalid.param, deep.text.slice(0, 80)).toBe("body");
          if (!r.ok) expect(r.invalid.message).toContain(`at most ${MAX_BODY_DEPTH}`);
        }),
        { numRuns: 40 },
      );
    },
  );

  it("takes every body nested up to the bound as before (its own checks decide)", () => {
    const text = JSON.stringify({ query: JSON.parse(nest(MAX_BODY_DEPTH - 1, "mixed")) });
    const r = admitRequest("findOperation", {
      rawQuery: "",
      headers: {},
      body: { contentType: "application/json", text },
    });
    expect(r.ok ? null : r.invalid.param).toBe("query");
  });
});
