/**
 * The published mock: an ESM-only build (msw 3 is ESM-only) that imports and answers in Node, declares no
 * `require` condition, and bundles for a browser with no Node built-in and no file read: the fixtures and the
 * OpenAPI document are data inside it.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const PKG = fileURLToPath(new URL("..", import.meta.url));
// A build of its own (not dist/, which the release test rebuilds in another worker), inside the package so that
// its imports (msw, @sdgw/validators) resolve from the package's node_modules.
const OUT = join(PKG, "node_modules", ".cache", `dist-test-${process.pid}`);
type Api = typeof import("../src/index.ts");

beforeAll(() => {
  mkdirSync(OUT, { recursive: true });
  // The package's own tsup and tsup.config.ts, run by this very Node, into OUT.
  const require = createRequire(join(PKG, "package.json"));
  const tsupPkg = require.resolve("tsup/package.json");
  const bin = (require("tsup/package.json") as { bin: Record<string, string> }).bin["tsup"]!;
  execFileSync(process.execPath, [join(tsupPkg, "..", bin), "--out-dir", OUT, "--silent"], {
    cwd: PKG,
    stdio: "pipe",
    timeout: 180_000,
  });
}, 200_000);
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

describe("@sdgw/mock dist", () => {
  it("is ESM only, with declarations, and says so in package.json", () => {
    expect(readdirSync(OUT).sort()).toEqual(["index.d.ts", "index.js"]);
    const pkg = JSON.parse(readFileSync(join(PKG, "package.json"), "utf8"));
    expect(pkg.type).toBe("module");
    expect(Object.keys(pkg.exports["."])).toEqual(["source", "import"]);
    expect(pkg.main).toBeUndefined();
    expect(pkg.peerDependencies.msw).toMatch(/^\^3\./);
  });

  it("imports in Node and answers through setupServer", async () => {
    const api = (await import(pathToFileURL(join(OUT, "index.js")).href)) as Api;
    const mock = api.createMock({ baseUrl: "http://dist.test" });
    const server = setupServer(...mock.handlers);
    server.listen({ onUnhandledFrame: "error" });
    try {
      const res = await fetch("http://dist.test/v1/search?platform=weibo&query=a", {
        headers: { "X-API-Key": "sdgw_test_key", "Idempotency-Key": "dist-1" },
      });
      expect([res.status, ((await res.json()) as { platform: string }).platform]).toEqual([200, "weibo"]);
    } finally {
      server.close();
    }
  });

  it("bundles for a browser with msw/browser: no Node built-in, no file read", async () => {
    const out = await build({
      stdin: {
        contents:
          `import { setupWorker } from "msw/browser"; import { createMock } ` +
          `from ${JSON.stringify(join(OUT, "index.js"))}; export const worker = setupWorker(...createMock().handlers);`,
        resolveDir: PKG,
      },
      bundle: true,
      minify: true,
      format: "esm",
      platform: "browser",
      // The workspace packages' sources (their dist may not be built yet in a fresh clone).
      conditions: ["source"],
      write: false,
      logLevel: "silent",
    });
    const text = out.outputFiles[0]!.text;
    expect(text).not.toMatch(/\bnode:(fs|path|url|module)\b|readFileSync/);
    const size = gzipSync(out.outputFiles[0]!.contents, { level: 9 }).length;
    console.log(`@sdgw/mock + msw/browser bundle: ${(size / 1024).toFixed(0)} KB min+gzip`);
  });
});
