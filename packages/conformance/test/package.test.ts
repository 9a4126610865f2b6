/** The published package: ESM and CJS builds of both entries with declarations, and a command with a shebang. */
import { existsSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../../../generators/src/testing/dist.ts";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(PKG, "dist");
type Api = typeof import("../src/index.ts");

beforeAll(() => ensureBuilt(PKG), 200_000);

describe("@sdgw/conformance dist", () => {
  it("has ESM, CJS and declarations of both entries, and the command", () => {
    for (const f of [
      "index.js",
      "index.cjs",
      "index.d.ts",
      "index.d.cts",
      "vitest.js",
      "vitest.cjs",
      "vitest.d.ts",
      "vitest.d.cts",
      "cli.js",
    ])
      expect(existsSync(join(DIST, f)), f).toBe(true);
    expect(readFileSync(join(DIST, "cli.js"), "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(statSync(join(DIST, "cli.js")).mode & 0o111).not.toBe(0);
    const pkg = JSON.parse(readFileSync(join(PKG, "package.json"), "utf8")) as { bin: Record<string, string> };
    expect(pkg.bin).toEqual({ "sdgw-conformance": "./dist/cli.js" });
  });

  it("imports as ESM and as CJS, without loading vitest", async () => {
    const esm = (await import(pathToFileURL(join(DIST, "index.js")).href)) as Api;
    const cjs = createRequire(join(PKG, "package.json"))(join(DIST, "index.cjs")) as Api;
    const { CHECKS } = await import("../src/index.ts");
    for (const api of [esm, cjs]) {
      expect(api.CHECKS.map((c) => c.id)).toEqual(CHECKS.map((c) => c.id));
      expect(typeof api.runConformance).toBe("function");
      await expect(api.runConformance({ baseUrl: "http://127.0.0.1:1/?key=x", key: "k" })).rejects.toThrow(
        /key in the base URL/,
      );
    }
    for (const f of ["index.js", "index.cjs"])
      expect(readFileSync(join(DIST, f), "utf8")).not.toMatch(/["']vitest["']/);
  });
});

describe("@sdgw/conformance README", () => {
  it("lists every check", async () => {
    const { CHECKS } = await import("../src/index.ts");
    const readme = readFileSync(join(PKG, "README.md"), "utf8");
    for (const c of CHECKS) expect(readme, c.id).toContain(`| \`${c.id}\` |`);
    expect(readme).toMatch(new RegExp(`\\b${CHECKS.length}\\s+checks\\b`));
  });
});
