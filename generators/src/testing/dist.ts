/**
 * Test helper for the packages' dist tests: builds a package with tsup when its dist is missing or older than its
 * sources, so the tests work on a fresh clone and never test a stale build.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

/** The files tsup writes for a package with one `index` entry in ESM and CJS with declarations (ESM-only packages have fewer: see {@link distOutputs}). */
export const DIST_OUTPUTS = ["index.js", "index.cjs", "index.d.ts", "index.d.cts"] as const;

function newest(dir: string): number {
  return Math.max(
    0,
    ...readdirSync(dir, { withFileTypes: true }).map((e) =>
      e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs,
    ),
  );
}

/** The built files a package's `exports["."]` points to (its `import` and `require` conditions). */
export function distOutputs(pkgDir: string): string[] {
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as {
    exports: Record<string, Record<string, unknown>>;
  };
  const root = pkg.exports["."] ?? {};
  const files = ["import", "require"].flatMap((c) =>
    Object.values((root[c] as Record<string, string> | undefined) ?? {}),
  );
  return files.map((f) => join(pkgDir, f));
}

/** The files a package's `bin` points to. */
function binOutputs(pkgDir: string): string[] {
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as {
    bin?: string | Record<string, string>;
  };
  const bin = pkg.bin === undefined ? [] : typeof pkg.bin === "string" ? [pkg.bin] : Object.values(pkg.bin);
  return bin.map((f) => join(pkgDir, f));
}

export function needsBuild(pkgDir: string): boolean {
  const outputs = [...distOutputs(pkgDir), ...binOutputs(pkgDir)];
  if (!outputs.every((f) => existsSync(f))) return true;
  const oldestOutput = Math.min(...outputs.map((f) => statSync(f).mtimeMs));
  const inputs = [
    newest(join(pkgDir, "src")),
    ...["package.json", "tsup.config.ts"].map((f) => statSync(join(pkgDir, f)).mtimeMs),
  ];
  return Math.max(...inputs) > oldestOutput;
}

/**
 * Builds `pkgDir` with its own tsup, run by this very Node (a `.bin` shim would take the first `node` on PATH).
 * Test files in other workers may ask for the same package at once: one builds while the others wait on a lock
 * folder (tsup's `clean` would delete the dist another one reads), then find it built.
 */
export function ensureBuilt(pkgDir: string): void {
  if (!needsBuild(pkgDir)) return;
  const lock = join(pkgDir, ".dist-build.lock");
  const deadline = Date.now() + 240_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      // A lock older than any build is left by a killed run.
      const since = existsSync(lock) ? statSync(lock, { throwIfNoEntry: false })?.mtimeMs : undefined;
      if (since !== undefined && Date.now() - since > 200_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`${pkgDir}: another build held ${lock} for 4 minutes`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    if (!needsBuild(pkgDir)) return;
    const requireFromPkg = createRequire(join(pkgDir, "package.json"));
    const tsupPkg = requireFromPkg.resolve("tsup/package.json");
    const bin = (requireFromPkg("tsup/package.json") as { bin: Record<string, string> }).bin["tsup"]!;
    execFileSync(process.execPath, [join(tsupPkg, "..", bin)], { cwd: pkgDir, stdio: "pipe", timeout: 180_000 });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
