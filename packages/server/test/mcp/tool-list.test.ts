/**
 * The tool list a host loads (issue 34, D140): `tools/list` over Streamable HTTP is at most 100 KB, every tool keeps
 * an `outputSchema` that is self-contained (its own `$defs`), written with single types only (no `type` arrays, which
 * single-type dialects refuse), and narrowed to its own answer (a tool answer names its own tool); descriptions a
 * model reads cite no decision numbers. That every structured result validates against its tool's schema is checked
 * on every answer of charge-walk.test.ts and tools-over-mcp.test.ts; here the schemas are checked against answers of
 * each kind and against answers of other tools.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_TOOLS } from "../../src/mcp/index.ts";
import { createServer, type SdgwServer } from "../../src/storage/sqlite/server.ts";

type Json = Record<string, any>;
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** Keywords whose value maps names (of members, of definitions) to schemas: those names are not keywords. */
const NAMED = new Set(["properties", "patternProperties", "$defs", "dependentSchemas"]);

/** Every value of the keyword `key` anywhere in the schema `node`, with its path. */
function find(node: unknown, key: string, path = "$"): Array<[string, unknown]> {
  if (Array.isArray(node)) return node.flatMap((n, i) => find(n, key, `${path}[${i}]`));
  if (!node || typeof node !== "object") return [];
  return Object.entries(node).flatMap(([k, v]) => {
    if (NAMED.has(k) && v && typeof v === "object")
      return Object.entries(v).flatMap(([n, s]) => find(s, key, `${path}.${k}.${n}`));
    return [...(k === key ? ([[`${path}.${k}`, v]] as Array<[string, unknown]>) : []), ...find(v, key, `${path}.${k}`)];
  });
}

describe("tools/list as a host loads it", () => {
  let server: SdgwServer;
  let key: string;
  let url: string;
  beforeAll(async () => {
    server = createServer({ dbPath: ":memory:", log: () => undefined });
    const { account } = server.gateway.accounts.createAccount({ name: "tool list", plan: "paid" });
    key = server.gateway.accounts.createKey({ accountId: account.id, name: "mcp" }).secret;
    url = `${await server.listen({ host: "127.0.0.1", port: 0 })}/mcp`;
  });
  afterAll(async () => {
    await server.close({ drainMs: 200 });
  });

  async function list(): Promise<{ bytes: number; tools: Json[] }> {
    const res = await fetch(url, {
      method: "POST",
      headers: { ...HEADERS, "x-api-key": key },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    return { bytes: Buffer.byteLength(text, "utf8"), tools: (JSON.parse(text) as Json)["result"]["tools"] };
  }

  it("is at most 100 KB, and every one of the 16 tools keeps a self-contained object outputSchema", async () => {
    const { bytes, tools } = await list();
    expect(tools).toHaveLength(16);
    expect(bytes).toBeLessThanOrEqual(100_000);
    for (const t of tools) {
      expect(t["outputSchema"], t["name"]).toMatchObject({ type: "object" });
      // Every reference is local and resolves inside the tool's own schema.
      for (const [path, ref] of find(t["outputSchema"], "$ref")) {
        expect(String(ref), `${t["name"]} ${path}`).toMatch(/^#\/\$defs\/[A-Za-z0-9]+$/);
        expect(t["outputSchema"]["$defs"]?.[String(ref).slice(8)], `${t["name"]} ${path}`).toBeDefined();
      }
    }
  });

  it("no schema writes `type` as an array (single-type dialects refuse it)", async () => {
    const { tools } = await list();
    for (const t of tools)
      for (const part of ["inputSchema", "outputSchema"])
        for (const [path, type] of find(t[part], "type"))
          expect(typeof type, `${t["name"]} ${part} ${path}`).toBe("string");
  });

  it("descriptions a model reads cite no decision numbers", async () => {
    const { tools } = await list();
    for (const t of tools) {
      expect(t["description"], t["name"]).not.toMatch(/\bD\d+\b/);
      for (const [path, text] of find(t["inputSchema"], "description"))
        expect(text, `${t["name"]} ${path}`).not.toMatch(/\bD\d+\b/);
    }
  });

  it("each outputSchema compiles, admits its own tool's answers and refuses another tool's", () => {
    const ajv = new Ajv2020({ strict: false });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const schema = (name: string) => ajv.compile(MCP_TOOLS.find((t) => t.name === name)!.outputSchema);
    const billing = {
      cost_credits: 0,
      balance_credits: 10,
      today_spend_credits: 0,
      daily_limit_credits: null,
      daily_remaining_credits: null,
      display: "10 credits",
    };
    const quote = {
      request_id: "req_1",
      schema_version: "v1",
      tool: "brand_buzz",
      applied_params: { query: "x" },
      quote: {
        mode: "inline",
        quote_credits: 2,
        waves_planned: 1,
        calls_planned: 2,
        plan: [{ wave: 1, name: "search", status: "pending", calls_planned: 2, calls_done: 0 }],
      },
      billing,
    };
    expect(schema("brand_buzz")(quote)).toBe(true);
    // A tool answer names its own tool: brand_buzz's quote is not an answer of viral_finder.
    expect(schema("viral_finder")(quote)).toBe(false);
    expect(schema("viral_finder")({ ...quote, tool: "viral_finder" })).toBe(true);
    const running = {
      request_id: "req_2",
      schema_version: "v1",
      status: "running",
      handle: "h_abc",
      retry_after_seconds: 1,
      billing,
      waves: { planned: 3, done: 1 },
      charge: { quote_credits: 3, charged_credits: 0 },
    };
    expect(schema("search")(running)).toBe(true);
    // A running answer charges nothing.
    expect(schema("search")({ ...running, charge: { quote_credits: 3, charged_credits: 3 } })).toBe(false);
    const error = {
      request_id: "req_3",
      schema_version: "v1",
      code: "max_cost_exceeded",
      message: "over",
      retryable: false,
      fix: { param: "max_cost_credits" },
      quote_credits: 4,
    };
    expect(schema("search")(error)).toBe(true);
    // account never charges, so it cannot answer max_cost_exceeded; and a free tool has no running answer.
    expect(schema("account")(error)).toBe(false);
    expect(schema("account")(running)).toBe(false);
  });
});
