/**
 * No charge without an answer (issue 16), over MCP with the official client on Streamable HTTP against servers
 * started with `createServer().listen` on 127.0.0.1:
 * - every one of the 13 charging tools, with every `format` it takes (batch_stats: json, csv, ndjson), inline and
 *   in the background, at a small bound (every result cut, read on through `more`) and at the real 60 KB bound,
 *   and on a server where every call answers 202 (read by handle): the balance moves by exactly the charge the
 *   answers state, a charge comes with its data (rows, the csv/ndjson file, equal to the whole result over HTTP),
 *   and every page is a valid answer of the contract (no `ok` entry with 0 items);
 * - error answers (max_cost_credits 0, an unknown handle, another tool's handle, a position past the end) never
 *   move the balance.
 */
import type { Client as McpClient } from "@modelcontextprotocol/client";
import { responseValidators, toCsv, toNdjson, validateMore } from "@sdgw/validators";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpServer, MCP_ANSWER_BYTES, MCP_TOOLS, mcpRoutes } from "../../src/mcp/index.ts";
import { createServer, type SdgwServer } from "../../src/storage/sqlite/server.ts";
import { BODIES, redditPosts } from "../tool-bodies.ts";
import { sdk } from "./sdk-client.ts";

const { Client, InMemoryTransport, StreamableHTTPClientTransport } = sdk;
type Json = Record<string, any>;

const GENEROUS = {
  keyQps: 100_000,
  workspaceConcurrency: 100_000,
  addressPerMinute: 100_000,
  failureThreshold: 100_000,
};
const SMALL_BOUND = 1_500;
const CHARGING = MCP_TOOLS.filter((t) => t.charging).map((t) => t.name);
const OPERATION = Object.fromEntries(MCP_TOOLS.map((t) => [t.name, t.operationId])) as Record<
  string,
  keyof typeof responseValidators
>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Each tool's outputSchema (D77), compiled by a JSON Schema 2020-12 validator as a client would. */
const ajv = new Ajv2020({ allErrors: false, strict: false });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
const OUTPUT = Object.fromEntries(MCP_TOOLS.map((t) => [t.name, ajv.compile(t.outputSchema)]));

/** Checks a tool result's structuredContent (error results included) against the tool's outputSchema. */
function checkOutput(name: string, structured: Json | undefined, label: string): void {
  expect(structured, `${label}: structuredContent`).toBeDefined();
  const validate = OUTPUT[name]!;
  expect(
    validate(structured),
    `${label}: outputSchema of ${name}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(structured).slice(0, 600)}`,
  ).toBe(true);
}

/** Every charging tool with bodies that answer many rows; batch_stats with each format, inline and background. */
const CASES: Array<[string, Json]> = [
  ["search", { platform: "weibo", query: "露营", count: 20 }],
  ["search", { platforms: ["weibo", "x", "reddit"], query: "camping", count: 20 }],
  // wechat has search but not content_type=video: a rowless not_supported entry beside rows (D41).
  ["search", { platforms: ["weibo", "wechat", "zhihu"], query: "camping", content_type: "video", count: 20 }],
  ["trending", { platform: "weibo", count: 20 }],
  ["trending", { platforms: ["weibo", "zhihu", "douyin"], count: 20 }],
  ["detail", { platform: "x", id: "2122526005990306014" }],
  ["detail", { platform: "x", id: Array.from({ length: 12 }, (_, i) => `21225260059903060${10 + i}`) }],
  ["comments", { platform: "bilibili", url: "https://www.bilibili.com/video/BV1xK4y1a7Zq", limit: 50 }],
  ["user_profile", { platform: "weibo", id: Array.from({ length: 10 }, (_, i) => String(1749127100 + i)) }],
  ["user_posts", { platform: "x", id: "vercel", limit: 50 }],
  ...Object.entries(BODIES).flatMap(
    ([tool, b]): Array<[string, Json]> => [
      [tool, b.inline],
      [tool, b.background],
    ],
  ),
  ...(["csv", "ndjson"] as const).flatMap(
    (format): Array<[string, Json]> => [
      ["batch_stats", { ...BODIES.batch_stats.inline, format }],
      ["batch_stats", { ...BODIES.batch_stats.background, format }],
      ["batch_stats", { targets: redditPosts(8), include: ["metrics", "comments"], format }],
    ],
  ),
  ["batch_stats", { ...BODIES.batch_stats.inline, format: "json" }],
];

