/**
 * The mock and the reference server, side by side: the same few hundred generated requests (fast-check: every
 * operation, valid and with one thing wrong) go to @sdgw/mock over HTTP and to @sdgw/server, set up alike (one
 * account, the same keys and credits, the same Retry-After), and each pair of answers must be the same: status, media
 * type and the whole body, word for word, apart from ids and timestamps. A call that goes on (202) is read by its
 * handle to its end on both sides, and the ends must be the same too. A second pair, where every charged call goes
 * on past its answer, compares the 202 answers of every charging operation and their ends.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "@sdgw/server";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { MCP_TOOL_DEFINITIONS } from "@sdgw/engine/mcp";
import { FIXTURES, ROUTES } from "../../mock/src/generated/routes.ts";
import { SAMPLES, send as sendTo, type Req } from "../../mock/test/helpers.ts";
import { startMockHttp } from "./mock-http.ts";

/**
 * One clock for both sides, moved a second before each case: what an answer dates by the clock (an account_watch
 * reading is one per account and second) falls on the same second on both, however the machine schedules them.
 */
const clock = { t: Date.now() };
const now = () => clock.t;

/** A mock and a reference server set up alike, both on 127.0.0.1. */
interface Pair {
  mockUrl: string;
  serverUrl: string;
  /** A key with `read_data` and one without, on both sides. */
  key: string;
  noscope: string;
  close(): Promise<void>;
}

/**
 * Starts both sides alike: one account (the mock's: its getAccount fixture's name, its keys' name), a million
 * credits, no schedules, a 202 and a 409 saying "ask again after 1 s" (the mock's default), limits far above what
 * the test sends (a refusal by rate is not compared: the mock has scenarios for it). `background`: every charged
 * call goes on past its answer (the server waits 0 ms on platforms that take 30 ms; the mock's `slow` matches every
 * call); otherwise every call ends inline on both.
 */
