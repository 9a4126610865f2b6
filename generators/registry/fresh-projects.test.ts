/**
 * Each guide that starts a project, followed from an empty folder exactly as it says, on Node 20 and on Node 24,
 * with npm 11 (whose `npm init -y` writes `"type": "commonjs"`): its `setup` scripts in order (`npm init -y`, …,
 * `npm install` from the local registry, the reader's `.npmrc` line of the README's "Getting the packages"), its
 * programs saved under their names; on Node 24 each `node` program is run as TypeScript, on Node 20 the guide's
 * `file` blocks are saved and its `setup before-24` script compiles and runs them instead. What they print is
 * compared with what the guide shows, against a reference server of this checkout.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { comparePrinted, parseGuide, type Guide } from "../../docs/guide-blocks.ts";
import { ROOT } from "../src/generate.ts";
import { consumerProject } from "./harness.ts";
import { startServer } from "./reference-server.ts";

const registryUrl = inject("registryUrl");
const GUIDES = join(ROOT, "docs", "guides");
const guides: Guide[] = readdirSync(GUIDES)
  .filter((f) => f.endsWith(".md"))
  .sort()
  .map((f) => parseGuide(`docs/guides/${f}`, readFileSync(join(GUIDES, f), "utf8")));
/** The guides that start a project of their own (a `setup` block). */
const starting = guides.filter((g) => g.blocks.some((b) => b.run === "setup" && !b.before24));

const scratch = mkdtempSync(join(tmpdir(), "sdgw-fresh-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

it("the quick start starts a project of its own, with a way for Node 20 and 22", () => {
  const quick = starting.find((g) => g.name === "docs/guides/quick-start.md");
  expect(quick, "docs/guides/quick-start.md has a <!-- run: setup --> block").toBeDefined();
  expect(quick!.blocks.some((b) => b.run === "setup" && b.before24)).toBe(true);
});

describe.each(starting.flatMap((g) => [20, 24].map((node) => [g.name, node, g] as const)))(
  "%s from npm init -y on Node %i",
  (_name, node, guide) => {
    it("runs as the guide says and prints what it shows", async () => {
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
        const programs = guide.blocks.filter((b) => b.run === "node" || b.run === "vitest");
        for (const block of guide.blocks) {
          if (block.run === "setup" && !block.before24) {
            await sh(block);
            if (block.code.includes("npm init -y")) {
              // npm 11's package.json, before the guide changes it
              const pkg = JSON.parse(readFileSync(join(project.dir, "package.json"), "utf8")) as { type?: string };
              expect(["commonjs", "module"]).toContain(pkg.type);
            }
          }
          if (block.run === "node" || block.run === "vitest") project.write(block.file!, block.code);
        }
        const expected = programs.filter((b) => b.run === "node" && b.prints !== undefined);
        expect(expected.length, `${guide.name}: a node program that shows what it prints`).toBeGreaterThan(0);
        if (node >= 24) {
          for (const block of expected) {
            const ran = await project.exec("node", [block.file!], { env });
            expect(ran.code, `${block.where}:\n${ran.stdout}\n${ran.stderr}`).toBe(0);
            expect(comparePrinted(block.prints!, ran.stdout), block.where).toBeNull();
          }
        } else {
          // Node 20 does not run TypeScript: `node quick-start.ts` is refused, and the guide's own way is taken.
          const asTs = await project.exec("node", [expected[0]!.file!], { env });
          expect(asTs.code, "Node 20 runs a .ts file?").not.toBe(0);
          for (const block of guide.blocks) if (block.run === "file") project.write(block.file!, block.code);
          const later = guide.blocks.filter((b) => b.run === "setup" && b.before24);
          expect(later.length, `${guide.name}: a <!-- run: setup before-24 --> block`).toBeGreaterThan(0);
          // Every line as the guide says; the last line runs the program, whose output is what the guide shows
          // (npm's own lines before it are not).
          for (const block of later.slice(0, -1)) await sh(block);
          const last = later.at(-1)!;
          const lines = last.code.trimEnd().split("\n");
          await sh({ where: last.where, code: `${lines.slice(0, -1).join("\n")}\n` });
          const printed = await sh({ where: last.where, code: `${lines.at(-1)!}\n` });
          expect(lines.at(-1), last.where).toMatch(/^SDGW_API_KEY=sdgw_… node dist\//);
          expect(comparePrinted(expected.at(-1)!.prints!, printed), last.where).toBeNull();
        }
      } finally {
        await server.stop();
        project.remove();
      }
    }, 900_000);
  },
);
