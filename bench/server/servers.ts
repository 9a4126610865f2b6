/**
 * The servers of bench/server, each in its own process (spawned by run.ts with an IPC channel), on 127.0.0.1 at an
 * ephemeral port:
 *   node --conditions=source bench/server/servers.ts sdgw <dir>    the reference server (file database in <dir>,
 *                                                                   simulator at zero latency, limits and the answer
 *                                                                   log's quota out of the way,
 *                                                                   the rest of its settings from SDGW_* as `pnpm start`)
 *   node --conditions=source bench/server/servers.ts object <dir>  a bare Fastify route answering, for `?count=N`, the
 *                                                                   answer in <dir>/answer-N.json: parsed once,
 *                                                                   serialized by Fastify on every request (a route
 *                                                                   that returns an answer object)
 *   node --conditions=source bench/server/servers.ts bytes <dir>   the same route sending those files' bytes as they
 *                                                                   are (what the reference server sends: prepared bytes)
 *   node --conditions=source bench/server/servers.ts data <dir>    a bare Fastify route that asks the same simulator
 *                                                                   for each request's own query and count and answers
 *                                                                   its items as an object (what producing the data
 *                                                                   costs, without anything of the gateway)
 *   node --conditions=source bench/server/servers.ts floor <dir>   the embedded floor (issue 36): the `data` route plus
 *                                                                   one durable SQLite write per request, a ledger row
 *                                                                   committed on its own (a file database in <dir>,
 *                                                                   WAL and synchronous=NORMAL as the reference server's)
 *   node --conditions=source bench/server/servers.ts pg <url> <n>  the reference server on PostgreSQL (D108) at
 *                                                                   <url>, settings as `sdgw`'s; with n > 0 it makes
 *                                                                   the bench's n accounts (a huge balance each) with a
 *                                                                   key each and sends the keys; with n = 0 (the other
 *                                                                   instances on the same database) it makes nothing
 * Each sends `{ port, … }` once listening and exits when run.ts goes away. `sdgw <dir>` is what `--base` starts of
 * another checkout: keep its arguments.
 */
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { configFromEnv } from "../../packages/server/src/config.ts";
import { createPgServer } from "../../packages/server/src/storage/postgres/server.ts";
import { createServer } from "../../packages/server/src/storage/sqlite/server.ts";

const [mode, arg, given] = process.argv.slice(2);
if (!process.send) throw new Error("servers.ts must be spawned with an IPC channel (by run.ts)");
process.on("disconnect", () => process.exit(0));

