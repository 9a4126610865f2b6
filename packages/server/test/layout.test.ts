/**
 * The server's layout holds (issue 37, CONTRIBUTING.md "Where things go"): no import circle in `src/` (type-only
 * imports count: a circle of types is still a circle for a reader), the two stores never import each other, and
 * what both share (`src/storage/*.ts`, `src/runs/`, `src/limits/`) imports neither.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
  );
}

/** Each source file (relative to src/) and the relative modules it imports or re-exports, types included. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const specifier =
    /(?:^|\n)\s*(?:import|export)\b[^;'"]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;
  for (const file of sources(SRC)) {
    const text = readFileSync(file, "utf8");
    const to = [...text.matchAll(specifier)]
      .map((m) => path.relative(SRC, path.resolve(path.dirname(file), (m[1] ?? m[2])!)))
      .filter((t) => !t.startsWith(".."));
    graph.set(path.relative(SRC, file), [...new Set(to)]);
  }
  return graph;
}

/** The strongly connected components of more than one file, or of one file importing itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const state = new Map<string, { index: number; low: number; onStack: boolean }>();
  const found: string[][] = [];
  const visit = (v: string) => {
    const s = { index, low: index, onStack: true };
    index++;
    state.set(v, s);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      const t = state.get(w);
      if (!t) {
        visit(w);
        s.low = Math.min(s.low, state.get(w)!.low);
      } else if (t.onStack) s.low = Math.min(s.low, t.index);
    }
    if (s.low === s.index) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        state.get(w)!.onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!state.has(v)) visit(v);
  return found;
}

const graph = importGraph();
const importsOf = (from: (f: string) => boolean, to: (f: string) => boolean) =>
  [...graph].flatMap(([f, deps]) => (from(f) ? deps.filter(to).map((d) => `${f} → ${d}`) : []));
const inSqlite = (f: string) => f.startsWith("storage/sqlite/");
const inPostgres = (f: string) => f.startsWith("storage/postgres/");
const shared = (f: string) =>
  (f.startsWith("storage/") && !f.includes("/", "storage/".length) && f !== "storage/port.ts") ||
  f.startsWith("runs/types.ts") ||
  f.startsWith("runs/answers.ts") ||
  f.startsWith("runs/progress.ts") ||
  f.startsWith("limits/");

describe("the server's layout", () => {
  it("reads the whole of src/", () => {
    expect(graph.size).toBeGreaterThan(60);
    expect(graph.get("storage/sqlite/gateway.ts")).toContain("storage/sqlite/store.ts");
  });

  it("has no import circle, type-only imports included", () => {
    expect(circles(graph)).toEqual([]);
  });

  it("finds a circle when there is one (the check itself)", () => {
    const g = new Map([...graph, ["config.ts", [...(graph.get("config.ts") ?? []), "storage/sqlite/gateway.ts"]]]);
    expect(circles(g).flat()).toEqual(expect.arrayContaining(["config.ts", "storage/sqlite/gateway.ts"]));
  });

  it("keeps the two stores apart: neither imports the other", () => {
    expect(importsOf(inPostgres, inSqlite)).toEqual([]);
    expect(importsOf(inSqlite, inPostgres)).toEqual([]);
  });

  it("keeps what both stores share free of either", () => {
    expect(importsOf(shared, (d) => inSqlite(d) || inPostgres(d) || d === "storage/port.ts")).toEqual([]);
  });
});
