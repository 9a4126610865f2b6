/**
 * Shared by the third-party client tests (issue 16 item 1): the reference server started as users start it
 * (`main.ts` as a child process on a free 127.0.0.1 port, a fresh database, its demo key), the MCP clients loaded
 * from node_modules (the v1 SDK `@modelcontextprotocol/sdk`, the v2 client `@modelcontextprotocol/client`), a
 * fetch that records what a client sent and got, and HTTP reads of the account's balance and of stored results.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { kill, MCP_BIN, ROOT, sameClockEnv, startServer, stopAll, type Started } from "../../processes.ts";
// Registers the resolve hook that drops the `source` condition inside node_modules (eventsource and
// eventsource-parser, dependencies of both SDK generations, export TypeScript under `source`), then loads v2.
import { sdk as v2 } from "../sdk-client.ts";

export { v2 };

/** The v1 SDK (`@modelcontextprotocol/sdk` 1.x), loaded after the hook above. */
export const v1 = {
  ...((await import(
    "@modelcontextprotocol/sdk/client/index.js"
  )) as typeof import("@modelcontextprotocol/sdk/client/index.js")),
  ...((await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js"
  )) as typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
  ...((await import(
    "@modelcontextprotocol/sdk/client/stdio.js"
  )) as typeof import("@modelcontextprotocol/sdk/client/stdio.js")),
  ...((await import("@modelcontextprotocol/sdk/types.js")) as typeof import("@modelcontextprotocol/sdk/types.js")),
};
/** The v2 client's stdio transport. */
export const v2Stdio = (await import(
  "@modelcontextprotocol/client/stdio"
)) as typeof import("@modelcontextprotocol/client/stdio");

export type Json = Record<string, any>;

/** The 13 tools that charge and take `handle` (D29), and the three free ones. */
export const CHARGING = [
  "search",
  "trending",
  "detail",
  "comments",
  "user_profile",
  "user_posts",
  "brand_buzz",
  "comment_insights",
  "account_watch",
  "find_creators",
  "creator_card",
  "batch_stats",
  "viral_finder",
];
export const FREE = ["find", "capabilities", "account"];