if (mode === "sdgw") {
  // The server's own settings from the environment (e.g. SDGW_ANSWER_LOG_CHUNKS=1), then the bench's: its database,
  // and limits out of the way.
  const env = configFromEnv();
  const server = createServer({
    ...env,
    dbPath: process.env["BENCH_DB"] === "memory" ? ":memory:" : join(arg!, "bench.sqlite"),
    log: () => undefined,
    limits: { ...env.limits, keyQps: 1e9, workspaceConcurrency: 1e6, failureThreshold: 1e9 },
    // A run sends about a million charged calls (over 1 GiB of kept answers): past the answer log's default quota
    // new calls would be refused (503 paused, D67) and measured as such. The bench measures charged calls.
    answerLogQuotaBytes: env.answerLogQuotaBytes ?? 64 * 1024 ** 3,
  });
  const { account } = server.gateway.accounts.createAccount({ name: "Bench" });
  server.gateway.accounts.grant(account.id, 1_000_000_000);
  const key = server.gateway.accounts.createKey({ accountId: account.id }).secret;
  const url = await server.listen({ port: 0 });
  process.send({ port: Number(new URL(url).port), key });
} else if (mode === "pg") {
  // As `sdgw`, on the PostgreSQL database at <url> that run.ts made (and drops); its other instances share it.
  const env = configFromEnv();
  const server = await createPgServer({
    ...env,
    databaseUrl: arg!,
    log: () => undefined,
    limits: { ...env.limits, keyQps: 1e9, workspaceConcurrency: 1e6, failureThreshold: 1e9 },
  });
  const keys: string[] = [];
  for (let i = 0; i < Number(given ?? 1); i++) {
    const { account } = await server.gateway.accounts.createAccount({ name: `Bench ${i + 1}` });
    await server.gateway.accounts.grant(account.id, 1_000_000_000);
    keys.push((await server.gateway.accounts.createKey({ accountId: account.id })).secret);
  }
  const url = await server.listen({ port: 0 });
  process.send({ port: Number(new URL(url).port), keys });
} else if (mode === "data" || mode === "floor") {
  const require = createRequire(new URL("../../packages/server/package.json", import.meta.url));
  const Fastify = require("fastify") as (options: { logger: boolean }) => {
    get(path: string, handler: (req: { query: Record<string, string> }) => Promise<unknown>): void;
    listen(options: { host: string; port: number }): Promise<string>;
    server: { address(): { port: number } | string | null };
  };
  const { Simulator } = await import("../../packages/engine/src/providers/simulator/index.ts");
  const provider = new Simulator().providers.xiaohongshu;
  const signal = new AbortController().signal;
  let n = 0;
  // floor: one ledger row per request, committed on its own before the answer, on the reference server's settings.
  let write: ((id: string, amount: number) => void) | null = null;
  if (mode === "floor") {
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(join(arg!, "floor.sqlite"));
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;");
    db.exec(
      "CREATE TABLE ledger (id INTEGER PRIMARY KEY, request_id TEXT NOT NULL, account_id TEXT NOT NULL, amount INTEGER NOT NULL, created_at INTEGER NOT NULL)",
    );
    const insert = db.prepare("INSERT INTO ledger (request_id, account_id, amount, created_at) VALUES (?, ?, ?, ?)");
    write = (id, amount) => void insert.run(id, "acc_floor", amount, Date.now());
  }
  const app = Fastify({ logger: false });
  app.get("/v1/search", async (req) => {
    const params = {
      query: req.query["query"],
      count: Number(req.query["count"] ?? 10),
      type: "content",
      sort: "relevance",
      time_range: "all",
    };
    const out = await provider.call({ platform: "xiaohongshu", operation: "search", params, signal });
    if (out.status !== "ok" && out.status !== "empty") throw new Error(`simulator: ${out.status}`);
    const requestId = `req_${++n}`;
    write?.(requestId, out.items.length);
    return {
      request_id: requestId,
      schema_version: "v1",
      status: out.status,
      platform: "xiaohongshu",
      items: out.items,
      ...(out.page ? { page: out.page } : {}),
    };
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  process.send({ port: typeof address === "object" && address ? address.port : 0 });
} else if (mode === "object" || mode === "bytes") {
  const require = createRequire(new URL("../../packages/server/package.json", import.meta.url));
  interface Reply {
    header(name: string, value: string): Reply;
    send(body: unknown): Reply;
  }
  interface App {
    get(path: string, handler: (req: { query: Record<string, string> }, reply: Reply) => Reply): void;
    listen(options: { host: string; port: number }): Promise<string>;
    server: { address(): { port: number } | string | null };
  }
  const Fastify = require("fastify") as (options: { logger: boolean }) => App;
  // count → the answer: an object (serialized by Fastify each time) or its bytes (sent as they are)
  const answers = new Map<string, unknown>();
  for (const f of readdirSync(arg!)) {
    const count = /^answer-(\d+)\.json$/.exec(f)?.[1];
    if (!count) continue;
    const bytes = readFileSync(join(arg!, f));
    answers.set(count, mode === "bytes" ? bytes : JSON.parse(bytes.toString("utf8")));
  }
  const app = Fastify({ logger: false });
  if (mode === "bytes")
    app.get("/v1/search", (req, reply) =>
      reply.header("content-type", "application/json; charset=utf-8").send(answers.get(req.query["count"]!)),
    );
  else app.get("/v1/search", (req, reply) => reply.send(answers.get(req.query["count"]!)));
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  process.send({ port: typeof address === "object" && address ? address.port : 0 });
} else throw new Error(`servers.ts: unknown mode ${mode} (sdgw, pg, object, bytes, data or floor)`);
