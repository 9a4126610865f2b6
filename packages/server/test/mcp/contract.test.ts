/**
 * The MCP tools as the contract describes them (D76, D77), the bound on the whole tool result (D78), toolsets and
 * read-only (D79), progress while a 202 is waited for (D80), and results as resources (D81), through the official
 * client in memory and `sdgw-mcp` over stdio.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Client as McpClient } from "@modelcontextprotocol/client";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSpec } from "../../../../generators/src/spec.ts";
import { ConfigError, configFromEnv } from "../../src/config.ts";
import {
  createMcpServer,
  MCP_TOOLS,
  McpToolsetError,
  mcpRoutes,
  toolFilterFromArgs,
  type CreateMcpServerOptions,
} from "../../src/mcp/index.ts";
import { createServer, type SdgwServer } from "../../src/storage/sqlite/server.ts";
import { BODIES, LARGE_DATA_CALLS } from "../tool-bodies.ts";
import { sdk } from "./sdk-client.ts";

const { Client, InMemoryTransport, ProtocolError, StreamableHTTPClientTransport } = sdk;
type Json = Record<string, any>;

const GENEROUS = {
  keyQps: 100_000,
  workspaceConcurrency: 100_000,
  addressPerMinute: 100_000,
  failureThreshold: 100_000,
};
const FREE = ["find", "capabilities", "account"];

function gateway(
  waitMs: number,
  latencyMs: [number, number] = [1, 2],
): { server: SdgwServer; key: string; accountId: string } {
  const server = createServer({
    dbPath: ":memory:",
    waitMs,
    pollAfterSeconds: 1,
    log: () => undefined,
    limits: GENEROUS,
    simulator: { knobs: { "*": { latencyMs } } },
  });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "contract", plan: "paid" });
  gw.accounts.grant(account.id, 100_000);
  return { server, key: gw.accounts.createKey({ accountId: account.id, name: "mcp" }).secret, accountId: account.id };
}

async function connect(options: CreateMcpServerOptions): Promise<McpClient> {
  const [c, s] = InMemoryTransport.createLinkedPair();
  await createMcpServer(options).connect(s);
  const client = new Client({ name: "contract", version: "1.0.0" });
  await client.connect(c);
  return client;
}

describe("tools described by the contract (D76, D77)", () => {
  let g: ReturnType<typeof gateway>;
  let client: McpClient;
  beforeAll(async () => {
    g = gateway(2000);
    client = await connect({ app: g.server.app, apiKey: g.key, gateway: g.server.gateway });
  });
  afterAll(async () => {
    await client.close();
    await g.server.close({ drainMs: 1000 });
  });

  it("lists each tool with the title, description and toolset of its operation's x-mcp, and an object outputSchema that compiles", async () => {
    const { tools } = await client.listTools();
    const doc = loadSpec();
    const ajv = new Ajv2020({ strict: false });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const byTool = new Map<string, Json>();
    for (const item of Object.values(doc.paths))
      for (const op of Object.values(item)) if (op["x-mcp"]) byTool.set((op["x-mcp"] as Json)["tool"], op);
    expect(tools.map((t) => t.name)).toEqual([...byTool.keys()]);
    for (const t of tools) {
      const op = byTool.get(t.name)!;
      expect(t.title).toBe(op["x-mcp"].title);
      expect(t.description!.startsWith(op["x-mcp"].description)).toBe(true);
      expect(t.description).toMatch(FREE.includes(t.name) ? /Free\.$/ : /Charges credits/);
      expect(t.outputSchema!["type"]).toBe("object");
      expect(() => ajv.compile(t.outputSchema!)).not.toThrow();
      expect(t.annotations).toMatchObject(
        FREE.includes(t.name)
          ? { readOnlyHint: true, idempotentHint: true, openWorldHint: false }
          : { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      );
    }
  });

  it("an outputSchema refuses an answer of another tool and a more it does not describe", () => {
    const ajv = new Ajv2020({ strict: false });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const account = ajv.compile(MCP_TOOLS.find((t) => t.name === "account")!.outputSchema);
    const search = ajv.compile(MCP_TOOLS.find((t) => t.name === "search")!.outputSchema);
    expect(account({ request_id: "req_1", schema_version: "v1", query: "x", matches: [] })).toBe(false);
    const page = {
      request_id: "req_01JD3YG3T5BN",
      schema_version: "v1",
      fetched_at: "2026-11-21T08:31:02Z",
      status: "ok",
      applied_params: { platform: "x" },
      warnings: [],
      items: [{ kind: "item", id: "1", url: "https://x.com/a/status/1", text: "t" }],
      platform: "x",
      billing: { cost: 1, balance: 10, unit: "credits" },
    };
    expect(search(page), JSON.stringify(search.errors)).toBe(true);
    expect(search({ ...page, more: { handle: "h_abc.1", rows_left: 3, note: "next" } })).toBe(true);
    expect(search({ ...page, more: { handle: "h_abc", rows_left: 3, note: "next" } })).toBe(false);
    expect(search({ ...page, extra: 1 })).toBe(false);
  });
});

describe("the bound holds the whole tool result (D78)", () => {
  let g: ReturnType<typeof gateway>;
  beforeAll(() => {
    g = gateway(2000);
  });
  afterAll(async () => {
    await g.server.close({ drainMs: 1000 });
  });

  it("every charging tool, on an answer larger than the bound, answers pages whose whole serialized result fits", async () => {
    const BOUND = 4_000;
    const client = await connect({
      app: g.server.app,
      apiKey: g.key,
      gateway: g.server.gateway,
      maxAnswerBytes: BOUND,
    });
    const large: Array<[string, Json]> = [
      ...LARGE_DATA_CALLS,
      ...Object.entries(BODIES).map(([tool, b]): [string, Json] => [tool, b.inline]),
      ["batch_stats", { ...BODIES.batch_stats.background, format: "csv" }],
    ];
    const sizes: string[] = [];
    for (const [name, args] of large) {
      let r = await client.callTool({ name, arguments: args });
      for (let i = 0; (r.structuredContent as Json)["status"] === "running"; i++) {
        if (i > 200) throw new Error(`${name} still running`);
        await new Promise((res) => setTimeout(res, 20));
        r = await client.callTool({ name, arguments: { handle: (r.structuredContent as Json)["handle"] } });
      }
      const whole =
        (r.structuredContent as Json)["handle"] ??
        String((r.structuredContent as Json)["more"]?.["handle"] ?? "").split(".")[0];
      const pages = [r];
      while ((pages.at(-1)!.structuredContent as Json)["more"])
        pages.push(
          await client.callTool({
            name,
            arguments: { handle: (pages.at(-1)!.structuredContent as Json)["more"]["handle"] },
          }),
        );
      expect(pages.length, `${name}: the answer was larger than the bound`).toBeGreaterThan(1);
      const bytes = pages.map((p) => Buffer.byteLength(JSON.stringify(p), "utf8"));
      for (const [i, p] of pages.entries()) {
        const rows =
          (p.structuredContent as Json)["items"] ??
          (p.structuredContent as Json)["targets"] ??
          Object.values((p.structuredContent as Json)["fanout"] ?? {}).flatMap((e: any) => e.items);
        // At least one row is always given, so a page of one row may be over this small bound; no other may.
        if (rows.length > 1) expect(bytes[i], `${name} page ${i}`).toBeLessThanOrEqual(BOUND);
      }
      expect(whole, name).toBeTruthy();
      sizes.push(`${name}: ${pages.length} pages, largest ${Math.max(...bytes)} B`);
    }
    console.log(`[D78, bound ${BOUND} B] ${sizes.join("; ")}`);
    await client.close();
  }, 60_000);
});

describe("toolsets and read-only (D79)", () => {
  let g: ReturnType<typeof gateway>;
  beforeAll(() => {
    g = gateway(2000);
  });
  afterAll(async () => {
    await g.server.close({ drainMs: 1000 });
  });

  it("read-only lists and serves only the free tools; a charging tool is then an unknown tool", async () => {
    const client = await connect({ app: g.server.app, apiKey: g.key, gateway: g.server.gateway, readOnly: true });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(FREE);
    expect(
      ((await client.callTool({ name: "account", arguments: {} })).structuredContent as Json)["billing"],
    ).toBeDefined();
    const before = g.server.gateway.ledger.view(g.accountId, null).balance;
    for (const name of ["search", "batch_stats"]) {
      const err = await client
        .callTool({ name, arguments: { platform: "x", query: "a", targets: ["https://x.com/a/status/1"] } })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProtocolError);
      expect((err as { code: number }).code).toBe(-32602);
      expect(String((err as Error).message)).toContain(`Unknown tool ${name}`);
    }
    expect(g.server.gateway.ledger.view(g.accountId, null).balance).toBe(before);
    await client.close();
  });

  it("toolsets keep only their tools, in tools/list and tools/call", async () => {
    const client = await connect({
      app: g.server.app,
      apiKey: g.key,
      gateway: g.server.gateway,
      toolsets: ["tools", "account"],
    });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual([
      "brand_buzz",
      "comment_insights",
      "account_watch",
      "find_creators",
      "creator_card",
      "batch_stats",
      "viral_finder",
      "account",
    ]);
    await expect(client.callTool({ name: "search", arguments: { platform: "x", query: "a" } })).rejects.toThrow(
      /Unknown tool search/,
    );
    await expect(client.callTool({ name: "find", arguments: { query: "comments" } })).rejects.toThrow(
      /Unknown tool find/,
    );
    const quote = await client.callTool({
      name: "brand_buzz",
      arguments: { ...BODIES.brand_buzz.inline, confirm: false },
    });
    expect((quote.structuredContent as Json)["quote"]).toBeDefined();
    await client.close();
  });

  it("an unknown toolset name is refused at start, naming the flag or variable and the allowed names", () => {
    expect(() => createMcpServer({ app: g.server.app, apiKey: g.key, toolsets: ["data", "admin"] })).toThrow(
      McpToolsetError,
    );
    expect(() => toolFilterFromArgs(["--toolsets", "data,admin"], {})).toThrow(
      /--toolsets: unknown toolset "admin"\. Allowed: data, tools, discovery, account \(or all\)/,
    );
    expect(() => toolFilterFromArgs([], { SDGW_MCP_TOOLSETS: "dta" })).toThrow(
      /SDGW_MCP_TOOLSETS: unknown toolset "dta"/,
    );
    expect(toolFilterFromArgs(["--read-only", "--toolsets=all"], {})).toEqual({
      readOnly: true,
      toolsets: ["data", "tools", "discovery", "account"],
    });
    expect(toolFilterFromArgs([], { SDGW_MCP_READ_ONLY: "1" })).toEqual({ readOnly: true });
    expect(() => configFromEnv({ SDGW_MCP_TOOLSETS: "admin", SDGW_MCP_READ_ONLY: "maybe" })).toThrow(ConfigError);
    expect(configFromEnv({ SDGW_MCP_TOOLSETS: "data", SDGW_MCP_READ_ONLY: "1" }).mcp).toEqual({
      toolsets: ["data"],
      readOnly: true,
    });
  });

  it("sdgw-mcp --toolsets with an unknown name exits at once with the message, before serving anything", () => {
    const bin = fileURLToPath(new URL("../../src/bin/sdgw-mcp.ts", import.meta.url));
    const run = spawnSync(process.execPath, ["--conditions=source", bin, "--toolsets", "data,admin"], {
      encoding: "utf8",
      env: { PATH: process.env["PATH"] ?? "", SDGW_DB: ":memory:" },
      timeout: 20_000,
    });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(
      'sdgw-mcp: --toolsets: unknown toolset "admin". Allowed: data, tools, discovery, account (or all).',
    );
  });

  it("/mcp over HTTP takes the server's config (SDGW_MCP_READ_ONLY) and the mcpRoutes options", async () => {
    const server = createServer({
      dbPath: ":memory:",
      log: () => undefined,
      limits: GENEROUS,
      mcp: { readOnly: true },
    });
    const gw = server.gateway;
    const { account } = gw.accounts.createAccount({ name: "ro", plan: "paid" });
    const key = gw.accounts.createKey({ accountId: account.id, name: "mcp" }).secret;
    await server.app.register(mcpRoutes, {
      prefix: "/data",
      target: server.app,
      gateway: gw,
      toolsets: ["data"],
      readOnly: false,
    });
    const base = await server.listen({ host: "127.0.0.1", port: 0 });
    const list = async (path: string) => {
      const c = new Client({ name: "ro", version: "1.0.0" });
      await c.connect(
        new StreamableHTTPClientTransport(new URL(`${base}${path}`), {
          requestInit: { headers: { "x-api-key": key } },
        }),
      );
      const names = (await c.listTools()).tools.map((t) => t.name);
      await c.close();
      return names;
    };
    expect(await list("/mcp")).toEqual(FREE);
    expect(await list("/data/mcp")).toEqual(["search", "trending", "detail", "comments", "user_profile", "user_posts"]);
    await server.close({ drainMs: 1000 });
  });
});

describe("long runs: progress while a 202 is waited for (D80), results as resources (D81)", () => {
  let g: ReturnType<typeof gateway>;
  beforeAll(() => {
    g = gateway(1, [40, 60]);
  });
  afterAll(async () => {
    await g.server.close({ drainMs: 2000 });
  });

  it("with a progressToken, a run that ends within maxWaitMs sends waves done of waves planned and answers the finished result", async () => {
    const client = await connect({
      app: g.server.app,
      apiKey: g.key,
      gateway: g.server.gateway,
      maxWaitMs: 20_000,
      pollIntervalMs: 30,
    });
    const seen: Array<{ progress: number; total?: number; message?: string }> = [];
    const r = await client.callTool(
      { name: "brand_buzz", arguments: BODIES.brand_buzz.background },
      { onprogress: (p) => void seen.push(p) },
    );
    const s = r.structuredContent as Json;
    expect(s["status"]).toBe("ok");
    expect(seen.length).toBeGreaterThan(0);
    const total = seen[0]!.total!;
    expect(total).toBeGreaterThan(1);
    for (const p of seen) expect(p.total).toBe(total);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
    expect(seen[0]!.message).toMatch(/^brand_buzz: \d+ of \d+ waves done$/);
    // The finished answer links its whole result, and resources/read reads it (free).
    const link = (r.content as Array<Json>).find((c) => c["type"] === "resource_link")!;
    expect(link["uri"]).toMatch(/^sdgw:\/\/results\/h_/);
    const read = await client.readResource({ uri: link["uri"] });
    expect(JSON.parse((read.contents[0] as { text: string }).text)["items"]).toEqual(s["items"]);
    await client.close();
  }, 120_000);

  it("a run still going at maxWaitMs answers the running answer with a note on reading on; without a token, at once", async () => {
    const client = await connect({
      app: g.server.app,
      apiKey: g.key,
      gateway: g.server.gateway,
      maxWaitMs: 60,
      pollIntervalMs: 20,
    });
    const seen: unknown[] = [];
    const started = Date.now();
    const r = await client.callTool(
      { name: "find_creators", arguments: BODIES.find_creators.background },
      { onprogress: (p) => void seen.push(p) },
    );
    const s = r.structuredContent as Json;
    expect(s["status"]).toBe("running");
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
    expect(seen.length).toBeGreaterThan(0);
    const note = (r.content as Array<{ type: string; text: string }>)[0]!.text;
    expect(note).toContain(`Call find_creators with { "handle": "${String(s["handle"])}" }`);
    const plain = await client.callTool({ name: "viral_finder", arguments: BODIES.viral_finder.background });
    expect((plain.structuredContent as Json)["status"]).toBe("running");
    await client.close();
  });

  it("over Streamable HTTP on a real socket, a call with a progressToken is answered as an event stream carrying its progress", async () => {
    const url = `${await g.server.listen({ host: "127.0.0.1", port: 0 })}/mcp`;
    const client = new sdk.Client({ name: "progress-over-http", version: "1.0.0" });
    await client.connect(
      new sdk.StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { "x-api-key": g.key } } }),
    );
    const seen: Array<{ progress: number; total?: number }> = [];
    const r = await client.callTool(
      { name: "brand_buzz", arguments: BODIES.brand_buzz.background },
      { onprogress: (p) => void seen.push(p) },
    );
    expect((r.structuredContent as Json)["status"]).toBe("ok");
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.at(-1)!.progress).toBeLessThanOrEqual(seen[0]!.total!);
    // without a token the answer is one JSON body, as before
    const plain = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "x-api-key": g.key,
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "capabilities", arguments: {} },
      }),
    });
    expect(plain.headers.get("content-type")).toMatch(/^application\/json/);
    await plain.text();
    await client.close();
  }, 120_000);

  it("resources/read refuses a URI that is not a result, and a handle that is not this key's", async () => {
    const client = await connect({ app: g.server.app, apiKey: g.key, gateway: g.server.gateway });
    await expect(client.readResource({ uri: "https://example.com/x" })).rejects.toThrow(/Unknown resource/);
    await expect(client.readResource({ uri: "sdgw://results/h_doesnotexist" })).rejects.toThrow(/not_found/);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(["sdgw://results/{handle}{?format}"]);
    await client.close();
  });
});