interface Gw {
  server: SdgwServer;
  key: string;
  accountId: string;
}

function gateway(waitMs: number, latencyMs: [number, number]): Gw {
  const server = createServer({
    dbPath: ":memory:",
    waitMs,
    pollAfterSeconds: 1,
    log: () => undefined,
    limits: GENEROUS,
    simulator: { knobs: { "*": { latencyMs } } },
  });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "charge walk", plan: "paid" });
  gw.accounts.grant(account.id, 100_000);
  return { server, key: gw.accounts.createKey({ accountId: account.id, name: "mcp" }).secret, accountId: account.id };
}

const balanceOf = (g: Gw) => g.server.gateway.ledger.view(g.accountId, null).balance;

/** One MCP answer as the walk saw it. */
interface Seen {
  args: Json;
  isError: boolean;
  structured: Json | undefined;
  /** The text content items, in order. */
  texts: string[];
  /** The resource_link content items (D81). */
  links: Array<{ uri: string; mimeType?: string }>;
  /** Bytes of the whole serialized tool result (D78). */
  bytes: number;
}

async function call(client: McpClient, name: string, args: Json): Promise<Seen> {
  const r = await client.callTool({ name, arguments: args });
  const content = r.content as Array<{ type: string; text?: string; uri?: string; mimeType?: string }>;
  return {
    args,
    isError: r.isError === true,
    structured: r.structuredContent as Json | undefined,
    texts: content.filter((c) => c.type === "text").map((c) => c.text ?? ""),
    links: content
      .filter((c) => c.type === "resource_link")
      .map((c) => ({ uri: c.uri!, ...(c.mimeType ? { mimeType: c.mimeType } : {}) })),
    bytes: Buffer.byteLength(JSON.stringify(r), "utf8"),
  };
}

/** Calls a tool, reads a running answer by its handle until it ended, then follows `more` to the end. */
async function walk(client: McpClient, name: string, args: Json): Promise<Seen[]> {
  const seen = [await call(client, name, args)];
  for (let i = 0; seen.at(-1)!.structured?.["status"] === "running"; i++) {
    if (i > 200) throw new Error(`${name} still running`);
    await sleep(20);
    seen.push(await call(client, name, { handle: seen.at(-1)!.structured!["handle"] }));
  }
  while (seen.at(-1)!.structured?.["more"])
    seen.push(await call(client, name, { handle: seen.at(-1)!.structured!["more"]["handle"] }));
  return seen;
}

/** The charge a finished answer states: `billing.cost` of a data answer, `billing.cost_credits` of a tool answer. */
function statedCharge(a: Json): number {
  const b = a["billing"] ?? {};
  return typeof b["cost"] === "number"
    ? b["cost"]
    : typeof b["cost_credits"] === "number"
      ? b["cost_credits"]
      : Number.NaN;
}

/** The rows of an answer: items, targets, or fanout entries' items with their platform. */
function rowsOf(a: Json): unknown[] {
  if (Array.isArray(a["items"])) return a["items"];
  if (Array.isArray(a["targets"])) return a["targets"];
  return Object.entries((a["fanout"] ?? {}) as Record<string, { items: unknown[] }>).flatMap(([platform, e]) =>
    e.items.map((i) => ({ platform, ...(i as object) })),
  );
}

/** RFC 4180 records of a CSV text (quoted fields may hold commas, quotes and newlines). */
function csvRecords(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      record.push(field);
      field = "";
    } else if (c === "\n") {
      record.push(field);
      records.push(record);
      record = [];
      field = "";
    } else field += c;
  }
  if (field || record.length) {
    record.push(field);
    records.push(record);
  }
  return records;
}

