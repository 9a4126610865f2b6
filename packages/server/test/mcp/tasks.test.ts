/**
 * MCP tasks (issue 34, D145), raw JSON-RPC over Streamable HTTP on a listening server, on the embedded store and on
 * PostgreSQL: a task-augmented `tools/call` answers a task whose id is the run's handle, `tasks/get` follows it from
 * working to completed, `tasks/result` answers exactly the tool's final result (what a `handle` read answers, and
 * the same call's synchronous result but for ids and times), `tasks/list` lists the key's tasks, `tasks/cancel`
 * answers -32602 (a run cannot be stopped), reading a task charges nothing, and another key cannot read it. The
 * platforms are gated (as in progress.test.ts): the run moves only when the test lets it, so no test sleeps. The
 * gateway waits up to a minute for a call to end before it answers 202 (`waitMs`), and a task-augmented call must
 * not (D174): its task arrives while the run is still held at the gate. The v1 SDK client's task API
 * (`client.experimental.tasks.callToolStream`, @modelcontextprotocol/sdk 1.32.2) drives one task end to end. Last,
 * the same over an in-process transport, the path of stdio (no /mcp layer).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpServer, mcpRoutes } from "../../src/mcp/index.ts";
import { v1 } from "./clients/harness.ts";
import { Gate, gated } from "./gate.ts";
import { sdk } from "./sdk-client.ts";
import type { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createPgServer, type PgServer } from "../../src/storage/postgres/server.ts";
import { createServer, type SdgwServer } from "../../src/storage/sqlite/server.ts";
import { RESPOND_NOW_HEADER, respondNowHeader } from "../../src/http/respond-now.ts";
import { toCsv } from "@sdgw/validators";
import { BODIES } from "../tool-bodies.ts";
import { pgUrl, testDatabase, type TestDatabase } from "../pg-helpers.ts";

const { InMemoryTransport } = sdk;
type Json = Record<string, any>;
/**
 * How long the gateway waits for a call to end before it answers 202 (`waitMs`): long, so that a task answered only
 * after that wait (the behaviour before D174) is told apart from one answered as soon as its run started.
 */
const GATEWAY_WAIT_MS = 60_000;
/**
 * A safety net, not a bound: a task-augmented call must answer while its run is held at the gate; if it has not
 * after this long, the gate is opened so that the test ends (and fails) instead of hanging.
 */
const RELEASE_AFTER_MS = 20_000;
const GENEROUS = {
  keyQps: 100_000,
  workspaceConcurrency: 100_000,
  addressPerMinute: 100_000,
  failureThreshold: 100_000,
};
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const SEARCH = { platforms: ["weibo", "x", "reddit"], query: "camping", count: 5 };

/** An embedded server in memory whose platforms wait on `gate`, and a key of a funded paid account of it. */
function gatedServer(gate: Gate, account: string, keyName: string): { server: SdgwServer; key: string } {
  const server = createServer({
    dbPath: ":memory:",
    waitMs: GATEWAY_WAIT_MS,
    log: () => undefined,
    limits: GENEROUS,
    providers: gated(gate),
  });
  const a = server.gateway.accounts.createAccount({ name: account, plan: "paid" }).account;
  server.gateway.accounts.grant(a.id, 100_000);
  return { server, key: server.gateway.accounts.createKey({ accountId: a.id, name: keyName }).secret };
}

/** One JSON-RPC request to `url` as `key`; the answer message (from a JSON body or an event stream). */
async function rpc(url: string, key: string, method: string, params: Json = {}): Promise<Json> {
  const res = await fetch(url, {
    method: "POST",
    headers: { ...MCP_HEADERS, "x-api-key": key, "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  if (!String(res.headers.get("content-type")).startsWith("text/event-stream")) return JSON.parse(text) as Json;
  const messages = text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)) as Json);
  return messages.find((m) => m["id"] === 1)!;
}

/**
 * Awaits `answer` while the gate is held: what it answered, and whether it answered before the safety net had to
 * open the gate (`heldThrough`: the run could not have ended when it answered).
 */
async function whileHeld<T>(gate: Gate, answer: Promise<T>): Promise<{ value: T; heldThrough: boolean }> {
  let released = false;
  const net = setTimeout(() => {
    released = true;
    gate.open(1000);
  }, RELEASE_AFTER_MS);
  try {
    const value = await answer;
    return { value, heldThrough: !released };
  } finally {
    clearTimeout(net);
  }
}

