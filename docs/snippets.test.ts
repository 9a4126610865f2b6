/**
 * Every TypeScript block of the guides is, verbatim, a `#region` of a file that `pnpm typecheck` checks
 * (docs/examples/*.ts, examples/**): so every example in the docs compiles.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const walk = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => (n === "node_modules" ? [] : statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : [join(dir, n)]));

const regions = new Map<string, string>();
for (const file of [...walk(join(ROOT, "docs", "examples")), ...walk(join(ROOT, "examples"))].filter((f) => f.endsWith(".ts"))) {
  for (const m of readFileSync(file, "utf8").matchAll(/\/\/ #region ([\w-]+)\n([\s\S]*?)\/\/ #endregion/g)) {
    regions.set(`${relative(ROOT, file)}#${m[1]}`, m[2]!);
  }
}
const guides = walk(join(ROOT, "docs", "guides")).filter((f) => f.endsWith(".md"));
const blocks = guides.flatMap((file) => [...readFileSync(file, "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m, i) => [`${relative(ROOT, file)} block ${i + 1}`, m[1]!] as const));

describe("TypeScript in the guides", () => {
  it("has blocks to check", () => expect(blocks.length).toBeGreaterThan(0));
  it.each(blocks)("%s is a type-checked region", (_name, code) => {
    const match = [...regions.entries()].find(([, region]) => region === code);
    expect(match?.[0], `no #region of a checked file has exactly this code:\n${code}`).toBeDefined();
  });
});