/** Checks one finished page against the contract of its tool's answer (without `more`, which is MCP's own). */
function checkPage(name: string, page: Json, label: string): void {
  const { more, ...answer } = page;
  if (more !== undefined) expect(validateMore(more).ok, `${label}: more ${JSON.stringify(more)}`).toBe(true);
  const v = (
    responseValidators[OPERATION[name]!] as (status: number, value: unknown) => { ok: boolean; errors?: unknown }
  )(page["status"] === "running" ? 202 : 200, answer);
  expect(
    v.ok,
    `${label}: ${JSON.stringify(v.ok ? "" : v.errors).slice(0, 1500)}\n${JSON.stringify(answer).slice(0, 800)}`,
  ).toBe(true);
  // The contract rule the issue names, checked on its own too: an ok entry has at least one item.
  for (const [platform, e] of Object.entries((answer["fanout"] ?? {}) as Record<string, Json>)) {
    if (e["status"] === "ok")
      expect(e["items"].length, `${label}: fanout.${platform} ok with 0 items`).toBeGreaterThan(0);
  }
  if (answer["status"] === "ok" && Array.isArray(answer["items"]))
    expect(answer["items"].length, `${label}: ok with 0 items`).toBeGreaterThan(0);
}

/** The quote's mode of a tool call (free: confirm false). */
async function quoteMode(g: Gw, name: string, args: Json): Promise<string> {
  const res = await g.server.app.inject({
    method: "POST",
    url: `/v1/tools/${name}`,
    headers: { "x-api-key": g.key, "content-type": "application/json" },
    payload: JSON.stringify({ ...args, confirm: false }),
  });
  return (JSON.parse(res.body) as Json)["quote"]["mode"];
}

/** What one walk showed, for the summary. */
interface WalkFigures {
  name: string;
  format: string;
  answers: number;
  rows: number;
  charged: number;
  fileBytes: number;
  handle: string | null;
  /** Whether an answer was cut (had `more`). */
  cut: boolean;
  /** The largest whole serialized tool result of the walk, in bytes. */
  maxBytes: number;
}

/**
 * Walks a call and checks the rule of the issue: the balance moved by exactly the charge the finished answers state
 * (each page restates the one charge of its result), the charge came with its data, every page is valid.
 */
