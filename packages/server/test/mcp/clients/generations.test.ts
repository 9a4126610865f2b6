/**
 * Both generations of the official MCP client, side by side, on both transports, through one scenario: the v1 SDK
 * (`@modelcontextprotocol/sdk` 1.x) and the v2 client (`@modelcontextprotocol/client` 2.x), over Streamable HTTP
 * (a real socket to the started reference server) and over stdio (`sdgw-mcp` on the server's database). The
 * scenario: tools/list, one charged call answered inline with its rows, one charged call run in the background and
 * read by its handle, then that handle read again for free.
 */
import { describe, expect, it } from "vitest";
import { BODIES } from "../../tool-bodies.ts";
import {
  balance,
  CHARGING,
  callAndReadOn,
  parts,
  gatewayPerFile,
  stdioCommand,
  v1,
  v2,
  v2Stdio,
  type AnyClient,
  type Gateway,
  type Json,
} from "./harness.ts";

let g: Gateway;
const open: AnyClient[] = [];
gatewayPerFile((started) => (g = started), open);

type Generation = "v1" | "v2";
type Transport = "Streamable HTTP" | "stdio";

async function connect(generation: Generation, transport: Transport): Promise<AnyClient> {
  const info = { name: `sdgw-${generation}-${transport === "stdio" ? "stdio" : "http"}-test`, version: "1.0.0" };
  const stdio = { ...stdioCommand({ SDGW_DB: g.db, SDGW_API_KEY: g.key }), stderr: "pipe" as const };
  const http = { requestInit: { headers: { "x-api-key": g.key } } };
  let client: AnyClient;
  if (generation === "v1") {
    const c = new v1.Client(info);
    await c.connect(
      transport === "stdio"
        ? new v1.StdioClientTransport(stdio)
        : new v1.StreamableHTTPClientTransport(new URL(g.mcpUrl), http),
    );
    client = c as unknown as AnyClient;
  } else {
    const c = new v2.Client(info);
    await c.connect(
      transport === "stdio"
        ? new v2Stdio.StdioClientTransport(stdio)
        : new v2.StreamableHTTPClientTransport(new URL(g.mcpUrl), http),
    );
    client = c as unknown as AnyClient;
  }
  open.push(client);
  return client;
}

const cases: Array<[Generation, Transport]> = [
  ["v1", "Streamable HTTP"],
  ["v2", "Streamable HTTP"],
  ["v1", "stdio"],
  ["v2", "stdio"],
];

describe.each(cases)("%s client over %s", (generation, transport) => {
  it("tools/list, a charged call with its rows, a background run read by its handle, then re-read for free", async () => {
    const client = await connect(generation, transport);
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(16);
    expect(
      tools
        .filter((t) => t.inputSchema["properties"]?.["handle"])
        .map((t) => t.name)
        .sort(),
    ).toEqual([...CHARGING].sort());

    // A charged call answered inline: its rows and its charge, and the balance moved by exactly that.
    let before = await balance(g);
    const search = parts(
      await client.callTool({ name: "search", arguments: { platform: "xiaohongshu", query: "露营", count: 5 } }),
    );
    expect(search.isError, search.texts[0]).toBe(false);
    expect(search.structured).toMatchObject({ status: "ok", platform: "xiaohongshu", billing: { cost: 1 } });
    expect(search.structured["items"]).toHaveLength(5);
    expect(await balance(g)).toBe(before - 1);

    // A run in the background: running with a handle, read by it until it ended, charged once when it ended.
    before = await balance(g);
    const seen = await callAndReadOn(client, "find_creators", BODIES.find_creators.background);
    expect(seen[0]!.structured).toMatchObject({ status: "running", handle: expect.any(String) });
    const handle = String(seen[0]!.structured["handle"]);
    const done = seen.at(-1)!;
    expect(done.isError, done.texts[0]).toBe(false);
    expect(done.structured["status"]).toBe("ok");
    const charged = done.structured["billing"]["cost_credits"] as number;
    expect(charged).toBeGreaterThan(0);
    expect(await balance(g)).toBe(before - charged);
    const rows = (done.structured["items"] ?? done.structured["targets"]) as Json[];
    expect(rows.length).toBeGreaterThan(0);

    // Re-read by the handle: the same answer, free.
    const again = parts(await client.callTool({ name: "find_creators", arguments: { handle } }));
    expect(again.isError).toBe(false);
    expect(again.structured).toEqual(done.structured);
    expect(await balance(g)).toBe(before - charged);
    await client.close();
  }, 60_000);
});