/** A result's structured content without what differs between two calls: ids, times, the account's balance. */
function normalized(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalized);
  if (!v || typeof v !== "object") return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v as Json)) {
    if (k === "request_id" || k === "handle" || k === "billing" || /_at$/.test(k)) continue;
    out[k] = normalized(x);
  }
  return out;
}

interface Subject {
  url: string;
  key: string;
  otherKey: string;
  gate: Gate;
}

function tasksSuite(label: string, start: () => Promise<Subject & { close(): Promise<void> }>) {
  describe(`MCP tasks, ${label}`, () => {
    let s: Subject & { close(): Promise<void> };
    beforeAll(async () => {
      s = await start();
    }, 60_000);
    afterAll(async () => {
      s?.gate.open(1000);
      await s?.close();
    });

    it("advertises tasks (list and tools/call, no cancel) and taskSupport on the tools that can run long", async () => {
      const init = await rpc(s.url, s.key, "initialize", {
        protocolVersion: "2025-11-25",
        capabilities: { tasks: {} },
        clientInfo: { name: "raw", version: "1" },
      });
      expect(init["result"]["capabilities"]["tasks"]).toEqual({ list: {}, requests: { tools: { call: {} } } });
      const tools = (await rpc(s.url, s.key, "tools/list"))["result"]["tools"] as Json[];
      const byName = new Map(tools.map((t) => [t["name"], t]));
      expect(byName.get("search")!["execution"]).toEqual({ taskSupport: "optional" });
      expect(byName.get("brand_buzz")!["execution"]).toEqual({ taskSupport: "optional" });
      expect(byName.get("find")!["execution"]).toBeUndefined();
      const free = await rpc(s.url, s.key, "tools/call", { name: "account", arguments: {}, task: {} });
      expect(free["error"]["code"]).toBe(-32601);
    });

    it("a task goes working then completed; its result is the tool's final answer; reading it is free", async () => {
      const created = await rpc(s.url, s.key, "tools/call", {
        name: "search",
        arguments: SEARCH,
        task: { ttl: 60_000 },
      });
      const task = created["result"]["task"] as Json;
      expect(task["taskId"]).toMatch(/^h_/);
      expect(task["status"]).toBe("working");
      const taskId = task["taskId"] as string;

      const working = (await rpc(s.url, s.key, "tasks/get", { taskId }))["result"] as Json;
      expect(working).toMatchObject({ taskId, status: "working" });
      expect(working["pollInterval"]).toBeGreaterThan(0);
      expect(typeof working["createdAt"]).toBe("string");

      // A running task cannot be cancelled: the seed offers no way to stop a run.
      const cancelRunning = await rpc(s.url, s.key, "tasks/cancel", { taskId });
      expect(cancelRunning["error"]["code"]).toBe(-32602);
      expect(cancelRunning["error"]["message"]).toMatch(/cannot be cancelled/);

      // tasks/result blocks until the run ends; the gate lets its three cells run.
      const pending = rpc(s.url, s.key, "tasks/result", { taskId });
      s.gate.open(3);
      const final = (await pending)["result"] as Json;
      expect(final["_meta"]["io.modelcontextprotocol/related-task"]).toEqual({ taskId });
      expect(final["structuredContent"]["status"]).toBe("ok");

      const done = (await rpc(s.url, s.key, "tasks/get", { taskId }))["result"] as Json;
      expect(done).toMatchObject({ taskId, status: "completed" });
      expect(done["pollInterval"]).toBeUndefined();

      // Reading the task charges nothing: the account answers the same before and after reads.
      const account = async () =>
        normalized(
          (await rpc(s.url, s.key, "tools/call", { name: "account", arguments: {} }))["result"]["structuredContent"],
        );
      const before = await account();
      const again = (await rpc(s.url, s.key, "tasks/result", { taskId }))["result"] as Json;
      await rpc(s.url, s.key, "tasks/get", { taskId });
      await rpc(s.url, s.key, "tasks/list");
      const { _meta, ...answer } = again;
      // Exactly what a `handle` read of the same run answers.
      const byHandle = (await rpc(s.url, s.key, "tools/call", { name: "search", arguments: { handle: taskId } }))[
        "result"
      ] as Json;
      expect(answer).toEqual(byHandle);
      expect(await account()).toEqual(before);

      // The same call made synchronously (waited for with a progressToken): the same answer but for ids and times.
      s.gate.open(3);
      const sync = (
        await rpc(s.url, s.key, "tools/call", { name: "search", arguments: SEARCH, _meta: { progressToken: "p" } })
      )["result"] as Json;
      expect(sync["structuredContent"]["status"]).toBe("ok");
      expect(normalized(answer["structuredContent"])).toEqual(normalized(sync["structuredContent"]));

      // A finished task cannot be cancelled either.
      expect((await rpc(s.url, s.key, "tasks/cancel", { taskId }))["error"]["code"]).toBe(-32602);
    }, 120_000);

    it("a task-augmented call answers at once, while its run is still held (not after the gateway's wait)", async () => {
      s.gate.reset();
      // search (a data route) and brand_buzz (a tool whose quote runs inline): both would wait GATEWAY_WAIT_MS.
      const calls = [
        { name: "search", arguments: SEARCH },
        { name: "brand_buzz", arguments: { query: "camping", platforms: ["x", "weibo", "reddit"] } },
      ];
      const taskIds: string[] = [];
      for (const call of calls) {
        const { value, heldThrough } = await whileHeld(s.gate, rpc(s.url, s.key, "tools/call", { ...call, task: {} }));
        expect(heldThrough, `${call.name}: the task answered only once its run could end`).toBe(true);
        const task = value["result"]["task"] as Json;
        expect(task).toMatchObject({ status: "working" });
        expect(task["taskId"]).toMatch(/^h_/);
        // Still held: tasks/get says working, and so does the handle read over HTTP-through-MCP.
        const got = (await rpc(s.url, s.key, "tasks/get", { taskId: task["taskId"] }))["result"] as Json;
        expect(got["status"]).toBe("working");
        taskIds.push(task["taskId"] as string);
      }
      // Let the runs go: tasks/result answers each tool's final result.
      const pending = taskIds.map((taskId) => rpc(s.url, s.key, "tasks/result", { taskId }));
      s.gate.open(1000);
      const finals = await Promise.all(pending);
      expect(finals[0]!["result"]["structuredContent"]["status"]).toBe("ok");
      expect(finals[1]!["result"]["structuredContent"]["tool"]).toBe("brand_buzz");
      expect(finals[1]!["result"]["isError"]).toBeUndefined();
      for (const taskId of taskIds)
        expect((await rpc(s.url, s.key, "tasks/get", { taskId }))["result"]["status"]).toBe("completed");
      s.gate.reset();
    }, 120_000);

    it("the v1 SDK client's task API (experimental.tasks.callToolStream) follows a task to its result", async () => {
      s.gate.reset();
      const client: V1Client = new v1.Client({ name: "sdgw-tasks-test", version: "1.0.0" });
      await client.connect(
        new v1.StreamableHTTPClientTransport(new URL(s.url), { requestInit: { headers: { "x-api-key": s.key } } }),
      );
      try {
        await client.listTools(); // the client learns the tools' taskSupport and outputSchema
        const seen: string[] = [];
        let final: Json | undefined;
        const stream = client.experimental.tasks.callToolStream({ name: "search", arguments: SEARCH }, undefined, {
          task: { ttl: 60_000 },
        });
        let created = false;
        const first = stream.next();
        const { value, heldThrough } = await whileHeld(s.gate, first);
        expect(heldThrough).toBe(true);
        for (let step = value; !step.done; step = await stream.next()) {
          const m = step.value as Json;
          if (m["type"] === "taskCreated") {
            created = true;
            seen.push(`created:${String(m["task"]["status"])}`);
          } else if (m["type"] === "taskStatus") {
            seen.push(String(m["task"]["status"]));
            if (m["task"]["status"] === "working") s.gate.open(3); // the client saw it working: let the run end
          } else if (m["type"] === "result") final = m["result"] as Json;
          else throw (m["error"] as Error) ?? new Error(JSON.stringify(m));
        }
        expect(created).toBe(true);
        expect(seen[0]).toBe("created:working");
        expect(seen[1]).toBe("working");
        expect(seen.at(-1)).toBe("completed");
        expect(final?.["structuredContent"]["status"]).toBe("ok");
        expect(final?.["isError"]).toBeFalsy();
      } finally {
        await client.close();
        s.gate.reset();
      }
    }, 120_000);

    it("batch_stats asked as csv runs as a task at once, and its result still carries the csv rows", async () => {
      s.gate.reset();
      const { value, heldThrough } = await whileHeld(
        s.gate,
        rpc(s.url, s.key, "tools/call", {
          name: "batch_stats",
          arguments: { ...BODIES.batch_stats.inline, format: "csv" },
          task: {},
        }),
      );
      expect(heldThrough).toBe(true);
      const task = value["result"]["task"] as Json;
      expect(task["status"]).toBe("working");
      const pending = rpc(s.url, s.key, "tasks/result", { taskId: task["taskId"] });
      s.gate.open(1000);
      const final = (await pending)["result"] as Json;
      const answer = final["structuredContent"] as Json;
      expect(answer["tool"]).toBe("batch_stats");
      expect(answer["applied_params"]["format"]).toBe("csv");
      expect((answer["items"] as Json[]).length).toBeGreaterThan(0);
      // The rows as the file asked, first; then the JSON answer (D55).
      expect(final["content"][0]).toEqual({ type: "text", text: toCsv(answer as never) });
      s.gate.reset();
    }, 120_000);

    it("tasks/list lists the key's tasks, pages with a cursor, and refuses a cursor not its own", async () => {
      s.gate.open(1000);
      const created = await rpc(s.url, s.key, "tools/call", { name: "search", arguments: SEARCH, task: {} });
      const taskId = created["result"]["task"]["taskId"] as string;
      // Its run answered at once (D174): let it end, so that the two lists below see the same statuses.
      await rpc(s.url, s.key, "tasks/result", { taskId });
      const list = (await rpc(s.url, s.key, "tasks/list"))["result"] as Json;
      const ids = (list["tasks"] as Json[]).map((t) => t["taskId"]);
      expect(ids).toContain(taskId);
      for (const t of list["tasks"] as Json[]) expect(["working", "completed", "failed"]).toContain(t["status"]);
      expect(list["nextCursor"]).toBeUndefined();
      expect((await rpc(s.url, s.key, "tasks/list", { cursor: "t0" }))["result"]["tasks"]).toEqual(list["tasks"]);
      expect((await rpc(s.url, s.key, "tasks/list", { cursor: "bogus" }))["error"]["code"]).toBe(-32602);
    }, 120_000);

    it("another key cannot read, list or cancel a task, nor read its handle", async () => {
      s.gate.open(1000);
      const created = await rpc(s.url, s.key, "tools/call", { name: "search", arguments: SEARCH, task: {} });
      const taskId = created["result"]["task"]["taskId"] as string;
      for (const method of ["tasks/get", "tasks/result", "tasks/cancel"]) {
        const r = await rpc(s.url, s.otherKey, method, { taskId });
        expect(r["error"]["code"]).toBe(-32602);
        expect(r["error"]["message"]).toMatch(/no task/);
      }
      const theirs = (await rpc(s.url, s.otherKey, "tasks/list"))["result"]["tasks"] as Json[];
      expect(theirs.map((t) => t["taskId"])).not.toContain(taskId);
      const read = (await rpc(s.url, s.otherKey, "tools/call", { name: "search", arguments: { handle: taskId } }))[
        "result"
      ] as Json;
      expect(read["isError"]).toBe(true);
      expect((await rpc(s.url, s.key, "tasks/get", { taskId: "h_unknown" }))["error"]["code"]).toBe(-32602);
    }, 120_000);
  });
}

