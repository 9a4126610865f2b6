/**
 * The published client: ESM and CJS builds that import and work, and the size budget of the core import
 * (openapi-fetch included), minified and gzipped: at most 4 KB.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { beforeAll, describe, expect, it } from "vitest";
import { DIST_OUTPUTS, ensureBuilt } from "../../../generators/src/testing/dist.ts";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(PKG, "dist");
const BUDGET = 4 * 1024;
type Api = typeof import("../src/index.ts");

beforeAll(() => ensureBuilt(PKG), 200_000);

describe("@sdgw/client dist", () => {
  it("has ESM, CJS and declarations for both", async () => {
    const { existsSync } = await import("node:fs");
    for (const f of DIST_OUTPUTS) expect(existsSync(join(DIST, f)), f).toBe(true);
  });

  it("imports as ESM and as CJS", async () => {
    const esm = (await import(pathToFileURL(join(DIST, "index.js")).href)) as Api;
    const cjs = createRequire(join(PKG, "package.json"))(join(DIST, "index.cjs")) as Api;
    for (const api of [esm, cjs]) {
      expect(typeof api.createClient).toBe("function");
      expect(() => api.createClient({ baseUrl: "http://127.0.0.1:1/?key=x" })).toThrow(/key in the URL/);
    }
  });

  it(`keeps the core import within ${BUDGET} bytes minified and gzipped, openapi-fetch included`, async () => {
    const out = await build({
      stdin: { contents: `export { createClient } from ${JSON.stringify(join(DIST, "index.js"))};`, resolveDir: PKG },
      bundle: true,
      minify: true,
      format: "esm",
      platform: "browser",
      write: false,
    });
    const size = gzipSync(out.outputFiles[0]!.contents, { level: 9 }).length;
    console.log(`@sdgw/client core import: ${size} bytes min+gzip (budget ${BUDGET})`);
    expect(size).toBeLessThanOrEqual(BUDGET);
  });
});
