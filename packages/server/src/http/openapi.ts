/**
 * The spec as JSON for `GET /openapi.json`. Beside server.ts on purpose: the paths below are relative to this folder
 * (src/http/) or, built, to dist/.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";

let openApiJson: string | null = null;

/** Reads the spec as JSON once: the copy beside the build (`dist/openapi.yaml`) or the repository's spec. */
export function openApi(): string {
  openApiJson ??= loadOpenApi();
  return openApiJson;
}

function loadOpenApi(): string {
  for (const candidate of [
    new URL("./openapi.yaml", import.meta.url),
    new URL("../../../../spec/openapi.yaml", import.meta.url),
    new URL("../../../spec/openapi.yaml", import.meta.url),
  ]) {
    try {
      return JSON.stringify(parseYaml(readFileSync(candidate, "utf8")));
    } catch {
      // next candidate
    }
  }
  throw new Error("spec/openapi.yaml not found");
}
