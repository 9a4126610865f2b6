/**
 * Shared by the tests of D112 (here, the reference server's and the mock's): hostile JSON bodies nested deeper than
 * `MAX_BODY_DEPTH`, for every operation of the contract that takes a body (from the generated table, so a new body
 * route is covered without editing the tests), as fast-check arbitraries.
 */
import fc from "fast-check";
import { MAX_BODY_DEPTH, OPERATIONS, type OperationInfo } from "../src/index.ts";

/** Every operation of the contract with a JSON body. */
export const BODY_OPERATIONS: readonly OperationInfo[] = Object.values(OPERATIONS).filter((o) => o.body !== null);

/** The path of an operation with its path parameters filled in validly (`/v1/call/{op}`). */
export function pathOf(op: OperationInfo): string {
  return op.path.replace("{op}", "xiaohongshu.search");
}

/** How a deep value nests: arrays only, objects only, or both in turn. */
export type Shape = "array" | "object" | "mixed";

/** JSON text of `depth` nested arrays and/or objects around `inner` (built without recursion). */
export function nest(depth: number, shape: Shape, inner = "1"): string {
  const open: string[] = [];
  const close: string[] = [];
  for (let i = 0; i < depth; i++) {
    const array = shape === "array" || (shape === "mixed" && i % 2 === 0);
    open.push(array ? "[" : '{"a":');
    close.push(array ? "]" : "}");
  }
  return open.join("") + inner + close.reverse().join("");
}

/** A hostile body of an operation: its text, and where the deep value stands (`body` or a parameter's name). */
export interface DeepBody {
  where: string;
  depth: number;
  shape: Shape;
  text: string;
}

/**
 * Bodies of `op` nested deeper than `MAX_BODY_DEPTH` (up to 5 000 levels, a few KB): the whole body, or the value of
 * one of the operation's own parameters beside `base` (valid parameters, when given), as arrays, objects or both.
 */
export function deepBody(op: OperationInfo, base: Record<string, unknown> = {}): fc.Arbitrary<DeepBody> {
  const params = Object.keys(op.body?.params ?? {});
  return fc
    .record({
      where: fc.constantFrom("body", ...params),
      depth: fc.oneof(
        fc.integer({ min: MAX_BODY_DEPTH + 1, max: MAX_BODY_DEPTH + 3 }),
        fc.integer({ min: MAX_BODY_DEPTH + 1, max: 5000 }),
      ),
      shape: fc.constantFrom<Shape>("array", "object", "mixed"),
    })
    .map(({ where, depth, shape }) => {
      if (where === "body") return { where, depth, shape, text: nest(depth, shape) };
      // The body's own object is a level: the parameter's value nests one less.
      const others = JSON.stringify({ ...base, [where]: null });
      const text = others.replace(
        `${JSON.stringify(where)}:null`,
        `${JSON.stringify(where)}:${nest(depth - 1, shape)}`,
      );
      return { where, depth, shape, text };
    });
}
