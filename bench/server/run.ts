/**
 * Server benchmark: `GET /v1/search` of the reference server (simulator at zero latency, file database, every step
 * of a charged call: validation, key lookup, idempotency claim, limits, hold, run, capture, stored answer) against a
 * bare Fastify route that answers the same answer (an object Fastify serializes, as any route returning an answer
 * does), with autocannon, in one run. Target: ≥ 0.5× the bare route's
 * requests/s. Each server runs in its own process; autocannon runs here. Rounds alternate bare and reference so
 * that both see the same load of a shared machine; medians.
 *
 *   npx -y -p node@24 -p pnpm@12 -- pnpm bench:server      flags: --quick (2 s rounds), --rounds N, --seconds N (a
 *                                                          round's length, default 5), --connections N,
 *                                                          --base DIR (also the reference server of another checkout
 *                                                          at DIR, e.g. a `git worktree` of main: a before/after
 *                                                          comparison in the same rounds), --replays N (the
 *                                                          requests cycle over N Idempotency-Keys: once the warm-up
 *                                                          has sent each, every request is a replay)
 *
 * Prints a plain table and writes it as JSON to bench/results/server.json (gitignored). Besides requests/s and
 * latency, each server's CPU time per request (all its threads, from /proc on Linux): on a shared machine the
 * requests/s of both move with the load of others, the CPU a request costs much less.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(new URL("../../packages/server/package.json", import.meta.url));
const autocannon = require("autocannon") as (options: unknown) => Promise<unknown>;

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const quick = args.includes("--quick");
const rounds = flag("--rounds", quick ? 2 : 3);
const seconds = flag("--seconds", quick ? 2 : 5);
const connections = flag("--connections", 16);
const baseAt = args.includes("--base") ? args[args.indexOf("--base") + 1] : undefined;
const replays = flag("--replays", 0);
if (!Number.isInteger(replays) || replays < 0) throw new Error(`--replays: a whole number of Idempotency-Keys to cycle over (got ${args[args.indexOf("--replays") + 1]})`);
const here = fileURLToPath(new URL(".", import.meta.url));
const QUERY = "/v1/search?platform=xiaohongshu&query=%E9%9C%B2%E8%90%A5%E8%A3%85%E5%A4%87&count=10";

function start(mode: "sdgw" | "bare", arg: string, from = here): Promise<{ child: ChildProcess; port: number; key?: string }> {
  const child = fork(join(from, "servers.ts"), [mode, arg], { execArgv: ["--conditions=source", "--no-warnings"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  return new Promise((resolve, reject) => {
    child.once("message", (m: { port: number; key?: string }) => resolve({ child, ...m }));
    child.once("exit", (code) => reject(new Error(`${mode} server exited ${code}`)));
  });
}

interface Round {
  rps: number;
  p99: number;
  p50: number;
  non2xx: number;
  bytes: number;
  /** CPU microseconds (user + system, every thread of the server's process) per request; null off Linux. */
  cpuUs: number | null;
  /** Requests answered in the round. */
  total: number;
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

// Every request of the whole run carries an Idempotency-Key never sent before (a key sent again would be a replay: no
// charge, no write, a different path), across rounds and servers alike; with --replays N, one of N keys in turn.
let sent = 0;
const idemKey = () => (replays > 0 ? `bench-replay-${++sent % replays}` : `bench-${process.pid}-${++sent}`);

async function load(port: number, key: string | undefined, pid: number | undefined): Promise<Round> {
  const cpuBefore = cpuOf(pid);
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    requests: [
      {
        method: "GET",
        path: QUERY,
        setupRequest: (req: { headers?: Record<string, string> }) => ({ ...req, headers: { ...req.headers, "x-api-key": key ?? "bare", "idempotency-key": idemKey() } }),
      },
    ],
  } as never);
  const r = result as unknown as { requests: { average: number; total: number }; latency: { p99: number; p50: number }; non2xx: number; throughput: { average: number } };
  const cpuAfter = cpuOf(pid);
  const cpuUs = cpuBefore !== null && cpuAfter !== null && r.requests.total > 0 ? (cpuAfter - cpuBefore) / r.requests.total : null;
  return { rps: r.requests.average, p99: r.latency.p99, p50: r.latency.p50, non2xx: r.non2xx, bytes: r.requests.average ? r.throughput.average / r.requests.average : 0, cpuUs, total: r.requests.total };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const dir = mkdtempSync(join(tmpdir(), "sdgw-bench-"));
const ours = await start("sdgw", dir);
const sample = await fetch(`http://127.0.0.1:${ours.port}${QUERY}`, { headers: { "x-api-key": ours.key!, "idempotency-key": "bench-sample" } });
const sampleBody = await sample.text();
if (sample.status !== 200) throw new Error(`the reference server answered ${sample.status}: ${sampleBody}`);
writeFileSync(join(dir, "answer.json"), sampleBody);
const bare = await start("bare", join(dir, "answer.json"));
if (baseAt) mkdirSync(join(dir, "base"));
const base = baseAt ? await start("sdgw", join(dir, "base"), join(baseAt, "bench", "server")) : null;

