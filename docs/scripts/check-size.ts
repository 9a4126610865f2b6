/**
 * The size budget of the built references: every page of `docs/reference/` (typedoc) and `docs/http/` (the HTTP
 * reference) at most 1 MB, and `docs/reference/` at most 30 MB in all. Run by `pnpm run docs` after the build; it
 * prints the total and the largest pages, and exits 1 over budget.
 */
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");
const PAGE_LIMIT = 1_000_000;
const TOTAL_LIMIT = 30_000_000;

function files(dir: string): { path: string; size: number }[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .map((path) => ({ path: relative(ROOT, path), size: statSync(path).size }));
}

const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;
let failed = false;
for (const [dir, totalLimit] of [
  ["docs/reference", TOTAL_LIMIT],
  ["docs/http", TOTAL_LIMIT],
] as const) {
  const all = files(join(ROOT, dir)).sort((a, b) => b.size - a.size);
  const total = all.reduce((n, f) => n + f.size, 0);
  const pages = all.filter((f) => f.path.endsWith(".html"));
  const over = pages.filter((f) => f.size > PAGE_LIMIT);
  console.log(`${dir}: ${all.length} files, ${mb(total)} (budget ${mb(totalLimit)}); largest pages:`);
  for (const f of pages.slice(0, 3)) console.log(`  ${mb(f.size)}  ${f.path}`);
  if (over.length) {
    failed = true;
    console.error(`${dir}: ${over.length} page(s) over ${mb(PAGE_LIMIT)}:`);
    for (const f of over) console.error(`  ${mb(f.size)}  ${f.path}`);
  }
  if (total > totalLimit) {
    failed = true;
    console.error(`${dir}: ${mb(total)} is over its budget of ${mb(totalLimit)}`);
  }
}
if (failed) process.exit(1);
