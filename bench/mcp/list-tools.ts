/**
 * `node bench/mcp/list-tools.ts [--before REF] [--runs N]` measures what a host pays to load the
 * gateway's MCP tool list: the bytes of the `tools/list` answer, the time of that answer as raw JSON-RPC over
 * Streamable HTTP (fetch), and the time of the SDK v1 client's `listTools()` (`@modelcontextprotocol/sdk`, which
 * compiles every tool's `outputSchema` with Ajv when it lists). Each list is served by a bare HTTP server on
 * 127.0.0.1 that answers `initialize` and `tools/list` with the list as `tools/list` gives it, so only the list
 * differs. `--before REF` measures the list of that git revision too (its generated `mcp-tools.ts`: under
 * packages/engine/src/generated, or packages/server/src/generated before the list moved to the engine).
 * Each figure is the median of N runs (default 5), each with a new client.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const ROOT = new URL("../../", import.meta.url);
const GENERATED = "packages/engine/src/generated/mcp-tools.ts";
const GENERATED_BEFORE = "packages/server/src/generated/mcp-tools.ts";
const SDK = new URL("packages/server/node_modules/@modelcontextprotocol/sdk/dist/esm/", ROOT);

type Json = Record<string, unknown>;

/** The part of the v1 SDK's `Client` this bench uses. */
type V1ClientClass = new (info: {
  name: string;
  version: string;
}) => {
  connect(transport: unknown): Promise<void>;
  listTools(): Promise<{ tools: unknown[] }>;
  close(): Promise<void>;
};

const { values } = parseArgs({ options: { before: { type: "string" }, runs: { type: "string", default: "5" } } });
const runs = Math.max(1, Number(values.runs));

async function toolsOf(file: URL): Promise<Json[]> {
  const m = (await import(file.href)) as { MCP_TOOL_DEFINITIONS: Json[] };
  return m.MCP_TOOL_DEFINITIONS.map((t) => ({
    name: t["name"],
    title: t["title"],
    description: t["description"],
    inputSchema: t["inputSchema"],
    outputSchema: t["outputSchema"],
    annotations: t["annotations"],
  }));
}

/** A bare Streamable HTTP MCP endpoint (JSON answers, no session) that lists `tools`. */
async function serve(tools: Json[]): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.method !== "POST") return void res.writeHead(405).end();
      const msg = JSON.parse(body) as { id?: number; method: string; params?: Json };
      if (msg.id === undefined) return void res.writeHead(202).end();
      const result =
        msg.method === "initialize"
          ? {
              protocolVersion: msg.params?.["protocolVersion"] ?? "2025-06-18",
              capabilities: { tools: {} },
              serverInfo: { name: "bench", version: "1.0.0" },
            }
          : msg.method === "tools/list"
            ? { tools }
            : {};
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/mcp`, close: () => new Promise((r) => server.close(() => r())) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(label: string, tools: Json[]): Promise<void> {
  // The v1 SDK is a devDependency of @sdgw/server, loaded from its node_modules by path.
  const { Client } = (await import(new URL("client/index.js", SDK).href)) as { Client: V1ClientClass };
  const { StreamableHTTPClientTransport } = (await import(new URL("client/streamableHttp.js", SDK).href)) as {
    StreamableHTTPClientTransport: new (url: URL) => unknown;
  };
  const endpoint = await serve(tools);
  try {
    const raw: number[] = [];
    const sdk: number[] = [];
    let bytes = 0;
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      const res = await fetch(endpoint.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      });
      const text = await res.text();
      JSON.parse(text);
      raw.push(performance.now() - t0);
      bytes = Buffer.byteLength(text, "utf8");
      const client = new Client({ name: "bench", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url)));
      const t1 = performance.now();
      const listed = await client.listTools();
      sdk.push(performance.now() - t1);
      if (listed.tools.length !== tools.length) throw new Error(`listed ${listed.tools.length} of ${tools.length}`);
      await client.close();
    }
    console.log(
      `${label}: tools/list ${bytes} B; raw answer ${median(raw).toFixed(1)} ms; SDK v1 listTools() ${median(sdk).toFixed(1)} ms (median of ${runs})`,
    );
  } finally {
    await endpoint.close();
  }
}

if (values.before) {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-list-"));
  try {
    const file = join(dir, "mcp-tools.ts");
    const show = (path: string) =>
      execFileSync("git", ["show", `${values.before}:${path}`], { cwd: ROOT, maxBuffer: 1 << 26, stdio: "pipe" });
    let text: Buffer;
    try {
      text = show(GENERATED);
    } catch {
      text = show(GENERATED_BEFORE);
    }
    writeFileSync(file, text);
    await measure(`${values.before}`, await toolsOf(pathToFileURL(file)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
await measure("this checkout", await toolsOf(new URL(GENERATED, ROOT)));
