/**
 * MCP in the mock (issue 34): the official MCP client (`@modelcontextprotocol/client`) over Streamable HTTP against
 * the mock's `POST {base}/mcp`, intercepted by msw: the server's 16 tools with their output schemas, charged calls
 * that move the mock's balance, a large answer read on through `more` for free, a 202 read by its handle, a forced
 * scenario as an `isError` result, and a wrong key refused at initialize with a message a person can read.
 */
import { MCP_TOOL_DEFINITIONS } from "@sdgw/engine/mcp";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sdk } from "../../server/test/mcp/sdk-client.ts";
import { BODIES } from "../../server/test/tool-bodies.ts";
import { toCsv } from "@sdgw/validators";
import { createMock, scenario } from "../src/index.ts";
import { BASE, KEY, NOSCOPE } from "./helpers.ts";

const { Client, StreamableHTTPClientTransport } = sdk;
type Json = Record<string, any>;

const mock = createMock({ baseUrl: BASE, balance: 100_000 });
const server = setupServer(...mock.handlers);
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterAll(() => server.close());
beforeEach(() => mock.reset());

const ajv = new Ajv2020({ strict: false });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
const OUTPUT = Object.fromEntries(MCP_TOOL_DEFINITIONS.map((t) => [t.name, ajv.compile(t.outputSchema)]));

