/**
 * Release hygiene of every published package: built, then checked by publint (package.json and exports against
 * the files) and by @arethetypeswrong (types resolve for node10, node16 CJS and ESM, and bundlers).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { publint } from "publint";
import { describe, expect, it } from "vitest";
import { ROOT } from "./src/generate.ts";
import { ensureBuilt } from "./src/testing/dist.ts";

const packages = readdirSync(join(ROOT, "packages")).filter((p) =>
  existsSync(join(ROOT, "packages", p, "tsup.config.ts")),
);
const require = createRequire(import.meta.url);
const attwBin = join(require.resolve("@arethetypeswrong/cli/package.json"), "..", "dist", "index.js");

describe.each(packages)("@sdgw/%s", (name) => {
  const dir = join(ROOT, "packages", name);

  it("passes publint with no errors or warnings", async () => {
    ensureBuilt(dir);
    const { messages } = await publint({ pkgDir: dir, level: "warning", strict: true });
    expect(messages.map((m) => `${m.type} ${m.code} ${JSON.stringify(m.args)}`)).toEqual([]);
  }, 200_000);

  it("passes @arethetypeswrong/cli", () => {
    ensureBuilt(dir);
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
      name: string;
      exports?: Record<string, unknown>;
    };
    // A package whose exports offer no `require` condition ships ESM only (@sdgw/mock: msw 3 is ESM-only); attw's
    // esm-only profile checks it for node16 ESM and bundlers and skips the CommonJS resolutions it does not offer.
    const esmOnly = !JSON.stringify(pkg.exports?.["."] ?? {}).includes('"require"');
    let output = "";
    let status = 0;
    try {
      // --pack runs `npm pack` on the directory; the default profile checks node10, node16 (CJS and ESM) and bundler.
      const profile = esmOnly ? ["--profile", "esm-only"] : [];
      output = execFileSync(process.execPath, [attwBin, "--pack", dir, "--format", "ascii", "--no-color", ...profile], {
        encoding: "utf8",
        stdio: "pipe",
        timeout: 120_000,
        // attw packs with `npm pack`; the package was just built, so its `prepack` build is skipped.
        env: { ...process.env, npm_config_ignore_scripts: "true" },
      });
    } catch (e) {
      const err = e as { status: number; stdout: string; stderr: string };
      status = err.status;
      output = `${err.stdout}\n${err.stderr}`;
    }
    expect(status, `${pkg.name}:\n${output}`).toBe(0);
  }, 200_000);
});
