/**
 * Input schemas of the MCP tools, taken from the contract (spec/openapi.yaml): each tool's request-body schema
 * with every `$ref` inlined, plus the MCP-only arguments `handle` and `idempotency_key`.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";

type Json = Record<string, unknown>;

let spec: Json | null = null;

/** The contract as JSON: the copy beside the build (`dist/openapi.yaml`) or the repository's spec. */
function openApi(): Json {
  if (spec) return spec;
  for (const candidate of [new URL("./openapi.yaml", import.meta.url), new URL("../../../../spec/openapi.yaml", import.meta.url), new URL("../../../spec/openapi.yaml", import.meta.url)]) {
    try {
      spec = parseYaml(readFileSync(candidate, "utf8")) as Json;
      return spec;
    } catch {
      // next candidate
    }
  }
  throw new Error("spec/openapi.yaml not found");
}

function inline(node: unknown, schemas: Json, depth = 0): unknown {
  if (depth > 40) throw new Error("schema nesting too deep");
  if (Array.isArray(node)) return node.map((n) => inline(n, schemas, depth + 1));
  if (!node || typeof node !== "object") return node;
  const o = node as Json;
  if (typeof o["$ref"] === "string") {
    const name = (o["$ref"] as string).replace("#/components/schemas/", "");
    const target = schemas[name];
    if (!target) throw new Error(`unknown schema ${name}`);
    const { $ref: _ref, ...rest } = o;
    return { ...(inline(target, schemas, depth + 1) as Json), ...(inline(rest, schemas, depth + 1) as Json) };
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) out[k] = inline(v, schemas, depth + 1);
  return out;
}

/** The description of the MCP-only `handle` argument. */
export const HANDLE_DESCRIPTION =
  "A results handle from an earlier answer (`handle` of a running answer) or `more.handle` (written handle.position). With it the tool only reads that stored result: nothing runs, nothing is charged, other arguments are ignored.";

/** The description of the MCP-only `idempotency_key` argument. */
export const IDEMPOTENCY_DESCRIPTION =
  "Sent as the Idempotency-Key header: retrying with the same key and arguments never charges twice. 1 to 255 printable ASCII characters.";

/**
 * The JSON Schema of a tool's arguments: the body schema `name` of the contract with `$ref`s inlined. Its top-level
 * `required`, `oneOf` and `dependentSchemas` are dropped (a call with only `handle` is valid; many MCP hosts refuse
 * top-level combinators); the gateway's own validators check them on each call, and the description states them.
 * `charging` adds `handle` and `idempotency_key`.
 */
export function toolInputSchema(name: string | null, charging: boolean): Json {
  let properties: Json = {};
  let description: string | undefined;
  if (name) {
    const schemas = ((openApi()["components"] as Json)["schemas"] ?? {}) as Json;
    const full = inline(schemas[name], schemas) as Json;
    properties = { ...(full["properties"] as Json) };
    const required = (full["required"] as string[] | undefined) ?? [];
    const parts = [typeof full["description"] === "string" ? (full["description"] as string) : "", required.length ? `Required without handle: ${required.map((r) => `\`${r}\``).join(", ")}.` : ""].filter(Boolean);
    if (parts.length) description = parts.join(" ");
  }
  if (charging) {
    properties["handle"] = { type: "string", pattern: "^[A-Za-z0-9_-]{1,128}(\\.[0-9]{1,9})?$", description: HANDLE_DESCRIPTION };
    properties["idempotency_key"] = { type: "string", pattern: "^[!-~]{1,255}$", description: IDEMPOTENCY_DESCRIPTION };
  }
  return { type: "object", ...(description ? { description } : {}), properties, additionalProperties: false };
}
