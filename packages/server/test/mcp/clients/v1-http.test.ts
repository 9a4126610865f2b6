/**
 * The v1 MCP client (`@modelcontextprotocol/sdk` 1.x, what most agent hosts ship) over Streamable HTTP, on a real
 * socket, against the reference server started as users start it (`main.ts`, 127.0.0.1, its demo key). Each test
 * is a defect of issue 16 a user of that client would notice. Tools are called through `client.callTool`, so the
 * client's own checks (its result schema, and its validation of `structuredContent` against a tool's
 * `outputSchema` when a tool declares one) run on every answer.
 */
import { describe, expect, it } from "vitest";
import { toCsv, toNdjson } from "@sdgw/validators";
import type { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { BODIES } from "../../tool-bodies.ts";
import {
  balance,
  CHARGING,
  callAndReadOn,
  FREE,
  parts,
  recordingFetch,
  resultOverHttp,
  rowsOf,
  gatewayPerFile,
  until,
  v1,
  type AnyClient,
  type Gateway,
  type Json,
} from "./harness.ts";

const WWW_AUTHENTICATE = 'ApiKey header="X-API-Key"';

let g: Gateway;
gatewayPerFile((started) => (g = started));

/** A v1 client connected over Streamable HTTP with `headers`, recording its exchanges. */
async function connect(
  headers: Record<string, string> = { "x-api-key": g.key },
): Promise<{ client: V1Client; log: ReturnType<typeof recordingFetch>["log"]; errors: unknown[] }> {
  const { fetch, log } = recordingFetch();
  const client = new v1.Client({ name: "sdgw-v1-http-test", version: "1.0.0" });
  const errors: unknown[] = [];
  client.onerror = (e) => void errors.push(e);
  await client.connect(new v1.StreamableHTTPClientTransport(new URL(g.mcpUrl), { requestInit: { headers }, fetch }));
  return { client, log, errors };
}

/** Connecting must fail: the error, and the exchanges recorded. */
async function refused(
  headers: Record<string, string>,
): Promise<{ error: unknown; log: ReturnType<typeof recordingFetch>["log"]; ms: number }> {
  const { fetch, log } = recordingFetch();
  const client = new v1.Client({ name: "sdgw-v1-http-test", version: "1.0.0" });
  const started = performance.now();
  const error = await client
    .connect(new v1.StreamableHTTPClientTransport(new URL(g.mcpUrl), { requestInit: { headers }, fetch }))
    .then(
      () => null,
      (e: unknown) => e,
    );
  const ms = performance.now() - started;
  await client.close().catch(() => undefined);
  return { error, log, ms };
}

/** The contract's error body a StreamableHTTPError carries in its message (`Error POSTing to endpoint: {...}`). */
function bodyOf(error: unknown): Json {
  const m = /Error POSTing to endpoint: (\{.*\})\s*$/s.exec(String((error as Error).message));
  if (!m) throw new Error(`no error body in: ${String(error)}`);
  return JSON.parse(m[1]!) as Json;
}

describe("v1 client (@modelcontextprotocol/sdk 1.x) over Streamable HTTP", { timeout: 120_000 }, () => {
  it("initialize + tools/list: 16 tools, the 13 charging ones take handle; no session, instructions given", async () => {
    const { client } = await connect();
    expect(client.getServerVersion()).toMatchObject({ name: "sdgw" });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    expect(client.getInstructions()).toMatch(/handle/);
    const { tools, nextCursor } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...CHARGING, ...FREE].sort());
    expect(nextCursor).toBeUndefined();
    const withHandle = tools.filter((t) => (t.inputSchema.properties as Json | undefined)?.["handle"]);
    expect(withHandle.map((t) => t.name).sort()).toEqual([...CHARGING].sort());
    expect(withHandle).toHaveLength(13);
    await client.close();
  });

  it("after initialize the client's GET /mcp answers 405 at once and ends; the client goes on working and closes", async () => {
    const { client, log, errors } = await connect();
    // The v1 client opens its GET stream after notifications/initialized, without awaiting it.
    expect(await until(() => log.some((r) => r.method === "GET"))).toBe(true);
    const get = log.find((r) => r.method === "GET")!;
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect(JSON.parse(get.body)).toMatchObject({
      code: "not_found",
      reason: "no_such_route",
      fix: { allowed: ["POST /mcp"] },
    });
    // At once, and the answer ended (the recording fetch read it to its end): no stream left open.
    expect(get.ms).toBeLessThan(2000);
    expect(errors).toEqual([]);
    // The session works after it: a call answers, and closing does not wait on anything.
    const acct = parts(await client.callTool({ name: "account", arguments: {} }));
    expect(acct.isError).toBe(false);
    expect(acct.structured["billing"]["balance_credits"]).toBe(await balance(g));
    await client.ping();
    const closing = performance.now();
    await client.close();
    expect(performance.now() - closing).toBeLessThan(1000);
    // Only POST and the one GET were sent: no session id, so no DELETE at close.
    expect([...new Set(log.map((r) => r.method))].sort()).toEqual(["GET", "POST"]);
    expect(log.filter((r) => r.method === "GET")).toHaveLength(1);
    expect(log.every((r) => !r.headers.get("mcp-session-id"))).toBe(true);
  });

  it("a wrong or missing key: connect() rejects at once with 401, WWW-Authenticate and the contract's unauthorized body", async () => {
    for (const [headers, reason] of [
      [{ "x-api-key": "sdgw_wrong_key" }, "invalid"],
      [{ authorization: "Bearer sdgw_wrong_key" }, "invalid"],
      [{}, "missing"],
    ] as Array<[Record<string, string>, string]>) {
      const { error, log, ms } = await refused(headers);
      const label = JSON.stringify(headers);
      expect(error, label).toBeInstanceOf(v1.StreamableHTTPError);
      expect((error as InstanceType<typeof v1.StreamableHTTPError>).code, label).toBe(401);
      expect(bodyOf(error), label).toMatchObject({
        code: "unauthorized",
        reason,
        retryable: false,
        schema_version: "v1",
      });
      expect(bodyOf(error)["request_id"]).toMatch(/^req_/);
      expect(bodyOf(error)["fix"]["note"]).toMatch(/key/i);
      // The v1 client's error shows the body: a JSON-RPC error whose message a person can read (D142).
      expect(bodyOf(error)["error"]["message"], label).toMatch(
        reason === "missing" ? /^No key was sent; a valid key is required\./ : /^This key is not valid\./,
      );
      expect(ms, label).toBeLessThan(3000);
      // Only the initialize was sent and refused; the answer says how to send a key, and offers no OAuth.
      expect(
        log.map((r) => `${r.method} ${r.status}`),
        label,
      ).toEqual(["POST 401"]);
      expect(log[0]!.headers.get("www-authenticate"), label).toBe(WWW_AUTHENTICATE);
      expect(log[0]!.headers.get("www-authenticate")).not.toMatch(/resource_metadata/);
    }
  });

  it("the key as Authorization: Bearer is taken like X-API-Key", async () => {
    const { client } = await connect({ authorization: `Bearer ${g.key}` });
    expect((await client.listTools()).tools).toHaveLength(16);
    await client.close();
  });

  it("an Origin that is not allowed: connect() rejects with 403 and invalid_params naming Origin", async () => {
    const { error, log } = await refused({ "x-api-key": g.key, origin: "http://evil.example" });
    expect(error).toBeInstanceOf(v1.StreamableHTTPError);
    expect((error as InstanceType<typeof v1.StreamableHTTPError>).code).toBe(403);
    expect(bodyOf(error)).toMatchObject({ code: "invalid_params", fix: { param: "Origin" } });
    expect(log.map((r) => `${r.method} ${r.status}`)).toEqual(["POST 403"]);
    // A loopback origin (a local web app) is served.
    const { client } = await connect({ "x-api-key": g.key, origin: "http://localhost:5173" });
    expect((await client.listTools()).tools).toHaveLength(16);
    await client.close();
  });

  it("bad arguments: a tool result with isError and invalid_params naming the parameter (not a -32602), nothing charged", async () => {
    const { client } = await connect();
    const before = await balance(g);
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["search", { platform: "weibo" }, "query"],
      ["search", { platform: "weibo", query: "camping", count: "many" }, "count"],
      ["search", { platform: "weibo", query: "camping", count: 500 }, "count"],
      ["trending", { handle: "not a handle!" }, "handle"],
      ["batch_stats", { targets: [] }, "targets"],
      ["search", { platform: "weibo", query: "camping", idempotency_key: "" }, "idempotency_key"],
      ["account", { verbose: true }, "verbose"],
    ];
    for (const [name, args, param] of cases) {
      const label = `${name} ${JSON.stringify(args)}`;
      const r = parts(await client.callTool({ name, arguments: args }));
      expect(r.isError, label).toBe(true);
      expect(r.structured, label).toMatchObject({ code: "invalid_params", retryable: false });
      expect(r.structured["fix"]["param"], label).toBe(param);
      expect(r.texts[0], label).toMatch(new RegExp(`^${name} failed \\(HTTP 400\\) invalid_params: `));
    }
    expect(await balance(g)).toBe(before);
    await client.close();
  });

  it("an unknown tool and a tools/list cursor are protocol errors -32602 (McpError)", async () => {
    const { client } = await connect();
    const cursor = await client.listTools({ cursor: "bogus" }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(cursor).toBeInstanceOf(v1.McpError);
    expect((cursor as InstanceType<typeof v1.McpError>).code).toBe(v1.ErrorCode.InvalidParams);
    expect((cursor as Error).message).toMatch(/cursor/i);
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(unknown).toBeInstanceOf(v1.McpError);
    expect((unknown as InstanceType<typeof v1.McpError>).code).toBe(-32602);
    await client.close();
  });

  for (const format of ["csv", "ndjson"] as const) {
    it(`batch_stats with format ${format}, run inline: the charged answer comes with its rows as the file`, async () => {
      const { client } = await connect();
      const before = await balance(g);
      const first = parts(
        await client.callTool({ name: "batch_stats", arguments: { ...BODIES.batch_stats.inline, format } }),
      );
      expect(first.isError, first.texts[0]).toBe(false);
      const answer = first.structured;
      expect(answer).toMatchObject({ tool: "batch_stats", status: "ok", applied_params: { format } });
      const items = answer["items"] as Json[];
      expect(items).toHaveLength(3);
      // A tool answer states its charge as billing.cost_credits and charge.charged_credits; the balance moved by it.
      const charged = answer["billing"]["cost_credits"] as number;
      expect(charged).toBeGreaterThan(0);
      expect(answer["charge"]["charged_credits"]).toBe(charged);
      expect(await balance(g)).toBe(before - charged);
      // The first text content is the rows as the file: a header and 3 lines of csv, or 3 JSON lines.
      const file = first.texts[0]!;
      expect(file).toBe(format === "csv" ? toCsv(answer) : toNdjson(answer));
      const lines = file.trim().split("\n");
      expect(lines).toHaveLength(format === "csv" ? 4 : 3);
      if (format === "csv") for (const item of items) expect(file).toContain(String(item["id"]));
      else expect(lines.map((l) => (JSON.parse(l) as Json)["id"])).toEqual(items.map((i) => i["id"]));
      // Then the JSON as text, for clients that read only text.
      expect(JSON.parse(first.texts[1]!)).toEqual(answer);
      await client.close();
    });

    it(`batch_stats with format ${format}, run in the background: read by its handle, the rows are the HTTP file; re-reads are free`, async () => {
      const { client } = await connect();
      const before = await balance(g);
      const seen = await callAndReadOn(client as unknown as AnyClient, "batch_stats", {
        ...BODIES.batch_stats.background,
        format,
      });
      expect(seen[0]!.structured).toMatchObject({ status: "running" });
      const handle = String(seen[0]!.structured["handle"]);
      const done = seen.at(-1)!;
      expect(done.isError, done.texts[0]).toBe(false);
      expect(done.structured).toMatchObject({ tool: "batch_stats", status: "ok", applied_params: { format } });
      expect(done.structured["more"]).toBeUndefined();
      const charged = done.structured["billing"]["cost_credits"] as number;
      expect(charged).toBe(12);
      expect(await balance(g)).toBe(before - charged);
      // The rows of the charge, as the file the same handle gives over HTTP.
      const overHttp = await resultOverHttp(g, handle, format);
      expect(overHttp.status).toBe(200);
      expect(done.texts[0]).toBe(overHttp.text);
      expect(overHttp.text.trim().split("\n")).toHaveLength(format === "csv" ? 13 : 12);
      // Read again by the handle: the same rows, nothing charged.
      const again = parts(await client.callTool({ name: "batch_stats", arguments: { handle } }));
      expect(again.texts[0]).toBe(overHttp.text);
      expect(await balance(g)).toBe(before - charged);
      await client.close();
    }, 60_000);
  }

  // What the initialize instructions say of handles holds (found by this suite: they promised a handle on every
  // charged answer, and an answer that finished inline has none).
  it("what the initialize instructions say of handles holds for an answer that finished inline", async () => {
    const { client } = await connect();
    const instructions = client.getInstructions() ?? "";
    expect(instructions).not.toMatch(/every charged answer has a handle/i);
    expect(instructions).toMatch(/finished whole in the call has none/);
    const r = parts(
      await client.callTool({ name: "search", arguments: { platform: "weibo", query: "露营", count: 3 } }),
    );
    expect(r.isError).toBe(false);
    expect(r.structured["billing"]["cost"]).toBe(1);
    expect(r.structured["handle"]).toBeUndefined();
    expect(r.structured["more"]).toBeUndefined();
    await client.close();
  });

  it("more over a large multi-platform search: the pages concatenated are exactly the result over HTTP, reading on is free", async () => {
    const { client } = await connect();
    const before = await balance(g);
    const seen = await callAndReadOn(client as unknown as AnyClient, "search", {
      platforms: "all",
      query: "camping",
      count: 20,
    });
    expect(
      seen.every((s) => !s.isError),
      seen.find((s) => s.isError)?.texts[0],
    ).toBe(true);
    const pages = seen.filter((s) => s.structured["status"] !== "running");
    expect(pages.length).toBeGreaterThanOrEqual(2);
    const charged = pages[0]!.structured["billing"]["cost"] as number;
    expect(charged).toBe(10);
    expect(await balance(g)).toBe(before - charged);
    for (const p of pages) {
      expect(Buffer.byteLength(JSON.stringify(p.structured))).toBeLessThanOrEqual(60_000);
      for (const [platform, e] of Object.entries(p.structured["fanout"] as Record<string, Json>))
        if (e["status"] === "ok") expect((e["items"] as unknown[]).length, platform).toBeGreaterThan(0);
    }
    const handle = String(pages[0]!.structured["more"]["handle"]).split(".")[0]!;
    const whole = await resultOverHttp(g, handle);
    expect(whole.status).toBe(200);
    const rows = pages.flatMap((p) => rowsOf(p.structured));
    expect(rows).toEqual(rowsOf(JSON.parse(whole.text) as Json));
    expect(rows.length).toBeGreaterThan(100);
    expect(pages.at(-1)!.structured["more"]).toBeUndefined();
    // Every page after the first said how many rows were left, down to the last page.
    for (let i = 0; i + 1 < pages.length; i++)
      expect(pages[i]!.structured["more"]["rows_left"]).toBe(
        rows.length - pages.slice(0, i + 1).flatMap((p) => rowsOf(p.structured)).length,
      );
    expect(await balance(g)).toBe(before - charged);

    // Another tool's handle is refused, naming the tool that made it; nothing is read or charged.
    for (const [tool, h] of [
      ["trending", handle],
      ["viral_finder", `${handle}.1`],
    ] as const) {
      const wrong = parts(await client.callTool({ name: tool, arguments: { handle: h } }));
      expect(wrong.isError, tool).toBe(true);
      expect(wrong.structured).toMatchObject({ code: "invalid_params", fix: { param: "handle" } });
      expect(wrong.structured["message"]).toMatch(/search/);
      expect(wrong.structured["message"]).toContain(tool);
    }
    // A position past the end is refused the same way.
    const past = parts(await client.callTool({ name: "search", arguments: { handle: `${handle}.${rows.length}` } }));
    expect(past.isError).toBe(true);
    expect(past.structured["fix"]["param"]).toBe("handle");
    expect(await balance(g)).toBe(before - charged);
    await client.close();
  }, 60_000);

  it("every one of the 16 tools answers the v1 client through callTool (its result checks run on each)", async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    const args: Record<string, Record<string, unknown>> = {
      search: { platform: "weibo", query: "露营", count: 3 },
      trending: { platform: "zhihu", count: 3 },
      detail: { platform: "x", id: "2122526005990306014" },
      comments: { platform: "bilibili", url: "https://www.bilibili.com/video/BV1xK4y1a7Zq", limit: 5 },
      user_profile: { platform: "weibo", id: "1749127100" },
      user_posts: { platform: "x", id: "vercel", limit: 5 },
      ...Object.fromEntries(Object.entries(BODIES).map(([tool, b]) => [tool, b.inline])),
      find: { query: "xiaohongshu note comments" },
      capabilities: {},
      account: {},
    };
    for (const t of tools) {
      expect(args[t.name], t.name).toBeDefined();
      const seen = await callAndReadOn(client as unknown as AnyClient, t.name, args[t.name]!);
      const last = seen.at(-1)!;
      expect(last.isError, `${t.name}: ${last.texts[0]}`).toBe(false);
      expect(Object.keys(last.structured).length, t.name).toBeGreaterThan(0);
      // The text content is the JSON of structuredContent (for clients that read only text).
      expect(JSON.parse(last.texts.at(-1)!), t.name).toEqual(last.structured);
    }
    await client.close();
  }, 60_000);
});
