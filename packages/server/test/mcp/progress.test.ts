/**
 * Real progress (issue 34, D141): with a `progressToken`, a call that answered 202 sends `notifications/progress` at
 * once and after every cell (data call) or wave (tool run) that ends, `progress` increasing and `total` fixed, and
 * answers the finished result as soon as the run's end is committed. The platforms are gated: a call of a provider
 * waits until the test opens the gate, so the run moves only when the test lets it. The server waits up to ten
 * minutes and would read the run only every ten minutes, so an answer that arrives at all came from the run's end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpServer, mcpRoutes } from "../../src/mcp/index.ts";
import { createPgServer, type PgServer } from "../../src/storage/postgres/server.ts";
import { createServer, type SdgwServer } from "../../src/storage/sqlite/server.ts";
import { pgUrl, testDatabase, type TestDatabase } from "../pg-helpers.ts";
import { BODIES } from "../tool-bodies.ts";
import { Gate, gated } from "./gate.ts";
import { sdk } from "./sdk-client.ts";

const { Client, InMemoryTransport, StreamableHTTPClientTransport } = sdk;
type Json = Record<string, any>;
type Progress = { progress: number; total?: number; message?: string };

const GENEROUS = {
  keyQps: 100_000,
  workspaceConcurrency: 100_000,
  addressPerMinute: 100_000,
  failureThreshold: 100_000,
};
/** Long enough that neither the wait's end nor a poll can be what answers: only the run's end can. */
const NEVER = 600_000;

describe("progress of a run that answered 202", () => {
  let gate: Gate;
  let server: SdgwServer;
  let key: string;
  let url: string;
  beforeAll(async () => {
    gate = new Gate();
    server = createServer({
      dbPath: ":memory:",
      waitMs: 1,
      log: () => undefined,
      limits: GENEROUS,
      providers: gated(gate),
    });
    const gw = server.gateway;
    const { account } = gw.accounts.createAccount({ name: "progress", plan: "paid" });
    gw.accounts.grant(account.id, 100_000);
    key = gw.accounts.createKey({ accountId: account.id, name: "mcp" }).secret;
    await server.app.register(mcpRoutes, {
      prefix: "/patient",
      target: server.app,
      gateway: gw,
      maxWaitMs: NEVER,
      pollIntervalMs: NEVER,
    });
    url = `${await server.listen({ host: "127.0.0.1", port: 0 })}/patient/mcp`;
  });
  afterAll(async () => {
    gate.open(1000);
    await server.close({ drainMs: 2000 });
  });

  /** Calls `tool` with a progressToken; each notification opens the gate for `perStep` more provider calls. */
  async function callStepwise(client: InstanceType<typeof Client>, tool: string, args: Json, perStep: number) {
    gate.reset();
    const seen: Progress[] = [];
    const result = await client.callTool(
      { name: tool, arguments: args },
      {
        timeout: NEVER,
        onprogress: (p) => {
          seen.push(p);
          gate.open(perStep);
        },
      },
    );
    return { seen, structured: result.structuredContent as Json };
  }

  it("a data call on three platforms over Streamable HTTP: 0, 1, 2, 3 of 3 cells, then its finished answer", async () => {
    const client = new Client({ name: "progress", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { "x-api-key": key } } }),
    );
    const { seen, structured } = await callStepwise(
      client,
      "search",
      { platforms: ["weibo", "x", "reddit"], query: "camping", count: 5 },
      1,
    );
    expect(seen.map((p) => p.progress)).toEqual([0, 1, 2, 3]);
    for (const p of seen) expect(p.total).toBe(3);
    expect(seen[0]!.message).toBe("search: 0 of 3 cells done");
    expect(structured["status"]).toBe("ok");
    expect(Object.keys(structured["fanout"]).sort()).toEqual(["reddit", "weibo", "x"]);
    await client.close();
  }, 120_000);

  it("a tool run in memory: a notification at its start and after each wave, in order, then the tool's answer", async () => {
    const [c, s] = InMemoryTransport.createLinkedPair();
    await createMcpServer({
      app: server.app,
      apiKey: key,
      gateway: server.gateway,
      maxWaitMs: NEVER,
      pollIntervalMs: NEVER,
    }).connect(s);
    const client = new Client({ name: "progress", version: "1.0.0" });
    await client.connect(c);
    // Each notification lets many calls through: a wave of any size ends, and the next waits for the next one.
    const { seen, structured } = await callStepwise(client, "brand_buzz", BODIES.brand_buzz.background, 1000);
    const total = seen[0]!.total!;
    expect(total).toBeGreaterThan(1);
    expect(seen[0]!.progress).toBe(0);
    expect(seen.at(-1)!.progress).toBe(total);
    for (const p of seen) expect(p.total).toBe(total);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
    expect(seen[0]!.message).toMatch(/^brand_buzz: 0 of \d+ waves done$/);
    expect(structured["tool"]).toBe("brand_buzz");
    expect(structured["status"]).not.toBe("running");
    await client.close();
  }, 120_000);

  it("without a progressToken a 202 answers the running answer at once, whatever the wait", async () => {
    gate.reset();
    const client = new Client({ name: "progress", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { "x-api-key": key } } }),
    );
    const r = await client.callTool({ name: "search", arguments: { platforms: ["weibo", "x"], query: "tent" } });
    expect((r.structuredContent as Json)["status"]).toBe("running");
    await client.close();
    gate.open(2);
  }, 120_000);
});

describe("progress of a run that answered 202, on PostgreSQL", () => {
  let gate: Gate;
  let t: TestDatabase;
  let server: PgServer;
  let key: string;
  beforeAll(async () => {
    gate = new Gate();
    t = await testDatabase("mcp_progress", 1);
    server = await createPgServer({
      databaseUrl: pgUrl(t.name),
      waitMs: 1,
      log: () => undefined,
      limits: GENEROUS,
      scheduleTickMs: 0,
      runLeaseMs: 600_000,
      providers: gated(gate),
    });
    const gw = server.gateway;
    const { account } = await gw.accounts.createAccount({ name: "pg progress", plan: "paid" });
    await gw.accounts.grant(account.id, 100_000);
    key = (await gw.accounts.createKey({ accountId: account.id, name: "mcp" })).secret;
  }, 60_000);
  afterAll(async () => {
    gate.open(1000);
    await server?.close({ drainMs: 2000 });
    await t?.drop();
  });

  it("a data call on three platforms: 0, 1, 2, 3 of 3 cells, then its finished answer (PgRunner.watch)", async () => {
    const [c, s] = InMemoryTransport.createLinkedPair();
    await createMcpServer({
      app: server.app,
      apiKey: key,
      gateway: server.gateway,
      maxWaitMs: NEVER,
      pollIntervalMs: NEVER,
    }).connect(s);
    const client = new Client({ name: "progress-pg", version: "1.0.0" });
    await client.connect(c);
    const seen: Progress[] = [];
    const r = await client.callTool(
      { name: "search", arguments: { platforms: ["weibo", "x", "reddit"], query: "camping", count: 5 } },
      {
        timeout: NEVER,
        onprogress: (p) => {
          seen.push(p);
          gate.open(1);
        },
      },
    );
    expect(seen.map((p) => p.progress)).toEqual([0, 1, 2, 3]);
    for (const p of seen) expect(p.total).toBe(3);
    expect((r.structuredContent as Json)["status"]).toBe("ok");
    await client.close();
  }, 120_000);
});
