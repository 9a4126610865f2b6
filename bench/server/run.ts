/**
 * Server benchmark: `GET /v1/search` of the reference server (simulator at zero latency, file database, every step
 * of a charged call: validation, key lookup, idempotency claim, limits, hold, run, capture, stored answer) against
 * two bare Fastify routes that answer the same answer: `object` (the answer parsed once, serialized by Fastify on
 * every request, as any route returning an answer does) and `bytes` (the answer's bytes sent as they are, as the
 * reference server sends its prepared bytes); and a third, `data`, that asks the same simulator for each request's own
 * query and answers its items (the cost of producing the data alone, which the gateway pays too). With autocannon, in
 * one run, each server in its own process. Rounds
 * alternate the servers so that all see the same load of a shared machine, at each `count` (default 1 and 20).
 *
 * Default workload: varied charged calls, a new query and a new Idempotency-Key each (the simulator's memo never
 * answers, no request is a replay). Targets (issue 18): CPU per request ≤ 1.6× the bare route's on the same answer,
 * p99 ≤ 2× the bare route's; RSS growth is `pnpm test:soak`'s (soak.ts), printed here only as before/after.
 *
 *   npx -y -p node@24 -p pnpm@12 -- pnpm bench:server     flags: --quick (2 rounds of 2 s), --rounds N (default 3),
 *     --seconds N (a round's length, default 5), --connections N (default 32), --counts 1,20, --base DIR (also the
 *     reference server of another checkout at DIR, e.g. a `git worktree` of main, in the same rounds: a before/after
 *     comparison), --fixed (one fixed query: the simulator's memo answers all but the first), --replays N (the
 *     requests cycle over N Idempotency-Keys with their queries: once the warm-up has sent each, every request is
 *     a replay), --db postgres (also the reference server on PostgreSQL, D108, beside the embedded one in the same
 *     rounds: on a fresh database on 127.0.0.1:5432 (user postgres, no password) that the bench makes and drops;
 *     `--db sqlite`, the default, measures the embedded one only), --instances N (with --db postgres: N instances of
 *     it, each its own process, on that one database, default 1; a round's load is spread over them: N autocannon
 *     runs at once, the connections split among them; their requests, requests/s and CPU are summed, the p50 and
 *     p99 are the worst of the N), --accounts N (with --db postgres: N accounts with a key each on PostgreSQL, the
 *     requests taking the keys in turn, and the PostgreSQL floor on N accounts; default 1, one hot account)
 *
 * Prints one table per count (median and min–max over rounds), the per-round ratios, RSS and disk; writes it all as
 * JSON to bench/results/server.json (gitignored). CPU time per request is each server process's (all threads),
 * from /proc on Linux: on a shared machine the requests/s move with the load of others, the CPU a request costs much
 * less. With --db postgres: a row for the N instances, their ratios to the bare routes and to the embedded server
 * (`pg×N / ours`: CPU per request, p99, requests/s), and apart the CPU per request of PostgreSQL's backends on the
 * bench's database (from /proc too), which the servers' own figure leaves out.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const require = createRequire(new URL("../../packages/server/package.json", import.meta.url));
const autocannon = require("autocannon") as (options: unknown) => Promise<unknown>;

const { values: opt } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    seconds: { type: "string" },
    connections: { type: "string", default: "32" },
    counts: { type: "string", default: "1,20" },
    base: { type: "string" },
    fixed: { type: "boolean", default: false },
    replays: { type: "string", default: "0" },
    db: { type: "string", default: "sqlite" },
    instances: { type: "string" },
    accounts: { type: "string" },
  },
});
const whole = (name: string, v: string | undefined, fallback: number, min = 1) => {
  const n = v === undefined ? fallback : Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: a whole number ≥ ${min} (got ${v})`);
  return n;
};
const rounds = whole("rounds", opt.rounds, opt.quick ? 2 : 3);
const seconds = whole("seconds", opt.seconds, opt.quick ? 2 : 5);
const connections = whole("connections", opt.connections, 32);
const replays = whole("replays", opt.replays, 0, 0);
const counts = opt.counts.split(",").map((c) => whole("counts", c, 1));
if (opt.db !== "sqlite" && opt.db !== "postgres") throw new Error(`--db: sqlite or postgres (got ${opt.db})`);
const onPg = opt.db === "postgres";
if (!onPg && opt.instances !== undefined) throw new Error("--instances: only with --db postgres");
const instances = whole("instances", opt.instances, 1);
if (!onPg && opt.accounts !== undefined) throw new Error("--accounts: only with --db postgres");
const accounts = whole("accounts", opt.accounts, 1);
/** The connections of the PostgreSQL floor: the pools of the instances it stands beside (10 each, D108). */
const floorConnections = 10 * instances;
if (onPg && connections < instances)
  throw new Error(`--connections ${connections}: at least one per instance (--instances ${instances})`);