async function checkedWalk(
  g: Gw,
  client: McpClient,
  name: string,
  args: Json,
  label: string,
  bound: number,
): Promise<WalkFigures> {
  const before = balanceOf(g);
  const seen = await walk(client, name, args);
  // D77: every structuredContent validates against the tool's outputSchema (running answers, more pages, files).
  for (const s of seen) checkOutput(name, s.structured, label);
  // D78: the whole serialized tool result holds the bound (a page of one row may be over a tiny test bound).
  for (const s of seen)
    if (rowsOf(s.structured!).length > 1) expect(s.bytes, `${label}: whole tool result`).toBeLessThanOrEqual(bound);
  const charged = before - balanceOf(g);
  for (const [i, s] of seen.entries()) expect(s.isError, `${label} answer ${i}: ${s.texts[0]}`).toBe(false);
  // Every MCP answer is JSON with its text copy; nothing arrives as a bare file or as the old "without JSON".
  for (const s of seen) {
    expect(s.structured, `${label}: structuredContent`).toBeDefined();
    expect(JSON.parse(s.texts.at(-1)!)).toEqual(s.structured);
    checkPage(name, s.structured!, label);
  }
  const finished = seen.filter((s) => s.structured!["status"] !== "running");
  expect(finished.length, `${label}: a finished answer`).toBeGreaterThan(0);
  const stated = new Set(finished.map((s) => statedCharge(s.structured!)));
  expect(stated.size, `${label}: every page states the one charge of its result`).toBe(1);
  expect(charged, `${label}: balance before - after equals the charge stated`).toBe([...stated][0]);

  const rows = finished.flatMap((s) => rowsOf(s.structured!));
  const first = finished[0]!.structured!;
  if (charged > 0 && first["status"] === "ok")
    expect(rows.length, `${label}: a charge comes with rows`).toBeGreaterThan(0);

  // csv / ndjson: the first text content of every finished page is that file, holding the page's rows. Except
  // (D55) an inline run that outlasted the wait: it was asked as json (to get the answer with its charge) and is
  // stored so; its pages carry the rows as JSON, and GET /v1/results/{handle}?format=csv gives the file.
  let format = args["confirm"] === false ? "json" : ((args["format"] as string | undefined) ?? "json");
  if (
    format !== "json" &&
    seen[0]!.structured!["status"] === "running" &&
    (await quoteMode(g, name, args)) === "inline"
  )
    format = "json";
  let fileBytes = 0;
  for (const s of finished) {
    const page = s.structured!;
    if (format === "json") {
      expect(s.texts, `${label}: one JSON text`).toHaveLength(1);
      continue;
    }
    expect(page["applied_params"]["format"], `${label}: the format applied to this answer`).toBe(format);
    expect(s.texts, `${label}: the file, then the JSON`).toHaveLength(2);
    const file = s.texts[0]!;
    fileBytes += Buffer.byteLength(file);
    const items = page["items"] as Array<{ id: string; kind: string }>;
    if (format === "ndjson") {
      expect(
        file
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l)),
      ).toEqual(items);
    } else {
      const [header, ...records] = csvRecords(file);
      expect(records, `${label}: one csv record per row`).toHaveLength(items.length);
      const id = header!.indexOf("id");
      expect(records.map((r) => r[id])).toEqual(items.map((i) => i.id));
    }
  }

  // The result is stored under a handle (a 202, or an inline answer kept for more): the rows read are the whole
  // result over HTTP, and its file over HTTP is the pages' files joined (ndjson) or holds the same rows (csv).
  const withHandle = seen.find((s) => typeof s.structured!["handle"] === "string" || s.structured!["more"]);
  const handle = withHandle
    ? String(withHandle.structured!["handle"] ?? withHandle.structured!["more"]["handle"]).split(".")[0]!
    : null;
  if (handle) {
    const whole = await g.server.app.inject({
      method: "GET",
      url: `/v1/results/${handle}?format=json`,
      headers: { "x-api-key": g.key },
    });
    expect(whole.statusCode).toBe(200);
    const wholeJson = JSON.parse(whole.body) as Json;
    expect(rows, `${label}: rows read over MCP equal the whole result over HTTP`).toEqual(rowsOf(wholeJson));
    expect(statedCharge(wholeJson)).toBe(charged);
    if (format === "ndjson") {
      const file = await g.server.app.inject({
        method: "GET",
        url: `/v1/results/${handle}?format=ndjson`,
        headers: { "x-api-key": g.key },
      });
      expect(finished.map((s) => s.texts[0]).join("")).toBe(file.body);
    }
    if (format === "csv") {
      const file = await g.server.app.inject({
        method: "GET",
        url: `/v1/results/${handle}?format=csv`,
        headers: { "x-api-key": g.key },
      });
      expect(csvRecords(file.body).length - 1).toBe(rows.length);
    }
  } else if (format !== "json") {
    expect(finished).toHaveLength(1);
    expect(finished[0]!.texts[0]).toBe(format === "csv" ? toCsv(first) : toNdjson(first));
  }
  // D81: a finished answer with a handle links its whole result, which resources/read reads (free).
  if (handle) {
    const page = finished.find((s) => s.links.length > 0);
    expect(page, `${label}: a resource link`).toBeDefined();
    const links = page!.links;
    expect(links[0]).toEqual({ uri: `sdgw://results/${handle}`, mimeType: "application/json" });
    const read = await client.readResource({ uri: links[0]!.uri });
    expect(rowsOf(JSON.parse((read.contents[0] as { text: string }).text) as Json)).toEqual(rows);
    if (format !== "json") {
      expect(links[1]).toEqual({
        uri: `sdgw://results/${handle}?format=${format}`,
        mimeType: format === "csv" ? "text/csv" : "application/x-ndjson",
      });
      const file = await client.readResource({ uri: links[1]!.uri });
      const http = await g.server.app.inject({
        method: "GET",
        url: `/v1/results/${handle}?format=${format}`,
        headers: { "x-api-key": g.key },
      });
      expect((file.contents[0] as { text: string }).text).toBe(http.body);
    }
  }
  expect(balanceOf(g), `${label}: reading on charged nothing`).toBe(before - charged);
  return {
    name,
    format,
    answers: seen.length,
    rows: rows.length,
    charged,
    fileBytes,
    handle,
    cut: seen.some((s) => s.structured!["more"]),
    maxBytes: Math.max(...seen.map((s) => s.bytes)),
  };
}