async function connect(key = KEY): Promise<InstanceType<typeof Client>> {
  const client = new Client({ name: "mock-mcp-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), { requestInit: { headers: { "x-api-key": key } } }),
  );
  return client;
}

/** Calls a tool and checks its structuredContent against the tool's outputSchema. */
async function call(client: InstanceType<typeof Client>, name: string, args: Json) {
  const r = await client.callTool({ name, arguments: args });
  const s = r.structuredContent as Json;
  expect(OUTPUT[name]!(s), `${name}: ${ajv.errorsText(OUTPUT[name]!.errors)}`).toBe(true);
  return { r, s, texts: (r.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? "") };
}

const rows = (s: Json): number =>
  Array.isArray(s["items"])
    ? s["items"].length
    : Object.values((s["fanout"] ?? {}) as Record<string, Json>).reduce((n, e) => n + (e["items"]?.length ?? 0), 0);

describe("MCP at the mock's /mcp", () => {
  it("lists the server's 16 tools, with their output schemas", async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(MCP_TOOL_DEFINITIONS.map((t) => t.name));
    for (const t of tools)
      expect(t.outputSchema).toEqual(MCP_TOOL_DEFINITIONS.find((d) => d.name === t.name)!.outputSchema);
    await client.close();
  });

  it("a charged call answers its envelope and moves the balance by its cost; account reads it for free", async () => {
    const client = await connect();
    const before = mock.state.balance;
    const { s } = await call(client, "search", { platform: "x", query: "coffee" });
    expect(s["status"]).toBe("ok");
    expect(mock.state.balance).toBe(before - (s["billing"] as Json)["cost"]);
    const acct = await call(client, "account", {});
    expect(acct.s["billing"]["balance_credits"]).toBe(mock.state.balance);
    await client.close();
  });

  it("an answer over the size bound comes in pages through more, read for free until the last", async () => {
    const client = await connect();
    const first = await call(client, "search", { platforms: "all", query: "camping", count: 20 });
    expect(first.s["more"], "the first page is cut").toBeDefined();
    const after = mock.state.balance;
    let total = rows(first.s);
    let more = first.s["more"] as Json | undefined;
    while (more) {
      const page = await call(client, "search", { handle: more["handle"] });
      total += rows(page.s);
      expect(Buffer.byteLength(JSON.stringify(page.r))).toBeLessThanOrEqual(60_000);
      more = page.s["more"];
    }
    expect(total).toBe(rows(first.s) + (first.s["more"] as Json)["rows_left"]);
    expect(mock.state.balance, "reading on is free").toBe(after);
    // Another tool's handle is refused, naming handle.
    const other = await call(client, "trending", { handle: String((first.s["more"] as Json)["handle"]).split(".")[0] });
    expect(other.r.isError).toBe(true);
    expect(other.s["fix"]["param"]).toBe("handle");
    await client.close();
  });

  it("a slow call answers the running answer with its handle; the same tool with the handle reads it until it ends", async () => {
    const client = await connect();
    const started = await call(client, "search", { platform: "x", query: "slow coffee" });
    expect(started.s["status"]).toBe("running");
    expect(started.texts[0]).toContain(`Call search with { "handle": "${String(started.s["handle"])}" }`);
    let read = started;
    for (let i = 0; i < 10 && read.s["status"] === "running"; i++)
      read = await call(client, "search", { handle: started.s["handle"] });
    expect(read.s["status"]).toBe("ok");
    await client.close();
  });

  it("a forced scenario is an isError result with the error structure; bad arguments name the parameter", async () => {
    const client = await connect();
    mock.use(scenario("rate_limited", { times: 1 }));
    const limited = await call(client, "search", { platform: "x", query: "coffee" });
    expect(limited.r.isError).toBe(true);
    expect(limited.s["code"]).toBe("rate_limited");
    const bad = await call(client, "search", { platform: "x" });
    expect(bad.r.isError).toBe(true);
    expect(bad.s["code"]).toBe("invalid_params");
    const extra = await call(client, "account", { verbose: true });
    expect(extra.s["fix"]["param"]).toBe("verbose");
    await client.close();
  });

  it("a wrong key is refused at initialize: 401 without a Bearer challenge, and the message says the key is not valid", async () => {
    const res = await fetch(`${BASE}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "x-api-key": "sdgw_wrong",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('ApiKey header="X-API-Key"');
    const body = (await res.json()) as Json;
    expect(body).toMatchObject({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32001 },
      code: "unauthorized",
      reason: "invalid",
    });
    expect(body["error"]["message"]).toMatch(/^This key is not valid\./);
    await expect(connect("sdgw_wrong")).rejects.toThrow(/This key is not valid/);
  });
});

/** One raw JSON-RPC request to the mock's /mcp as `key`; the answer message. */
async function rpc(method: string, params: Json = {}, key = KEY): Promise<Json> {
  const res = await fetch(`${BASE}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": key },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Json;
}

/** Structured content without what differs between two calls: ids, times. */
function withoutIds(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutIds);
  if (!v || typeof v !== "object") return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v as Json))
    if (k !== "request_id" && k !== "handle" && k !== "billing" && !/_at$/.test(k)) out[k] = withoutIds(x);
  return out;
}

describe("MCP tasks at the mock's /mcp (D145)", () => {
  it("advertises tasks and taskSupport; a free tool refuses a task with -32601", async () => {
    const init = await rpc("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "raw", version: "1" },
    });
    expect(init["result"]["capabilities"]["tasks"]).toEqual({ list: {}, requests: { tools: { call: {} } } });
    const tools = (await rpc("tools/list"))["result"]["tools"] as Json[];
    expect(tools.find((t) => t["name"] === "search")!["execution"]).toEqual({ taskSupport: "optional" });
    expect(tools.find((t) => t["name"] === "find")!["execution"]).toBeUndefined();
    expect((await rpc("tools/call", { name: "account", arguments: {}, task: {} }))["error"]["code"]).toBe(-32601);
  });

  it("a slow call as a task: working, then completed; its result is the handle read's; reads are free", async () => {
    const args = { platform: "x", query: "slow coffee" };
    const created = (await rpc("tools/call", { name: "search", arguments: args, task: {} }))["result"] as Json;
    const taskId = created["task"]["taskId"] as string;
    expect(taskId).toMatch(/^h_/);
    expect(created["task"]["status"]).toBe("working");
    const got = (await rpc("tasks/get", { taskId }))["result"] as Json;
    expect(got).toMatchObject({ taskId, status: "working" });
    expect(got["pollInterval"]).toBeGreaterThan(0);
    expect((await rpc("tasks/cancel", { taskId }))["error"]["code"]).toBe(-32602);

    const final = (await rpc("tasks/result", { taskId }))["result"] as Json;
    expect(final["_meta"]["io.modelcontextprotocol/related-task"]).toEqual({ taskId });
    expect(final["structuredContent"]["status"]).toBe("ok");
    expect(((await rpc("tasks/get", { taskId }))["result"] as Json)["status"]).toBe("completed");

    const account = async () =>
      withoutIds((await rpc("tools/call", { name: "account", arguments: {} }))["result"]["structuredContent"]);
    const before = await account();
    const { _meta, ...again } = (await rpc("tasks/result", { taskId }))["result"] as Json;
    await rpc("tasks/get", { taskId });
    const list = (await rpc("tasks/list"))["result"] as Json;
    expect(list["tasks"].map((t: Json) => t["taskId"])).toContain(taskId);
    expect(list["tasks"].find((t: Json) => t["taskId"] === taskId)["status"]).toBe("completed");
    const byHandle = (await rpc("tools/call", { name: "search", arguments: { handle: taskId } }))["result"] as Json;
    expect(again).toEqual(byHandle);
    expect(await account()).toEqual(before);
    // The same call without a task, read by its handle to its end: the same answer but for ids and times.
    const started = (await rpc("tools/call", { name: "search", arguments: args }))["result"] as Json;
    let sync = started;
    for (let i = 0; i < 10 && sync["structuredContent"]["status"] === "running"; i++)
      sync = (
        await rpc("tools/call", { name: "search", arguments: { handle: started["structuredContent"]["handle"] } })
      )["result"] as Json;
    expect(withoutIds(again["structuredContent"])).toEqual(withoutIds(sync["structuredContent"]));
    expect((await rpc("tasks/cancel", { taskId }))["error"]["code"]).toBe(-32602);
    expect((await rpc("tasks/list", { cursor: "nope" }))["error"]["code"]).toBe(-32602);
  });

  it("a call that would answer inline answers its task at once, working (D174); another key cannot read or list it", async () => {
    const args = { platform: "x", query: "coffee" };
    const created = (await rpc("tools/call", { name: "search", arguments: args, task: {} }))["result"] as Json;
    const taskId = created["task"]["taskId"] as string;
    expect(taskId).toMatch(/^h_/);
    // The task arrives before its run ended: it reads working (one poll of the mock's run) before completed.
    expect(created["task"]["status"]).toBe("working");
    expect((await rpc("tasks/get", { taskId }))["result"]["status"]).toBe("working");
    const final = (await rpc("tasks/result", { taskId }))["result"] as Json;
    expect(final["structuredContent"]["status"]).toBe("ok");
    expect((await rpc("tasks/get", { taskId }))["result"]["status"]).toBe("completed");
    // The same call without a task answers inline; its answer is the task's result but for ids and times.
    const inline = (await rpc("tools/call", { name: "search", arguments: args }))["result"] as Json;
    expect(inline["structuredContent"]["status"]).toBe("ok");
    expect(withoutIds(final["structuredContent"])).toEqual(withoutIds(inline["structuredContent"]));
    // A tool quoted inline (brand_buzz) too, charged once when its run ends.
    const before = mock.state.balance;
    const tool = (
      await rpc("tools/call", {
        name: "brand_buzz",
        arguments: { query: "coffee", platforms: ["x", "weibo", "reddit"] },
        task: {},
      })
    )["result"] as Json;
    expect(tool["task"]["status"]).toBe("working");
    const toolId = tool["task"]["taskId"] as string;
    const toolFinal = (await rpc("tasks/result", { taskId: toolId }))["result"] as Json;
    expect(toolFinal["structuredContent"]["tool"]).toBe("brand_buzz");
    const cost = Number(toolFinal["structuredContent"]["billing"]["cost_credits"]);
    expect(cost).toBeGreaterThan(0);
    await rpc("tasks/result", { taskId: toolId }); // reading it again is free
    expect(mock.state.balance).toBe(before - cost);
    for (const method of ["tasks/get", "tasks/result", "tasks/cancel"])
      expect((await rpc(method, { taskId }, NOSCOPE))["error"]["code"]).toBe(-32602);
    const theirs = (await rpc("tasks/list", {}, NOSCOPE))["result"]["tasks"] as Json[];
    expect(theirs.map((t) => t["taskId"])).not.toContain(taskId);
  });
  it("batch_stats asked as csv as a task: working at once, its result carries the csv rows (D174, D55)", async () => {
    const created = (
      await rpc("tools/call", {
        name: "batch_stats",
        arguments: { ...BODIES.batch_stats.inline, format: "csv" },
        task: {},
      })
    )["result"] as Json;
    expect(created["task"]["status"]).toBe("working");
    const final = (await rpc("tasks/result", { taskId: created["task"]["taskId"] }))["result"] as Json;
    const answer = final["structuredContent"] as Json;
    expect(answer["tool"]).toBe("batch_stats");
    expect(answer["applied_params"]["format"]).toBe("csv");
    expect(final["content"][0]).toEqual({ type: "text", text: toCsv(answer as never) });
  });
});
