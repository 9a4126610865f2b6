/**
 * The generated route table (generators/src/mock.ts → src/generated/routes.ts): one route per operation of the
 * spec, the default fixture of each, every fixture of fixtures/index.json embedded as it is on disk, and the
 * output deterministic and in step with the spec and the fixtures.
 */
import { readFileSync } from "node:fs";
import { OPERATIONS } from "@sdgw/validators";
import { describe, expect, it } from "vitest";
import { generateMock } from "../../../generators/src/mock.ts";
import { loadSpec } from "../../../generators/src/spec.ts";
import { FIXTURES, ROUTES } from "../src/index.ts";

const ROOT = new URL("../../../", import.meta.url);
const index = JSON.parse(readFileSync(new URL("fixtures/index.json", ROOT), "utf8")) as Array<{
  file: string;
  operationId: string;
  http: number;
  status: string | null;
  code: string | null;
  mediaType: string;
}>;

describe("the generated route table", () => {
  it("has every operation of the spec, with its method, path, MSW pattern and whether it needs a key", () => {
    expect(Object.keys(ROUTES).sort()).toEqual(Object.keys(OPERATIONS).sort());
    for (const [op, info] of Object.entries(OPERATIONS)) {
      const route = ROUTES[op as keyof typeof ROUTES];
      expect([route.method, route.path, route.keyless, [...route.responses]], op).toEqual([
        info.method.toUpperCase(),
        info.path,
        info.keyless,
        [...info.responses],
      ]);
      expect(route.mswPath).toBe(info.path.replace(/\{(\w+)\}/g, ":$1"));
      expect(route.charging, op).toBe(info.responses.includes(202 as never) && op !== "getResult");
    }
    expect(ROUTES.getResult.mswPath).toBe("/v1/results/:handle");
    expect(
      Object.values(ROUTES)
        .filter((r) => r.keyless)
        .map((r) => r.operationId)
        .sort(),
    ).toEqual(["findOperation", "getOpenApiDocument", "listCapabilities"]);
  });

  it("names each operation's first ok fixture (else its first JSON 200 fixture) as the default 200 answer", () => {
    for (const route of Object.values(ROUTES)) {
      const own = index.filter((e) => e.operationId === route.operationId);
      const want =
        own.find((e) => e.status === "ok") ?? own.find((e) => e.http === 200 && e.mediaType === "application/json");
      expect(route.defaultFixture, route.operationId).toBe(want?.file ?? null);
    }
    expect(ROUTES.search.defaultFixture).toBe("search/fanout-ok-mixed.json");
  });

  it("lists every fixture by (http, status, code) and embeds its body as it is on disk", () => {
    for (const e of index) {
      const ref = ROUTES[e.operationId as keyof typeof ROUTES].fixtures.find((f) => f.file === e.file);
      expect(ref, e.file).toMatchObject({ http: e.http, status: e.status, code: e.code, mediaType: e.mediaType });
      const disk = readFileSync(new URL(`fixtures/${e.file}`, ROOT), "utf8");
      expect(FIXTURES[e.file], e.file).toEqual(e.mediaType === "application/json" ? JSON.parse(disk) : disk);
    }
    expect(Object.keys(FIXTURES).sort()).toEqual([...new Set(index.map((e) => e.file))].sort());
  });

  it("is generated deterministically, and the committed files are what the generator gives", () => {
    const [a, b] = [generateMock(loadSpec()), generateMock(loadSpec())];
    expect(a).toEqual(b);
    for (const f of a) expect(readFileSync(new URL(f.path, ROOT), "utf8") === f.content, f.path).toBe(true);
  });
});
