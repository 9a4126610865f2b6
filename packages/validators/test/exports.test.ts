/**
 * The package's export list is written by hand in src/index.ts, while the validators behind it are generated from the
 * contract: a new schema or operation must not be left out of the package, nor a removed one kept by a stale name.
 * Every value the generated bindings and table export is exported by the package, under the same name.
 */
import { describe, expect, it } from "vitest";
import * as bindings from "../src/generated/bindings.ts";
import * as table from "../src/generated/table.ts";
import * as pkg from "../src/index.ts";

describe("the package's exports", () => {
  it("include every generated validator, the two maps and the operation tables, as generated", () => {
    const generated = { ...bindings, ...table };
    const exported = pkg as Record<string, unknown>;
    const missing = Object.keys(generated).filter((name) => !(name in exported));
    expect(missing, "generated but not exported by src/index.ts").toEqual([]);
    for (const [name, value] of Object.entries(generated)) expect(exported[name], name).toBe(value);
    expect(Object.keys(bindings).length).toBeGreaterThan(100);
  });
});