async function register(app: FastifyInstance, gateway: SdgwServer["gateway"] | PgServer["gateway"]) {
  await app.register(mcpRoutes, {
    prefix: "/tasks",
    target: app,
    gateway,
    maxWaitMs: 600_000,
    pollIntervalMs: 600_000,
  });
}

tasksSuite("on the embedded server", async () => {
  const gate = new Gate();
  const server = createServer({
    dbPath: ":memory:",
    waitMs: GATEWAY_WAIT_MS,
    pollAfterSeconds: 1,
    log: () => undefined,
    limits: GENEROUS,
    providers: gated(gate),
  });
  const gw = server.gateway;
  const a = gw.accounts.createAccount({ name: "tasks", plan: "paid" }).account;
  gw.accounts.grant(a.id, 100_000);
  const b = gw.accounts.createAccount({ name: "tasks other", plan: "paid" }).account;
  gw.accounts.grant(b.id, 100_000);
  const key = gw.accounts.createKey({ accountId: a.id, name: "mcp" }).secret;
  const otherKey = gw.accounts.createKey({ accountId: b.id, name: "mcp" }).secret;
  await register(server.app, gw);
  const url = `${await server.listen({ host: "127.0.0.1", port: 0 })}/tasks/mcp`;
  return { url, key, otherKey, gate, close: () => server.close({ drainMs: 2000 }) };
});

