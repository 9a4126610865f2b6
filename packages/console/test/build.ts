/** Test helper: builds the console with its own Vite config (the `vite build` of `pnpm --filter @sdgw/console build`). */
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const PKG = fileURLToPath(new URL("..", import.meta.url));

/** Runs `vite build` for packages/console into `outDir` (default its dist/, which @sdgw/server serves). */
export function buildConsole(outDir: string = join(PKG, "dist")): string {
  const vite = join(createRequire(join(PKG, "package.json")).resolve("vite/package.json"), "..", "bin", "vite.js");
  execFileSync(process.execPath, [vite, "build", "--outDir", outDir, "--emptyOutDir", "--logLevel", "error"], {
    cwd: PKG,
    stdio: ["ignore", "ignore", "inherit"],
  });
  return outDir;
}
