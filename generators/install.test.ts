/**
 * The dry-run release: every package is built and packed exactly as `pnpm publish` would pack it (workspace
 * ranges rewritten), the tarballs are installed together into a fresh project from the registry, and each package
 * is imported there by name under ESM and (where it ships CJS) CommonJS — on Node 24, and on Node 20 for the
 * packages that declare Node >= 20.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "./src/generate.ts";
import { ensureBuilt } from "./src/testing/dist.ts";

interface Pkg {
  dir: string;
  name: string;
  cjs: boolean;
  node20: boolean;
}
const packages: Pkg[] = readdirSync(join(ROOT, "packages"))
  .map((d) => join(ROOT, "packages", d))
  .filter((dir) => {
    try {
      readFileSync(join(dir, "tsup.config.ts"));
      return true;
    } catch {
      return false;
    }
  })
  .map((dir) => {
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name: string; exports: Record<string, Record<string, unknown>>; engines?: { node?: string } };
    return { dir, name: pkg.name, cjs: "require" in (pkg.exports["."] ?? {}), node20: pkg.engines?.node === ">=20" };
  });

const work = mkdtempSync(join(tmpdir(), "sdgw-install-"));
const app = join(work, "app");
const sh = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: "pipe", timeout: 240_000 });

beforeAll(() => {
  const tarballs: string[] = [];
  for (const p of packages) {
    ensureBuilt(p.dir);
    // pnpm pack rewrites `workspace:*` to the real version, as publishing does.
    const out = sh("pnpm", ["pack", "--pack-destination", work], p.dir).trim().split("\n");
    tarballs.push(out.find((l) => l.endsWith(".tgz"))!.trim());
  }
  sh("mkdir", ["-p", app], work);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "fresh-project", private: true, version: "0.0.0" }));
  sh("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", ...tarballs.map((t) => (t.startsWith("/") ? t : join(work, t)))], app);
}, 300_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

const probe = (name: string, how: "esm" | "cjs") =>
  how === "esm"
    ? `import(${JSON.stringify(name)}).then((m) => console.log(Object.keys(m).length))`
    : `console.log(Object.keys(require(${JSON.stringify(name)})).length)`;

describe.each(packages.map((p) => [p.name, p] as const))("%s, packed and installed in a fresh project", (_name, p) => {
  it("imports by name under ESM on this Node", () => {
    const out = sh(process.execPath, ["--input-type=module", "-e", probe(p.name, "esm")], app);
    expect(Number(out.trim())).toBeGreaterThan(0);
  });

  it.runIf(p.cjs)("requires by name under CommonJS on this Node", () => {
    const out = sh(process.execPath, ["-e", probe(p.name, "cjs")], app);
    expect(Number(out.trim())).toBeGreaterThan(0);
  });
});

describe("on Node 20, the oldest Node the published SDK packages support", () => {
  const node20 = packages.filter((p) => p.node20);

  it("imports and requires " + node20.map((p) => p.name).join(", "), () => {
    const script = node20.map((p) => `${probe(p.name, "cjs")};`).join("\n") + node20.map((p) => `\nimport(${JSON.stringify(p.name)}).then((m) => console.log(Object.keys(m).length));`).join("");
    // Node 20 from the npm registry's `node` package (the machine may have no Node 20 of its own).
    const out = sh("npx", ["-y", "-p", "node@20", "--", "node", "-e", `console.log(process.version);${script}`], app).trim().split("\n");
    expect(out[0]).toMatch(/^v20\./);
    expect(out.slice(1).map(Number).every((n) => n > 0)).toBe(true);
    expect(out).toHaveLength(1 + 2 * node20.length);
  }, 240_000);
});