async function startPair(background: boolean): Promise<Pair> {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-differential-"));
  const limits = {
    keyQps: 100_000,
    workspaceConcurrency: 100_000,
    addressPerMinute: 100_000,
    failureThreshold: 100_000,
  };
  const server = createServer({
    dbPath: join(dir, "sdgw.sqlite"),
    now,
    log: () => undefined,
    simulator: background ? { knobs: { "*": { latencyMs: 30 } } } : {},
    limits,
    pollAfterSeconds: 1,
    inProgressRetrySeconds: 1,
    ...(background ? { waitMs: 0 } : {}),
  });
  const { accounts } = server.gateway;
  const paid = accounts.createAccount({ name: ACCOUNT, plan: "paid" }).account;
  accounts.grant(paid.id, 1_000_000);
  const key = accounts.createKey({ accountId: paid.id, name: "mock key" }).secret;
  const noscope = accounts.createKey({ accountId: paid.id, name: "mock key", permissions: [] }).secret;
  const serverUrl = await server.listen({ host: "127.0.0.1", port: 0 });
  const mock = await startMockHttp({
    balance: 1_000_000,
    now,
    schedules: [],
    polls: 0,
    slow: () => background,
    keys: { [key]: { permissions: ["read_data"] }, [noscope]: { permissions: [] } },
  });
  const close = async () => {
    await mock.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { mockUrl: mock.baseUrl, serverUrl, key, noscope, close };
}

const ACCOUNT = (FIXTURES[ROUTES.getAccount.defaultFixture!] as { account: { name: string } }).account.name;
const inline = await startPair(false);
const background = await startPair(true);
const KEY = inline.key;
const NOSCOPE = inline.noscope;
afterAll(async () => {
  await inline.close();
  await background.close();
});

/** What a request looks like after generation: the sample's request with one change (or none). */
interface Case {
  label: string;
  req: Req;
}

const BAD_VALUES: unknown[] = ["", -1, 0, 1.5, 10 ** 9, "x".repeat(600), null, true, [], {}, "all", ["x", "x"]];

/** Samples the test can send as they are (a result handle and a schedule id that neither side ever made). */
const BASES = SAMPLES.map((s) =>
  s.op === "getResult"
    ? { ...s, req: { ...s.req, path: "/v1/results/h_neverissued1" } }
    : s.op === "deleteSchedule"
      ? { ...s, req: { ...s.req, path: "/v1/schedules/sch_neverissued1" } }
      : s,
);

function mutated(base: (typeof BASES)[number], kind: number, pick: number, value: unknown): Case {
  const req: Req = structuredClone(base.req);
  const label = `${base.label}`;
  const get = (req.method ?? "GET") === "GET";
  if (get) req.query ??= {};
  const params = get ? req.query! : ((req.body as Record<string, unknown> | undefined) ?? {});
  const names = Object.keys(params);
  const name = names.length > 0 ? names[pick % names.length]! : "query";
  const set = (k: string, v: unknown) => {
    if ((req.method ?? "GET") === "GET")
      (req.query as Record<string, string>)[k] = typeof v === "string" ? v : JSON.stringify(v);
    else (params as Record<string, unknown>)[k] = v;
  };
  switch (kind) {
    case 0:
      return { label: `${label} as it is`, req };
    case 1:
      if ((req.method ?? "GET") === "GET") delete (req.query as Record<string, unknown>)[name];
      else delete (params as Record<string, unknown>)[name];
      return { label: `${label} without ${name}`, req };
    case 2:
      set(name, value);
      return { label: `${label} with ${name}=${JSON.stringify(value)?.slice(0, 40)}`, req };
    case 3:
      set("bogus", 1);
      return { label: `${label} with an unknown parameter`, req };
    case 4:
      return { label: `${label} without a key`, req: { ...req, key: null } };
    case 5:
      return { label: `${label} with a wrong key`, req: { ...req, key: "sdgw_not_a_key_0000" } };
    case 6:
      return { label: `${label} with a key without read_data`, req: { ...req, key: NOSCOPE } };
    case 7:
      if ((req.method ?? "GET") === "GET")
        return {
          label: `${label} with a URL of 9,000 characters`,
          req: { ...req, query: { ...req.query, query: "q".repeat(9000) } },
        };
      return {
        label: `${label} with a BOM before the JSON`,
        req: { ...req, raw: `\uFEFF${JSON.stringify(req.body ?? {})}` },
      };
    default:
      return { label: `${label} with a body that is not JSON`, req: { ...req, method: "POST", raw: "{" } };
  }
}

const cases = fc
  .record({
    base: fc.constantFrom(...BASES),
    kind: fc.integer({ min: 0, max: 8 }),
    pick: fc.nat(),
    value: fc.constantFrom(...BAD_VALUES),
  })
  .map(({ base, kind, pick, value }) => mutated(base, kind, pick, value));

let sequence = 0;

/** An answer as compared: its status, media type and body (JSON, or the length of any other text). */
interface Answer {
  status: number;
  body: unknown;
  type: string;
}

/** Reads a 202's handle (a few ms apart) until the run has ended; any other answer is its own end. */
async function settled(baseUrl: string, a: Answer, key: string | null): Promise<Answer> {
  let last = a;
  for (let i = 0; i < 400 && last.status === 202; i++) {
    await new Promise((r) => setTimeout(r, 5));
    const handle = String((last.body as { handle?: unknown }).handle);
    last = await send(baseUrl, { path: `/v1/results/${handle}`, key }, "");
  }
  return last;
}

/** One request to one side (its key, default the inline pair's, and `idem` as its Idempotency-Key when given). */
async function send(baseUrl: string, req: Req, idem: string): Promise<Answer> {
  const headers = { ...(idem ? { "Idempotency-Key": idem } : {}), ...req.headers };
  const got = await sendTo({ ...req, key: req.key === undefined ? KEY : req.key, headers }, baseUrl);
  const type = (got.headers.get("content-type") ?? "").split(";")[0]!;
  return {
    status: got.status,
    type,
    body: type === "application/json" && got.text ? JSON.parse(got.text) : got.text.length,
  };
}

/** Ids and moments, which differ by nature: request ids, handles, schedule ids, timestamps. */
const VARYING = [
  [/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b/g, "<time>"],
  [/\bh_[A-Za-z0-9_-]+/g, "<handle>"],
  [/\bsch_[A-Za-z0-9_-]+/g, "<schedule>"],
  [/\breq_[A-Za-z0-9_-]+/g, "<request>"],
  [/\b(acc|ws|key)_[A-Za-z0-9_-]+/g, "<$1 id>"],
] as const;

/** An answer with what varies by nature replaced: what the two sides must answer alike. */
function gist(a: Answer): unknown {
  const text = JSON.stringify({ http: a.status, type: a.type, body: a.body });
  return JSON.parse(VARYING.reduce<string>((t, [re, to]) => t.replace(re, to), text));
}

/** Where two JSON values differ: each path with both values (none when they are equal). */
function differencesOf(m: unknown, s: unknown, path = "$"): Array<{ path: string; mock: string; server: string }> {
  const bothObjects = typeof m === "object" && m !== null && typeof s === "object" && s !== null;
  if (bothObjects && Array.isArray(m) === Array.isArray(s)) {
    const names = [...new Set([...Object.keys(m), ...Object.keys(s)])];
    const inside = names.flatMap((k) =>
      differencesOf((m as Record<string, unknown>)[k], (s as Record<string, unknown>)[k], `${path}.${k}`),
    );
    const order = JSON.stringify(Object.keys(m)) === JSON.stringify(Object.keys(s));
    if (inside.length > 0 || order) return inside;
    return [{ path: `${path} (order of fields)`, mock: Object.keys(m).join(","), server: Object.keys(s).join(",") }];
  }
  if (JSON.stringify(m) === JSON.stringify(s)) return [];
  return [{ path, mock: String(JSON.stringify(m)).slice(0, 300), server: String(JSON.stringify(s)).slice(0, 300) }];
}

/** What one property found: requests compared, runs read to their end, operations seen, the differences. */
interface Tally {
  compared: number;
  readToEnd: number;
  seen: Set<string>;
  differences: string[];
}

/**
 * Sends each generated case to both sides of `pair` and compares the answers (`gist`); a run that goes on (202) is
 * read by its handle on each side until it ends, and the ends must agree too.
 */
async function sendToBoth(pair: Pair, arbitrary: fc.Arbitrary<Case>, runs: { numRuns: number; seed: number }) {
  const tally: Tally = { compared: 0, readToEnd: 0, seen: new Set(), differences: [] };
  const compare = (label: string, m: Answer, s: Answer) => {
    const found = differencesOf(gist(m), gist(s)).slice(0, 8);
    const lines = found.map((d) => `  at ${d.path}\n    mock:   ${d.mock}\n    server: ${d.server}`);
    if (found.length > 0) tally.differences.push([label, ...lines].join("\n"));
  };
  await fc.assert(
    fc.asyncProperty(arbitrary, async (c) => {
      const idem = `diff-${++sequence}`;
      clock.t += 1000;
      const [m, s] = await Promise.all([send(pair.mockUrl, c.req, idem), send(pair.serverUrl, c.req, idem)]);
      tally.compared++;
      tally.seen.add(c.label.split(" ")[0]!);
      compare(c.label, m, s);
      if (m.status === 202 || s.status === 202) {
        const key = c.req.key === undefined ? pair.key : c.req.key;
        const ended = await Promise.all([settled(pair.mockUrl, m, key), settled(pair.serverUrl, s, key)]);
        tally.readToEnd++;
        compare(`${c.label}, read to its end`, ...ended);
      }
    }),
    runs,
  );
  return tally;
}

describe("@sdgw/mock and @sdgw/server answer alike (differential)", () => {
  it("gives the same answers to the same generated requests, apart from ids and timestamps", {
    timeout: 240_000,
  }, async () => {
    const t = await sendToBoth(inline, cases, { numRuns: 300, seed: 20261124 });
    console.log(
      `differential: ${t.compared} requests to each side (${t.readToEnd} runs read to their end), ${t.seen.size} ` +
        `operations, ${t.differences.length} differences in whole answers`,
    );
    expect(t.differences, t.differences.slice(0, 30).join("\n")).toEqual([]);
  });

  it("gives the same 202 answers and the same ends to calls that go on past their answer", {
    timeout: 240_000,
  }, async () => {
    const charged = BASES.filter((b) => b.req.method === "POST" || b.op === "search").filter(
      (b) => !["findOperation", "deleteSchedule", "getResult"].includes(b.op),
    );
    const asTheyAre = fc
      .constantFrom(...charged)
      .map((b) => ({ label: `${b.label} as it is`, req: { ...structuredClone(b.req), key: background.key } }));
    const t = await sendToBoth(background, asTheyAre, { numRuns: 60, seed: 20261125 });
    console.log(
      `differential (background): ${t.compared} calls to each side, ${t.readToEnd} read to their end, ` +
        `${t.seen.size} operations, ${t.differences.length} differences`,
    );
    expect(t.readToEnd).toBeGreaterThan(30);
    expect(t.differences, t.differences.slice(0, 30).join("\n")).toEqual([]);
  });
});

/** One JSON-RPC request to `{baseUrl}/mcp` as `key`; its answer message. */
async function rpc(baseUrl: string, key: string, method: string, params: Record<string, unknown>): Promise<any> {
  const res = await fetch(`${baseUrl}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "x-api-key": key,
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return { status: res.status, ...((await res.json()) as Record<string, unknown>) };
}

/** What two MCP answers must give alike: the HTTP status, the error's code, the result's structured content. */
function mcpGist(a: any): Answer {
  return {
    status: a.status,
    type: "mcp",
    body: a.error
      ? { error: a.error.code }
      : {
          isError: a.result.isError ?? false,
          structuredContent: a.result.structuredContent ?? null,
          task: a.result.task?.status ?? null,
        },
  };
}

/** The tools and their arguments: each tool's operation's sample request (its body; none for the GET ones). */
const TOOL_CALLS = MCP_TOOL_DEFINITIONS.flatMap((t) => {
  const sample = BASES.find((b) => b.op === t.operationId);
  if (!sample) return [];
  const args = t.method === "POST" ? ((sample.req.body as Record<string, unknown> | undefined) ?? {}) : {};
  return [{ tool: t, args }];
});

describe("@sdgw/mock and @sdgw/server answer alike over MCP (differential)", () => {
  /** Calls every tool on both sides' /mcp and compares; a running answer is read by its handle to its end. */
  async function callBoth(pair: Pair, asTask: boolean) {
    const differences: string[] = [];
    const compare = (label: string, m: Answer, s: Answer) => {
      const found = differencesOf(gist(m), gist(s)).slice(0, 8);
      const lines = found.map((d) => `  at ${d.path}\n    mock:   ${d.mock}\n    server: ${d.server}`);
      if (found.length > 0) differences.push([label, ...lines].join("\n"));
    };
    let readToEnd = 0;
    for (const { tool, args } of TOOL_CALLS) {
      clock.t += 1000;
      const withKey = tool.charging ? { ...args, idempotency_key: `mcp-diff-${++sequence}` } : args;
      const params = { name: tool.name, arguments: withKey, ...(asTask && tool.charging ? { task: {} } : {}) };
      const [m, s] = await Promise.all([
        rpc(pair.mockUrl, pair.key, "tools/call", params),
        rpc(pair.serverUrl, pair.key, "tools/call", params),
      ]);
      compare(`${tool.name}${asTask ? " as a task" : ""}`, mcpGist(m), mcpGist(s));
      // The end of a run: tasks/result of its task, or its handle read until it is no longer running.
      const end = async (baseUrl: string, first: any) => {
        if (first.result?.task) return rpc(baseUrl, pair.key, "tasks/result", { taskId: first.result.task.taskId });
        let last = first;
        for (let i = 0; i < 400 && last.result?.structuredContent?.status === "running"; i++) {
          await new Promise((r) => setTimeout(r, 5));
          const handle = String(last.result.structuredContent.handle);
          last = await rpc(baseUrl, pair.key, "tools/call", { name: tool.name, arguments: { handle } });
        }
        return last;
      };
      if (m.result?.task || s.result?.task || m.result?.structuredContent?.status === "running") {
        readToEnd++;
        const [me, se] = await Promise.all([end(pair.mockUrl, m), end(pair.serverUrl, s)]);
        compare(`${tool.name}${asTask ? " as a task" : ""}, to its end`, mcpGist(me), mcpGist(se));
      }
    }
    return { differences, readToEnd };
  }

  it("gives the same structured results to the same tool calls, apart from ids and timestamps", {
    timeout: 240_000,
  }, async () => {
    expect(TOOL_CALLS.length).toBe(MCP_TOOL_DEFINITIONS.length);
    const t = await callBoth(inline, false);
    expect(t.differences, t.differences.slice(0, 30).join("\n")).toEqual([]);
  });

  it("gives the same tasks to calls that would end inline: working at once on both, then the same ends (D174)", {
    timeout: 240_000,
  }, async () => {
    const t = await callBoth(inline, true);
    expect(t.readToEnd).toBeGreaterThan(5);
    expect(t.differences, t.differences.slice(0, 30).join("\n")).toEqual([]);
  });

  it("gives the same running answers, tasks and ends to tool calls that go on past their answer", {
    timeout: 240_000,
  }, async () => {
    const plain = await callBoth(background, false);
    const tasks = await callBoth(background, true);
    expect(plain.readToEnd).toBeGreaterThan(5);
    expect(tasks.readToEnd).toBeGreaterThan(5);
    const all = [...plain.differences, ...tasks.differences];
    expect(all, all.slice(0, 30).join("\n")).toEqual([]);
  });
});
