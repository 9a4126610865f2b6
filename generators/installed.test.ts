/**
 * The packages as installed (packed by `pnpm pack`, unpacked as npm unpacks them: generators/src/testing/installed.ts):
 *
 * - **Strict projects** (issue 32): every TypeScript block of the READMEs and the guides compiles against the
 *   installed packages' declarations under `strict`, `exactOptionalPropertyTypes` and `noUncheckedIndexedAccess`
 *   (`createClient({ apiKey: process.env.X })`, where `?: T` would refuse the `undefined` a strict project has).
 * - **Size figures**: every size a README states is measured on the installed files, the way that README says it
 *   is measured, and must agree with it (see {@link FIGURES}).
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "./src/generate.ts";
import { installPacked, type InstalledPackages } from "./src/testing/installed.ts";

const run = promisify(execFile);
let installed: InstalledPackages;
beforeAll(async () => {
  installed = await installPacked();
  // What the examples import besides the packages: the test runner, msw, the MCP SDK, Node's types.
  installed.link("msw", join(ROOT, "packages/mock"));
  for (const name of ["vitest", "@modelcontextprotocol/client", "@types/node"]) installed.link(name);
}, 400_000);
afterAll(() => installed?.remove());

/** One fenced TypeScript block of a Markdown file. */
interface Block {
  where: string;
  code: string;
}

/** The `ts` blocks of a Markdown file, with the line each starts on. */
export function typescriptBlocks(file: string): Block[] {
  const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i]!)) continue;
    const start = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    blocks.push({ where: `${file}:${start}`, code: `${body.join("\n")}\n` });
  }
  return blocks;
}

const DOCS = [
  "README.md",
  ...readdirSync(join(ROOT, "packages"))
    .map((d) => `packages/${d}/README.md`)
    .filter((f) => statSync(join(ROOT, f), { throwIfNoEntry: false })?.isFile()),
  ...readdirSync(join(ROOT, "docs/guides"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/guides/${f}`),
];

/** The compiler settings of a strict project (on top of a library's usual: ESM, Node's and the DOM's types). */
const STRICT = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  target: "es2022",
  lib: ["es2023", "dom", "dom.iterable"],
  module: "nodenext",
  moduleResolution: "nodenext",
  moduleDetection: "force",
  types: ["node"],
  skipLibCheck: true,
  noEmit: true,
};

describe("the READMEs' and guides' TypeScript under strict settings", () => {
  const blocks = DOCS.flatMap(typescriptBlocks);

  it("finds the examples", () => {
    expect(blocks.length).toBeGreaterThan(20);
    expect(blocks.map((b) => b.where)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^packages\/client\/README\.md:/),
        expect.stringMatching(/^docs\/guides\/mcp\.md:/),
      ]),
    );
  });

  it("every block compiles with strict, exactOptionalPropertyTypes and noUncheckedIndexedAccess", {
    timeout: 300_000,
  }, async () => {
    const dir = join(installed.dir, "strict");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(dir, { recursive: true });
    const names = new Map<string, string>();
    blocks.forEach((b, n) => {
      const name = `${b.where.replace(/[^A-Za-z0-9]+/g, "_")}_${n}.ts`;
      names.set(name, b.where);
      writeFileSync(join(dir, name), b.code);
    });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: STRICT, include: ["*.ts"] }, null, 2));
    const tsc = join(createRequire(join(ROOT, "package.json")).resolve("typescript/package.json"), "..", "bin", "tsc");
    const result = await run(process.execPath, [tsc, "-p", dir, "--pretty", "false"], { cwd: dir }).then(
      () => "",
      (e: { stdout?: string }) => e.stdout ?? String(e),
    );
    // Name each error by the README or guide line it comes from.
    const errors = result
      .split("\n")
      .filter((l) => /error TS\d+/.test(l))
      .map((l) => {
        const m = /^(.+?\.ts)\((\d+),(\d+)\): (.*)$/.exec(l);
        if (!m) return l;
        const where = names.get(relative(dir, join(dir, m[1]!)));
        if (!where) return l;
        const [file, line] = where.split(":");
        return `${file}:${Number(line) + Number(m[2])}:${m[3]} ${m[4]}`;
      });
    expect(errors, errors.join("\n")).toEqual([]);
  });
});
