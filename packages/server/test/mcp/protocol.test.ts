/**
 * The MCP endpoint's protocol edges (issue 16), through the official v2 client over Streamable HTTP against a
 * listening server, and over stdio: GET/DELETE answer 405 at once (D61), a missing or wrong key is refused at
 * initialize with 401 and WWW-Authenticate (D62), Origin is checked (D63), titles, annotations and instructions
 * (D64), the stdio key fix (D65), bad arguments as isError tool results and a bad tools/list cursor as -32602 (D66).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Client as McpClient } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SdgwError } from "../../../client/src/errors.ts";
import { collectMore } from "../../../client/src/more.ts";
import { createServer, type SdgwServer } from "../../src/storage/sqlite/server.ts";
import { createMcpServer, MCP_INSTRUCTIONS } from "../../src/mcp/index.ts";
import { allowedOriginsFromEnv, MCP_WWW_AUTHENTICATE, originAllowed } from "../../src/mcp/http.ts";
import { sdk } from "./sdk-client.ts";

const { Client, InMemoryTransport, ProtocolError, StreamableHTTPClientTransport } = sdk;
const { StdioClientTransport } = (await import(
  "@modelcontextprotocol/client/stdio"
)) as typeof import("@modelcontextprotocol/client/stdio");

type Structured = Record<string, any>;
const GENEROUS = {
  keyQps: 100_000,
  workspaceConcurrency: 100_000,
  addressPerMinute: 100_000,
  failureThreshold: 100_000,
};
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

function gateway(): { server: SdgwServer; key: string } {
  const server = createServer({ dbPath: ":memory:", log: () => undefined, limits: GENEROUS });
  const { account } = server.gateway.accounts.createAccount({ name: "MCP protocol", plan: "paid" });
  server.gateway.accounts.grant(account.id, 100);
  return { server, key: server.gateway.accounts.createKey({ accountId: account.id, name: "mcp" }).secret };
}

async function httpClient(url: string, headers: Record<string, string>): Promise<McpClient> {
  const client = new Client({ name: "sdgw-protocol-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

describe("/mcp over Streamable HTTP: methods, keys, origins", () => {
  let server: SdgwServer;
  let key: string;
  let base: string;
  let url: string;
  beforeAll(async () => {
    const g = gateway();
    server = g.server;
    key = g.key;
    base = await server.listen({ host: "127.0.0.1", port: 0 });
    url = `${base}/mcp`;
  });
  afterAll(async () => {
    await server.close({ drainMs: 200 });
  });

  for (const method of ["GET", "DELETE"]) {
    it(`${method} /mcp answers 405 at once with Allow: POST and the not_found structure`, async () => {
      const started = Date.now();
      const res = await fetch(url, {
        method,
        headers: { accept: "text/event-stream", "x-api-key": key },
        signal: AbortSignal.timeout(3000),
      });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      const body = (await res.json()) as Structured;
      expect(body).toMatchObject({
        code: "not_found",
        reason: "no_such_route",
        retryable: false,
        schema_version: "v1",
        fix: { allowed: ["POST /mcp"], example_call: { method: "POST", path: "/mcp" } },
      });
      expect(body["message"]).toMatch(new RegExp(`^${method} /mcp is not served`));
      expect(body["request_id"]).toMatch(/^req_/);
      expect(Date.now() - started).toBeLessThan(2000);
    });
  }

  it("initialize without a key: 401, WWW-Authenticate naming the key schemes, unauthorized reason missing", async () => {
    const res = await fetch(url, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify(INIT) });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(MCP_WWW_AUTHENTICATE);
    // No Bearer challenge: OAuth-capable clients would start an OAuth discovery this server does not serve (D142).
    expect(MCP_WWW_AUTHENTICATE).toBe('ApiKey header="X-API-Key"');
    expect(res.headers.get("www-authenticate")).not.toMatch(/bearer/i);
    const body = (await res.json()) as Structured;
    expect(body).toMatchObject({ code: "unauthorized", reason: "missing", retryable: false });
    // A JSON-RPC error answer to the initialize, whose message a person can read.
    expect(body).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32001 } });
    expect(body["error"]["message"]).toMatch(/^No key was sent; a valid key is required\. .*key/);
    expect(body["error"]["data"]).toMatchObject({ code: "unauthorized", reason: "missing" });
  });

  it("initialize with a wrong key: 401 reason invalid, before any MCP message is served", async () => {
    for (const headers of [{ "x-api-key": "sdgw_wrong_key" }, { authorization: "Bearer sdgw_wrong_key" }]) {
      const res = await fetch(url, {
        method: "POST",
        headers: { ...MCP_HEADERS, ...headers },
        body: JSON.stringify(INIT),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe(MCP_WWW_AUTHENTICATE);
      const body = (await res.json()) as Structured;
      expect(body).toMatchObject({ code: "unauthorized", reason: "invalid" });
      expect(body["fix"]["note"]).toMatch(/key/i);
      expect(body).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32001 } });
      expect(body["error"]["message"]).toMatch(/^This key is not valid\./);
    }
  });

  it("the official client's connect() rejects for a wrong or missing key, at once and without OAuth", async () => {
    for (const headers of [{ "x-api-key": "sdgw_wrong_key" }, {}]) {
      const started = Date.now();
      const client = new Client({ name: "sdgw-protocol-test", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
      const error = await client.connect(transport).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Error);
      // No OAuth: the SDK's plain 401 error (UnauthorizedError without an auth provider), not a redirect or discovery.
      expect(String((error as Error).message)).toMatch(/401|unauthori[sz]ed/i);
      expect(String((error as Error).message)).not.toMatch(/oauth|metadata|redirect/i);
      // What the client shows says what is wrong with the key.
      expect(String((error as Error).message)).toMatch(/This key is not valid|No key was sent/);
      expect(Date.now() - started).toBeLessThan(3000);
      await client.close().catch(() => undefined);
    }
  });

  it("a revoked key is refused at initialize with reason revoked", async () => {
    const gw = server.gateway;
    const { account } = gw.accounts.createAccount({ name: "revoked", plan: "paid" });
    const k = gw.accounts.createKey({ accountId: account.id, name: "gone" });
    gw.accounts.revokeKey(k.id);
    const res = await fetch(url, {
      method: "POST",
      headers: { ...MCP_HEADERS, "x-api-key": k.secret },
      body: JSON.stringify(INIT),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: "unauthorized", reason: "revoked" });
  });

  it("an Origin that is not allowed answers 403 with invalid_params naming Origin, before the key is looked at", async () => {
    for (const origin of [
      "http://evil.example",
      "https://localhost.evil.example:8080",
      "http://127.0.0.1.evil.example",
    ]) {
      for (const method of ["POST", "GET"]) {
        const res = await fetch(url, {
          method,
          headers: { ...MCP_HEADERS, origin, "x-api-key": key },
          ...(method === "POST" ? { body: JSON.stringify(INIT) } : {}),
        });
        expect(res.status, `${method} ${origin}`).toBe(403);
        const body = (await res.json()) as Structured;
        expect(body).toMatchObject({ code: "invalid_params", retryable: false, fix: { param: "Origin" } });
        expect(body["message"]).toContain(origin);
        expect(body["fix"]["note"]).toContain("SDGW_MCP_ALLOWED_ORIGINS");
      }
    }
  });

  it("loopback origins, the server's own origin and no Origin at all are served", async () => {
    const port = new URL(base).port;
    for (const origin of [
      undefined,
      "http://localhost:5173",
      "http://127.0.0.1:3000",
      "http://[::1]:8080",
      "http://localhost",
      base,
    ]) {
      const client = await httpClient(url, { "x-api-key": key, ...(origin ? { origin } : {}) });
      const acct = await client.callTool({ name: "account", arguments: {} });
      expect((acct.structuredContent as Structured)["billing"]["balance_credits"], String(origin)).toBe(100);
      await client.close();
    }
    expect(base).toBe(`http://127.0.0.1:${port}`);
  });

  it("bad arguments are isError results with invalid_params naming the parameter; collectMore throws SdgwError", async () => {
    const client = await httpClient(url, { "x-api-key": key });
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["search", { platform: "weibo" }, "query"],
      ["search", { platform: "weibo", query: "x", count: "many" }, "count"],
      ["search", { handle: "not a handle!" }, "handle"],
      ["search", { platform: "weibo", query: "x", idempotency_key: "" }, "idempotency_key"],
      ["account", { extra: 1 }, "extra"],
      ["capabilities", { platform: "x" }, "platform"],
    ];
    for (const [name, args, param] of cases) {
      const r = await client.callTool({ name, arguments: args });
      expect(r.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      const body = r.structuredContent as Structured;
      expect(body).toMatchObject({ code: "invalid_params", retryable: false, schema_version: "v1" });
      expect(body["fix"]["param"], `${name} ${JSON.stringify(args)}`).toBe(param);
      expect((r.content as Array<{ text: string }>)[0]!.text).toMatch(
        new RegExp(`^${name} failed \\(HTTP 400\\) invalid_params: `),
      );
    }
    const thrown = await collectMore(client, "search", { platform: "weibo" }).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(SdgwError);
    expect(thrown).toMatchObject({ code: "invalid_params", status: 0, fix: { param: "query" } });
    // Nothing was charged for any of them.
    const acct = await client.callTool({ name: "account", arguments: {} });
    expect((acct.structuredContent as Structured)["billing"]["balance_credits"]).toBe(100);
    await client.close();
  });

  it("an unknown tool and a tools/list cursor are JSON-RPC -32602 errors", async () => {
    const client = await httpClient(url, { "x-api-key": key });
    await expect(client.callTool({ name: "call", arguments: {} })).rejects.toSatisfy(
      (e: unknown) => e instanceof ProtocolError && e.code === -32602,
    );
    await expect(client.listTools({ cursor: "bogus" })).rejects.toSatisfy(
      (e: unknown) => e instanceof ProtocolError && e.code === -32602 && /cursor/i.test(e.message),
    );
    const { tools, nextCursor } = await client.listTools();
    expect(tools).toHaveLength(16);
    expect(nextCursor).toBeUndefined();
    // On the wire: a JSON-RPC error with code -32602, not an HTTP error.
    const res = await fetch(url, {
      method: "POST",
      headers: { ...MCP_HEADERS, "x-api-key": key, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list", params: { cursor: "x" } }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: 7, error: { code: -32602 } });
    await client.close();
  });

  it("tools have titles and annotations; initialize gives instructions", async () => {
    const client = await httpClient(url, { "x-api-key": key });
    const instructions = client.getInstructions() ?? "";
    expect(instructions).toBe(MCP_INSTRUCTIONS);
    for (const word of [
      "handle",
      "more",
      "confirm: false",
      "credits",
      "free",
      "max_cost_credits",
      "idempotency_key",
      "isError",
      "find",
    ])
      expect(instructions, word).toContain(word);
    const { tools } = await client.listTools();
    const free = ["find", "capabilities", "account"];
    for (const t of tools) {
      expect(t.title, t.name).toMatch(/^[A-Z]/);
      expect(t.annotations?.title).toBe(t.title);
      if (free.includes(t.name))
        expect(t.annotations, t.name).toMatchObject({ readOnlyHint: true, idempotentHint: true, openWorldHint: false });
      else
        expect(t.annotations, t.name).toMatchObject({
          readOnlyHint: false,
          destructiveHint: false,
          idempotentHint: false,
          openWorldHint: true,
        });
    }
    expect(new Set(tools.map((t) => t.title)).size).toBe(16);
    await client.close();
  });
});

describe("/mcp allowed origins: SDGW_MCP_ALLOWED_ORIGINS and the matching rule", () => {
  it("originAllowed: loopback, own origin, exact entries and :* port wildcards, nothing else", () => {
    const list = ["https://app.example.com", "http://devbox:*"];
    const yes = [
      "http://localhost:1234",
      "http://LOCALHOST",
      "http://127.0.0.1:8787",
      "http://[::1]:9",
      "https://app.example.com",
      "https://app.example.com/",
      "http://devbox:3000",
      "http://devbox",
      "http://gw.internal:8787",
    ];
    const no = [
      "https://localhost:1234",
      "http://localhost.evil:1",
      "https://app.example.com:444",
      "http://app.example.com",
      "http://devbox:3000x",
      "http://devbox.evil:3000",
      "null",
      "http://gw.internal:8788",
    ];
    for (const o of yes) expect(originAllowed(o, "gw.internal:8787", list), o).toBe(true);
    for (const o of no) expect(originAllowed(o, "gw.internal:8787", list), o).toBe(false);
  });

  it("reads the env var comma-separated, and the routes use it when registered", async () => {
    expect(allowedOriginsFromEnv({ SDGW_MCP_ALLOWED_ORIGINS: " https://a.example , ,http://b:* " })).toEqual([
      "https://a.example",
      "http://b:*",
    ]);
    expect(allowedOriginsFromEnv({})).toEqual([]);
    const before = process.env["SDGW_MCP_ALLOWED_ORIGINS"];
    process.env["SDGW_MCP_ALLOWED_ORIGINS"] = "https://agent.example";
    let g: ReturnType<typeof gateway>;
    try {
      g = gateway();
      await g.server.app.ready();
    } finally {
      if (before === undefined) delete process.env["SDGW_MCP_ALLOWED_ORIGINS"];
      else process.env["SDGW_MCP_ALLOWED_ORIGINS"] = before;
    }
    try {
      const post = (origin: string) =>
        g.server.app.inject({
          method: "POST",
          url: "/mcp",
          headers: { ...MCP_HEADERS, origin, "x-api-key": g.key },
          payload: JSON.stringify(INIT),
        });
      expect((await post("https://agent.example")).statusCode).toBe(200);
      expect((await post("https://other.example")).statusCode).toBe(403);
    } finally {
      await g.server.close();
    }
  });
});

describe("the unauthorized fix names where the key comes from", () => {
  it("over HTTP (keySource headers) it says to send the key in a header", async () => {
    const { server } = gateway();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer({ app: server.app, apiKey: null }).connect(serverSide);
    const client = new Client({ name: "t", version: "1" });
    await client.connect(clientSide);
    const r = await client.callTool({ name: "search", arguments: { platform: "weibo", query: "x" } });
    expect(r.isError).toBe(true);
    expect((r.structuredContent as Structured)["fix"]["note"]).toMatch(/X-API-Key/);
    await client.close();
    await server.close();
  });

  it("over stdio (sdgw-mcp) it says to set SDGW_API_KEY, with no key and with a wrong one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sdgw-mcp-key-"));
    try {
      const dbPath = join(dir, "sdgw.sqlite");
      await createServer({ dbPath, log: () => undefined }).close();
      const bin = fileURLToPath(new URL("../../src/bin/sdgw-mcp.ts", import.meta.url));
      for (const apiKey of [null, "sdgw_wrong_key"]) {
        const env: Record<string, string> = {
          SDGW_DB: dbPath,
          PATH: process.env["PATH"] ?? "",
          ...(apiKey ? { SDGW_API_KEY: apiKey } : {}),
        };
        const client = new Client({ name: "sdgw-stdio-key", version: "1.0.0" });
        await client.connect(
          new StdioClientTransport({
            command: process.execPath,
            args: ["--conditions=source", bin],
            env,
            stderr: "pipe",
          }),
        );
        for (const name of ["search", "account"]) {
          const r = await client.callTool({
            name,
            arguments: name === "search" ? { platform: "weibo", query: "x" } : {},
          });
          expect(r.isError, `${name} ${apiKey}`).toBe(true);
          const body = r.structuredContent as Structured;
          expect(body).toMatchObject({ code: "unauthorized", reason: apiKey ? "invalid" : "missing" });
          expect(body["fix"]["note"]).toMatch(/^Set SDGW_API_KEY in the environment of sdgw-mcp/);
          expect(body["fix"]["note"]).not.toMatch(/X-API-Key|Authorization/);
          expect(body["fix"]["action_url"]).toMatch(/^https?:\/\//);
          if (!apiKey) expect(body["message"]).toMatch(/SDGW_API_KEY is not set/);
          expect((r.content as Array<{ text: string }>)[0]!.text).toContain("SDGW_API_KEY");
        }
        await client.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
