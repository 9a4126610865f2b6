/**
 * Every guide with programs, followed from an empty folder exactly as it says, with npm 11 (whose `npm init -y`
 * writes `"type": "commonjs"`), on Node 20 and on Node 24 (on Node 24 only when a package it installs needs it,
 * which the guide then says): its `setup` script (`npm init -y`, …, `npm install` from the local registry, the
 * reader's `.npmrc` line of the README's "Getting the packages"), then its blocks in order: programs saved under
 * their names and run (`node x.ts`, `npx vitest run x.test.ts`), shell scripts run. On Node 20 the `node` programs
 * are compiled first, as the quick start's "On Node 20 or 22" says (its `tsconfig.json`, its `setup before-24`
 * script, whose last line runs `dist/quick-start.js`: `dist/<name>.js` for each program of the guide), unless the
 * guide has blocks of its own for that. What each run prints is compared with what the guide shows, against a
 * reference server of this checkout started with the guide's `<!-- server: … -->` settings.
 *
 * This is where the guides' programs run; `guides.test.ts` type-checks them all strictly in one project and
 * connects to the MCP host configurations.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { comparePrinted, parseGuide, type Guide, type GuideBlock } from "../../docs/guide-blocks.ts";
import { ROOT } from "../src/generate.ts";
import { consumerProject, workspacePackages } from "./harness.ts";
import { startServer } from "./reference-server.ts";

const registryUrl = inject("registryUrl");
const GUIDES = join(ROOT, "docs", "guides");
const markdown = new Map<string, string>();
const guides: Guide[] = readdirSync(GUIDES)
  .filter((f) => f.endsWith(".md"))
  .sort()
  .map((f) => {
    const name = `docs/guides/${f}`;
    markdown.set(name, readFileSync(join(GUIDES, f), "utf8"));
    return parseGuide(name, markdown.get(name)!);
  });

/** The blocks a reader runs: programs and shell scripts (MCP host configurations are guides.test.ts's). */
const RUNS = new Set(["node", "vitest", "sh"]);
const runs = (g: Guide) => g.blocks.filter((b) => RUNS.has(b.run));
const setups = (g: Guide) => g.blocks.filter((b) => b.run === "setup" && !b.before24);
/** The guides with something to run. */
const withPrograms = guides.filter((g) => runs(g).length > 0);

const QUICK = "docs/guides/quick-start.md";
/** Where the quick start says how Node 20 and 22 run the programs; the other guides link it. */
const NODE20 = "quick-start.md#on-node-20-or-22";
const quick = guides.find((g) => g.name === QUICK)!;

/** `npm install [-D] a b` lines of a guide's setup: the packages it installs. */
function installs(g: Guide): string[] {
  return setups(g)
    .flatMap((b) => b.code.split("\n"))
    .filter((l) => /^npm (install|i)\b/.test(l.trim()))
    .flatMap((l) => l.trim().split(/\s+/).slice(2))
    .filter((w) => !w.startsWith("-"));
}

/** The oldest Node major every `@sdgw/*` package the guide installs allows (20 when none asks for more). */
function minNode(g: Guide): number {
  const published = new Map(workspacePackages().map((p) => [p.name, p.minNode[0]]));
  return Math.max(20, ...installs(g).map((n) => published.get(n.replace(/(.)@.*$/, "$1")) ?? 20));
}

/** How a guide's `node` programs run on Node 20: the guide's own blocks, or the quick start's. */
function before24(g: Guide): { files: GuideBlock[]; steps: GuideBlock[] } {
  const own = g.blocks.filter((b) => b.run === "setup" && b.before24);
  const from = own.length > 0 ? g : quick;
  return {
    files: from.blocks.filter((b) => b.run === "file"),
    steps: from.blocks.filter((b) => b.run === "setup" && b.before24),
  };
}

const scratch = mkdtempSync(join(tmpdir(), "sdgw-fresh-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("the guides", () => {
  it("every guide with programs starts a project of its own from npm init -y", () => {
    expect(withPrograms.length).toBeGreaterThanOrEqual(10);
    for (const g of withPrograms) {
      const setup = setups(g);
      expect(setup.length, `${g.name}: a <!-- run: setup --> block`).toBeGreaterThan(0);
      expect(setup[0]!.code, `${g.name}: its setup starts the project`).toMatch(/^npm init -y\n/);
      expect(installs(g).length, `${g.name}: its setup installs what its programs need`).toBeGreaterThan(0);
      // the setup comes before the first program that needs the project
      const first = g.blocks.findIndex((b) => b.run === "node" || b.run === "vitest");
      expect(g.blocks.indexOf(setup[0]!), g.name).toBeLessThan(first);
    }
  });

  it("the quick start says how Node 20 and 22 run a program; the other guides on Node 20 link it", () => {
    const { files, steps } = before24(quick);
    expect(files.map((b) => b.file)).toContain("tsconfig.json");
    expect(JSON.parse(files.find((b) => b.file === "tsconfig.json")!.code).include, "every program").toEqual(["*.ts"]);
    expect(steps.at(-1)?.code.trimEnd().split("\n").at(-1)).toMatch(/^SDGW_API_KEY=sdgw_… node dist\/quick-start\.js$/);
    expect(markdown.get(QUICK)).toContain("## On Node 20 or 22");
    for (const g of withPrograms) {
      if (g === quick || minNode(g) > 20 || !g.blocks.some((b) => b.run === "node")) continue;
      if (g.blocks.some((b) => b.run === "setup" && b.before24)) continue;
      expect(markdown.get(g.name), `${g.name} links the quick start's way for Node 20 and 22`).toContain(`(${NODE20})`);
    }
  });

  it("a guide whose packages need a newer Node than 20 says which", () => {
    for (const g of withPrograms) {
      const min = minNode(g);
      if (min > 20) expect(markdown.get(g.name), g.name).toMatch(new RegExp(`Node ${min}\\b`));
    }
  });
});

