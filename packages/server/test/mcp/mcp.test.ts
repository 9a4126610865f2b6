/**
 * The MCP server against an in-process gateway, through the official client: in memory and over Streamable HTTP on
 * 127.0.0.1. Tools, charging once, free `handle` reads, a 200-row result read to the end through `more` with the
 * SDK helper `collectMore`, the size bound, protocol errors and gateway errors.
 */
import type { Client as McpClient } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectMore } from "../../../client/src/more.ts";
import { createServer, type SdgwServer } from "../../src/storage/sqlite/server.ts";
import { createMcpServer, MCP_ANSWER_BYTES } from "../../src/mcp/index.ts";
import { CHARGING, FREE } from "./clients/harness.ts";
import { sdk } from "./sdk-client.ts";

const { Client, InMemoryTransport, ProtocolError, StreamableHTTPClientTransport } = sdk;
type Client = McpClient;

const GENEROUS = {
  keyQps: 100_000,
  workspaceConcurrency: 100_000,
  addressPerMinute: 100_000,
  failureThreshold: 100_000,
};

type Structured = Record<string, any>;

/** A server whose calls answer 202 at once (waitMs 1, simulated latency 20-40 ms), so every result has a handle. */
function gateway(): { server: SdgwServer; key: string } {
  const server = createServer({
    dbPath: ":memory:",
    waitMs: 1,
    log: () => undefined,
    limits: GENEROUS,
    simulator: { knobs: { "*": { latencyMs: [20, 40] } } },
  });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "MCP test", plan: "paid" });
  gw.accounts.grant(account.id, 1000);
  return { server, key: gw.accounts.createKey({ accountId: account.id, name: "mcp" }).secret };
}

