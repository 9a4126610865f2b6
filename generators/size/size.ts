/**
 * Bundle sizes of every package's main entry points, the way a user's bundler sees them: esbuild, bundle + minify,
 * ESM, gzip -9. Browser entries bundle everything they import (openapi-fetch, msw); Node entries (the server, the
 * conformance suite) bundle the workspace's code and leave third-party packages and Node built-ins external, since
 * those are installed, not shipped. Sources are bundled (the `source` condition), not dist/: no build, no race with
 * the tests that rebuild dist/.
 *
 * `size.test.ts` holds each entry to its budget in `budgets.json`; `pnpm size` prints the table.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** One entry point: what a user writes, in which package's folder (for its dependencies), for which platform. */
export interface SizeEntry {
  name: string;
  /** The package whose folder the entry resolves from. */
  pkg: string;
  /** The module the user writes; `PKG` stands for the package's source entry. */
  contents: string;
  platform: "browser" | "node";
}

export interface Size {
  name: string;
  platform: SizeEntry["platform"];
  /** Minified bytes. */
  min: number;
  /** Minified and gzip'd (-9) bytes; 0 when there is no code at all. */
  gzip: number;
}

const src = (pkg: string, file = "index.ts") => JSON.stringify(join(ROOT, "packages", pkg, "src", file));

export const ENTRIES: SizeEntry[] = [
  {
    name: "@sdgw/client createClient",
    pkg: "client",
    contents: `export { createClient } from ${src("client")};`,
    platform: "browser",
  },
  {
    name: "@sdgw/client (everything)",
    pkg: "client",
    contents: `export * from ${src("client")};`,
    platform: "browser",
  },
  {
    name: "@sdgw/validators validateSearchEnvelope",
    pkg: "validators",
    contents: `export { validateSearchEnvelope } from ${src("validators")};`,
    platform: "browser",
  },
  {
    name: "@sdgw/validators validateSearchQuery",
    pkg: "validators",
    contents: `export { validateSearchQuery, parseQuery, OPERATIONS } from ${src("validators")};`,
    platform: "browser",
  },
  {
    name: "@sdgw/validators (everything)",
    pkg: "validators",
    contents: `export * from ${src("validators")};`,
    platform: "browser",
  },
  {
    name: "@sdgw/engine (everything)",
    pkg: "engine",
    contents: `export * from ${src("engine")};`,
    platform: "browser",
  },
  {
    name: "@sdgw/mock createMock",
    pkg: "mock",
    contents: `export { createMock } from ${src("mock")};`,
    platform: "browser",
  },
  {
    name: "@sdgw/types (types only)",
    pkg: "types",
    contents:
      `import type { components, operations } from ${src("types")};\nexport type Envelope = ` +
      `components["schemas"]["SearchEnvelope"];\nexport type Ops = operations;`,
    platform: "browser",
  },
  { name: "@sdgw/types (everything)", pkg: "types", contents: `export * from ${src("types")};`, platform: "browser" },
  {
    name: "@sdgw/server createServer",
    pkg: "server",
    contents: `export { createServer } from ${src("server")};`,
    platform: "node",
  },
  {
    name: "@sdgw/conformance runConformance",
    pkg: "conformance",
    contents: `export { runConformance } from ${src("conformance")};`,
    platform: "node",
  },
  {
    name: "@sdgw/conformance/vitest",
    pkg: "conformance",
    contents: `export * from ${src("conformance", "vitest.ts")};`,
    platform: "node",
  },
];

/** The part of esbuild's API used here (esbuild is a devDependency of the packages, not of the root). */
interface Esbuild {
  version: string;
  build(options: Record<string, unknown> & { write: false }): Promise<{ outputFiles: Array<{ contents: Uint8Array }> }>;
}
const esbuild = createRequire(join(ROOT, "packages/validators/package.json"))("esbuild") as Esbuild;
export const ESBUILD_VERSION = esbuild.version;

/** Leaves every bare import but the workspace's own (`@sdgw/…`) to be installed. */
const thirdPartyExternal = {
  name: "third-party-external",
  setup(b: { onResolve(o: { filter: RegExp }, cb: (a: { path: string }) => { external: boolean } | undefined): void }) {
    b.onResolve({ filter: /^[^./]/ }, (a) => (a.path.startsWith("@sdgw/") ? undefined : { external: true }));
  },
};

/** Bundles one entry and measures it. */
export async function measure(entry: SizeEntry): Promise<Size> {
  const r = await esbuild.build({
    stdin: {
      contents: entry.contents,
      resolveDir: join(ROOT, "packages", entry.pkg),
      sourcefile: "size-entry.ts",
      loader: "ts",
    },
    bundle: true,
    minify: true,
    format: "esm",
    platform: entry.platform,
    target: "es2022",
    conditions: ["source"],
    legalComments: "none",
    logLevel: "silent",
    write: false,
    plugins: entry.platform === "node" ? [thirdPartyExternal] : [],
  });
  const code = r.outputFiles[0]!.contents;
  const empty = new TextDecoder().decode(code).trim() === "";
  return {
    name: entry.name,
    platform: entry.platform,
    min: empty ? 0 : code.length,
    gzip: empty ? 0 : gzipSync(code, { level: 9 }).length,
  };
}

/**
 * Measures what a built package ships (the packages' dist tests): the named entry with `built` (a dist file) in
 * place of the package's source entry. Answers the size and the entry's budget.
 */
export async function measureBuilt(name: string, built: string): Promise<{ size: Size; budget: number }> {
  const entry = ENTRIES.find((e) => e.name === name);
  if (!entry) throw new Error(`no size entry ${name}`);
  const source = src(entry.pkg);
  if (!entry.contents.includes(source)) throw new Error(`${name} does not import ${source}`);
  const size = await measure({
    ...entry,
    name: `${name} (dist)`,
    contents: entry.contents.replace(source, JSON.stringify(built)),
  });
  return { size, budget: budgets()[name]! };
}

/** The budgets (bytes, min+gzip) by entry name. */
export function budgets(): Record<string, number> {
  const file = JSON.parse(readFileSync(fileURLToPath(new URL("./budgets.json", import.meta.url)), "utf8")) as {
    budgets: Record<string, number>;
  };
  return file.budgets;
}

export const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

/** One line of the table. */
export function formatSize(s: Size, budget: number | undefined): string {
  const pad = (t: string, w: number) => t.padEnd(w);
  const lpad = (t: string, w: number) => t.padStart(w);
  const over = budget !== undefined && s.gzip > budget ? "  OVER BUDGET" : "";
  return (
    `${pad(s.name, 42)} ${pad(s.platform, 8)} ${lpad(String(s.min), 8)} B ` +
    `min ${lpad(String(s.gzip), 7)} B gzip (${lpad(kb(s.gzip), 9)})   ` +
    `budget ${budget === undefined ? "-" : `${budget} B`}${over}`
  );
}

if (import.meta.main) {
  const b = budgets();
  console.log(`esbuild ${esbuild.version}: bundle + minify, ESM, es2022; gzip -9`);
  for (const e of ENTRIES) console.log(formatSize(await measure(e), b[e.name]));
}