const baseAt = opt.base;
const fixed = opt.fixed;
const here = fileURLToPath(new URL(".", import.meta.url));

type Who = "object" | "bytes" | "data" | "floor" | "sdgw" | "base" | "pg" | "pgfloor";
const LABEL: Record<Who, string> = {
  object: "bare route, answer object serialized",
  bytes: "bare route, prepared bytes",
  data: "bare route + the simulator's data",
  floor: "floor: the simulator's data + one SQLite ledger write",
  pgfloor: `floor on PostgreSQL: UPDATE + INSERT a transaction, ${floorConnections} connections, ${accounts} account${accounts > 1 ? "s" : ""}`,
  sdgw: "@sdgw/server (simulator, 0 ms)",
  base: `@sdgw/server of ${baseAt}`,
  pg: `@sdgw/server on PostgreSQL ×${instances}${accounts > 1 ? `, ${accounts} accounts` : ""}`,
};
/** How the ratios' lines name a server. */
const SHORT: Partial<Record<Who, string>> = {
  sdgw: "ours",
  base: "base",
  pg: `pg×${instances}`,
  floor: "floor",
  pgfloor: "pg floor",
};
interface Server {
  child: ChildProcess;
  port: number;
  /** The keys the load sends in turn (one per account); none for the bare routes. */
  keys?: string[];
  /** The PostgreSQL floor: a loop of transactions in its own process, not an HTTP server. */
  pgFloor?: true;
}

/** Every server process started, killed at the end whatever happens. */
const children: ChildProcess[] = [];

function start(
  mode: "sdgw" | "pg" | "object" | "bytes" | "data" | "floor",
  args: string[],
  from = here,
): Promise<Server> {
  const child = fork(join(from, "servers.ts"), [mode, ...args], {
    execArgv: ["--conditions=source", "--no-warnings"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    // `sdgw` (also another checkout's, --base) sends one `key`; `pg` sends its accounts' `keys`.
    child.once("message", (m: { port: number; key?: string; keys?: string[] }) =>
      resolve({ child, port: m.port, ...(m.keys ? { keys: m.keys } : m.key ? { keys: [m.key] } : {}) }),
    );
    child.once("exit", (code) => reject(new Error(`${mode} server exited ${code}`)));
  });
}

/** The PostgreSQL floor (floor-pg.ts) on its own database at `url`, once its tables and connections are ready. */
function startPgFloor(url: string): Promise<Server> {
  const child = fork(join(here, "floor-pg.ts"), [url, String(accounts), String(floorConnections)], {
    execArgv: ["--no-warnings"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once("message", () => resolve({ child, port: 0, pgFloor: true }));
    child.once("exit", (code) => reject(new Error(`the PostgreSQL floor exited ${code}`)));
  });
}

/** One round of the PostgreSQL floor: its loop of transactions for `seconds`. */
function floorRound(s: Server): Promise<{ total: number; seconds: number; p50: number; p99: number }> {
  return new Promise((resolve, reject) => {
    s.child.once("message", resolve);
    s.child.once("exit", (code) => reject(new Error(`the PostgreSQL floor exited ${code}`)));
    s.child.send({ seconds });
  });
}

interface Round {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** CPU microseconds (user + system, every thread of the server's process) per request; null off Linux. */
  cpuUs: number | null;
  /** Requests answered in the round. */
  total: number;
  /** --db postgres: CPU microseconds per request of PostgreSQL's backends serving the bench's database (not in cpuUs). */
  dbCpuUs?: number | null;
}

/** CPU time of a process so far, in microseconds (utime + stime of /proc/<pid>/stat, at 100 ticks a second). */
function cpuOf(pid: number | undefined): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return null;
  }
}

/** The resident set size of a process in MiB (/proc/<pid>/status), null off Linux. */
function rssOf(pid: number | undefined): number | null {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8")
      .split("\n")
      .find((l) => l.startsWith("VmRSS:"));
    return line ? Math.round(Number(line.replace(/\D+/g, "")) / 1024) : null;
  } catch {
    return null;
  }
}

