/**
 * The built package works from both module systems: dist/index.js through `import`, dist/index.cjs through
 * `require`, with declarations for each. Builds dist first (tsup) when it is missing or older than src/, so the
 * test also works on a fresh clone.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { beforeAll, describe, expect, test } from "vitest";
import { DIST_OUTPUTS, ensureBuilt } from "../../../generators/src/testing/dist.ts";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(PKG, "dist");
const OUTPUTS = DIST_OUTPUTS;

beforeAll(() => ensureBuilt(PKG), 200_000);

describe("@sdgw/types dist", () => {
  test("has ESM, CJS and declarations for both", () => {
    for (const f of OUTPUTS) expect(existsSync(join(DIST, f)), f).toBe(true);
  });

  test("imports as ESM", async () => {
    const esm = (await import(pathToFileURL(join(DIST, "index.js")).href)) as typeof import("@sdgw/types");
    expect(esm.PLATFORMS.length).toBe(10);
    expect(esm.ERROR_CODES.length).toBe(19);
    expect(Object.keys(esm.ERROR_CATALOGUE)).toEqual([...esm.ERROR_CODES]);
  });

  test("requires as CJS", () => {
    const requireFromPkg = createRequire(join(PKG, "package.json"));
    const cjs = requireFromPkg(join(DIST, "index.cjs")) as typeof import("@sdgw/types");
    expect(cjs.PLATFORMS.length).toBe(10);
    expect(cjs.TOOL_NAMES.length).toBe(7);
  });

  test("the exports map sends import and require to dist, and source to src", () => {
    const requireFromPkg = createRequire(join(PKG, "package.json"));
    const pkg = requireFromPkg("./package.json") as { exports: Record<string, Record<string, unknown>> };
    const root = pkg.exports["."]!;
    expect(Object.keys(root)[0]).toBe("source");
    expect(root).toEqual({
      source: "./src/index.ts",
      import: { types: "./dist/index.d.ts", default: "./dist/index.js" },
      require: { types: "./dist/index.d.cts", default: "./dist/index.cjs" },
    });
  });
});
