#!/usr/bin/env node
/**
 * `sdgw-mcp`: the gateway as an MCP server over stdio, for agent hosts that start a command. Builds the server
 * in-process on the default database (SDGW_DATABASE_URL for a shared PostgreSQL database, else SDGW_DB, else
 * ./data/sdgw.sqlite; the other SDGW_* settings as `pnpm start`)
 * and acts for the key in SDGW_API_KEY. Logs go to stderr; stdout carries only MCP messages. It may share the
 * database with a running `pnpm start`: each process ends only the runs of processes that are gone (owners.ts).
 *
 * ```json
 * { "mcpServers": { "sdgw": { "command": "node", "args": ["--conditions=source", "packages/server/src/bin/sdgw-mcp.ts"], "env": { "SDGW_API_KEY": "sdgw_…" } } } }
 * ```
 *
 * Which tools it offers (D79): `--read-only` (or `SDGW_MCP_READ_ONLY=1`) offers only the free tools (`find`,
 * `capabilities`, `account`); `--toolsets data,tools,discovery,account` (or `SDGW_MCP_TOOLSETS`) offers those
 * toolsets (default all). An unknown toolset name stops it at start, naming the flag and the allowed names.
 */
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { ConfigError, configFromEnv, runLeaseFromEnv } from "../config.ts";
import { createMcpServer } from "../mcp/server.ts";
import { McpToolsetError, selectTools, toolFilterFromArgs } from "../mcp/toolsets.ts";
import { createServer } from "../storage/sqlite/server.ts";
import { createPgServer } from "../storage/postgres/server.ts";
import { withPluginsFromEnv } from "../connectors/plugins.ts";

async function main(): Promise<void> {
  let filter: ReturnType<typeof toolFilterFromArgs>;
  try {
    filter = toolFilterFromArgs(process.argv.slice(2));
    selectTools(filter);
  } catch (error) {
    if (!(error instanceof McpToolsetError)) throw error;
    console.error(`sdgw-mcp: ${error.message}`);
    process.exit(2);
  }
  const apiKey = process.env["SDGW_API_KEY"] ?? null;
  if (!apiKey) console.error("sdgw-mcp: SDGW_API_KEY is not set; charging tools and account will answer unauthorized.");
  let server: Awaited<ReturnType<typeof createPgServer>> | ReturnType<typeof createServer>;
  try {
    // D158: the operator's own connectors, as `pnpm start` loads them.
    const log = (...args: unknown[]) => console.error(...args);
    const options = await withPluginsFromEnv({ ...configFromEnv(), ...runLeaseFromEnv(), log });
    // D108: with SDGW_DATABASE_URL the state is the shared PostgreSQL database, as `pnpm start` uses it.
    server = options.databaseUrl
      ? await createPgServer({ ...options, databaseUrl: options.databaseUrl })
      : createServer(options);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`sdgw-mcp: not started: ${error.problems.join("; ")}.`);
    process.exit(2);
  }
  await server.app.ready();
  const mcp = createMcpServer({ app: server.app, apiKey, gateway: server.gateway, keySource: "env", ...filter });
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