async function httpClient(base: string, path: string, key: string): Promise<McpClient> {
  const client = new Client({ name: "charge-walk", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(path, base), { requestInit: { headers: { "x-api-key": key } } }),
  );
  return client;
}

const label = (name: string, args: Json) => `${name} ${JSON.stringify(args).slice(0, 70)}`;

describe.each([
  {
    title: "answers inline (waitMs 2 s), small bound: every result cut and read on through more",
    waitMs: 2000,
    latencyMs: [1, 2] as [number, number],
    path: "/small/mcp",
  },
  {
    title: "answers inline (waitMs 2 s), the real 60 KB bound at /mcp",
    waitMs: 2000,
    latencyMs: [1, 2] as [number, number],
    path: "/mcp",
  },
  {
    title: "every call answers 202 (waitMs 1 ms), small bound: read by handle, then more",
    waitMs: 1,
    latencyMs: [15, 30] as [number, number],
    path: "/small/mcp",
  },
])("over Streamable HTTP, $title", ({ waitMs, latencyMs, path }) => {
  let g: Gw;
  let client: McpClient;
  const figures: WalkFigures[] = [];
  beforeAll(async () => {
    g = gateway(waitMs, latencyMs);
    await g.server.app.register(mcpRoutes, {
      prefix: "/small",
      target: g.server.app,
      gateway: g.server.gateway,
      maxAnswerBytes: SMALL_BOUND,
    });
    const base = await g.server.listen({ host: "127.0.0.1", port: 0 });
    client = await httpClient(base, path, g.key);
  });
  afterAll(async () => {
    console.log(
      `[${path}, waitMs ${waitMs}] ${figures.length} walks:\n ` +
        ` ${figures
          .map(
            (f) =>
              `${f.name} (${f.format}): ${f.answers} answers, ${f.rows} ` +
              `rows${f.fileBytes ? `, ${f.fileBytes} B of file` : ""}, ` +
              `charged ${f.charged}${f.handle ? `, ${f.handle}` : ""}, largest result ${f.maxBytes} ` +
              `B${f.cut ? " (cut)" : ""}`,
          )
          .join("\n  ")}`,
    );
    await client.close();
    await g.server.close({ drainMs: 3000 });
  });

  it.each(CASES.map(([name, args], i) => [`#${i} ${label(name, args)}`, name, args] as const))(
    "%s",
    async (l, name, args) => {
      const f = await checkedWalk(g, client, name, args, l, path === "/mcp" ? MCP_ANSWER_BYTES : SMALL_BOUND);
      figures.push(f);
      expect(f.charged).toBeGreaterThan(0);
    },
  );

  it("the walks covered the 13 charging tools and every format of batch_stats", () => {
    expect([...new Set(figures.map((f) => f.name))].sort()).toEqual([...CHARGING].sort());
    expect([...new Set(figures.filter((f) => f.name === "batch_stats").map((f) => f.format))].sort()).toEqual([
      "csv",
      "json",
      "ndjson",
    ]);
    if (path === "/small/mcp") {
      // The small bound cut a result of every tool: more was followed for all 13.
      expect([...new Set(figures.filter((f) => f.cut).map((f) => f.name))].sort()).toEqual([...CHARGING].sort());
    }
  });

  it("error answers of every tool (max_cost_credits 0) never move the balance", async () => {
    for (const [name, args] of CASES) {
      const before = balanceOf(g);
      const r = await call(client, name, { ...args, max_cost_credits: 0 });
      expect(r.isError, label(name, args)).toBe(true);
      checkOutput(name, r.structured, label(name, args));
      expect(r.structured!["code"]).toBe("max_cost_exceeded");
      await sleep(waitMs === 1 ? 60 : 0);
      expect(balanceOf(g), label(name, args)).toBe(before);
    }
  });

  it("a handle is refused by another tool, a position past the end is refused, both uncharged; the right tool reads", async () => {
    const handles = figures.filter((f) => f.handle);
    expect(handles.length).toBeGreaterThan(0);
    for (const f of handles) {
      const other = CHARGING.find((t) => t !== f.name)!;
      const before = balanceOf(g);
      for (const h of [f.handle!, `${f.handle!}.1`]) {
        const r = await call(client, other, { handle: h });
        expect(r.isError, `${f.name}'s ${h} read by ${other}`).toBe(true);
        expect(r.structured!["code"]).toBe("invalid_params");
        expect(r.structured!["fix"]["param"]).toBe("handle");
        expect(r.structured!["message"]).toContain(f.name);
      }
      const total = f.rows;
      for (const h of [`${f.handle!}.${Math.max(total, 1)}`, `${f.handle!}.999999999`]) {
        const r = await call(client, f.name, { handle: h });
        expect(r.isError, `${h} of ${total} rows`).toBe(true);
        expect(r.structured!["code"]).toBe("invalid_params");
        expect(r.structured!["fix"]["param"]).toBe("handle");
      }
      const ok = await call(client, f.name, { handle: `${f.handle!}.0` });
      expect(ok.isError).toBe(false);
      expect(balanceOf(g)).toBe(before);
    }
  });
});