// Every request of the whole run is numbered (across rounds, counts and servers): its Idempotency-Key and its query
// are new (a key sent again would be a replay: no charge, no write; a query asked again is answered by the
// simulator's memo). --fixed: one query, new keys. --replays N: one of N keys in turn, each with its own query.
let sent = 0;
const QUERY_OF_FIXED = "%E9%9C%B2%E8%90%A5%E8%A3%85%E5%A4%87"; // 露营装备
function nextRequest(count: number): { n: number; path: string; idem: string } {
  const n = ++sent;
  const id = replays > 0 ? n % replays : n;
  const query = fixed ? QUERY_OF_FIXED : `bench+${process.pid}+${id}`;
  return {
    n,
    path: `/v1/search?platform=xiaohongshu&query=${query}&count=${count}`,
    idem: replays > 0 ? `bench-replay-${id}` : `bench-${process.pid}-${id}`,
  };
}

/** A minimal view of `pg`'s client: the bench's admin connection, on the `postgres` database. */
interface PgClient {
  connect(): Promise<void>;
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
  end(): Promise<void>;
}
const PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";
/** --db postgres: the admin connection and the bench's database (made at the start, dropped at the end). */
let admin: PgClient | null = null;
let dbName: string | null = null;
/** --db postgres: the floor's own database (its transactions counted apart from the reference server's). */
let floorDbName: string | null = null;

/** CPU time so far of each of PostgreSQL's backends connected to a database of the bench, by pid. */
async function backendsCpu(db: string | null): Promise<Map<number, number>> {
  const cpu = new Map<number, number>();
  if (!admin || !db) return cpu;
  const { rows } = await admin.query("SELECT pid FROM pg_stat_activity WHERE datname = $1", [db]);
  for (const row of rows) {
    const c = cpuOf(Number(row["pid"]));
    if (c !== null) cpu.set(Number(row["pid"]), c);
  }
  return cpu;
}

/**
 * One round on a server, or on the N instances of one (--db postgres): N autocannon runs at once, the connections
 * split among them, same duration; requests, requests/s and CPU summed, p50 and p99 the worst of the N.
 */
async function load(group: Server[], count: number, withDb = false): Promise<Round> {
  if (group[0]!.pgFloor) return loadFloor(group[0]!);
  const share = (i: number) => Math.floor(connections / group.length) + (i < connections % group.length ? 1 : 0);
  const dbBefore = withDb ? await backendsCpu(dbName) : null;
  const cpuBefore = group.map((s) => cpuOf(s.child.pid));
  const results = await Promise.all(
    group.map((s, i) =>
      autocannon({
        url: `http://127.0.0.1:${s.port}`,
        connections: share(i),
        duration: seconds,
        requests: [
          {
            method: "GET",
            setupRequest: (req: { path?: string; headers?: Record<string, string> }) => {
              const next = nextRequest(count);
              const key = s.keys ? s.keys[next.n % s.keys.length]! : "bare";
              return {
                ...req,
                path: next.path,
                headers: { ...req.headers, "x-api-key": key, "idempotency-key": next.idem },
              };
            },
          },
        ],
      } as never),
    ),
  );
  const cpuAfter = group.map((s) => cpuOf(s.child.pid));
  const dbAfter = withDb ? await backendsCpu(dbName) : null;
  const rs = results as unknown as Array<{
    requests: { average: number; total: number };
    latency: { p99: number; p50: number };
    non2xx: number;
  }>;
  const total = rs.reduce((a, r) => a + r.requests.total, 0);
  const cpu = cpuBefore.every((c) => c !== null) && cpuAfter.every((c) => c !== null);
  const cpuUs = cpu && total > 0 ? cpuAfter.reduce((a, c, i) => a! + c! - cpuBefore[i]!, 0)! / total : null;
  const round: Round = {
    rps: rs.reduce((a, r) => a + r.requests.average, 0),
    p50: Math.max(...rs.map((r) => r.latency.p50)),
    p99: Math.max(...rs.map((r) => r.latency.p99)),
    non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
    cpuUs,
    total,
  };
  if (dbBefore && dbAfter) {
    // a backend that appeared during the round counts whole; one that went away is lost (the pools keep theirs)
    let used = 0;
    for (const [pid, c] of dbAfter) used += c - (dbBefore.get(pid) ?? 0);
    round.dbCpuUs = dbAfter.size > 0 && total > 0 ? used / total : null;
  }
  return round;
}

/**
 * A round of the PostgreSQL floor: requests are its transactions; CPU per request is its own process's (the `pg`
 * client's loop), PostgreSQL's backends apart in `dbCpuUs`, as for the reference server on PostgreSQL.
 */
