/**
 * The guides' code blocks as programs. Every fenced block of `docs/guides/*.md` carries, on the line before it, an
 * HTML comment (invisible where the guide is rendered) saying how a reader runs it:
 *
 * - `<!-- run: node quick-start.ts -->`: the block is saved as that file and run with Node (24 runs TypeScript);
 * - `<!-- run: vitest run sdgw.test.ts -->`: saved as that file and run by vitest;
 * - `<!-- run: sh -->`: the block is a shell script;
 * - `<!-- run: mcp-config -->`: the block is an MCP host's configuration: each server in it is started or reached
 *   as a host would, and its tools are listed;
 * - `<!-- run: setup -->`: a shell script the reader runs in a new folder before the guide's programs (`npm init -y`,
 *   `npm install …`); every guide with programs has one. `<!-- run: setup before-24 -->`: one run on Node 20 and 22
 *   only, instead of running the guide's `node` programs as TypeScript (compiling them first); its last line runs
 *   the program, and its output is compared with theirs. A `sdgw_…` in it is the reader's key. A guide without one
 *   follows the quick start's (its last line with each program's name: `node dist/<name>.js`);
 * - `<!-- run: file tsconfig.json -->`: the block is saved as that file of the project (Node 20 and 22 only, with
 *   `setup before-24`);
 * - `<!-- prints -->` before a `text` block: what the run before it prints. A line `…` stands for any number of
 *   lines; `…` inside a line for any text. Lines are compared without their surrounding blanks.
 *
 * A guide may also say how the reference server it runs against is started: `<!-- server: SDGW_WAIT_MS=50 … -->`.
 * This module only reads the guides and compares outputs; `registry/fresh-projects.test.ts` runs each guide in a
 * project of its own, from `npm init -y`, and `registry/guides.test.ts` type-checks every program in one project.
 */

/** How a block is run. */
export type RunKind = "node" | "vitest" | "sh" | "mcp-config" | "setup" | "file";

/** One runnable block of a guide, with what it must print. */
export interface GuideBlock {
  /** `docs/guides/x.md:12` — where the block starts. */
  where: string;
  /** The fence's language (`ts`, `sh`, `json`). */
  lang: string;
  code: string;
  run: RunKind;
  /** The file the block is saved as (`node`, `vitest` and `file` runs). */
  file?: string;
  /** A `setup` that runs on Node 20 and 22 only (`setup before-24`). */
  before24?: boolean;
  /** The expected output, when the guide shows it. */
  prints?: string;
}

/** A guide: its blocks in order and the environment of its reference server. */
export interface Guide {
  name: string;
  blocks: GuideBlock[];
  /** `SDGW_*` settings of the server this guide's blocks run against. */
  serverEnv: Record<string, string>;
  /** Fenced blocks with no `run:` comment before them (every block must run). */
  unrun: string[];
}

const FENCE = /^```(\w*)\s*$/;
const DIRECTIVE = /^<!--\s*(run|prints|server):?\s*(.*?)\s*-->\s*$/;

/** Reads the blocks and directives of one guide's Markdown. */
export function parseGuide(name: string, markdown: string): Guide {
  const lines = markdown.split("\n");
  const guide: Guide = { name, blocks: [], serverEnv: {}, unrun: [] };
  let pending: { kind: string; value: string } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const directive = DIRECTIVE.exec(line);
    if (directive) {
      const [, kind, value] = directive as unknown as [string, string, string];
      if (kind === "server") {
        for (const pair of value.split(/\s+/).filter(Boolean)) {
          const eq = pair.indexOf("=");
          if (eq < 1) throw new Error(`${name}:${i + 1}: a server setting is NAME=value, got ${JSON.stringify(pair)}`);
          guide.serverEnv[pair.slice(0, eq)] = pair.slice(eq + 1);
        }
      } else pending = { kind, value };
      continue;
    }
    const fence = FENCE.exec(line);
    if (!fence) {
      if (line.trim() !== "" && pending?.kind !== "prints") pending = null;
      continue;
    }
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    if (i >= lines.length) throw new Error(`${name}:${start + 1}: a code block is never closed`);
    const where = `${name}:${start + 1}`;
    const code = `${body.join("\n")}\n`;
    if (pending?.kind === "prints") {
      const last = guide.blocks.at(-1);
      if (!last || last.prints !== undefined) throw new Error(`${where}: <!-- prints --> follows no run`);
      last.prints = code;
    } else if (pending?.kind === "run") {
      guide.blocks.push({ where, lang: fence[1] ?? "", code, ...parseRun(where, pending.value) });
    } else {
      guide.unrun.push(where);
    }
    pending = null;
  }
  return guide;
}

function parseRun(where: string, value: string): { run: RunKind; file?: string; before24?: boolean } {
  const words = value.split(/\s+/).filter(Boolean);
  if (words[0] === "node" && words.length === 2) return { run: "node", file: words[1]! };
  if (words[0] === "vitest" && words[1] === "run" && words.length === 3) return { run: "vitest", file: words[2]! };
  if (words[0] === "sh" && words.length === 1) return { run: "sh" };
  if (words[0] === "mcp-config" && words.length === 1) return { run: "mcp-config" };
  if (words[0] === "setup" && words.length === 1) return { run: "setup" };
  if (words[0] === "setup" && words[1] === "before-24" && words.length === 2) return { run: "setup", before24: true };
  if (words[0] === "file" && words.length === 2) return { run: "file", file: words[1]! };
  throw new Error(
    `${where}: unknown run directive ${JSON.stringify(value)} (node FILE, vitest run FILE, sh, mcp-config, setup, setup before-24, file FILE)`,
  );
}

const ELLIPSIS = "…";

/** Whether one line of output matches one expected line (`…` inside it stands for any text). */
function lineMatches(expected: string, actual: string): boolean {
  const parts = expected.split(ELLIPSIS).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${parts.join(".*")}$`, "s").test(actual);
}

/**
 * Compares what a run printed with what its guide says it prints. Answers null when they agree, else a message
 * that shows the first line that does not.
 */
export function comparePrinted(expected: string, actual: string): string | null {
  const want = expected
    .replace(/\s+$/, "")
    .split("\n")
    .map((l) => l.trim());
  const got = actual
    .replace(/\s+$/, "")
    .split("\n")
    .map((l) => l.trim());
  // Backtracking over `…` lines; guides are short, so the simple recursion is enough.
  const match = (w: number, g: number): boolean => {
    if (w === want.length) return g === got.length;
    if (want[w] === ELLIPSIS) {
      for (let k = g; k <= got.length; k++) if (match(w + 1, k)) return true;
      return false;
    }
    return g < got.length && lineMatches(want[w]!, got[g]!) && match(w + 1, g + 1);
  };
  if (match(0, 0)) return null;
  // Point at the first expected line (not `…`) that no line of the output matches in order.
  let g = 0;
  for (const [w, line] of want.entries()) {
    if (line === ELLIPSIS) continue;
    const found = got.findIndex((l, k) => k >= g && lineMatches(line, l));
    if (found < 0)
      return `expected line ${w + 1} ${JSON.stringify(line)} is not printed (in order); the run printed:\n${actual}`;
    g = found + 1;
  }
  return `the run printed other lines than the guide shows (extra or missing lines around a line without …); it printed:\n${actual}`;
}
