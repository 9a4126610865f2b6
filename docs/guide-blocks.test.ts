/**
 * The guides as programs: every fenced block of `docs/guides/` says how it is run (the runs themselves happen in a
 * fresh project, `pnpm test:registry`), and the comparison of what a run prints with what a guide shows is exact
 * where the guide is exact and lenient only where it writes `…`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { comparePrinted, parseGuide } from "./guide-blocks.ts";

const GUIDES = join(import.meta.dirname, "guides");
const guides = readdirSync(GUIDES)
  .filter((f) => f.endsWith(".md"))
  .map((f) => parseGuide(`docs/guides/${f}`, readFileSync(join(GUIDES, f), "utf8")));

describe("the guides", () => {
  it.each(guides.map((g) => [g.name, g] as const))(
    "%s: every code block runs, and the guide has some",
    (_name, guide) => {
      expect(guide.unrun, "blocks without a <!-- run: … --> comment before them").toEqual([]);
      expect(guide.blocks.length).toBeGreaterThan(0);
      for (const block of guide.blocks) {
        if (block.run === "node" || block.run === "vitest") expect(block.lang, block.where).toBe("ts");
        if (block.run === "sh") expect(block.lang, block.where).toBe("sh");
        if (block.run === "mcp-config") expect(block.lang, block.where).toBe("json");
        if (block.run === "setup") expect(block.lang, block.where).toBe("sh");
        if (block.run === "file") expect(block.file, block.where).toMatch(/^[\w.-]+$/);
      }
    },
  );

  it("each program a guide saves has one name within that guide", () => {
    for (const guide of guides) {
      const files = guide.blocks.flatMap((b) => (b.file ? [b.file] : []));
      expect(new Set(files).size, guide.name).toBe(files.length);
    }
  });

  it("show what most runs print", () => {
    const blocks = guides.flatMap((g) => g.blocks);
    expect(blocks.filter((b) => b.prints !== undefined).length).toBeGreaterThanOrEqual(Math.ceil(blocks.length / 2));
  });
});

describe("parseGuide", () => {
  const md = [
    "# Title",
    "<!-- server: SDGW_WAIT_MS=50 SDGW_LATENCY_MS=400 -->",
    "<!-- run: node a.ts -->",
    "```ts",
    "console.log(1);",
    "```",
    "",
    "<!-- prints -->",
    "```text",
    "1",
    "```",
    "```sh",
    "echo never",
    "```",
  ].join("\n");

  it("reads directives, the server's settings, and blocks that nothing runs", () => {
    const guide = parseGuide("g.md", md);
    expect(guide.serverEnv).toEqual({ SDGW_WAIT_MS: "50", SDGW_LATENCY_MS: "400" });
    expect(guide.blocks).toEqual([
      { where: "g.md:4", lang: "ts", code: "console.log(1);\n", run: "node", file: "a.ts", prints: "1\n" },
    ]);
    expect(guide.unrun).toEqual(["g.md:12"]);
  });

  it("reads a fresh project's setup, its Node 20 and 22 setup, and the files it saves", () => {
    const guide = parseGuide(
      "g.md",
      [
        "<!-- run: setup -->",
        "```sh",
        "npm init -y",
        "```",
        "<!-- run: file tsconfig.json -->",
        "```json",
        "{}",
        "```",
        "<!-- run: setup before-24 -->",
        "```sh",
        "npx tsc",
        "```",
        "",
      ].join("\n"),
    );
    expect(guide.blocks.map((b) => [b.run, b.file, b.before24])).toEqual([
      ["setup", undefined, undefined],
      ["file", "tsconfig.json", undefined],
      ["setup", undefined, true],
    ]);
    expect(() => parseGuide("g.md", "<!-- run: setup node20 -->\n```sh\n```\n")).toThrow(/unknown run directive/);
  });

  it("refuses what it cannot run, and output that follows no run", () => {
    expect(() => parseGuide("g.md", "<!-- run: python a.py -->\n```py\n```\n")).toThrow(
      /g\.md:2: unknown run directive/,
    );
    expect(() => parseGuide("g.md", "<!-- prints -->\n```text\nx\n```\n")).toThrow(/prints --> follows no run/);
    expect(() => parseGuide("g.md", "<!-- run: sh -->\n```sh\necho\n")).toThrow(/never closed/);
    expect(() => parseGuide("g.md", "<!-- server: SDGW_WAIT_MS -->\n")).toThrow(/NAME=value/);
  });

  it("a directive separated from its block by prose applies to nothing", () => {
    const guide = parseGuide("g.md", "<!-- run: node a.ts -->\nSome words.\n```ts\nx;\n```\n");
    expect(guide.blocks).toEqual([]);
    expect(guide.unrun).toEqual(["g.md:3"]);
  });
});

describe("comparePrinted", () => {
  it("matches line by line, `…` standing for any text in a line or any lines", () => {
    expect(comparePrinted("a\nb 12\n", "a\nb 12")).toBeNull();
    expect(comparePrinted("charged … of 9\n", "charged 7 of 9\n")).toBeNull();
    expect(comparePrinted("first\n…\nlast\n", "first\nx\ny\nlast\n")).toBeNull();
    expect(comparePrinted("first\n…\nlast\n", "first\nlast\n")).toBeNull();
    expect(comparePrinted("a\n", "a\nb\n")).toMatch(/other lines/);
    expect(comparePrinted("a\nc\n", "a\nb\n")).toMatch(/expected line 2 "c" is not printed/);
    expect(comparePrinted("x.y\n", "xzy\n")).not.toBeNull(); // a dot is a dot, not a pattern
  });

  it("any output matches itself, and a changed line is noticed", () => {
    const line = fc
      .string({ unit: fc.constantFrom("a", "b", " ", "1", ".", "(", "*", "\\", "$") })
      .filter((l) => !l.includes("…"));
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 8 }), fc.nat(), (lines, k) => {
        const text = lines.join("\n");
        expect(comparePrinted(text, text)).toBeNull();
        const i = k % lines.length;
        const changed = lines.map((l, j) => (j === i ? `${l.trim()}#` : l)).join("\n");
        expect(comparePrinted(text, changed)).not.toBeNull();
      }),
    );
  });
});