async function loadFloor(s: Server): Promise<Round> {
  const dbBefore = await backendsCpu(floorDbName);
  const cpuBefore = cpuOf(s.child.pid);
  const r = await floorRound(s);
  const cpuAfter = cpuOf(s.child.pid);
  const dbAfter = await backendsCpu(floorDbName);
  let used = 0;
  for (const [pid, c] of dbAfter) used += c - (dbBefore.get(pid) ?? 0);
  return {
    rps: r.total / r.seconds,
    p50: r.p50,
    p99: r.p99,
    non2xx: 0,
    cpuUs: cpuBefore !== null && cpuAfter !== null && r.total > 0 ? (cpuAfter - cpuBefore) / r.total : null,
    total: r.total,
    dbCpuUs: dbAfter.size > 0 && r.total > 0 ? used / r.total : null,
  };
}

/**
 * Transactions committed so far in a database of the bench (`pg_stat_database.xact_commit`), after the backends
 * have reported theirs: a backend reports its counts at most once a second while busy and, once idle, within
 * PostgreSQL's idle interval of 10 s, so the reading waits 11 s first.
 */
async function commitsOf(pg: string, floor: string): Promise<{ pg: number; pgfloor: number }> {
  await new Promise((r) => setTimeout(r, 11_000));
  await admin!.query("SELECT pg_stat_clear_snapshot()");
  const of = async (db: string) =>
    Number(
      (await admin!.query("SELECT xact_commit FROM pg_stat_database WHERE datname = $1", [db])).rows[0]!["xact_commit"],
    );
  return { pg: await of(pg), pgfloor: await of(floor) };
}

const dir = mkdtempSync(join(tmpdir(), "sdgw-bench-"));
let cleaned = false;
/** Kills every server, drops the bench's database and removes the temp folder: at the end, failed or not. */
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const timer = setTimeout(() => {
            c.kill("SIGKILL");
            resolve();
          }, 3000);
          c.once("exit", () => {
            clearTimeout(timer);
            resolve();
          });
          c.kill();
        }),
    ),
  );
  if (admin) {
    try {
      for (const db of [dbName, floorDbName]) if (db) await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    } catch (e) {
      console.error(`bench/server: could not drop the databases ${dbName}, ${floorDbName}: ${String(e)}`);
    }
    await admin.end().catch(() => undefined);
  }
  rmSync(dir, { recursive: true, force: true });
}
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const)
  process.once(signal, () => void cleanup().finally(() => process.exit(code)));

