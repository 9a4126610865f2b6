/**
 * The packages as installed (packed by `pnpm pack`, unpacked as npm unpacks them: generators/src/testing/installed.ts):
 *
 * - **Strict projects** (issue 32): every TypeScript block of the READMEs and the guides compiles against the
 *   installed packages' declarations under `strict`, `exactOptionalPropertyTypes` and `noUncheckedIndexedAccess`
 *   (`createClient({ apiKey: process.env.X })`, where `?: T` would refuse the `undefined` a strict project has).
 * - **Size figures**: every size of a package that a README states (the root's and the library packages') is
 *   measured on the installed files the way that README says — a bundle of the named import by esbuild, minified,
 *   gzip -9, or the shipped file itself — and must agree with it within {@link TOLERANCE} (see `FIGURES`); a size
 *   in those READMEs that no figure measures fails the test unless it is listed as no package's size.
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
function typescriptBlocks(file: string): Block[] {
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

// ---------------------------------------------------------------------------------------------------------------
// Size figures
// ---------------------------------------------------------------------------------------------------------------

/** The part of esbuild's API used here (a devDependency of the packages, as in generators/size/size.ts). */
interface Esbuild {
  build(options: Record<string, unknown> & { write: false }): Promise<{ outputFiles: Array<{ contents: Uint8Array }> }>;
}
const esbuild = createRequire(join(ROOT, "packages/validators/package.json"))("esbuild") as Esbuild;

