/**
 * The v1 MCP client (`@modelcontextprotocol/sdk` 1.x) over stdio: `sdgw-mcp` started as an MCP host starts it
 * (`node --conditions=source packages/server/src/bin/sdgw-mcp.ts`, a bare environment with SDGW_API_KEY and
 * SDGW_DB), on the database of a running reference server, so balances and stored results are read over its HTTP
 * API. Tools are called through `client.callTool` (the client's result checks run on each answer).
 */
import { describe, expect, it } from "vitest";
import { toCsv } from "@sdgw/validators";
import type { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { BODIES } from "../../tool-bodies.ts";
import {
  balance,
  CHARGING,
  callAndReadOn,
  FREE,
  parts,
  resultOverHttp,
  rowsOf,
  gatewayPerFile,
  stdioCommand,
  until,
  v1,
  type AnyClient,
  type Gateway,
  type Json,
} from "./harness.ts";

let g: Gateway;
const open: V1Client[] = [];
gatewayPerFile((started) => (g = started), open);

/** A v1 client on a new `sdgw-mcp` process with `env` (SDGW_DB is the running server's database). */
async function connect(
  env: Record<string, string> = { SDGW_API_KEY: g.key },
): Promise<{ client: V1Client; transport: InstanceType<typeof v1.StdioClientTransport>; stderr: () => string }> {
  const transport = new v1.StdioClientTransport({ ...stdioCommand({ SDGW_DB: g.db, ...env }), stderr: "pipe" });
  let err = "";
  transport.stderr?.on("data", (d: Buffer) => (err += d.toString()));
  const client = new v1.Client({ name: "sdgw-v1-stdio-test", version: "1.0.0" });
  open.push(client);
  await client.connect(transport);
  return { client, transport, stderr: () => err };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("v1 client (@modelcontextprotocol/sdk 1.x) over stdio (sdgw-mcp)", { timeout: 60_000 }, () => {
  it("initialize + tools/list: 16 tools, the 13 charging ones take handle; closing the client ends the process", async () => {
    const { client, transport } = await connect();
    expect(client.getServerVersion()).toMatchObject({ name: "sdgw" });
    expect(client.getInstructions()).toMatch(/handle/);
    const { tools, nextCursor } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...CHARGING, ...FREE].sort());
    expect(nextCursor).toBeUndefined();
    expect(
      tools
        .filter((t) => (t.inputSchema.properties as Json | undefined)?.["handle"])
        .map((t) => t.name)
        .sort(),
    ).toEqual([...CHARGING].sort());
    const acct = parts(await client.callTool({ name: "account", arguments: {} }));
    expect(acct.structured["billing"]["balance_credits"]).toBe(await balance(g));
    const pid = transport.pid!;
    expect(alive(pid)).toBe(true);
    await client.close();
    // The server ends when its stdin closes (the v1 transport would SIGTERM after 2 s, SIGKILL after 4 s).
    expect(await until(() => !alive(pid), 5000)).toBe(true);
  });

  it("no key or a wrong key: charging tools and account answer unauthorized, and the fix says to set SDGW_API_KEY", async () => {
    for (const env of [{}, { SDGW_API_KEY: "sdgw_wrong_key" }] as Array<Record<string, string>>) {
      const { client, stderr } = await connect(env);
      for (const name of ["search", "account"]) {
        const label = `${name} ${JSON.stringify(env)}`;
        const r = parts(
          await client.callTool({ name, arguments: name === "search" ? { platform: "weibo", query: "camping" } : {} }),
        );
        expect(r.isError, label).toBe(true);
        expect(r.structured, label).toMatchObject({
          code: "unauthorized",
          reason: env["SDGW_API_KEY"] ? "invalid" : "missing",
        });
        expect(r.structured["fix"]["note"], label).toMatch(/SDGW_API_KEY/);
        expect(r.structured["fix"]["note"], label).not.toMatch(/X-API-Key|Authorization/);
        expect(r.texts[0], label).toContain("SDGW_API_KEY");
        if (!env["SDGW_API_KEY"]) expect(r.structured["message"]).toMatch(/SDGW_API_KEY is not set/);
      }
      // The free tools that need no key still answer.
      expect(parts(await client.callTool({ name: "capabilities", arguments: {} })).isError).toBe(false);
      if (!env["SDGW_API_KEY"]) expect(stderr()).toMatch(/SDGW_API_KEY is not set/);
      await client.close();
    }
  });

  it("bad arguments are isError results naming the parameter; an unknown tool and a tools/list cursor are -32602", async () => {
    const { client } = await connect();
    const before = await balance(g);
    for (const [name, args, param] of [
      ["search", { platform: "weibo" }, "query"],
      ["search", { platform: "weibo", query: "camping", count: "many" }, "count"],
      ["detail", { handle: "bad handle" }, "handle"],
      ["capabilities", { platform: "x" }, "platform"],
    ] as Array<[string, Record<string, unknown>, string]>) {
      const r = parts(await client.callTool({ name, arguments: args }));
      expect(r.isError, name).toBe(true);
      expect(r.structured, name).toMatchObject({ code: "invalid_params", fix: { param } });
    }
    const cursor = await client.listTools({ cursor: "bogus" }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(cursor).toBeInstanceOf(v1.McpError);
    expect((cursor as InstanceType<typeof v1.McpError>).code).toBe(-32602);
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} }).then(
      () => null,
      (e: unknown) => e,
    );
    expect((unknown as InstanceType<typeof v1.McpError>).code).toBe(-32602);
    expect(await balance(g)).toBe(before);
    await client.close();
  });

  it("batch_stats as csv: the charged answer comes with its rows as the file", async () => {
    const { client } = await connect();
    const before = await balance(g);
    const r = parts(
      await client.callTool({ name: "batch_stats", arguments: { ...BODIES.batch_stats.inline, format: "csv" } }),
    );
    expect(r.isError, r.texts[0]).toBe(false);
    expect(r.structured).toMatchObject({ status: "ok", applied_params: { format: "csv" } });
    expect(r.texts[0]).toBe(toCsv(r.structured));
    expect(r.texts[0]!.trim().split("\n")).toHaveLength(1 + (r.structured["items"] as unknown[]).length);
    expect(await balance(g)).toBe(before - (r.structured["billing"]["cost_credits"] as number));
    await client.close();
  });

  it("more over a large multi-platform search is exact and free; another tool's handle is refused", async () => {
    const { client } = await connect();
    const before = await balance(g);
    const pages = (
      await callAndReadOn(client as unknown as AnyClient, "search", { platforms: "all", query: "露营", count: 20 })
    ).filter((p) => p.structured["status"] !== "running");
    expect(pages.every((p) => !p.isError)).toBe(true);
    expect(pages.length).toBeGreaterThanOrEqual(2);
    expect(await balance(g)).toBe(before - 10);
    const handle = String(pages[0]!.structured["more"]["handle"]).split(".")[0]!;
    const whole = await resultOverHttp(g, handle);
    expect(pages.flatMap((p) => rowsOf(p.structured))).toEqual(rowsOf(JSON.parse(whole.text) as Json));
    const wrong = parts(await client.callTool({ name: "comments", arguments: { handle } }));
    expect(wrong.isError).toBe(true);
    expect(wrong.structured).toMatchObject({ code: "invalid_params", fix: { param: "handle" } });
    expect(wrong.structured["message"]).toMatch(/search/);
    expect(await balance(g)).toBe(before - 10);
    await client.close();
  }, 60_000);
});
