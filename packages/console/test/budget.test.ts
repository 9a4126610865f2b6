/**
 * The console's JavaScript budget (issue 17): the first page — the sign-in page, and the Playground a sign-in
 * lands on — loads at most 100 KB of gzip'd JavaScript. Measured on a fresh `vite build`: the entry script, every
 * chunk it imports statically, and the Playground's lazy chunks with theirs.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { buildConsole } from "./build.ts";

const out = mkdtempSync(join(tmpdir(), "sdgw-console-budget-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const BUDGET = 100 * 1024;

/** A chunk and every chunk it imports statically (`import … from "./x.js"`), by file name. */
function closure(dir: string, file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const text = readFileSync(join(dir, file), "utf8");
  for (const m of text.matchAll(/(?:^|[;}\s])import\s*(?:[\w${},*\s]+from\s*)?["']\.\/([\w.-]+\.js)["']/g))
    closure(dir, m[1]!, seen);
  return seen;
}

describe("the console's JavaScript budget", () => {
  it("keeps the sign-in page and the Playground under 100 KB of gzip'd JavaScript", () => {
    buildConsole(out);
    const html = readFileSync(join(out, "index.html"), "utf8");
    const entry = /<script type="module" crossorigin src="\/console\/assets\/([\w.-]+\.js)"/.exec(html)?.[1];
    expect(entry, html).toBeDefined();
    const assets = join(out, "assets");
    const files = readdirSync(assets);
    const first = closure(assets, entry!);
    const playground = files.find((f) => /^playground-[\w-]+\.js$/.test(f));
    expect(playground).toBeDefined();
    const signedIn = closure(assets, playground!, new Set(first));
    const gz = (set: Set<string>) =>
      [...set].reduce((n, f) => n + gzipSync(readFileSync(join(assets, f)), { level: 9 }).length, 0);
    const signInPage = gz(first);
    const withPlayground = gz(signedIn);
    console.log(
      `console JS (gzip): sign-in page ${(signInPage / 1024).toFixed(1)} KB (${first.size} files); ` +
        `with the Playground ${(withPlayground / 1024).toFixed(1)} KB (${signedIn.size} files); all ` +
        `chunks ${(gz(new Set(files.filter((f) => f.endsWith(".js")))) / 1024).toFixed(1)} KB`,
    );
    expect(signInPage).toBeLessThanOrEqual(BUDGET);
    expect(withPlayground).toBeLessThanOrEqual(BUDGET);
    // The pages name no other origin: no CDN, no font or script from elsewhere.
    for (const f of files) expect(readFileSync(join(assets, f), "utf8")).not.toMatch(/(?:src|href)=["']https?:\/\//);
  }, 60_000);
});