try {
  const ours = await start("sdgw", [dir]);
  // The bare routes answer, for each count, one real answer of the reference server to a query like the load's.
  const answersDir = join(dir, "answers");
  mkdirSync(answersDir);
  const bytesOf: Record<number, number> = {};
  for (const count of counts) {
    const sample = await fetch(
      `http://127.0.0.1:${ours.port}/v1/search?platform=xiaohongshu&query=${fixed ? QUERY_OF_FIXED : "bench+sample"}&count=${count}`,
      { headers: { "x-api-key": ours.keys![0]!, "idempotency-key": `bench-sample-${count}` } },
    );
    const body = Buffer.from(await sample.arrayBuffer());
    if (sample.status !== 200)
      throw new Error(`the reference server answered ${sample.status}: ${body.toString("utf8")}`);
    writeFileSync(join(answersDir, `answer-${count}.json`), body);
    bytesOf[count] = body.length;
  }
  const servers: Array<[Who, Server[]]> = [
    ["object", [await start("object", [answersDir])]],
    ["bytes", [await start("bytes", [answersDir])]],
    ["data", [await start("data", [answersDir])]],
    ["floor", [await start("floor", [mkdtempSync(join(dir, "floor-"))])]],
    ["sdgw", [ours]],
  ];
  if (baseAt) {
    mkdirSync(join(dir, "base"));
    servers.push(["base", [await start("sdgw", [join(dir, "base")], join(baseAt, "bench", "server"))]]);
  }
  if (onPg) {
    // A fresh database, made through the admin connection; the first instance makes the account and its key (and
    // migrates), the others start on the same database with that key.
    const pg = require("pg") as { Client: new (options: { connectionString: string }) => PgClient };
    const client = new pg.Client({ connectionString: PG_ADMIN_URL });
    try {
      await client.connect();
    } catch (e) {
      throw new Error(`--db postgres: PostgreSQL must answer at ${PG_ADMIN_URL}: ${String(e)}`);
    }
    admin = client;
    const name = `sdgw_bench_${process.pid}_${Date.now()}`;
    await admin.query(`CREATE DATABASE ${name}`);
    dbName = name;
    const url = `postgres://postgres@127.0.0.1:5432/${name}`;
    const first = await start("pg", [url, String(accounts)]);
    const others = await Promise.all(Array.from({ length: instances - 1 }, () => start("pg", [url, "0"])));
    const group = [first, ...others.map((s) => ({ ...s, keys: first.keys! }))];
    for (const [i, s] of group.entries()) {
      const sample = await fetch(
        `http://127.0.0.1:${s.port}/v1/search?platform=xiaohongshu&query=bench+sample&count=${counts[0]}`,
        { headers: { "x-api-key": s.keys![0]!, "idempotency-key": `bench-pg-sample-${i}` } },
      );
      const body = await sample.text();
      if (sample.status !== 200)
        throw new Error(`the reference server on PostgreSQL (instance ${i + 1}) answered ${sample.status}: ${body}`);
    }
    servers.push(["pg", group]);
    // The floor on its own database, so that each one's transactions are counted apart.
    floorDbName = `${name}_floor`;
    await admin.query(`CREATE DATABASE ${floorDbName}`);
    servers.push(["pgfloor", [await startPgFloor(`postgres://postgres@127.0.0.1:5432/${floorDbName}`)]]);
  }

  /** The resident set size of a server's processes (summed over the instances of `pg`), null off Linux. */
  const rssOfGroup = (group: Server[]) => {
    const each = group.map((s) => rssOf(s.child.pid));
    return each.every((x) => x !== null) ? each.reduce((a, x) => a! + x!, 0) : null;
  };
  const rss: Partial<Record<Who, { start: number | null; warm: number | null; end: number | null }>> = {};
  for (const [who, g] of servers) rss[who] = { start: rssOfGroup(g), warm: null, end: null };
  /** Requests each server answered (warm-up included): with a new key each, every one a charged call. */
  const answered: Partial<Record<Who, number>> = {
    object: 0,
    bytes: 0,
    data: 0,
    floor: 0,
    sdgw: counts.length,
    base: 0,
    ...(onPg ? { pg: instances, pgfloor: 0 } : {}),
  };
  /** --db postgres: transactions committed in each database from here (set-up, migration and accounts left out). */
  const commitsBefore = onPg ? await commitsOf(dbName!, floorDbName!) : null;
  const answeredBefore = { ...answered };
  for (const count of counts) {
    for (const [who, g] of servers) {
      const warm = await load(g, count, who === "pg");
      answered[who] = answered[who]! + warm.total;
      if (replays > 0 && who !== "pgfloor" && warm.total < replays)
        throw new Error(
          `--replays ${replays}: the warm-up sent only ${warm.total} requests; use fewer keys or longer rounds`,
        );
    }
  }
  for (const [who, g] of servers) rss[who]!.warm = rssOfGroup(g);

  const results: Record<number, Partial<Record<Who, Round[]>>> = {};
  for (const count of counts) results[count] = Object.fromEntries(servers.map(([who]) => [who, []]));
  for (let i = 0; i < rounds; i++) {
    for (const count of counts) {
      // alternate the order, so that every server sees the same load of a shared machine
      const order = i % 2 === 0 ? servers : [...servers].reverse();
      for (const [who, g] of order) {
        const r = await load(g, count, who === "pg");
        results[count]![who]!.push(r);
        answered[who] = answered[who]! + r.total;
      }
    }
  }
  for (const [who, g] of servers) rss[who]!.end = rssOfGroup(g);
  /** --db postgres: committed transactions per charged call (per charge of the floor) over the warm-up and rounds. */
  let commitsPer: { pg: number; pgfloor: number } | null = null;
  if (commitsBefore) {
    const after = await commitsOf(dbName!, floorDbName!);
    commitsPer = {
      pg: (after.pg - commitsBefore.pg) / (answered.pg! - answeredBefore.pg!),
      pgfloor: (after.pgfloor - commitsBefore.pgfloor) / (answered.pgfloor! - answeredBefore.pgfloor!),
    };
  }
  /** --db postgres: the bench's database's size at the end (pg_database_size). */
  let pgBytes: number | null = null;
  if (admin && dbName)
    pgBytes = Number((await admin.query("SELECT pg_database_size($1) AS size", [dbName])).rows[0]!["size"]);
  for (const [, g] of servers) for (const s of g) s.child.kill();
  await new Promise((r) => setTimeout(r, 200)); // the servers' last writes

  // Issue 36: after every run, the ledger identity of each server's accounts — balance = grants − charges, nothing
  // left held — and the charges against the calls answered (a request cut off at a round's end may have been
  // charged without its answer being counted here, never the other way round).
  const identity: Partial<Record<"sdgw" | "pg", { accounts: number; broken: string[]; charges: number }>> = {};
  const IDENTITY =
    "SELECT a.id AS id, a.balance AS balance, a.held AS held, " +
    "COALESCE((SELECT SUM(CASE WHEN l.kind = 'grant' THEN l.amount ELSE -l.amount END) FROM ledger l WHERE l.account_id = a.id), 0) AS net, " +
    "(SELECT COUNT(*) FROM ledger l WHERE l.account_id = a.id AND l.kind = 'charge') AS charges FROM accounts a";
  const check = (rows: Array<Record<string, unknown>>) => {
    const broken = rows
      .filter((r) => Number(r["balance"]) !== Number(r["net"]) || Number(r["held"]) !== 0)
      .map((r) => `${r["id"]}: balance ${r["balance"]}, grants − charges ${r["net"]}, held ${r["held"]}`);
    return { accounts: rows.length, broken, charges: rows.reduce((n, r) => n + Number(r["charges"]), 0) };
  };
  if (process.env["BENCH_DB"] !== "memory") {
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(join(dir, "bench.sqlite"));
    identity.sdgw = check(db.prepare(IDENTITY).all() as Array<Record<string, unknown>>);
    db.close();
  }
  if (admin && dbName) {
    const pg = require("pg") as { Client: new (options: { connectionString: string }) => PgClient };
    const c = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${dbName}` });
    await c.connect();
    identity.pg = check((await c.query(IDENTITY)).rows);
    await c.end();
  }

  /** Bytes of a server's files: the database (with its WAL) and its answer log (`bench.sqlite-answers/`). */
  function diskOf(folder: string): { db: number; log: number } {
    const size = (f: string) => {
      try {
        return statSync(f).size;
      } catch {
        return 0;
      }
    };
    const db = size(join(folder, "bench.sqlite")) + size(join(folder, "bench.sqlite-wal"));
    let log = 0;
    try {
      for (const f of readdirSync(join(folder, "bench.sqlite-answers")))
        log += size(join(folder, "bench.sqlite-answers", f));
    } catch {
      // no log (BENCH_DB=memory)
    }
    return { db, log };
  }
  const disk = {
    sdgw: diskOf(dir),
    base: baseAt ? diskOf(join(dir, "base")) : null,
    ...(onPg ? { pg: { db: pgBytes } } : {}),
  };

  /** Median and range of numbers (null when there are none). */
  interface Spread {
    median: number;
    min: number;
    max: number;
  }
  function spread(xs: Array<number | null | undefined>): Spread | null {
    const v = xs.filter((x): x is number => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b);
    if (v.length === 0) return null;
    const mid = v.length / 2;
    const median = v.length % 2 ? v[Math.floor(mid)]! : (v[mid - 1]! + v[mid]!) / 2;
    return { median, min: v[0]!, max: v[v.length - 1]! };
  }
  const fmt = (s: Spread | null, digits = 0, unit = "") => {
    if (!s) return "n/a";
    const f = (x: number) =>
      x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }).replace(/,/g, " ");
    return `${f(s.median)}${unit} (${f(s.min)}–${f(s.max)})`;
  };
  /** Per round, a's figure over b's (same round, same count): the ratio that a shared machine moves least. */
  const perRound = (a: Round[], b: Round[], m: "cpuUs" | "p99" | "rps") =>
    a.map((r, i) => (r[m] !== null && b[i]?.[m] ? (r[m] as number) / (b[i]![m] as number) : null));

  const lines = [
    `bench/server: GET /v1/search ` +
      `(xiaohongshu), ${
        replays > 0
          ? `replays of ${replays} Idempotency-Keys`
          : fixed
            ? "one fixed query (the simulator's memo answers), a new Idempotency-Key each"
            : "varied charged calls (a new query and Idempotency-Key each)"
      }, ${connections} ` +
      `connections${onPg ? ` (split over the ${instances} instance(s) on PostgreSQL)` : ""}, ${rounds} ` +
      `rounds of ${seconds} s; median (min–max) over rounds`,
  ];
  const report: Record<number, unknown> = {};
  let failed = false;
  for (const count of counts) {
    const rs = results[count]!;
    const summary = Object.fromEntries(
      servers.map(([who]) => {
        const r = rs[who]!;
        return [
          who,
          {
            rps: spread(r.map((x) => x.rps)),
            p50: spread(r.map((x) => x.p50)),
            p99: spread(r.map((x) => x.p99)),
            cpuUs: spread(r.map((x) => x.cpuUs)),
            ...(who === "pg" || who === "pgfloor" ? { dbCpuUs: spread(r.map((x) => x.dbCpuUs)) } : {}),
            non2xx: r.reduce((a, x) => a + x.non2xx, 0),
          },
        ];
      }),
    ) as Partial<
      Record<
        Who,
        {
          rps: Spread | null;
          p50: Spread | null;
          p99: Spread | null;
          cpuUs: Spread | null;
          dbCpuUs?: Spread | null;
          non2xx: number;
        }
      >
    >;
    lines.push(
      "",
      `count=${count} (${bytesOf[count]} bytes)`,
      "",
      "| server | requests/s | p99 ms | CPU µs/request | non-2xx |",
      "| --- | ---: | ---: | ---: | ---: |",
    );
    for (const [who] of servers) {
      const s = summary[who]!;
      lines.push(`| ${LABEL[who]} | ${fmt(s.rps)} | ${fmt(s.p99)} | ${fmt(s.cpuUs)} | ${s.non2xx} |`);
      if (who !== "object" && who !== "bytes" && s.non2xx > 0) failed = true;
    }
    const ratios: Record<string, Spread | null> = {};
    lines.push("");
    for (const who of ["sdgw", "base", "pg"] as const) {
      if (!rs[who]) continue;
      for (const bare of ["object", "bytes", "data"] as const) {
        const cpu = spread(perRound(rs[who], rs[bare]!, "cpuUs"));
        const p99 = spread(perRound(rs[who], rs[bare]!, "p99"));
        ratios[`${who}/${bare}.cpuUs`] = cpu;
        ratios[`${who}/${bare}.p99`] = p99;
        const met = (s: Spread | null, target: number) => (s ? (s.median <= target ? "met" : "MISSED") : "n/a");
        // `data` produces the answer's data as the gateway does: a comparison, not the issue's target (same answer).
        const targets = bare === "data" ? "" : ` (target ≤ 1.6×: ${met(cpu, 1.6)})`;
        lines.push(
          `${SHORT[who]} / ${bare}: CPU per request ${fmt(cpu, 2, "×")}${targets}, ` +
            `p99 ${fmt(p99, 2, "×")}${bare === "data" ? "" : ` (target ≤ 2×: ${met(p99, 2)})`}`,
        );
      }
    }
    // Issue 36: against the floors, what the storage itself commits. requests/s is the figure (ours ÷ floor).
    {
      const rps = spread(perRound(rs.sdgw!, rs.floor!, "rps"));
      const cpu = spread(perRound(rs.sdgw!, rs.floor!, "cpuUs"));
      const p99 = spread(perRound(rs.sdgw!, rs.floor!, "p99"));
      ratios["sdgw/floor.rps"] = rps;
      ratios["sdgw/floor.cpuUs"] = cpu;
      ratios["sdgw/floor.p99"] = p99;
      lines.push(
        `ours / floor: requests/s ${fmt(rps, 2, "×")}, CPU per request ${fmt(cpu, 2, "×")}, p99 ${fmt(p99, 2, "×")}`,
      );
    }
    if (rs.pg && rs.pgfloor) {
      const rps = spread(perRound(rs.pg, rs.pgfloor, "rps"));
      const p99 = spread(perRound(rs.pg, rs.pgfloor, "p99"));
      const whole = (r: Round) => (r.cpuUs !== null && r.dbCpuUs != null ? r.cpuUs + r.dbCpuUs : null);
      const cpu = spread(
        rs.pg.map((r, i) => {
          const a = whole(r);
          const b = rs.pgfloor![i] ? whole(rs.pgfloor![i]!) : null;
          return a !== null && b ? a / b : null;
        }),
      );
      ratios["pg/pgfloor.rps"] = rps;
      ratios["pg/pgfloor.p99"] = p99;
      ratios["pg+backends/pgfloor+backends.cpuUs"] = cpu;
      lines.push(
        `${SHORT.pg} / pg floor: requests/s ${fmt(rps, 2, "×")}, p99 ${fmt(p99, 2, "×")}, CPU per ` +
          `request with the backends ${fmt(cpu, 2, "×")}; pg floor's ` +
          `backends ${fmt(summary.pgfloor!.dbCpuUs ?? null)} µs/transaction`,
      );
    }
    if (rs.base) {
      const cpu = spread(perRound(rs.sdgw!, rs.base, "cpuUs"));
      ratios["sdgw/base.cpuUs"] = cpu;
      lines.push(
        `ours / base: CPU per request ${fmt(cpu, 2, "×")}, requests/s ${fmt(spread(perRound(rs.sdgw!, rs.base, "rps")), 2, "×")}`,
      );
    }
    if (rs.pg) {
      const cpu = spread(perRound(rs.pg, rs.sdgw!, "cpuUs"));
      const p99 = spread(perRound(rs.pg, rs.sdgw!, "p99"));
      const rps = spread(perRound(rs.pg, rs.sdgw!, "rps"));
      ratios["pg/sdgw.cpuUs"] = cpu;
      ratios["pg/sdgw.p99"] = p99;
      ratios["pg/sdgw.rps"] = rps;
      lines.push(
        `${SHORT.pg} / ours: CPU per request ${fmt(cpu, 2, "×")}, p99 ${fmt(p99, 2, "×")}, requests/s ${fmt(rps, 2, "×")}`,
      );
      // PostgreSQL's own work is in its backends, not in the servers' processes: shown apart, and with theirs.
      const withDb = rs.pg.map((r) => (r.cpuUs !== null && r.dbCpuUs != null ? r.cpuUs + r.dbCpuUs : null));
      const whole = spread(withDb.map((x, i) => (x !== null && rs.sdgw![i]?.cpuUs ? x / rs.sdgw![i]!.cpuUs! : null)));
      ratios["pg+backends/sdgw.cpuUs"] = whole;
      lines.push(
        `${SHORT.pg}: PostgreSQL's backends on the bench's database, CPU ` +
          `µs/request ${fmt(summary.pg!.dbCpuUs ?? null)} (not in the table); servers + ` +
          `backends ${fmt(spread(withDb))} µs/request, ${fmt(whole, 2, "×")} ours`,
      );
    }
    report[count] = { bytes: bytesOf[count], summary, ratios, rounds: rs };
  }
  lines.push(
    "",
    `RSS (MiB) at start → after warm-up → at the ` +
      `end: ${servers
        .map(
          ([who]) =>
            `${
              who === "pg" ? `${SHORT.pg} (sum of ${instances} process${instances > 1 ? "es" : ""})` : who
            } ${rss[who]!.start} → ${rss[who]!.warm} → ${rss[who]!.end}`,
        )
        .join("; ")} (the 2-minute growth bound is pnpm test:soak's)`,
  );
  // Disk per charged call: only meaningful when every request was one (no --replays).
  if (commitsPer)
    lines.push(
      `committed transactions (pg_stat_database.xact_commit) per charged ` +
        `call: ${SHORT.pg} ${commitsPer.pg.toFixed(2)}; per charge of the pg ` +
        `floor ${commitsPer.pgfloor.toFixed(2)} (warm-up and rounds, background work of the instances included)`,
    );
  for (const [who, id] of Object.entries(identity)) {
    const label = who === "pg" ? SHORT.pg : "ours";
    if (id.broken.length) failed = true;
    lines.push(
      `ledger identity, ${label}: ${
        id.broken.length
          ? `BROKEN on ${id.broken.length} of ${id.accounts} accounts: ${id.broken.slice(0, 3).join("; ")}`
          : `balance = grants − charges and nothing held on all ${id.accounts} accounts`
      }; ${id.charges} charges for ${answered[who as "sdgw" | "pg"]} answers counted`,
    );
  }
  if (replays === 0) {
    const per = (d: { db: number; log: number }, calls: number) =>
      `${Math.round(d.log / calls)} B in the answer log + ${Math.round(d.db / calls)} B of database (WAL included) = ${Math.round((d.log + d.db) / calls)} B`;
    lines.push(`disk per charged call: ours ${per(disk.sdgw, answered.sdgw!)} (${answered.sdgw} calls)`);
    if (disk.base) lines.push(`disk per charged call: base ${per(disk.base, answered.base!)} (${answered.base} calls)`);
    if (pgBytes !== null)
      lines.push(
        `disk per charged call: ${SHORT.pg} ${Math.round(pgBytes / answered.pg!)} B of database ` +
          `(pg_database_size, answers in their rows; ${answered.pg} calls)`,
      );
  }
  console.log(lines.join("\n"));
  mkdirSync(new URL("../results/", import.meta.url), { recursive: true });
  writeFileSync(
    new URL("../results/server.json", import.meta.url),
    JSON.stringify(
      {
        workload: replays > 0 ? "replays" : fixed ? "fixed" : "varied",
        replays,
        connections,
        rounds,
        seconds,
        counts,
        ...(baseAt ? { baseAt } : {}),
        db: opt.db,
        ...(onPg ? { instances, accounts, floorConnections, commitsPerCall: commitsPer } : {}),
        byCount: report,
        ledgerIdentity: identity,
        rss,
        disk,
        answered,
      },
      null,
      2,
    ),
  );
  if (failed) process.exitCode = 1;
} finally {
  await cleanup();
}
