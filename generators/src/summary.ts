/**
 * The main job until the reference server exists: prints what the contract holds, its operations, statuses,
 * error codes and the fixtures that exercise them, read from spec/openapi.yaml and fixtures/index.json.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadSpec, operations } from "./spec.ts";

export interface FixtureEntry {
  file: string;
  operationId: string;
  http: number;
  mediaType: string;
  status: string | null;
  code: string | null;
  headers?: Record<string, string>;
  title: string;
  source?: string;
}

export const FIXTURES_DIR = fileURLToPath(new URL("../../fixtures/", import.meta.url));

/** The fixture index, or an empty list when there is none yet. */
export function loadFixtureIndex(): FixtureEntry[] {
  const path = `${FIXTURES_DIR}index.json`;
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as FixtureEntry[]) : [];
}

export function summary(): string {
  const doc = loadSpec();
  const ops = operations(doc);
  const fixtures = loadFixtureIndex();
  const lines: string[] = [];
  const countFor = (opId: string) => fixtures.filter((f) => f.operationId === opId).length;

  lines.push(`${String(doc.info["title"])} ${doc.info.version} (OpenAPI ${doc.openapi})`);
  lines.push("");
  lines.push(`Operations (${ops.length}):`);
  const width = Math.max(...ops.map((o) => `${o.method.toUpperCase()} ${o.path}`.length));
  for (const { method, path, op } of ops) {
    const route = `${method.toUpperCase()} ${path}`.padEnd(width);
    const statuses = Object.keys(op.responses).join(" ");
    const key = Array.isArray(op.security) && op.security.length === 0 ? "no key" : "key";
    lines.push(
      `  ${route}  ${op.operationId.padEnd(20)} ${key.padEnd(6)} ${statuses}  [${countFor(op.operationId)} fixtures]`,
    );
  }
  lines.push("");
  const statusEnum = (doc.components.schemas["AnswerStatus"] as { enum: string[] }).enum;
  lines.push(`Answer statuses: ${[...statusEnum, "running (202 only)"].join(", ")}`);
  lines.push("");
  const catalogue = doc["x-error-catalogue"];
  lines.push(`Error codes (${Object.keys(catalogue).length}, none charged):`);
  for (const [code, row] of Object.entries(catalogue)) {
    const shown = fixtures.filter((f) => f.code === code).map((f) => f.http);
    const http = row.http.map((h) => (shown.includes(h) ? `${h}✓` : `${h}`)).join("/");
    lines.push(`  ${code.padEnd(24)} HTTP ${http.padEnd(10)} retry ${String(row.retry).padEnd(7)} ${row.meaning}`);
  }
  lines.push("");
  lines.push(`Fixtures: ${fixtures.length} answers in fixtures/ (✓ = a fixture shows that code under that status)`);
  lines.push("Decisions on the seed's gaps: spec/DECISIONS.md");
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(summary());
}