async function inMemoryClient(server: SdgwServer, key: string | null): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer({ app: server.app, apiKey: key }).connect(serverSide);
  const client = new Client({ name: "sdgw-test", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads a handle until its run has ended. */
async function finished(client: Client, tool: string, handle: string): Promise<Structured> {
  for (let i = 0; i < 100; i++) {
    const r = await client.callTool({ name: tool, arguments: { handle } });
    const s = r.structuredContent as Structured;
    if (s["status"] !== "running") return s;
    await sleep(30);
  }
  throw new Error("run did not end");
}

async function balance(client: Client): Promise<number> {
  const r = await client.callTool({ name: "account", arguments: {} });
  return (r.structuredContent as Structured)["billing"]["balance_credits"];
}

describe("MCP server (in memory)", () => {
  let server: SdgwServer;
  let client: Client;
  let key: string;
  beforeAll(async () => {
    const g = gateway();
    server = g.server;
    key = g.key;
    client = await inMemoryClient(server, g.key);
  });
  afterAll(async () => {
    await client.close();
    await server.close({ drainMs: 500 });
  });

  it("lists the 13 charging tools with handle and the 3 free tools, no call", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names.sort()).toEqual([...CHARGING, ...FREE].sort());
    expect(names).not.toContain("call");
    for (const t of tools) {
      const props = (t.inputSchema.properties ?? {}) as Record<string, unknown>;
      expect(t.description?.length, t.name).toBeGreaterThan(20);
      expect("handle" in props, t.name).toBe(CHARGING.includes(t.name));
      expect("idempotency_key" in props, t.name).toBe(CHARGING.includes(t.name));
    }
    const search = tools.find((t) => t.name === "search")!;
    expect(Object.keys(search.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(["platform", "platforms", "query", "count"]),
    );
  });

  it("a search charges once; reading its handle is free and nothing runs again", async () => {
    const before = await balance(client);
    const first = await client.callTool({ name: "search", arguments: { platform: "weibo", query: "露营", count: 5 } });
    expect(first.isError).toBeFalsy();
    const running = first.structuredContent as Structured;
    expect(running["status"]).toBe("running");
    expect(typeof running["handle"]).toBe("string");
    const done = await finished(client, "search", running["handle"]);
    expect(done["status"]).toBe("ok");
    expect(done["items"]).toHaveLength(5);
    expect(done["more"]).toBeUndefined();
    const charged = await balance(client);
    expect(before - charged).toBe(1);
    // The same handle again, with other (ignored) arguments: the same result, free.
    const again = await client.callTool({
      name: "search",
      arguments: { handle: running["handle"], platform: "x", query: "ignored" },
    });
    expect((again.structuredContent as Structured)["items"]).toEqual(done["items"]);
    expect(JSON.parse((again.content as Array<{ text: string }>)[0]!.text)).toEqual(again.structuredContent);
    expect(await balance(client)).toBe(charged);
  });

  it("a 200-row fanout is read to the end through more with collectMore, charged once, every answer within 60 KB", async () => {
    const before = await balance(client);
    const first = await client.callTool({
      name: "search",
      arguments: { platforms: "all", query: "camping", count: 20 },
    });
    const handle = (first.structuredContent as Structured)["handle"] as string;
    await finished(client, "search", handle);
    const afterRun = await balance(client);
    expect(before - afterRun).toBe(10);

    // Record every answer the helper sees.
    const answers: Array<{ args: Record<string, unknown>; rows: number; bytes: number; more?: Structured }> = [];
    const recording = {
      async callTool(params: { name: string; arguments?: Record<string, unknown> }) {
        const r = await client.callTool(params);
        const s = r.structuredContent as Structured;
        const rows = Object.values(s["fanout"] as Record<string, { items?: unknown[] }>).reduce(
          (n, e) => n + (e.items?.length ?? 0),
          0,
        );
        answers.push({
          args: params.arguments ?? {},
          rows,
          bytes: bytes(s),
          ...(s["more"] ? { more: s["more"] } : {}),
        });
        return r;
      },
    };
    const rows = await collectMore(recording, "search", { handle });
    expect(rows).toHaveLength(200);
    expect(answers.length).toBeGreaterThanOrEqual(2);
    for (const a of answers) expect(a.bytes).toBeLessThanOrEqual(MCP_ANSWER_BYTES);
    let seen = 0;
    for (const [i, a] of answers.entries()) {
      seen += a.rows;
      if (i < answers.length - 1) {
        expect(a.more!["handle"]).toBe(`${handle}.${seen}`);
        expect(a.more!["rows_left"]).toBe(200 - seen);
        expect(a.more!["note"]).toMatch(/reading on is free/);
        expect(answers[i + 1]!.args).toEqual({ handle: a.more!["handle"] });
      } else expect(a.more).toBeUndefined();
    }
    // Every row once, in order: ids of the whole result over HTTP equal the rows read through more.
    const whole = await server.app.inject({
      method: "GET",
      url: `/v1/results/${handle}`,
      headers: { "x-api-key": key },
    });
    const httpIds = Object.entries(
      JSON.parse(whole.body)["fanout"] as Record<string, { items: Array<{ id: string }> }>,
    ).flatMap(([p, e]) => e.items.map((i) => `${p}:${i.id}`));
    const ids = rows.map((r) => `${(r as { platform: string }).platform}:${(r as { id: string }).id}`);
    expect(ids).toEqual(httpIds);
    expect(JSON.parse(whole.body)["more"]).toBeUndefined();
    expect(await balance(client)).toBe(afterRun);
    console.log(
      `more walk: ${answers
        .map(
          (a) =>
            `${JSON.stringify(a.args)} -> ${a.rows} rows, ${a.bytes} ` +
            `B${a.more ? `, more ${a.more["handle"]} (${a.more["rows_left"]} left)` : ""}`,
        )
        .join("; ")}`,
    );
  });

  it("an unknown tool is a protocol error; bad arguments are isError results with invalid_params (D66)", async () => {
    await expect(client.callTool({ name: "call", arguments: {} })).rejects.toSatisfy(
      (e: unknown) => e instanceof ProtocolError && e.code === -32602,
    );
    const bad = await client.callTool({ name: "search", arguments: { platform: "weibo" } });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ code: "invalid_params", fix: { param: "query" } });
    const handle = await client.callTool({ name: "search", arguments: { handle: "not a handle!" } });
    expect(handle.structuredContent).toMatchObject({ code: "invalid_params", fix: { param: "handle" } });
    const extra = await client.callTool({ name: "account", arguments: { extra: 1 } });
    expect(extra.structuredContent).toMatchObject({ code: "invalid_params", fix: { param: "extra" } });
  });

  it("a gateway error is a tool result with isError and the error structure", async () => {
    const unknown = await client.callTool({ name: "search", arguments: { handle: "h_doesNotExist0000" } });
    expect(unknown.isError).toBe(true);
    expect((unknown.structuredContent as Structured)["code"]).toBe("not_found");
    expect((unknown.content as Array<{ text: string }>)[0]!.text).toMatch(/not_found/);
    const tool = await client.callTool({ name: "brand_buzz", arguments: { query: "喜茶", scale: "large" } });
    expect(tool.isError).toBe(true);
    const body = tool.structuredContent as Structured;
    expect(body["code"]).toBe("not_supported");
    expect(typeof body["request_id"]).toBe("string");
    expect(typeof body["message"]).toBe("string");
  });

  it("a client without a key gets unauthorized as isError on charging tools; capabilities and find stay free", async () => {
    const anonymous = await inMemoryClient(server, null);
    const r = await anonymous.callTool({ name: "search", arguments: { platform: "weibo", query: "x" } });
    expect(r.isError).toBe(true);
    expect((r.structuredContent as Structured)["code"]).toBe("unauthorized");
    const caps = await anonymous.callTool({ name: "capabilities", arguments: {} });
    expect(caps.isError).toBeFalsy();
    expect(bytes(caps.structuredContent)).toBeGreaterThan(100);
    const find = await anonymous.callTool({ name: "find", arguments: { query: "xiaohongshu comments" } });
    expect((find.structuredContent as Structured)["matches"].length).toBeGreaterThan(0);
    await anonymous.close();
  });
});

describe("MCP over Streamable HTTP at /mcp", () => {
  let server: SdgwServer;
  let key: string;
  let url: string;
  beforeAll(async () => {
    const g = gateway();
    server = g.server;
    key = g.key;
    url = `${await server.listen({ host: "127.0.0.1", port: 0 })}/mcp`;
  });
  afterAll(async () => {
    await server.close({ drainMs: 500 });
  });

  it("refuses a request without a key with 401 and the error structure", async () => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe("unauthorized");
  });

  it("lists tools and searches with a Bearer key", async () => {
    const client = new Client({ name: "sdgw-http-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
    );
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(16);
    const first = await client.callTool({
      name: "search",
      arguments: { platform: "xiaohongshu", query: "露营", count: 3 },
    });
    const done = await finished(client, "search", (first.structuredContent as Structured)["handle"]);
    expect(done["items"]).toHaveLength(3);
    const acct = await client.callTool({ name: "account", arguments: {} });
    expect((acct.structuredContent as Structured)["billing"]["balance_credits"]).toBe(999);
    await client.close();
  });
});
