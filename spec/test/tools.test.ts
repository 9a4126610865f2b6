/**
 * The contract passes the OpenAPI tools people point at it (issue 32, D119): @apidevtools/swagger-parser validates
 * it, Spectral's OpenAPI ruleset finds no error, and the generators hey-api (`@hey-api/openapi-ts`) and orval
 * generate clients from it without an error, clients that compile under `strict`. Redocly lints it in
 * `pnpm lint:spec`. Each tool runs as a user runs it: its own CLI (swagger-parser has none: its API), in a child
 * process, on spec/openapi.yaml.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "../../generators/src/generate.ts";

const run = promisify(execFile);
const SPEC = join(ROOT, "spec/openapi.yaml");
const bin = (pkg: string, file: string) => join(ROOT, "node_modules", pkg, file);
const OUT = mkdtempSync(join(tmpdir(), "sdgw-spec-tools-"));
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

/** Runs a Node CLI; answers its exit code and what it printed (never throws for a non-zero exit). */
async function cli(script: string, args: string[]): Promise<{ code: number; out: string }> {
  return run(process.execPath, [script, ...args], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, timeout: 240_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, out: `${stdout}${stderr}` }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof e.code === "number" ? e.code : 1,
      out: `${e.stdout ?? ""}${e.stderr ?? ""}`,
    }),
  );
}

/** Compiles a generated client under strict settings; answers tsc's errors. */
async function compile(dir: string): Promise<string> {
  const compilerOptions = {
    strict: true,
    target: "es2022",
    lib: ["es2023", "dom", "dom.iterable"],
    module: "nodenext",
    moduleResolution: "nodenext",
    types: [],
    skipLibCheck: true,
    noEmit: true,
  };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["**/*.ts"] }));
  const { out } = await cli(bin("typescript", "bin/tsc"), ["-p", dir, "--pretty", "false"]);
  return out.trim();
}

describe("the contract in the tools people use", () => {
  it("@apidevtools/swagger-parser validates it (its OpenAPI 3.1 schema and its own checks)", async () => {
    const api = (await SwaggerParser.validate(SPEC)) as { openapi: string; info: { version: string } };
    expect(api.openapi).toMatch(/^3\.1\./);
    expect(api.info.version).toBe("1.0.0");
  });

  it("Spectral's OpenAPI ruleset (spectral:oas) finds no error, and only the four known warnings", async () => {
    const { code, out } = await cli(bin("@stoplight/spectral-cli", "dist/index.js"), [
      "lint",
      SPEC,
      "--ruleset",
      join(ROOT, ".spectral.yaml"),
      "--format",
      "json",
      "--fail-severity",
      "error",
    ]);
    expect(code, out).toBe(0);
    const results = JSON.parse(out.slice(out.indexOf("["))) as { code: string; path: string[]; severity: number }[];
    expect(results.filter((r) => r.severity === 0)).toEqual([]);
    // Named for the generated types (@sdgw/types' ErrorCode, AnswerStatus) and the MCP tools' results (an error
    // result's ErrorStructure, `more`): no HTTP route refers to them, which is what the rule warns about.
    expect(results.map((r) => `${r.code} ${r.path.join(".")}`).sort()).toEqual([
      "oas3-unused-component components.schemas.AnswerStatus",
      "oas3-unused-component components.schemas.ErrorCode",
      "oas3-unused-component components.schemas.ErrorStructure",
      "oas3-unused-component components.schemas.More",
    ]);
  }, 240_000); // as long as its CLI may take (a busy machine)

  it("hey-api (@hey-api/openapi-ts) generates a client without an error, and it compiles", async () => {
    const dir = join(OUT, "hey-api");
    // `./`: a bare `spec/openapi.yaml` is read as hey-api's registry shorthand `organization/project`.
    const { code, out } = await cli(bin("@hey-api/openapi-ts", "bin/run.js"), ["-i", "./spec/openapi.yaml", "-o", dir]);
    expect(code, out).toBe(0);
    expect(out).not.toMatch(/error|failed|❌/i);
    expect(readdirSync(dir)).toEqual(expect.arrayContaining(["sdk.gen.ts", "types.gen.ts"]));
    expect(await compile(dir)).toBe("");
  }, 240_000);

  it("orval generates a client (fetch) without an error, and it compiles", async () => {
    const dir = join(OUT, "orval");
    const { code, out } = await cli(bin("orval", "dist/bin/orval.mjs"), [
      "--input",
      SPEC,
      "--output",
      join(dir, "api.ts"),
      "--client",
      "fetch",
    ]);
    expect(code, out).toBe(0);
    expect(out).not.toMatch(/error|warn|failed/i);
    expect(out).toMatch(/converted into ready to use orval/);
    expect(await compile(dir)).toBe("");
  }, 240_000);
});
