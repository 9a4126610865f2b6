/**
 * The shipped bundle: imports under plain Node ESM and CommonJS and in a browser bundle, carries no schema
 * compiler, no eval and no require() in its ESM build, and validates like the source.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { runInNewContext } from "node:vm";
import { build } from "esbuild";
import { beforeAll, describe, expect, it } from "vitest";
import { measureBuilt } from "../../../generators/size/size.ts";
import { DIST_OUTPUTS, ensureBuilt } from "../../../generators/src/testing/dist.ts";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(PKG, "dist");
type Api = typeof import("../src/index.ts");

const fixture = JSON.parse(
  readFileSync(fileURLToPath(new URL("../../../fixtures/search/ok-xiaohongshu.json", import.meta.url)), "utf8"),
);
const broken = { ...fixture, fetched_at: "2025-02-30T00:00:00Z" };

beforeAll(() => ensureBuilt(PKG), 200_000);

describe("@sdgw/validators dist", () => {
  it("has ESM, CJS and declarations for both", () => {
    for (const f of DIST_OUTPUTS) expect(readFileSync(join(DIST, f)).length, f).toBeGreaterThan(0);
  });

  it("ships no compiler, no eval, no new Function, and no require() in the ESM build", () => {
    const esm = readFileSync(join(DIST, "index.js"), "utf8");
    const cjs = readFileSync(join(DIST, "index.cjs"), "utf8");
    // ajv's runtime helpers carry their own source as a string (`.code = 'require("ajv/dist/runtime/…")'`): only
    // calls outside string literals count.
    const call = (name: string) => new RegExp(`(?<![\\w'"])${name}\\(`);
    for (const code of [esm, cjs]) {
      expect(call("eval").test(code), "eval(").toBe(false);
      expect(/new Function\(/.test(code), "new Function(").toBe(false);
      expect(/["']ajv["']|ajv\/dist\/(core|compile)/.test(code), "an import of ajv's compiler").toBe(false);
    }
    expect(call("require").test(esm), "require( in the ESM build").toBe(false);
  });

  it("imports as ESM and validates", async () => {
    const api = (await import(pathToFileURL(join(DIST, "index.js")).href)) as Api;
    expect(api.validateSearchEnvelope(fixture).ok).toBe(true);
    expect(api.validateSearchEnvelope(broken).ok).toBe(false);
  });

  it("requires as CJS and validates", () => {
    const api = createRequire(join(PKG, "package.json"))(join(DIST, "index.cjs")) as Api;
    expect(api.isSearchEnvelope(fixture)).toBe(true);
    expect(api.isSearchEnvelope(broken)).toBe(false);
  });

  it("bundles for a browser and runs with no Node globals", async () => {
    const out = await build({
      stdin: {
        contents:
          `import { isSearchEnvelope } from ${JSON.stringify(join(DIST, "index.js"))}; ` +
          `globalThis.result = [isSearchEnvelope(globalThis.good), isSearchEnvelope(globalThis.bad)];`,
        resolveDir: PKG,
      },
      bundle: true,
      platform: "browser",
      format: "iife",
      write: false,
    });
    const code = out.outputFiles[0]!.text;
    const sandbox: Record<string, unknown> = { good: fixture, bad: broken };
    sandbox["globalThis"] = sandbox;
    runInNewContext(code, sandbox);
    expect(sandbox["result"]).toEqual([true, false]);
  });

  it("tree-shakes: validateSearchEnvelope alone from the built bundle is within its budget", async () => {
    const { size, budget } = await measureBuilt("@sdgw/validators validateSearchEnvelope", join(DIST, "index.js"));
    console.log(`validateSearchEnvelope alone (dist): ${size.gzip} bytes min+gzip (budget ${budget})`);
    expect(size.gzip).toBeLessThanOrEqual(budget);
  });
});
