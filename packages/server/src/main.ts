#!/usr/bin/env node
/**
 * `pnpm start`: the reference server on 127.0.0.1:8787 over ./data/sdgw.sqlite, with a demo account seeded on
 * the first start. Prints the demo key (first start only: keys are shown once) and a first call to try.
 * Environment: SDGW_DB, SDGW_HOST, SDGW_PORT, SDGW_WAIT_MS, SDGW_KEY_QPS, SDGW_WORKSPACE_CONCURRENCY,
 * SDGW_ADDRESS_PER_MINUTE, SDGW_FAILURE_THRESHOLD, SDGW_FREE_CALLS, SDGW_LATENCY_MS (simulated platform latency).
 */
import { configFromEnv } from "./config.ts";
import { seedDemo } from "./demo.ts";
import { createServer } from "./server.ts";

const latency = Number(process.env["SDGW_LATENCY_MS"] ?? 0);
const server = createServer({ ...configFromEnv(), simulator: latency > 0 ? { knobs: { "*": { latencyMs: [latency / 2, latency * 1.5] } } } : {} });
const demo = seedDemo(server.gateway);
const url = await server.listen({ host: process.env["SDGW_HOST"] ?? "127.0.0.1", port: Number(process.env["SDGW_PORT"] ?? 8787) });
const key = demo.key ?? "<your key>";
const lines = [
  `Social Data Gateway reference server on ${url} (storage: ${server.gateway.config.dbPath}; platforms: the deterministic simulator)`,
  server.gateway.recovered ? `Recovered ${server.gateway.recovered} run(s) left running by the last process: ended as broken, holds released, nothing charged.` : "",
  demo.key
    ? `Demo account ${demo.accountId} with 5000 credits. Its key, shown once (stored only as a hash):\n\n  ${demo.key}\n`
    : `Demo account ${demo.accountId} (key ${demo.prefix}…, shown on the first start). A new key: node --conditions=source packages/server/src/bin/sdgw-admin.ts create-key --account ${demo.accountId}`,
  "Try:",
  `  curl -s -H 'X-API-Key: ${key}' -H 'Idempotency-Key: first-call-1' '${url}/v1/search?platform=xiaohongshu&query=%E9%9C%B2%E8%90%A5&count=3'`,
  `  curl -s ${url}/v1/capabilities`,
  `  curl -s -H 'X-API-Key: ${key}' -H 'Content-Type: application/json' -d '{"query":"露营","platforms":["weibo","xiaohongshu"],"confirm":false}' ${url}/v1/tools/brand_buzz`,
  `MCP (Streamable HTTP): ${url}/mcp with the header X-API-Key (or Authorization: Bearer); stdio: SDGW_API_KEY=… node --conditions=source packages/server/src/bin/sdgw-mcp.ts`,
  "Stop with Ctrl-C.",
].filter(Boolean);
console.log(lines.join("\n"));

const stop = async () => {
  await server.close();
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
