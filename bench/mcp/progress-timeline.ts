/**
 * `node --conditions=source --no-warnings bench/mcp/progress-timeline.ts [--latency MS]` prints the progress timeline
 * of an MCP tool call that runs in the background (D141): the reference server in memory with the simulator at
 * `--latency` ms per platform call (default 300), `brand_buzz` on four platforms asked with a progressToken through
 * the official client; each `notifications/progress` with the milliseconds since the call, the moment the run's end
 * was committed (`Runs.watch`), and the answer.
 */
import { parseArgs } from "node:util";
// The official client, loaded with the resolve hook that keeps `source` out of node_modules (see sdk-client.ts).
import { sdk } from "../../packages/server/test/mcp/sdk-client.ts";
import { createMcpServer } from "../../packages/server/src/mcp/index.ts";
import { createServer } from "../../packages/server/src/storage/sqlite/server.ts";

const { values } = parseArgs({ options: { latency: { type: "string", default: "300" } } });
const latency = Number(values.latency);
const server = createServer({
  dbPath: ":memory:",
  waitMs: 1,
  log: () => undefined,
  simulator: { knobs: { "*": { latencyMs: [latency, latency] } } },
});
const gw = server.gateway;
const { account } = gw.accounts.createAccount({ name: "timeline", plan: "paid" });
gw.accounts.grant(account.id, 100_000);
const key = gw.accounts.createKey({ accountId: account.id, name: "mcp" }).secret;
const { Client, InMemoryTransport } = sdk;
const [c, s] = InMemoryTransport.createLinkedPair();
await createMcpServer({ app: server.app, apiKey: key, gateway: gw, maxWaitMs: 60_000 }).connect(s);
const client = new Client({ name: "timeline", version: "1.0.0" });
await client.connect(c);

const t0 = performance.now();
const ms = () => (performance.now() - t0).toFixed(0).padStart(6);
let ended: number | null = null;
const r = await client.callTool(
  { name: "brand_buzz", arguments: { query: "露营", platforms: ["x", "weibo", "reddit", "zhihu"] } },
  {
    timeout: 120_000,
    onprogress: (p) => {
      console.log(`${ms()} ms  progress ${p.progress} of ${p.total}  ${p.message ?? ""}`);
      // The handle of the run is not known here; the run's end is the last notification (progress = total).
      if (p.progress === p.total) ended = performance.now() - t0;
    },
  },
);
const answered = performance.now() - t0;
const status = (r.structuredContent as { status?: string }).status;
console.log(`${ms()} ms  answer: status ${status}`);
if (ended !== null)
  console.log(`answer ${(answered - ended).toFixed(1)} ms after the last notification (the run's committed end)`);
await client.close();
await server.close({ drainMs: 1000 });
