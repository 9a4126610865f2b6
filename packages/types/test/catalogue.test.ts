/**
 * The runtime constants of `@sdgw/types` equal the spec's values, and the generated files are in step with the
 * spec (what `pnpm generate` would write now is what is on disk).
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { ANSWER_STATUSES, ERROR_CATALOGUE, ERROR_CODES, ITEM_KINDS, PLATFORMS, TOOL_NAMES } from "@sdgw/types";
import { loadSpec } from "../../../generators/src/spec.ts";
import { generateTypes } from "../../../generators/src/types.ts";

const doc = loadSpec();
const schemas = doc.components.schemas as Record<
  string,
  { enum?: unknown[]; oneOf?: Array<{ $ref: string }>; properties?: Record<string, { const?: unknown }> }
>;

describe("catalogue constants equal the spec", () => {
  test("PLATFORMS is components.schemas.Platform", () => {
    expect(PLATFORMS).toEqual(schemas["Platform"]!.enum);
    expect(PLATFORMS).toHaveLength(10);
  });

  test("ERROR_CODES is components.schemas.ErrorCode", () => {
    expect(ERROR_CODES).toEqual(schemas["ErrorCode"]!.enum);
    expect(ERROR_CODES).toHaveLength(19);
  });

  test("ERROR_CATALOGUE is x-error-catalogue, in ErrorCode's order", () => {
    expect(ERROR_CATALOGUE).toEqual(doc["x-error-catalogue"]);
    expect(Object.keys(ERROR_CATALOGUE)).toEqual([...ERROR_CODES]);
  });

  test("TOOL_NAMES, ANSWER_STATUSES", () => {
    expect(TOOL_NAMES).toEqual(schemas["ToolName"]!.enum);
    expect(TOOL_NAMES).toHaveLength(7);
    expect(ANSWER_STATUSES).toEqual(schemas["AnswerStatus"]!.enum);
    expect(ANSWER_STATUSES).toHaveLength(5);
  });

  test("ITEM_KINDS is the kind const of each Item branch", () => {
    const kinds = schemas["Item"]!.oneOf!.map((b) => schemas[b.$ref.split("/").pop()!]!.properties!["kind"]!.const);
    expect(ITEM_KINDS).toEqual(kinds);
    expect(ITEM_KINDS).toHaveLength(5);
  });
});

describe("generated files", () => {
  test("are deterministic and in step with the spec", async () => {
    const first = await generateTypes(loadSpec());
    const second = await generateTypes(loadSpec());
    expect(second).toEqual(first);
    for (const f of first) {
      const onDisk = readFileSync(new URL(`../../../${f.path}`, import.meta.url), "utf8");
      expect(onDisk, `${f.path} is stale: run pnpm generate`).toBe(f.content);
    }
  });

  test("generating does not change the spec object it is given", async () => {
    const spec = loadSpec();
    const before = structuredClone(spec);
    await generateTypes(spec);
    expect(spec).toEqual(before);
  });
});
