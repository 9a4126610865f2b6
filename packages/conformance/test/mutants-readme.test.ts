/** The README's table of mutants is the list in mutants.ts: every mutant, what it breaks and the checks that catch it. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { mutantTable } from "./mutants.ts";

describe("README: the mutants", () => {
  it("lists every mutant of mutants.ts with what it breaks and the checks that catch it, between the markers", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const m = /<!-- mutants:start -->\n([\s\S]*?)\n<!-- mutants:end -->/.exec(readme);
    expect(m, "README.md has no <!-- mutants:start --> … <!-- mutants:end --> section").not.toBeNull();
    expect(m![1]).toBe(mutantTable());
  });
});
