/** The Playground's forms as the contract gives them (generators/src/forms.ts). */
import { requestValidators } from "../../packages/validators/src/index.ts";
import { describe, expect, it } from "vitest";
import { formsOf } from "./forms.ts";
import { loadSpec } from "./spec.ts";

const forms = formsOf(loadSpec());
const form = (id: string) => forms.find((f) => f.operationId === id)!;
const field = (id: string, name: string) => form(id).fields.find((f) => f.name === name);

describe("Playground forms from the contract", () => {
  it("offers the six data routes and the seven tools with a JSON body, and no other", () => {
    expect(forms.map((f) => f.operationId)).toEqual([
      "searchPost",
      "trending",
      "detail",
      "comments",
      "userProfile",
      "userPosts",
      "brandBuzz",
      "commentInsights",
      "accountWatch",
      "findCreators",
      "creatorCard",
      "batchStats",
      "viralFinder",
    ]);
    expect(forms.filter((f) => f.tool).map((f) => f.path)).toEqual(
      forms.slice(6).map((f) => `/v1/tools/${f.path.split("/").pop()}`),
    );
  });

  it("carries enums, bounds, defaults and required from the schemas", () => {
    expect(field("searchPost", "count")).toMatchObject({
      kind: "integer",
      min: 1,
      max: 20,
      default: 10,
      required: false,
    });
    expect(field("searchPost", "query")).toMatchObject({
      kind: "text_or_integer",
      required: true,
      minLength: 1,
      maxLength: 500,
    });
    expect(field("searchPost", "platforms")).toMatchObject({ kind: "enums", all: true, maxItems: 5 });
    expect(field("searchPost", "platform")!.options).toContain("xiaohongshu");
    expect(field("brandBuzz", "scale")).toMatchObject({
      kind: "enum",
      options: ["small", "standard", "large"],
      default: "small",
    });
    expect(field("detail", "id")).toMatchObject({ kind: "list", single: true, maxItems: 20 });
    expect(field("batchStats", "targets")).toMatchObject({ kind: "list", required: true, maxItems: 20 });
    // account_watch's `schedule: {every}` is one enum field named schedule.every.
    expect(field("accountWatch", "schedule.every")).toMatchObject({
      kind: "enum",
      options: ["1h", "6h", "1d"],
      required: false,
    });
    expect(field("accountWatch", "schedule")).toBeUndefined();
  });

  it("names exactly the parameters the operation's validator allows", () => {
    for (const f of forms) {
      const v = (
        requestValidators as unknown as Record<
          string,
          { body: (b: unknown) => { ok: boolean; invalid?: { param?: string; allowed?: string[] } } }
        >
      )[f.operationId]!;
      const body: Record<string, unknown> = { __bogus__: 1 };
      for (const fd of f.fields)
        if (fd.required)
          body[fd.name] = fd.kind === "list" ? ["xiaohongshu:1"] : fd.kind === "enum" ? fd.options![0] : "x";
      if (
        f.fields.some((fd) => fd.name === "platforms") &&
        !f.fields.find((fd) => fd.name === "platform")?.required &&
        f.fields.some((fd) => fd.name === "platform")
      )
        body["platform"] = "weibo";
      // Exactly one of id and url (detail, comments, user_profile, user_posts).
      if (f.fields.some((fd) => fd.name === "url") && f.fields.some((fd) => fd.name === "id")) body["id"] = "1";
      const r = v.body(body);
      expect(r.invalid?.param, f.operationId).toBe("__bogus__");
      expect([...new Set(f.fields.map((fd) => fd.name.split(".")[0]))].sort(), f.operationId).toEqual(
        [...r.invalid!.allowed!].sort(),
      );
    }
  });
});
