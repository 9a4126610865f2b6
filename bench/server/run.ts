/**
 * Server benchmark: `GET /v1/search` of the reference server (simulator at zero latency, file database, every step
 * of a charged call: validation, key lookup, idempotency claim, limits, hold, run, capture, stored answer) against
 * two bare Fastify routes that answer the same answer: `object` (the answer parsed once, serialized by Fastify on
 * every request, as any route returning an answer does) and `bytes` (the answer's bytes sent as they are, as the
 * reference server sends its prepared bytes); and a third, `data`, that asks the same simulator for each request's own
 * query and answers its items (the cost of producing the data alone, which the gateway pays too). With autocannon, in one run, each server in its own process. Rounds
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
 *     p99 are the worst of the N)
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
if (onPg && connections < instances)
  throw new Error(`--connections ${connections}: at least one per instance (--instances ${instances})`);
const baseAt = opt.base;
const fixed = opt.fixed;
const here = fileURLToPath(new URL(".", import.meta.url));

type Who = "object" | "bytes" | "data" | "sdgw" | "base" | "pg";
const LABEL: Record<Who, string> = {
  object: "bare route, answer object serialized",
  bytes: "bare route, prepared bytes",
  data: "bare route + the simulator's data",
  sdgw: "@sdgw/server (simulator, 0 ms)",
  base: `@sdgw/server of ${baseAt}`,
  pg: `@sdgw/server on PostgreSQL ×${instances}`,
};
/** How the ratios' lines name a server. */
const SHORT: Partial<Record<Who, string>> = { sdgw: "ours", base: "base", pg: `pg×${instances}` };
interface Server {
  child: ChildProcess;
  port: number;
  key?: string;
}

/** Every server process started, killed at the end whatever happens. */
const children: ChildProcess[] = [];

