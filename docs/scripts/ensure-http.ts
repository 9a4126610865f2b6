/**
 * `pnpm start`'s first step after the console's build: builds the HTTP reference that the server serves at `/docs`
 * (`pnpm run docs:http`, a few seconds) when it is not built yet, so `/docs` opens on the first start. When the
 * build fails (a broken install), says so with the commands to run by hand, and lets the server start anyway: its
 * banner and `/docs` then say the same.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");

if (!existsSync(join(ROOT, "docs", "http", "errors.html"))) {
  console.log("Building the HTTP reference served at /docs (first start only, a few seconds)…");
  // The pnpm that runs `pnpm start` (npm_execpath: pnpm 12's own executable, or a script run by this Node), so the
  // npx toolchain stays the one in use.
  const pnpm = process.env["npm_execpath"];
  const args = ["--silent", "run", "docs:http"];
  try {
    if (!pnpm) execFileSync("pnpm", args, { cwd: ROOT, stdio: "inherit", shell: true });
    else if (/\.[cm]?js$/.test(pnpm)) execFileSync(process.execPath, [pnpm, ...args], { cwd: ROOT, stdio: "inherit" });
    else execFileSync(pnpm, args, { cwd: ROOT, stdio: "inherit" });
  } catch {
    console.error(
      "The HTTP reference could not be built; /docs stays unavailable. Build it by hand in the repository: " +
        "`npx -y -p node@24 -p pnpm@12 -- pnpm run docs` (a machine whose Node is 20) or `pnpm run docs` (Node 24).",
    );
  }
}