describe("batch_stats files over MCP: quotes, replays, and a server without the gateway at hand", () => {
  let g: Gw;
  let client: McpClient;
  beforeAll(async () => {
    g = gateway(2000, [1, 2]);
    client = await httpClient(await g.server.listen({ host: "127.0.0.1", port: 0 }), "/mcp", g.key);
  });
  afterAll(async () => {
    await client.close();
    await g.server.close({ drainMs: 3000 });
  });

  it("confirm: false with csv answers the quote as JSON, free", async () => {
    const before = balanceOf(g);
    const r = await call(client, "batch_stats", { ...BODIES.batch_stats.background, format: "csv", confirm: false });
    expect(r.isError).toBe(false);
    expect(r.structured!["quote"]["quote_credits"]).toBeGreaterThan(0);
    checkPage("batch_stats", r.structured!, "quote");
    expect(balanceOf(g)).toBe(before);
  });

  it("a retry under the same idempotency_key gives the rows again, charged once, in each format", async () => {
    for (const [i, body] of [BODIES.batch_stats.inline, BODIES.batch_stats.background].entries()) {
      for (const format of ["json", "csv", "ndjson"]) {
        const args = { ...body, format, idempotency_key: `walk-retry-${i}-${format}` };
        const before = balanceOf(g);
        const first = await walk(client, "batch_stats", args);
        const charged = before - balanceOf(g);
        expect(charged).toBe(statedCharge(first.at(-1)!.structured!));
        expect(charged).toBeGreaterThan(0);
        const again = await call(client, "batch_stats", args);
        expect(again.isError).toBe(false);
        // The replay carries the data: the JSON answer, or (a finished background run asked as a file) the file.
        if (again.structured) expect((again.structured["items"] as unknown[]).length).toBeGreaterThan(0);
        else expect(again.texts[0]!.trim().split("\n").length).toBeGreaterThan(format === "csv" ? 1 : 0);
        expect(balanceOf(g)).toBe(before - charged);
      }
    }
  });

  it("without the gateway at hand, a tool answer's own tool still refuses another tool's handle, and nothing is cut away", async () => {
    const [c, s] = InMemoryTransport.createLinkedPair();
    await createMcpServer({ app: g.server.app, apiKey: g.key, maxAnswerBytes: SMALL_BOUND }).connect(s);
    const bare = new Client({ name: "bare", version: "1.0.0" });
    await bare.connect(c);
    const run = await walk(bare, "viral_finder", BODIES.viral_finder.background);
    const handle = run[0]!.structured!["handle"] as string;
    const before = balanceOf(g);
    const wrong = await call(bare, "find_creators", { handle });
    expect(wrong.isError).toBe(true);
    expect(wrong.structured!["fix"]["param"]).toBe("handle");
    // An inline answer over the bound cannot be kept here: it comes whole, with a warning, never cut away.
    const whole = await call(bare, "search", { platforms: ["weibo", "x", "reddit"], query: "camping", count: 20 });
    expect(rowsOf(whole.structured!)).toHaveLength(60);
    expect(whole.structured!["more"]).toBeUndefined();
    expect((whole.structured!["warnings"] as string[]).join(" ")).toMatch(/nothing could be stored/);
    expect(balanceOf(g)).toBe(before - 3);
    await bare.close();
  });
});
