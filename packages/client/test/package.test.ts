/**
 * The published client: ESM and CJS builds that import and work, and the size budget of the core import
 * (openapi-fetch included), minified and gzipped: at most 4 KB, as generators/size/budgets.json says for the sources.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { measureBuilt } from "../../../generators/size/size.ts";
import { DIST_OUTPUTS, ensureBuilt } from "../../../generators/src/testing/dist.ts";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(PKG, "dist");
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

  it("keeps the built core import within its budget, openapi-fetch included", async () => {
    const { size, budget } = await measureBuilt("@sdgw/client createClient", join(DIST, "index.js"));
    console.log(`@sdgw/client core import (dist): ${size.gzip} bytes min+gzip (budget ${budget})`);
    expect(size.gzip).toBeLessThanOrEqual(budget);
  });
});
