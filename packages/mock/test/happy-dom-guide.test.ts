/**
 * The testing guide's vitest file (docs/guides/testing-with-the-mock.md), as written, under happy-dom: the
 * environment many frontend projects test in, whose fetch enforces CORS. The page (vitest's default
 * `http://localhost:3000`) calls the gateway at `https://api.example.test`, another origin, so happy-dom sends a
 * preflight (`OPTIONS`) before every call. Before D117 the mock had no `OPTIONS` handler: msw found none for the
 * preflight and, with the guide's `onUnhandledFrame: "error"`, failed it, so happy-dom's fetch threw a
 * `NetworkError` and all four tests failed (under node and jsdom, whose fetch is Node's own, there is no preflight).
 *
 * The block is saved as `sdgw.test.ts` in a scratch folder of this package (its msw, happy-dom) and run by vitest in
 * a child process with `environment: "happy-dom"`; `@sdgw/client` and `@sdgw/mock` resolve to this repository's
 * sources, as the guide's imports name them.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { parseGuide } from "../../../docs/guide-blocks.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const GUIDE = "docs/guides/testing-with-the-mock.md";
const DIR = join(ROOT, "packages/mock/.scratch", `happy-dom-guide-${process.pid}`);
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

const VITEST = join(createRequire(join(ROOT, "package.json")).resolve("vitest/package.json"), "..", "vitest.mjs");

const CONFIG = `import { defineConfig } from "vitest/config";
const src = (pkg) => ${JSON.stringify(ROOT)} + "packages/" + pkg + "/src/index.ts";
export default defineConfig({
  resolve: { alias: { "@sdgw/client": src("client"), "@sdgw/mock": src("mock") }, conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: { environment: "happy-dom", include: ["sdgw.test.ts"], testTimeout: 60_000, reporters: ["verbose"] },
});
`;

/** Runs vitest in `dir`; answers its exit code and what it printed. */
function vitest(dir: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [VITEST, "run", "--root", dir, "--config", join(dir, "vitest.config.mjs")], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d));
    child.stderr.on("data", (d: Buffer) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

it("the testing guide's four tests pass under happy-dom, as written", { timeout: 180_000 }, async () => {
  const guide = parseGuide(GUIDE, readFileSync(join(ROOT, GUIDE), "utf8"));
  const block = guide.blocks.find((b) => b.run === "vitest" && b.file === "sdgw.test.ts");
  expect(block, `${GUIDE} has a vitest block saved as sdgw.test.ts`).toBeDefined();
  // The guide's page calls another origin than happy-dom's: that is what makes happy-dom send preflights.
  expect(block!.code).toContain('baseUrl: "https://api.example.test"');
  mkdirSync(DIR, { recursive: true });
  writeFileSync(join(DIR, "sdgw.test.ts"), block!.code);
  writeFileSync(join(DIR, "vitest.config.mjs"), CONFIG);
  const { code, out } = await vitest(DIR);
  expect(out, out).toMatch(/Tests\s+4 passed \(4\)/);
  expect(out).not.toMatch(/NetworkError|Cross-Origin Request Blocked|without a matching request handler/);
  expect(code, out).toBe(0);
});
