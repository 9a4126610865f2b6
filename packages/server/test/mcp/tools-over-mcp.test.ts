/**
 * The 13 charging MCP tools against the real gateway through the official MCP client, and @sdgw/client's `more`
 * helper over both transports of the issue (Streamable HTTP at /mcp, and stdio):
 * - every charging tool's answers hold the size bound, and a result over it is read to the end through `more`
 *   (inline answers are kept under a handle, background runs are followed), every row once, in order, equal to
 *   the whole result over HTTP, charged once by the first call and never after;
 * - `idempotency_key` makes an agent's retry of a tool run free;
 * - a tool run and a more walk are printed as an agent's transcript.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Client as McpClient } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectMore } from "../../../client/src/more.ts";
import { createMcpServer, MCP_ANSWER_BYTES } from "../../src/mcp/index.ts";
import { createServer, type SdgwServer } from "../../src/storage/sqlite/server.ts";
import { BODIES, LARGE_DATA_CALLS } from "../tool-bodies.ts";
import { sdk } from "./sdk-client.ts";

const { Client, InMemoryTransport, StreamableHTTPClientTransport } = sdk;
const { StdioClientTransport } = (await import(
  "@modelcontextprotocol/client/stdio"
)) as typeof import("@modelcontextprotocol/client/stdio");
type Structured = Record<string, any>;

const GENEROUS = {
  keyQps: 100_000,
  workspaceConcurrency: 100_000,
  addressPerMinute: 100_000,
  failureThreshold: 100_000,
};
const SMALL_BOUND = 1_500;
const fast = { sleep: () => new Promise<void>((r) => setTimeout(r, 15)) };
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");

/** The charging tools with a body each whose result has many rows. */
const CALLS: Array<[string, Record<string, unknown>]> = [
  ...LARGE_DATA_CALLS,
  ...Object.entries(BODIES).flatMap(
    ([tool, b]): Array<[string, Record<string, unknown>]> => [
      [tool, b.inline],
      [tool, b.background],
    ],
  ),
];

function gateway(options: { latencyMs?: number; dbPath?: string } = {}): { server: SdgwServer; key: string } {
  const server = createServer({
    dbPath: options.dbPath ?? ":memory:",
    waitMs: 2000,
    pollAfterSeconds: 1,
    log: () => undefined,
    limits: GENEROUS,
    ...(options.latencyMs
      ? { simulator: { knobs: { "*": { latencyMs: [options.latencyMs, options.latencyMs * 2] } } } }
      : {}),
  });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "MCP tools", plan: "paid" });
  gw.accounts.grant(account.id, 5000);
  return { server, key: gw.accounts.createKey({ accountId: account.id, name: "mcp" }).secret };
}

/** The rows of a whole HTTP answer, as collectMore gives them. */
function rowsOfWhole(answer: Structured): unknown[] {
  if (Array.isArray(answer["items"])) return answer["items"];
  if (Array.isArray(answer["targets"])) return answer["targets"];
  return Object.entries(answer["fanout"] as Record<string, { items?: unknown[] }>).flatMap(([platform, e]) =>
    (e.items ?? []).map((i) => ({ platform, ...(i as object) })),
  );
}

/** An MCP client whose every answer is recorded (arguments, rows, bytes, more). */
function recording(client: McpClient) {
  const answers: Array<{
    name: string;
    args: Record<string, unknown>;
    bytes: number;
    status: unknown;
    rows: number;
    more?: Structured;
    isError?: boolean;
  }> = [];
  return {
    answers,
    async callTool(params: { name: string; arguments?: Record<string, unknown> }) {
      const r = await client.callTool(params);
      const s = (r.structuredContent ?? {}) as Structured;
      const rows = s["status"] === "running" ? 0 : rowsOfWhole({ fanout: {}, ...s }).length;
      answers.push({
        name: params.name,
        args: params.arguments ?? {},
        bytes: bytes(s),
        status: s["status"],
        rows,
        ...(s["more"] ? { more: s["more"] } : {}),
        ...(r.isError ? { isError: true } : {}),
      });
      return r;
    },
  };
}

const balanceOf = (server: SdgwServer, key: string) =>
  server.gateway.ledger.view(server.gateway.accounts.keyBySecret(key)!.account_id, null).balance;