describe.concurrent.each(
  withPrograms.flatMap((g) => [20, 24].filter((n) => n >= minNode(g)).map((node) => [g.name, node, g] as const)),
)("%s from npm init -y on Node %i", (_name, node, guide) => {
  it("runs as the guide says and prints what it shows", async ({ expect }) => {
    const project = consumerProject(registryUrl, node, null, "11");
    const server = await startServer(guide.serverEnv, scratch);
    try {
      const env = { SDGW_BASE_URL: server.url, SDGW_API_KEY: server.key, NO_COLOR: "1", FORCE_COLOR: "0" };
      const sh = async (block: { where: string; code: string }) => {
        // the reader types their own key where the guide writes `sdgw_…`
        const ran = await project.exec("sh", ["-ec", block.code.replaceAll("sdgw_…", server.key)], {
          env,
          timeoutMs: 600_000,
        });
        expect(ran.code, `${block.where} on Node ${node} exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`).toBe(0);
        return ran.stdout;
      };
      const check = (block: GuideBlock, printed: string) => {
        if (block.prints !== undefined)
          expect(comparePrinted(block.prints, printed), `${block.where} on Node ${node}`).toBeNull();
      };
      let compiled: ((file: string) => Promise<string>) | null = null;
      /** Node 20: the programs compiled as the quick start (or the guide) says; answers how one runs. */
      const compile = async (): Promise<(file: string) => Promise<string>> => {
        for (const b of guide.blocks) if (b.run === "node" || b.run === "vitest") project.write(b.file!, b.code);
        const { files, steps } = before24(guide);
        expect(steps.length, `${guide.name}: a way to run its programs on Node ${node}`).toBeGreaterThan(0);
        for (const b of files) project.write(b.file!, b.code);
        // Every line as written but the last, which runs the quick start's program: run for each program instead
        // (npm's own lines before it are not part of what the program prints).
        for (const b of steps.slice(0, -1)) await sh(b);
        const last = steps.at(-1)!;
        const lines = last.code.trimEnd().split("\n");
        await sh({ where: last.where, code: `${lines.slice(0, -1).join("\n")}\n` });
        const runLine = /^(.* node dist\/)([\w.-]+)(\.js)$/.exec(lines.at(-1)!);
        expect(runLine, `${last.where}: its last line runs a compiled program`).not.toBeNull();
        return (file) => sh({ where: last.where, code: `${runLine![1]}${file.replace(/\.ts$/, "")}${runLine![3]}\n` });
      };
      for (const block of guide.blocks) {
        if (block.run === "setup" && !block.before24) {
          await sh(block);
          if (block.code.includes("npm init -y")) {
            // npm 11's package.json, before the guide changes it
            const pkg = JSON.parse(readFileSync(join(project.dir, "package.json"), "utf8")) as { type?: string };
            expect(["commonjs", "module"]).toContain(pkg.type);
          }
        } else if (block.run === "sh") {
          check(block, await sh(block));
        } else if (block.run === "vitest") {
          project.write(block.file!, block.code);
          const ran = await project.exec("npx", ["vitest", "run", block.file!], {
            env: { ...env, CI: "1" },
            timeoutMs: 600_000,
          });
          expect(ran.code, `${block.where} exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`).toBe(0);
          check(block, ran.stdout);
        } else if (block.run === "node") {
          project.write(block.file!, block.code);
          if (node >= 24) {
            const ran = await project.exec("node", [block.file!], { env });
            expect(ran.code, `${block.where}:\n${ran.stdout}\n${ran.stderr}`).toBe(0);
            check(block, ran.stdout);
          } else {
            if (!compiled) {
              if (guide === quick) {
                // Node 20 does not run TypeScript: `node quick-start.ts` is refused, and the guide's way is taken.
                const asTs = await project.exec("node", [block.file!], { env });
                expect(asTs.code, "Node 20 runs a .ts file?").not.toBe(0);
              }
              compiled = await compile();
            }
            check(block, await compiled(block.file!));
          }
        }
      }
    } finally {
      await server.stop();
      project.remove();
    }
  }, 900_000);
});