/** What a user's bundler ships of `contents` (imports resolved in the installed project): minified, and gzip -9. */
async function bundled(contents: string): Promise<{ min: number; gzip: number }> {
  const r = await esbuild.build({
    stdin: { contents, resolveDir: installed.dir, sourcefile: "entry.js", loader: "js" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    legalComments: "none",
    logLevel: "silent",
    write: false,
  });
  const code = r.outputFiles[0]!.contents;
  return { min: code.length, gzip: gzipSync(code, { level: 9 }).length };
}

/** An installed file's bytes, and gzip -9 of them. */
function file(pkg: string, path: string): { min: number; gzip: number } {
  const bytes = readFileSync(join(installed.pkg(pkg), path));
  return { min: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
}

/** Bytes per unit as the READMEs write them: KB and MB are decimal, KiB and MiB binary. */
const UNITS: Record<string, number> = { B: 1, KB: 1000, KiB: 1024, MB: 1_000_000, MiB: 1024 * 1024 };

/** A size a README states: where, the text (its first group the number, its second the unit), what it measures. */
interface Figure {
  file: string;
  pattern: RegExp;
  /** What the figure is the size of, in bytes, measured on the installed packages the way the README says. */
  measure: () => Promise<number>;
}

/**
 * How far a figure may be from what is measured: 3 % of the measured size, plus half a unit of the figure's last
 * digit (`1.0 MiB` stands for 0.95–1.05 MiB; `4,049 B` for itself).
 */
const TOLERANCE = 0.03;

const once = <T>(f: () => Promise<T>) => {
  let p: Promise<T> | undefined;
  return () => (p ??= f());
};
const clientCore = once(() => bundled(`export { createClient } from "@sdgw/client";`));
const envelope = once(() => bundled(`export { validateSearchEnvelope } from "@sdgw/validators";`));
const query = once(() => bundled(`export { validateSearchQuery, parseQuery, OPERATIONS } from "@sdgw/validators";`));
const everything = once(() => bundled(`export * from "@sdgw/validators";`));
const dist = once(async () => file("@sdgw/validators", "dist/index.js"));

/** Every size figure of the READMEs that is a size of a package, and how it is measured. */
const FIGURES: Figure[] = [
  // The client's core import, openapi-fetch included: what `import { createClient }` adds to a browser bundle.
  { file: "README.md", pattern: /the SDK \(([\d.,]+) (KB) min\+gzip/, measure: async () => (await clientCore()).gzip },
  {
    file: "packages/client/README.md",
    pattern: /in browsers; ([\d.,]+) (B) min\+gzip/,
    measure: async () => (await clientCore()).gzip,
  },
  // The validators: one validator alone, three exports, everything; the shipped file itself.
  {
    file: "packages/validators/README.md",
    pattern: /alone keeps only its code \(about ([\d.,]+) (KB) min\+gzip\)/,
    measure: async () => (await envelope()).gzip,
  },
  {
    file: "packages/validators/README.md",
    pattern: /\| `validateSearchEnvelope` alone \| ([\d.,]+) (KiB) \|/,
    measure: async () => (await envelope()).min,
  },
  {
    file: "packages/validators/README.md",
    pattern: /\| `validateSearchEnvelope` alone \| [^|]+\| ([\d.,]+) (KiB)/,
    measure: async () => (await envelope()).gzip,
  },
  {
    file: "packages/validators/README.md",
    pattern: /\| `validateSearchQuery`, `parseQuery`, `OPERATIONS` \| ([\d.,]+) (KiB) \|/,
    measure: async () => (await query()).min,
  },
  {
    file: "packages/validators/README.md",
    pattern: /\| `validateSearchQuery`, `parseQuery`, `OPERATIONS` \| [^|]+\| ([\d.,]+) (KiB)/,
    measure: async () => (await query()).gzip,
  },
  {
    file: "packages/validators/README.md",
    pattern: /\| everything \(`export \*`\) \| ([\d.,]+) (KiB) \|/,
    measure: async () => (await everything()).min,
  },
  {
    file: "packages/validators/README.md",
    pattern: /\| everything \(`export \*`\) \| [^|]+\| ([\d.,]+) (KiB)/,
    measure: async () => (await everything()).gzip,
  },
  {
    file: "packages/validators/README.md",
    pattern: /shipped `dist\/index\.js` is ([\d.,]+) (MiB)/,
    measure: async () => (await dist()).min,
  },
  {
    file: "packages/validators/README.md",
    pattern: /shipped `dist\/index\.js` is [\d.]+ MiB \(([\d.,]+) (KiB) gzip\)/,
    measure: async () => (await dist()).gzip,
  },
];

/** Sizes in these READMEs that are no size of a package, and why they are not measured here. */
const NOT_PACKAGE_SIZES: { file: string; pattern: RegExp; why: string }[] = [
  { file: "README.md", pattern: /more than (64 MiB)/, why: "the soak test's bound on the server's memory" },
  {
    file: "packages/mock/README.md",
    pattern: /an answer over about (60 KB) comes as its first rows/,
    why: "the bound of one MCP tool answer (fitAnswer), not a package's size",
  },
  {
    file: "packages/client/README.md",
    pattern: /keeps it ≤ (4,096 B)/,
    why: "the budget (generators/size/budgets.json)",
  },
  {
    file: "packages/validators/README.md",
    pattern: /\((budget 15 KiB); (24 KiB) before issue 18\)/,
    why: "the budget of the sources and a size of the past",
  },
  { file: "packages/validators/README.md", pattern: /\((68\.2 KiB) before\)/, why: "a size of the past" },
  {
    file: "packages/validators/README.md",
    pattern: /once per operation \((2\.3 MB)\)/,
    why: "the code of a design not taken",
  },
];

/** The READMEs of the packages measured here, and the root's. The server's and the console's state sizes of
 * answers, logs and the console's pages (held by packages/console/test/budget.test.ts), none of a package. */
const SIZE_READMES = [
  "README.md",
  ...["client", "validators", "mock", "types", "engine", "conformance"].map((p) => `packages/${p}/README.md`),
];
const SIZE = /\d[\d,.]*\s?(?:B|KB|kB|KiB|MB|MiB)\b/g;

/** A figure's bytes, and half a unit of its last digit. */
function parseFigure(number: string, unit: string): { bytes: number; rounding: number } {
  const plain = number.replace(/,/g, "");
  const decimals = plain.includes(".") ? plain.split(".")[1]!.length : 0;
  const scale = UNITS[unit];
  if (!scale) throw new Error(`unknown unit ${unit}`);
  return { bytes: Number(plain) * scale, rounding: (0.5 * scale) / 10 ** decimals };
}

describe(`the READMEs' size figures, measured on the installed packages (within ${TOLERANCE * 100} %)`, () => {
  it("every size in these READMEs is a figure measured here, or said not to be a package's", () => {
    for (const readme of SIZE_READMES) {
      const text = readFileSync(join(ROOT, readme), "utf8");
      const claimed: [number, number][] = [];
      for (const { pattern } of [...FIGURES, ...NOT_PACKAGE_SIZES].filter((f) => f.file === readme)) {
        const m = pattern.exec(text);
        expect(m, `${readme} no longer says ${pattern}: update generators/installed.test.ts`).not.toBeNull();
        claimed.push([m!.index, m!.index + m![0].length]);
      }
      for (const m of text.matchAll(SIZE)) {
        const line = text.slice(0, m.index).split("\n").length;
        const inside = claimed.some(([a, b]) => m.index >= a && m.index < b);
        expect(inside, `${readme}:${line}: "${m[0]}" is a size no figure here measures (add it to FIGURES)`).toBe(true);
      }
    }
  });

  it.each(FIGURES.map((f) => [`${f.file} ${f.pattern.source.slice(0, 50)}`, f] as const))(
    "%s",
    async (_name, figure) => {
      const text = readFileSync(join(ROOT, figure.file), "utf8");
      const m = figure.pattern.exec(text);
      expect(m, `${figure.file} no longer says ${figure.pattern}`).not.toBeNull();
      const { bytes, rounding } = parseFigure(m![1]!, m![2]!);
      const measured = await figure.measure();
      const allowed = TOLERANCE * measured + rounding;
      console.log(`${figure.file}: "${m![0]}" → ${Math.round(bytes)} B stated, ${measured} B measured`);
      expect(
        Math.abs(bytes - measured),
        `${figure.file}: "${m![0]}" says ${Math.round(bytes)} B; the installed package ` +
          `measures ${measured} B (${(measured / UNITS[m![2]!]!).toFixed(2)} ${m![2]}): update the figure`,
      ).toBeLessThanOrEqual(allowed);
    },
    120_000,
  );
});