describe("every charging tool over MCP holds the size bound and reads on through more, charged once", () => {
  let server: SdgwServer;
  let key: string;
  let client: McpClient;
  const cutTools = new Set<string>();
  beforeAll(async () => {
    ({ server, key } = gateway({ latencyMs: 2 }));
    const [c, s] = InMemoryTransport.createLinkedPair();
    await createMcpServer({
      app: server.app,
      apiKey: key,
      gateway: server.gateway,
      maxAnswerBytes: SMALL_BOUND,
    }).connect(s);
    client = new Client({ name: "bound-test", version: "1.0.0" });
    await client.connect(c);
  });
  afterAll(async () => {
    await client.close();
    await server.close({ drainMs: 3000 });
  });

  it.each(CALLS.map(([name, body], i) => [`${name} #${i}`, name, body] as const))("%s", async (_label, name, body) => {
    const before = balanceOf(server, key);
    const rec = recording(client);
    const rows = await collectMore(rec, name, body, fast);
    const charged = before - balanceOf(server, key);
    expect(charged).toBeGreaterThan(0);
    expect(rec.answers.every((a) => !a.isError)).toBe(true);
    for (const a of rec.answers)
      expect(a.bytes, `${name} answer of ${a.rows} rows`).toBeLessThanOrEqual(SMALL_BOUND + 3_000);
    // Every answer after the first only reads (a handle, or more.handle): nothing ran, nothing was charged.
    expect(
      rec.answers.slice(1).every((a) => Object.keys(a.args).length === 1 && typeof a.args["handle"] === "string"),
    ).toBe(true);
    const cut = rec.answers.filter((a) => a.more);
    if (cut.length === 0) {
      // It fitted whole: one answer (after any running reads), nothing to read on.
      expect(rec.answers.filter((a) => a.status !== "running")).toHaveLength(1);
      return;
    }
    cutTools.add(name);
    // The rows read equal the whole result over HTTP, in order.
    const handle = String(cut[0]!.more!["handle"]).split(".")[0]!;
    const whole = await server.app.inject({
      method: "GET",
      url: `/v1/results/${handle}`,
      headers: { "x-api-key": key },
    });
    expect(whole.statusCode).toBe(200);
    const wholeJson = JSON.parse(whole.body) as Structured;
    expect(wholeJson["more"]).toBeUndefined();
    expect(rows).toEqual(rowsOfWhole(wholeJson));
    expect(balanceOf(server, key)).toBe(before - charged);
  });

  it("the bound cut an answer of every one of the 13 charging tools above", () => {
    expect([...cutTools].sort()).toEqual([...new Set(CALLS.map(([n]) => n))].sort());
  });

  it("at the real bound (60 KB) no answer of any tool is over it", async () => {
    const [c, s] = InMemoryTransport.createLinkedPair();
    await createMcpServer({ app: server.app, apiKey: key, gateway: server.gateway }).connect(s);
    const real = new Client({ name: "real-bound", version: "1.0.0" });
    await real.connect(c);
    const rec = recording(real);
    for (const [name, body] of CALLS) await collectMore(rec, name, body, fast);
    for (const a of rec.answers) expect(a.bytes, `${a.name}`).toBeLessThanOrEqual(MCP_ANSWER_BYTES);
    await real.close();
  });

  it("an agent's retry under the same idempotency_key gets the first answer again, charged once", async () => {
    const before = balanceOf(server, key);
    const args = { ...BODIES.brand_buzz.inline, idempotency_key: "agent-retry-1" };
    const first = await client.callTool({ name: "brand_buzz", arguments: args });
    const charged = before - balanceOf(server, key);
    const again = await client.callTool({ name: "brand_buzz", arguments: args });
    expect((again.structuredContent as Structured)["request_id"]).toBe(
      (first.structuredContent as Structured)["request_id"],
    );
    expect(balanceOf(server, key)).toBe(before - charged);
    const other = await client.callTool({ name: "brand_buzz", arguments: { ...args, query: "喜茶" } });
    expect(other.isError).toBe(true);
    expect((other.structuredContent as Structured)["code"]).toBe("idempotency_conflict");
  });
});

describe("collectMore over Streamable HTTP at /mcp and over stdio", () => {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-mcp-more-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A 200-row fanout read through more, then a background tool run followed to its end. */
  async function walk(
    client: McpClient,
    server: SdgwServer | null,
    balance: () => Promise<number>,
    label: string,
  ): Promise<void> {
    const before = await balance();
    const rec = recording(client);
    const rows = await collectMore(rec, "search", { platforms: "all", query: "camping", count: 20 }, fast);
    expect(rows).toHaveLength(200);
    expect(before - (await balance())).toBe(10);
    expect(rec.answers.length).toBeGreaterThanOrEqual(2);
    for (const a of rec.answers) expect(a.bytes).toBeLessThanOrEqual(MCP_ANSWER_BYTES);
    expect(rec.answers.at(-1)!.more).toBeUndefined();
    const afterWalk = await balance();
    const tool = recording(client);
    const items = await collectMore(tool, "viral_finder", BODIES.viral_finder.background, fast);
    expect(items.length).toBeGreaterThan(0);
    expect(tool.answers[0]!.status).toBe("running");
    const spent = afterWalk - (await balance());
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBeLessThanOrEqual(21);
    console.log(
      `[${label}] ${[...rec.answers, ...tool.answers]
        .map(
          (a) =>
            `${a.name}(${JSON.stringify(a.args).slice(0, 90)}) ` +
            `-> ${a.status}, ${a.rows} rows, ${a.bytes} ` +
            `B${a.more ? `, more ${a.more["handle"]} (${a.more["rows_left"]} left)` : ""}`,
        )
        .join("\n  ")}`,
    );
    void server;
  }

  it("over Streamable HTTP", async () => {
    const { server, key } = gateway({ latencyMs: 1 });
    const url = `${await server.listen({ host: "127.0.0.1", port: 0 })}/mcp`;
    const client = new Client({ name: "more-http", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { "x-api-key": key } } }),
    );
    await walk(client, server, async () => balanceOf(server, key), "streamable-http");
    await client.close();
    await server.close({ drainMs: 3000 });
  }, 60_000);

  it("over stdio (the sdgw-mcp command)", async () => {
    const dbPath = join(dir, "stdio.sqlite");
    const { server, key } = gateway({ dbPath });
    await server.close();
    const bin = fileURLToPath(new URL("../../src/bin/sdgw-mcp.ts", import.meta.url));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--conditions=source", bin],
      env: { SDGW_DB: dbPath, SDGW_API_KEY: key, SDGW_KEY_QPS: "1000", PATH: process.env["PATH"] ?? "" },
      stderr: "pipe",
    });
    const client = new Client({ name: "more-stdio", version: "1.0.0" });
    await client.connect(transport);
    const balance = async () =>
      ((await client.callTool({ name: "account", arguments: {} })).structuredContent as Structured)["billing"][
        "balance_credits"
      ] as number;
    await walk(client, null, balance, "stdio");
    await client.close();
  }, 60_000);
});
