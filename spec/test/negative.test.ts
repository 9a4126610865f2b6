import { describe, expect, it } from "vitest";
import { explain, schemaValidator } from "./contract.ts";
import { CASES, strip, VALID } from "./negative-cases.ts";

describe("negative payloads: each breaks exactly one rule", () => {
  it("has at least 40 of them", () => expect(CASES.length).toBeGreaterThanOrEqual(40));

  it.each(CASES)("rejects %s", (_rule, schema, base, breakIt) => {
    const validate = schemaValidator(schema);
    const good = strip(base());
    expect(validate(good), `the valid base must pass: ${explain(validate.errors)}`).toBe(true);
    expect(validate(strip(breakIt(strip(base()))))).toBe(false);
  });
});

describe("boundaries that are valid", () => {
  it.each(VALID)("accepts %s", (_name, schema, value) => {
    const validate = schemaValidator(schema);
    expect(validate(value), explain(validate.errors)).toBe(true);
  });
});