tasksSuite("on PostgreSQL", async () => {
  const gate = new Gate();
  let t: TestDatabase | undefined = await testDatabase("mcp_tasks", 1);
  const server = await createPgServer({
    databaseUrl: pgUrl(t.name),
    waitMs: GATEWAY_WAIT_MS,
    pollAfterSeconds: 1,
    log: () => undefined,
    limits: GENEROUS,
    scheduleTickMs: 0,
    runLeaseMs: 600_000,
    providers: gated(gate),
  });
  const gw = server.gateway;
  const a = (await gw.accounts.createAccount({ name: "pg tasks", plan: "paid" })).account;
  await gw.accounts.grant(a.id, 100_000);
  const b = (await gw.accounts.createAccount({ name: "pg tasks other", plan: "paid" })).account;
  await gw.accounts.grant(b.id, 100_000);
  const key = (await gw.accounts.createKey({ accountId: a.id, name: "mcp" })).secret;
  const otherKey = (await gw.accounts.createKey({ accountId: b.id, name: "mcp" })).secret;
  await register(server.app, gw);
  const url = `${await server.listen({ host: "127.0.0.1", port: 0 })}/tasks/mcp`;
  return {
    url,
    key,
    otherKey,
    gate,
    close: async () => {
      await server.close({ drainMs: 2000 });
      await t?.drop();
      t = undefined;
    },
  };
});

