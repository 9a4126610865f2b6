/** Test helper: builds the console with its own Vite config (the `vite build` of `pnpm --filter @sdgw/console build`). */
import { execFileSync } from "node:child_process";
import { existsSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const PKG = fileURLToPath(new URL("..", import.meta.url));

/**
 * Runs `vite build` for packages/console into `outDir` (default its dist/, which @sdgw/server serves). The build is
 * written beside `outDir` and swapped in by renames: console test files run in parallel workers, and one build must
 * never empty the folder another test's server is reading.
 */
export function buildConsole(outDir: string = join(PKG, "dist")): string {
  const vite = join(createRequire(join(PKG, "package.json")).resolve("vite/package.json"), "..", "bin", "vite.js");
  const fresh = `${outDir}.build-${process.pid}-${Date.now()}`;
  const old = `${outDir}.old-${process.pid}-${Date.now()}`;
  try {
    execFileSync(process.execPath, [vite, "build", "--outDir", fresh, "--emptyOutDir", "--logLevel", "error"], {
      cwd: PKG,
      stdio: ["ignore", "ignore", "inherit"],
    });
    // Another worker may swap its own build in between the two renames: then move that one aside too, and retry.
    for (let attempt = 0; ; attempt++) {
      if (existsSync(outDir)) renameSync(outDir, `${old}-${attempt}`);
      try {
        renameSync(fresh, outDir);
        break;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (attempt >= 5 || (code !== "ENOTEMPTY" && code !== "EEXIST")) throw e;
      }
    }
  } finally {
    rmSync(fresh, { recursive: true, force: true });
    for (let attempt = 0; attempt <= 5; attempt++) rmSync(`${old}-${attempt}`, { recursive: true, force: true });
  }
  return outDir;
}