function start(mode: "sdgw" | "pg" | "object" | "bytes" | "data", args: string[], from = here): Promise<Server> {
  const child = fork(join(from, "servers.ts"), [mode, ...args], {
    execArgv: ["--conditions=source", "--no-warnings"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once("message", (m: { port: number; key?: string }) => resolve({ child, ...m }));
    child.once("exit", (code) => reject(new Error(`${mode} server exited ${code}`)));
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
function nextRequest(count: number): { path: string; idem: string } {
  const n = ++sent;
  const id = replays > 0 ? n % replays : n;
  const query = fixed ? QUERY_OF_FIXED : `bench+${process.pid}+${id}`;
  return {
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

/** CPU time so far of each of PostgreSQL's backends connected to the bench's database, by pid. */
async function backendsCpu(): Promise<Map<number, number>> {
  const cpu = new Map<number, number>();
  if (!admin || !dbName) return cpu;
  const { rows } = await admin.query("SELECT pid FROM pg_stat_activity WHERE datname = $1", [dbName]);
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
  const share = (i: number) => Math.floor(connections / group.length) + (i < connections % group.length ? 1 : 0);
  const dbBefore = withDb ? await backendsCpu() : null;
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
              return {
                ...req,
                path: next.path,
                headers: { ...req.headers, "x-api-key": s.key ?? "bare", "idempotency-key": next.idem },
              };
            },
          },
        ],
      } as never),
    ),
  );
  const cpuAfter = group.map((s) => cpuOf(s.child.pid));
  const dbAfter = withDb ? await backendsCpu() : null;
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
      if (dbName) await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    } catch (e) {
      console.error(`bench/server: could not drop the database ${dbName}: ${String(e)}`);
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
      { headers: { "x-api-key": ours.key!, "idempotency-key": `bench-sample-${count}` } },
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
    const first = await start("pg", [url]);
    const others = await Promise.all(Array.from({ length: instances - 1 }, () => start("pg", [url, first.key!])));
    const group = [first, ...others.map((s) => ({ ...s, key: first.key }))];
    for (const [i, s] of group.entries()) {
      const sample = await fetch(
        `http://127.0.0.1:${s.port}/v1/search?platform=xiaohongshu&query=bench+sample&count=${counts[0]}`,
        { headers: { "x-api-key": s.key!, "idempotency-key": `bench-pg-sample-${i}` } },
      );
      const body = await sample.text();
      if (sample.status !== 200)
        throw new Error(`the reference server on PostgreSQL (instance ${i + 1}) answered ${sample.status}: ${body}`);
    }
    servers.push(["pg", group]);
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
    sdgw: counts.length,
    base: 0,
    ...(onPg ? { pg: instances } : {}),
  };
  for (const count of counts) {
    for (const [who, g] of servers) {
      const warm = await load(g, count, who === "pg");
      answered[who] = answered[who]! + warm.total;
      if (replays > 0 && warm.total < replays)
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
  /** --db postgres: the bench's database's size at the end (pg_database_size). */
  let pgBytes: number | null = null;
  if (admin && dbName)
    pgBytes = Number((await admin.query("SELECT pg_database_size($1) AS size", [dbName])).rows[0]!["size"]);
  for (const [, g] of servers) for (const s of g) s.child.kill();
  await new Promise((r) => setTimeout(r, 200)); // the servers' last writes

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
    `bench/server: GET /v1/search (xiaohongshu), ${replays > 0 ? `replays of ${replays} Idempotency-Keys` : fixed ? "one fixed query (the simulator's memo answers), a new Idempotency-Key each" : "varied charged calls (a new query and Idempotency-Key each)"}, ${connections} connections${onPg ? ` (split over the ${instances} instance(s) on PostgreSQL)` : ""}, ${rounds} rounds of ${seconds} s; median (min–max) over rounds`,
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
            ...(who === "pg" ? { dbCpuUs: spread(r.map((x) => x.dbCpuUs)) } : {}),
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
      if ((who === "sdgw" || who === "base" || who === "data" || who === "pg") && s.non2xx > 0) failed = true;
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
          `${SHORT[who]} / ${bare}: CPU per request ${fmt(cpu, 2, "×")}${targets}, p99 ${fmt(p99, 2, "×")}${bare === "data" ? "" : ` (target ≤ 2×: ${met(p99, 2)})`}`,
        );
      }
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
        `${SHORT.pg}: PostgreSQL's backends on the bench's database, CPU µs/request ${fmt(summary.pg!.dbCpuUs ?? null)} (not in the table); servers + backends ${fmt(spread(withDb))} µs/request, ${fmt(whole, 2, "×")} ours`,
      );
    }
    report[count] = { bytes: bytesOf[count], summary, ratios, rounds: rs };
  }
  lines.push(
    "",
    `RSS (MiB) at start → after warm-up → at the end: ${servers.map(([who]) => `${who === "pg" ? `${SHORT.pg} (sum of ${instances} process${instances > 1 ? "es" : ""})` : who} ${rss[who]!.start} → ${rss[who]!.warm} → ${rss[who]!.end}`).join("; ")} (the 2-minute growth bound is pnpm test:soak's)`,
  );
  // Disk per charged call: only meaningful when every request was one (no --replays).
  if (replays === 0) {
    const per = (d: { db: number; log: number }, calls: number) =>
      `${Math.round(d.log / calls)} B in the answer log + ${Math.round(d.db / calls)} B of database (WAL included) = ${Math.round((d.log + d.db) / calls)} B`;
    lines.push(`disk per charged call: ours ${per(disk.sdgw, answered.sdgw!)} (${answered.sdgw} calls)`);
    if (disk.base) lines.push(`disk per charged call: base ${per(disk.base, answered.base!)} (${answered.base} calls)`);
    if (pgBytes !== null)
      lines.push(
        `disk per charged call: ${SHORT.pg} ${Math.round(pgBytes / answered.pg!)} B of database (pg_database_size, answers in their rows; ${answered.pg} calls)`,
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
        ...(onPg ? { instances } : {}),
        byCount: report,
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