describe("MCP tasks over an in-process transport (the stdio path: no /mcp layer)", () => {
  it("a task-augmented call answers a task at once; tasks/get and tasks/result follow it", async () => {
    const gate = new Gate();
    const { server, key } = gatedServer(gate, "tasks stdio", "mcp");
    try {
      const gw = server.gateway;
      const [c, s] = InMemoryTransport.createLinkedPair();
      await createMcpServer({ app: server.app, apiKey: key, gateway: gw, keySource: "env" }).connect(s);
      const waiting = new Map<number, (m: Json) => void>();
      c.onmessage = (m) => waiting.get((m as Json)["id"])?.(m as Json);
      await c.start();
      let id = 0;
      const send = (method: string, params: Json = {}) =>
        new Promise<Json>((resolve) => {
          waiting.set(++id, resolve);
          void c.send({ jsonrpc: "2.0", id, method, params } as never);
        });
      const init = await send("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "raw", version: "1" },
      });
      expect(init["result"]["capabilities"]["tasks"]).toEqual({ list: {}, requests: { tools: { call: {} } } });
      await c.send({ jsonrpc: "2.0", method: "notifications/initialized" } as never);
      const { value: created, heldThrough } = await whileHeld(
        gate,
        send("tools/call", { name: "search", arguments: SEARCH, task: {} }),
      );
      expect(heldThrough).toBe(true);
      const taskId = created["result"]["task"]["taskId"] as string;
      expect(taskId).toMatch(/^h_/);
      expect(created["result"]["task"]["status"]).toBe("working");
      expect((await send("tasks/get", { taskId }))["result"]["status"]).toBe("working");
      gate.open(1000);
      const final = (await send("tasks/result", { taskId }))["result"] as Json;
      expect(final["structuredContent"]["status"]).toBe("ok");
      expect((await send("tasks/get", { taskId }))["result"]["status"]).toBe("completed");
      expect((await send("tasks/cancel", { taskId }))["error"]["code"]).toBe(-32602);
      await c.close();
    } finally {
      gate.open(1000);
      await server.close({ drainMs: 2000 });
    }
  }, 60_000);
});

describe("the in-process 'answer now' header (D174) is the MCP layer's alone", () => {
  it("a request from outside carrying it is answered as always; the MCP layer's own gets 202 at once", async () => {
    const gate = new Gate();
    gate.open(1000); // the platforms answer at once: a call ends well within the gateway's wait
    const { server, key } = gatedServer(gate, "respond now", "http");
    try {
      const base = await server.listen({ host: "127.0.0.1", port: 0 });
      const post = (headers: Record<string, string>) =>
        fetch(`${base}/v1/search`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": key, ...headers },
          body: JSON.stringify(SEARCH),
        });
      // Over the socket, any value of the header (a guess, or "1") changes nothing: the call ends inline, 200.
      for (const value of ["1", "true", "respond-async"]) {
        const res = await post({ [RESPOND_NOW_HEADER]: value });
        expect(res.status).toBe(200);
        expect(((await res.json()) as Json)["status"]).toBe("ok");
      }
      // With this process's token (as the MCP layer forwards a task-augmented call), the same call answers 202.
      const inside = await server.app.inject({
        method: "POST",
        url: "/v1/search",
        headers: { "content-type": "application/json", "x-api-key": key, ...respondNowHeader() },
        payload: JSON.stringify(SEARCH),
      });
      expect(inside.statusCode).toBe(202);
      expect((inside.json() as Json)["handle"]).toMatch(/^h_/);
    } finally {
      await server.close({ drainMs: 2000 });
    }
  }, 60_000);
});