type Who = "bare" | "sdgw" | "base";
const servers: Array<[Who, { child: ChildProcess; port: number; key?: string }]> = [["bare", bare], ["sdgw", ours], ...(base ? [["base", base] as [Who, typeof base]] : [])];
const results: Record<Who, Round[]> = { bare: [], sdgw: [], base: [] };
/** Requests each server answered (warm-up included): with a new key each, every one a charged call. */
const answered: Record<Who, number> = { bare: 0, sdgw: 1, base: 0 };
for (const [who, s] of servers) {
  const warm = await load(s.port, s.key, s.child.pid);
  answered[who] += warm.total;
  if (replays > 0 && warm.rps * seconds < replays) throw new Error(`--replays ${replays}: the warm-up sent only ${Math.round(warm.rps * seconds)} requests; use fewer keys or longer rounds`);
}
for (let i = 0; i < rounds; i++) {
  // alternate the order, so that every server sees the same load of a shared machine
  const order = i % 2 === 0 ? servers : [...servers].reverse();
  for (const [who, s] of order) {
    const r = await load(s.port, s.key, s.child.pid);
    results[who].push(r);
    answered[who] += r.total;
  }
}
for (const [, s] of servers) s.child.kill();
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
    for (const f of readdirSync(join(folder, "bench.sqlite-answers"))) log += size(join(folder, "bench.sqlite-answers", f));
  } catch {
    // no log (BENCH_DB=memory)
  }
  return { db, log };
}
const disk = { sdgw: diskOf(dir), base: base ? diskOf(join(dir, "base")) : null };
rmSync(dir, { recursive: true, force: true });

const summary = (rs: Round[]) => {
  const cpu = rs.map((r) => r.cpuUs).filter((c): c is number => c !== null);
  return { rps: Math.round(median(rs.map((r) => r.rps))), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), non2xx: rs.reduce((s, r) => s + r.non2xx, 0), cpuUs: cpu.length ? Math.round(median(cpu)) : null };
};
const b = summary(results.bare);
const s = summary(results.sdgw);
const ratio = s.rps / b.rps;
const cpuRatio = b.cpuUs !== null && s.cpuUs ? b.cpuUs / s.cpuUs : null;
const bs = base ? summary(results.base) : null;
const lines = [
  `bench/server: GET /v1/search (xiaohongshu, count 10, ${Buffer.byteLength(sampleBody)} bytes), ${replays > 0 ? `replays of ${replays} Idempotency-Keys` : "charged calls (a new Idempotency-Key each)"}, ${connections} connections, ${rounds} rounds of ${seconds} s, medians`,
  "",
  "| server | requests/s | p50 ms | p99 ms | CPU µs/request | non-2xx |",
  "| --- | ---: | ---: | ---: | ---: | ---: |",
  `| bare Fastify route, same answer | ${b.rps} | ${b.p50} | ${b.p99} | ${b.cpuUs ?? "n/a"} | ${b.non2xx} |`,
  `| @sdgw/server (simulator, 0 ms) | ${s.rps} | ${s.p50} | ${s.p99} | ${s.cpuUs ?? "n/a"} | ${s.non2xx} |`,
  ...(bs ? [`| @sdgw/server of ${baseAt} | ${bs.rps} | ${bs.p50} | ${bs.p99} | ${bs.cpuUs ?? "n/a"} | ${bs.non2xx} |`] : []),
  "",
  `ratio: ${ratio.toFixed(2)}× the bare route (target ≥ 0.50×: ${ratio >= 0.5 ? "met" : "MISSED"})${cpuRatio !== null ? `; CPU per request: the bare route's is ${cpuRatio.toFixed(2)}× ours` : ""}`,
  ...(bs ? [`base: ${(bs.rps / b.rps).toFixed(2)}× the bare route; per round, ours/base: ${results.sdgw.map((r, i) => (r.rps / results.base[i]!.rps).toFixed(2)).join(" ")}`] : []),
];
// Disk per charged call: only meaningful when every request was one (no --replays).
if (replays === 0) {
  const per = (d: { db: number; log: number }, calls: number) => `${Math.round(d.log / calls)} B in the answer log + ${Math.round(d.db / calls)} B of database (WAL included) = ${Math.round((d.log + d.db) / calls)} B`;
  lines.push(`disk per charged call: ours ${per(disk.sdgw, answered.sdgw)} (${answered.sdgw} calls)`);
  if (disk.base) lines.push(`disk per charged call: base ${per(disk.base, answered.base)} (${answered.base} calls)`);
}
console.log(lines.join("\n"));
mkdirSync(new URL("../results/", import.meta.url), { recursive: true });
writeFileSync(new URL("../results/server.json", import.meta.url), JSON.stringify({ bare: b, sdgw: s, ratio, cpuRatio, replays, disk, answered, ...(bs ? { base: bs, baseAt } : {}), rounds: results, connections, seconds, bytes: Buffer.byteLength(sampleBody) }, null, 2));
if (s.non2xx > 0 || (bs?.non2xx ?? 0) > 0) process.exitCode = 1;