/** A started reference server with its demo key, and the folder of its database (removed by `stop`). */
export interface Gateway extends Started {
  key: string;
  db: string;
  dir: string;
  mcpUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts `main.ts` on a fresh database. The wait is long (`SDGW_WAIT_MS` 30 s) so charged calls answer inline, as
 * most do for users; a running answer is still followed where a test reads rows.
 */
export async function startGateway(): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-mcp-clients-"));
  const db = join(dir, "sdgw.sqlite");
  const started = await startServer(db, { SDGW_WAIT_MS: "30000", ...sameClockEnv() });
  if (!started.key) throw new Error(`no demo key in the banner: ${started.banner}`);
  return {
    ...started,
    key: started.key,
    db,
    dir,
    mcpUrl: `${started.url}/mcp`,
    async stop() {
      await kill(started.child, "SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The balance of the key's account, read over HTTP (`GET /v1/account`). */
export async function balance(g: Gateway, key = g.key): Promise<number> {
  const res = await fetch(`${g.url}/v1/account`, {
    headers: { "x-api-key": key },
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`GET /v1/account answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as Json)["billing"]["balance_credits"] as number;
}

/** A stored result read over HTTP (`GET /v1/results/{handle}`), as JSON or as the file of `format`. */
export async function resultOverHttp(
  g: Gateway,
  handle: string,
  format: "json" | "csv" | "ndjson" = "json",
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${g.url}/v1/results/${encodeURIComponent(handle)}?format=${format}`, {
    headers: { "x-api-key": g.key },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, text: await res.text() };
}

/** The rows of an answer: its `items`, its `targets`, or every fanout entry's `items` in entry order (D30). */
export function rowsOf(answer: Json): unknown[] {
  if (Array.isArray(answer["items"])) return answer["items"];
  if (Array.isArray(answer["targets"])) return answer["targets"];
  if (answer["fanout"] && typeof answer["fanout"] === "object")
    return Object.values(answer["fanout"] as Record<string, Json>).flatMap((e) =>
      Array.isArray(e["items"]) ? e["items"] : [],
    );
  return [];
}

/** One request a client sent through {@link recordingFetch}, with the answer it got. */
export interface Recorded {
  method: string;
  url: string;
  status: number;
  headers: Headers;
  /** The whole body as text: reading it to the end shows the server ended the answer (no stream left open). */
  body: string;
  /** Milliseconds from sending to the end of the body. */
  ms: number;
}

/**
 * A fetch for a client transport that records every exchange. The body is read to its end from a clone before the
 * client sees the answer, bounded at 5 s: an answer left open (an SSE stream) would show as a timeout.
 */
export function recordingFetch(): { fetch: typeof fetch; log: Recorded[] } {
  const log: Recorded[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const started = performance.now();
    const method = init?.method ?? (input instanceof Request ? input.method : "GET");
    const url = input instanceof Request ? input.url : String(input);
    const res = await fetch(input, init);
    const copy = res.clone();
    let timer: NodeJS.Timeout | undefined;
    const body = await Promise.race([
      copy.text(),
      new Promise<string>(
        (_, reject) =>
          (timer = setTimeout(() => reject(new Error(`${method} ${url}: the answer did not end within 5 s`)), 5000)),
      ),
    ]).finally(() => clearTimeout(timer));
    log.push({ method, url, status: res.status, headers: res.headers, body, ms: performance.now() - started });
    return res;
  };
  return { fetch: recording as typeof fetch, log };
}

/** Waits until `check` holds, polling every 20 ms, at most `ms`. */
export async function until(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** The command that starts the stdio server as the README says: node with the `source` condition on sdgw-mcp.ts. */
export function stdioCommand(env: Record<string, string>): {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
} {
  return {
    command: process.execPath,
    args: ["--conditions=source", "--no-warnings", MCP_BIN],
    // A bare environment (as an MCP host gives): PATH, the clock of this process (faketime in CI), and the server's.
    env: { PATH: process.env["PATH"] ?? "", ...sameClockEnv(), ...env },
    cwd: ROOT,
  };
}

/** The minimum both client generations share: what the side-by-side scenario calls. */
export interface AnyClient {
  listTools(params?: {
    cursor?: string;
  }): Promise<{ tools: Array<{ name: string; inputSchema: Json }>; nextCursor?: string }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<Json>;
  close(): Promise<void>;
}

/** What a tool call answered, for assertions: isError, structuredContent, the texts. */
export function parts(r: Json): { isError: boolean; structured: Json; texts: string[] } {
  return {
    isError: r["isError"] === true,
    structured: (r["structuredContent"] ?? {}) as Json,
    texts: ((r["content"] ?? []) as Array<{ type: string; text?: string }>).map((c) => c.text ?? ""),
  };
}

/**
 * Calls a charging tool; while the answer is running, waits `retry_after_seconds` (at most 1 s here) and reads it
 * by its handle. Then follows `more` to the end. Returns every answer (the first is the call, the rest are reads).
 */
export async function callAndReadOn(
  client: AnyClient,
  name: string,
  args: Record<string, unknown>,
): Promise<Array<ReturnType<typeof parts>>> {
  const seen = [parts(await client.callTool({ name, arguments: args }))];
  const deadline = Date.now() + 60_000;
  while (!seen.at(-1)!.isError && seen.at(-1)!.structured["status"] === "running") {
    if (Date.now() > deadline) throw new Error(`${name}: still running after 60 s`);
    await new Promise((r) => setTimeout(r, 1000));
    seen.push(parts(await client.callTool({ name, arguments: { handle: seen.at(-1)!.structured["handle"] } })));
  }
  while (!seen.at(-1)!.isError && seen.at(-1)!.structured["more"]) {
    if (seen.length > 200) throw new Error(`${name}: more than 200 pages`);
    seen.push(parts(await client.callTool({ name, arguments: { handle: seen.at(-1)!.structured["more"]["handle"] } })));
  }
  return seen;
}

/**
 * One reference server for the tests of a file: started before them (`set` receives it), stopped after them with
 * every client left in `open` and every child process the file started.
 */
export function gatewayPerFile(set: (g: Gateway) => void, open: Array<{ close(): Promise<unknown> }> = []): void {
  let started: Gateway | undefined;
  beforeAll(async () => {
    started = await startGateway();
    set(started);
  }, 120_000);
  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await started?.stop();
    stopAll();
  });
}
