#!/usr/bin/env node
/**
 * `sdgw-mcp`: the gateway as an MCP server over stdio, for agent hosts that start a command. Builds the server
 * in-process on the default database (SDGW_DB, else ./data/sdgw.sqlite; the other SDGW_* settings as `pnpm start`)
 * and acts for the key in SDGW_API_KEY. Logs go to stderr; stdout carries only MCP messages. It may share the
 * database with a running `pnpm start`: each process ends only the runs of processes that are gone (owners.ts).
 *
 * ```json
 * { "mcpServers": { "sdgw": { "command": "node", "args": ["--conditions=source", "packages/server/src/bin/sdgw-mcp.ts"], "env": { "SDGW_API_KEY": "sdgw_…" } } } }
 * ```
 */
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { configFromEnv } from "../config.ts";
import { runLeaseFromEnv } from "../gateway.ts";
import { createMcpServer } from "../mcp/server.ts";
import { createServer } from "../server.ts";

async function main(): Promise<void> {
  const apiKey = process.env["SDGW_API_KEY"] ?? null;
  if (!apiKey) console.error("sdgw-mcp: SDGW_API_KEY is not set; charging tools and account will answer unauthorized.");
  const server = createServer({ ...configFromEnv(), ...runLeaseFromEnv(), log: (...args: unknown[]) => console.error(...args) });
  await server.app.ready();
  const mcp = createMcpServer({ app: server.app, apiKey, gateway: server.gateway, keySource: "env" });
  await mcp.connect(new StdioServerTransport());

  const stop = async () => {
    await mcp.close();
    await server.close();
    process.exit(0);
  };
  process.stdin.once("end", () => void stop());
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
}

// No top-level await: the command is also built as CommonJS.
main().catch((error: unknown) => {
  console.error("sdgw-mcp failed:", error);
  process.exit(1);
});
