/**
 * Client benchmark: the per-call overhead of @sdgw/client (`client.search`) against raw `fetch` to the same local
 * server, at concurrency 1 and 16; the bundle size of our code on top of openapi-fetch. Target: SDK time per call
 * ≤ 1.10× raw fetch; when it is missed, both are profiled (`node --cpu-prof`) and the difference is printed. Also measured
 * with the network replaced by a stub fetch: the client-side cost alone (a lower bound of the overhead).
 *
 *   npx -y -p node@24 -p pnpm@12 -- pnpm bench:client            (or: node bench/client/run.ts)
 *   flags: --quick (smoke run, ~10 s), --build (rebuild packages/client first; done anyway when dist is missing or
 *          older than src), --src (the SDK from src/index.ts instead of the built dist/index.js),
 *          --profile (profile even when the target is met), --no-profile,
 *          --instructions (also count the instructions each contender's process executes per call under valgrind's
 *          callgrind: repeatable whatever else the machine runs; about 3 minutes)
 *
 * The server (server.ts) runs in its own node process, started and stopped here, on 127.0.0.1 at an ephemeral port:
 * in the client's process, its request parsing and answer writing would share the client's one event loop and add
 * the same absolute time to both contenders (shrinking the ratio), and at concurrency 16 the server's work would
 * queue behind the client's. In its own process it gets the second core.
 * Each contender runs in fresh node processes (worker.ts): one raw and one SDK process at a time, alive together but
 * taking turns over IPC (only one makes calls at any moment), sample after sample, so that both see the same load of
 * a shared machine; a few such pairs of processes; medians. About 40 s on 2 cores, 50 s with the profile.
 * Prints a plain table; also writes it as JSON to bench/results/client.json (bench/results/ is gitignored).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { profileLines, summarizeProfile, type ProfileSummary } from "./profile.ts";
import type { Sample, WorkerCommand, WorkerInput, WorkerReply } from "./worker.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLIENT = join(ROOT, "packages/client");
const DIST = join(CLIENT, "dist/index.js");
const args = new Set(process.argv.slice(2));
const QUICK = args.has("--quick");
const SDK_FROM: WorkerInput["sdkFrom"] = args.has("--src") ? "src" : "dist";
/** Pairs of fresh processes (one raw, one SDK); rounds of turns per pair; one turn = one sample per contender. */
const PAIRS = QUICK ? 1 : 3;
const ROUNDS = QUICK ? 3 : 12;
const SAMPLE_MS = QUICK ? 150 : 200;
const WARMUP_MS = QUICK ? 300 : 500;
/** Profile: turns of concurrency 1, this many of PROFILE_MS each per contender. */
const PROFILE_TURNS = QUICK ? 2 : 6;
const PROFILE_MS = QUICK ? 300 : 500;
/** Turns per contender without the network (stub fetch), concurrency 1. */
const STUB_ROUNDS = QUICK ? 3 : 8;
const CONCURRENCIES = [1, 16];
const TARGET = 1.05; // issue 16: the SDK's time per call at most 1.05x raw fetch's
const API_KEY = "sk_bench_0123456789abcdef";

const started = Date.now();
const log = (msg: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);

// ------------------------------------------------------------------------------------------------------------ build

const srcDir = join(CLIENT, "src");
const newestSrc = Math.max(...readdirSync(srcDir).map((f) => statSync(join(srcDir, f)).mtimeMs));
const why = args.has("--build")
  ? "--build"
  : !existsSync(DIST)
    ? "dist/index.js is missing"
    : statSync(DIST).mtimeMs < newestSrc
      ? "dist/index.js is older than src/"
      : null;
let buildNote = "dist/index.js as built (not older than src/)";
if (why) {
  const t0 = Date.now();
  log(`building @sdgw/client (${why})`);
  const r = spawnSync(
    "npx",
    ["-y", "-p", "node@24", "-p", "pnpm@12", "--", "pnpm", "--filter", "@sdgw/client", "build"],
    { cwd: ROOT, encoding: "utf8" },
  );
  if (r.status !== 0) throw new Error(`client build failed:\n${r.stdout}\n${r.stderr}`);
  buildNote = `built with tsup in ${((Date.now() - t0) / 1000).toFixed(1)} s (${why})`;
  log(buildNote);
}

// ----------------------------------------------------------------------------------------------------- bundle size

interface Size {
  label: string;
  entry: string;
  min: number;
  gzip: number;
}
/** The part of esbuild's API used here (esbuild is a devDependency of packages/client, not of the root). */
interface Esbuild {
  version: string;
  build(options: Record<string, unknown> & { write: false }): Promise<{ outputFiles: Array<{ contents: Uint8Array }> }>;
}
const esbuild = createRequire(join(CLIENT, "package.json"))("esbuild") as Esbuild;
async function bundleSize(label: string, entry: string): Promise<Size> {
  const r = await esbuild.build({
    stdin: { contents: entry, resolveDir: CLIENT, sourcefile: "bench-entry.js", loader: "js" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    legalComments: "none",
    logLevel: "silent",
  });
  const code = r.outputFiles[0]!.contents;
  return { label, entry, min: code.length, gzip: gzipSync(code, { level: 9 }).length };
}
const sizes = [
  await bundleSize("(a) @sdgw/client createClient", `export { createClient } from ${JSON.stringify(DIST)};`),
  await bundleSize("(b) openapi-fetch alone", `export { default } from "openapi-fetch";`),
  await bundleSize("    whole @sdgw/client (export *)", `export * from ${JSON.stringify(DIST)};`),
];
log(`bundles sized with esbuild ${esbuild.version}`);

// ---------------------------------------------------------------------------------------------------------- server

/** The next IPC message of `type` from `child`; rejects when it exits first or after `ms`. */
function nextMessage<M extends { type: string }, T extends M["type"]>(
  child: ChildProcess,
  type: T,
  ms: number,
  what: string,
): Promise<Extract<M, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`${what}: no ${type} message in ${ms / 1000} s`)), ms);
    const onExit = (code: number | null, signal: string | null) =>
      done(new Error(`${what} exited (${code ?? signal}) before its ${type} message`));
    const onMessage = (m: M) => {
      if (m.type === type) done(null, m as Extract<M, { type: T }>);
    };
    function done(err: Error | null, m?: Extract<M, { type: T }>) {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("exit", onExit);
      if (err) reject(err);
      else resolve(m!);
    }
    child.on("message", onMessage);
    child.on("exit", onExit);
  });
}
/** Ends a child this run started: asks it to stop, waits, then kills it (by its handle). */
function stopChild(child: ChildProcess, stop: object): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    if (child.connected) {
      child.send(stop);
      child.disconnect();
    } else child.kill();
  });
}
const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill();
});

type ServerMsg =
  | { type: "listening"; port: number; bytes: number }
  | { type: "stats"; requests: number; refused: number; shapes: Array<{ shape: string; n: number }> };
const server = spawn(process.execPath, [fileURLToPath(new URL("./server.ts", import.meta.url))], {
  stdio: ["ignore", "inherit", "inherit", "ipc"],
});
children.add(server);
const { port, bytes } = await nextMessage<ServerMsg, "listening">(server, "listening", 10_000, "bench server");
const baseUrl = `http://127.0.0.1:${port}`;
log(`server on ${baseUrl} (pid ${server.pid}), answering ${bytes} bytes of JSON`);
const serverStats = () => {
  const reply = nextMessage<ServerMsg, "stats">(server, "stats", 10_000, "bench server");
  server.send({ type: "stats" });
  return reply;
};

// --------------------------------------------------------------------------------------------------------- workers

type Mode = WorkerInput["mode"];
const MODES: Mode[] = ["raw", "sdk"];
const workerScript = fileURLToPath(new URL("./worker.ts", import.meta.url));
const shapes: Record<Mode, string[]> = { raw: [], sdk: [] };

interface Worker {
  mode: Mode;
  stub: boolean;
  child: ChildProcess;
  stderr: () => string;
}
async function startWorker(mode: Mode, execArgv: string[] = [], stub = false, wrapper: string[] = []): Promise<Worker> {
  const input: WorkerInput = { mode, sdkFrom: SDK_FROM, baseUrl, apiKey: API_KEY, stub };
  const argv = [process.execPath, ...execArgv, workerScript, JSON.stringify(input)];
  const child = spawn(wrapper[0] ?? argv[0]!, [...wrapper.slice(1), ...argv.slice(wrapper.length ? 0 : 1)], {
    stdio: ["ignore", "inherit", "pipe", "ipc"],
  });
  children.add(child);
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const w = { mode, stub, child, stderr: () => err };
  await nextMessage<WorkerReply, "ready">(child, "ready", wrapper.length ? 300_000 : 30_000, `worker ${mode}`).catch(
    (e: Error) => {
      throw new Error(`${e.message}\n${err}`);
    },
  );
  await serverStats(); // its correctness call: not counted
  return w;
}
/** One sample of `w` (the other worker is idle meanwhile); checks the server saw its requests, and no refusals. */
async function sample(
  w: Worker,
  concurrency: number,
  ms: number,
): Promise<{ sample: Sample; fromUs: number; toUs: number }> {
  const reply = nextMessage<WorkerReply, "sample">(w.child, "sample", ms + 30_000, `worker ${w.mode}`);
  w.child.send({ type: "run", concurrency, ms } satisfies WorkerCommand);
  const got = await reply.catch((e: Error) => {
    throw new Error(`${e.message}\n${w.stderr()}`);
  });
  if (w.stub) return got;
  const s = await serverStats();
  if (s.refused)
    throw new Error(
      `worker ${w.mode}: the server refused ${s.refused} of its requests:\n${s.shapes.map((x) => x.shape).join("\n")}`,
    );
  if (s.requests < got.sample.calls)
    throw new Error(`worker ${w.mode}: ${got.sample.calls} calls counted but the server saw ${s.requests} requests`);
  if (!shapes[w.mode].length) shapes[w.mode] = s.shapes.map((x) => x.shape);
  return got;
}
const stopWorker = (w: Worker) => stopChild(w.child, { type: "exit" } satisfies WorkerCommand);

type PairSample = Sample & { pair: number; round: number };
const samples: Record<Mode, PairSample[]> = { raw: [], sdk: [] };
const stubSamples: Record<Mode, PairSample[]> = { raw: [], sdk: [] };
try {
  for (let p = 0; p < PAIRS; p++) {
    const workers = { raw: await startWorker("raw"), sdk: await startWorker("sdk") };
    const order = (k: number) => (k % 2 ? [...MODES].reverse() : MODES);
    for (const c of CONCURRENCIES) for (const mode of order(p)) await sample(workers[mode], c, WARMUP_MS);
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate which concurrency, and which contender, goes first.
      for (const c of r % 2 ? [...CONCURRENCIES].reverse() : CONCURRENCIES) {
        for (const mode of order(p + r))
          samples[mode].push({ ...(await sample(workers[mode], c, SAMPLE_MS)).sample, pair: p, round: r });
      }
    }
    await Promise.all(MODES.map((m) => stopWorker(workers[m])));
    log(`pair of processes ${p + 1}/${PAIRS} done`);
  }
  // No network: the client-side cost alone, in a fresh pair of processes taking turns the same way.
  const workers = { raw: await startWorker("raw", [], true), sdk: await startWorker("sdk", [], true) };
  for (const mode of MODES) await sample(workers[mode], 1, WARMUP_MS);
  for (let r = 0; r < STUB_ROUNDS; r++) {
    for (const mode of r % 2 ? [...MODES].reverse() : MODES)
      stubSamples[mode].push({ ...(await sample(workers[mode], 1, SAMPLE_MS)).sample, pair: 0, round: r });
  }
  await Promise.all(MODES.map((m) => stopWorker(workers[m])));
  log("stub fetch measured");
} catch (e) {
  await stopChild(server, { type: "stop" });
  throw e;
}

// ------------------------------------------------------------------------------------------------------- statistics

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))]!;
};
const rateOf = (s: Sample) => (s.calls / s.elapsedMs) * 1000;
interface Stat {
  samples: number;
  calls: number;
  callsPerSec: number;
  bestCallsPerSec: number;
  /** 1e6 / median calls/s: wall time per call (at concurrency 1 about the mean latency). */
  timePerCallUs: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  cpuUs: number;
  gcUs: number;
  /** Widest sample's calls/s off the median. */
  spread: number;
}
function statOf(mode: Mode, c: number): Stat {
  const xs = samples[mode].filter((s) => s.concurrency === c);
  const rates = xs.map(rateOf);
  const callsPerSec = median(rates);
  return {
    samples: xs.length,
    calls: xs.reduce((n, s) => n + s.calls, 0),
    callsPerSec,
    bestCallsPerSec: Math.max(...rates),
    timePerCallUs: 1e6 / callsPerSec,
    meanUs: median(xs.map((s) => s.meanUs)),
    p50Us: median(xs.map((s) => s.p50Us)),
    p99Us: median(xs.map((s) => s.p99Us)),
    cpuUs: median(xs.map((s) => s.cpuUs)),
    gcUs: median(xs.map((s) => s.gcUs)),
    spread: Math.max(...rates.map((r) => Math.abs(r - callsPerSec) / callsPerSec)),
  };
}
/** The median's 95 % confidence interval from order statistics (no assumption on the distribution). */
const medianCI = (xs: number[]): [number, number] => {
  const s = [...xs].sort((x, y) => x - y);
  const k = Math.max(0, Math.floor((s.length - 1.96 * Math.sqrt(s.length)) / 2));
  return [s[k]!, s[s.length - 1 - k]!];
};
/** SDK/raw time per call of each turn: the raw and the SDK sample taken one right after the other. */
function turnRatios(c: number): number[] {
  const raw = samples.raw.filter((s) => s.concurrency === c);
  return raw.map((r) => {
    const s = samples.sdk.find((x) => x.concurrency === c && x.pair === r.pair && x.round === r.round)!;
    return rateOf(r) / rateOf(s);
  });
}
const table = CONCURRENCIES.map((c) => {
  const raw = statOf("raw", c);
  const sdk = statOf("sdk", c);
  const turns = turnRatios(c);
  return {
    concurrency: c,
    raw,
    sdk,
    ratio: sdk.timePerCallUs / raw.timePerCallUs,
    turnRatios: turns,
    turnRatio: median(turns),
    turnQuartiles: [quantile(turns, 0.25), quantile(turns, 0.75)] as const,
    turnCI: medianCI(turns),
    bestRatio: raw.bestCallsPerSec / sdk.bestCallsPerSec,
    cpuRatio: sdk.cpuUs / raw.cpuUs,
  };
});
const met = table.every((row) => row.ratio <= TARGET);
const stubUs = (mode: Mode) => median(stubSamples[mode].map((x) => 1e6 / rateOf(x)));
const stubCpuUs = (mode: Mode) => median(stubSamples[mode].map((x) => x.cpuUs));
const stub = {
  rawUs: stubUs("raw"),
  sdkUs: stubUs("sdk"),
  rawCpuUs: stubCpuUs("raw"),
  sdkCpuUs: stubCpuUs("sdk"),
  turnRatios: stubSamples.raw.map((r, i) => rateOf(r) / rateOf(stubSamples.sdk[i]!)),
};
const stubAddedUs = stub.sdkUs - stub.rawUs;

// ---------------------------------------------------------------------------------------------------- instructions

/**
 * Instructions per call (`--instructions`): each contender in a fresh process under `valgrind --tool=callgrind`, once
 * making FEW calls and once MANY, at concurrency 1; (instructions of the MANY run - of the FEW run) / (MANY - FEW) is
 * the process's work per call (JIT, GC and undici included; start-up and warm-up cancel out). A count of executed
 * instructions does not move with the load of other processes, so it settles what noisy wall-clock ratios cannot;
 * it is CPU work, not time, and says nothing of the server or the network.
 */
const INSTR = { few: 300, many: 1300 };
let instructions: Record<Mode, number> | null = null;
if (args.has("--instructions")) {
  if (spawnSync("valgrind", ["--version"]).status !== 0)
    throw new Error("--instructions needs valgrind (Debian: apt-get install -y valgrind)");
  const perCall = { raw: 0, sdk: 0 };
  for (const mode of MODES) {
    const totals: number[] = [];
    for (const calls of [INSTR.few, INSTR.many]) {
      const w = await startWorker(mode, [], false, ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]);
      const done = nextMessage<WorkerReply, "sample">(w.child, "sample", 900_000, `worker ${mode} under callgrind`);
      w.child.send({ type: "run", concurrency: 1, ms: 1e9, calls } satisfies WorkerCommand);
      const got = await done;
      if (got.sample.calls !== calls) throw new Error(`worker ${mode}: ${got.sample.calls} calls, not ${calls}`);
      await stopWorker(w);
      const collected = /Collected : (\d+)/.exec(w.stderr())?.[1];
      if (!collected) throw new Error(`no callgrind total for ${mode}:\n${w.stderr()}`);
      totals.push(Number(collected));
      log(`callgrind: ${mode}, ${calls} calls: ${collected} instructions`);
    }
    perCall[mode] = (totals[1]! - totals[0]!) / (INSTR.many - INSTR.few);
  }
  instructions = perCall;
}

// --------------------------------------------------------------------------------------------------------- profile

let profile: { raw: ProfileSummary; sdk: ProfileSummary } | null = null;
const PROFILE = args.has("--profile") || (!met && !args.has("--no-profile"));
if (PROFILE) {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-client-prof-"));
  try {
    const dirOf = (mode: Mode) => join(dir, mode);
    for (const mode of MODES) mkdirSync(dirOf(mode));
    const prof = (mode: Mode) => ["--cpu-prof", "--cpu-prof-interval", "100", "--cpu-prof-dir", dirOf(mode)];
    const workers = { raw: await startWorker("raw", prof("raw")), sdk: await startWorker("sdk", prof("sdk")) };
    for (const mode of MODES) await sample(workers[mode], 1, WARMUP_MS);
    const windows: Record<Mode, Array<{ fromUs: number; toUs: number; calls: number }>> = { raw: [], sdk: [] };
    for (let t = 0; t < PROFILE_TURNS; t++) {
      for (const mode of t % 2 ? [...MODES].reverse() : MODES) {
        const got = await sample(workers[mode], 1, PROFILE_MS);
        windows[mode].push({ fromUs: got.fromUs, toUs: got.toUs, calls: got.sample.calls });
      }
    }
    await Promise.all(MODES.map((m) => stopWorker(workers[m])));
    const summary = (mode: Mode) => {
      const file = readdirSync(dirOf(mode)).find((f) => f.endsWith(".cpuprofile"));
      if (!file) throw new Error(`no CPU profile of ${mode}`);
      return summarizeProfile(join(dirOf(mode), file), windows[mode]);
    };
    profile = { raw: summary("raw"), sdk: summary("sdk") };
    log("profiled");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
await stopChild(server, { type: "stop" });
log(`server stopped (${server.exitCode ?? server.signalCode})`);

// ---------------------------------------------------------------------------------------------------------- report

const lines: string[] = [];
const out = (s = "") => lines.push(s);
const pad = (s: string, w: number) => s + " ".repeat(Math.max(0, w - [...s].length));
const lpad = (s: string, w: number) => " ".repeat(Math.max(0, w - [...s].length)) + s;
const us = (x: number) => x.toFixed(1);
const sign = (x: number) => (x >= 0 ? "+" : "") + us(x);
const kb = (b: number) => `${(b / 1024).toFixed(2)} KiB`;

out(
  `Client benchmark: node ${process.version} ` +
    `(undici ${process.versions["undici"]}), ${availableParallelism()} cores ` +
    `(${cpus()[0]?.model.trim() ?? "?"}), ${new Date().toISOString()}`,
);
out(
  `Server: node:http on ${baseUrl} in its own process, GET /v1/search answers fixtures/search/ok-xiaohongshu.json (${bytes} bytes, 200, application/json)`,
);
out(
  `  raw: fetch(url + "?" + new URLSearchParams(query), { headers: { "X-API-Key", "Idempotency-Key": crypto.randomUUID() } }), res.ok, await res.json()`,
);
out(
  `  SDK: client.search({ platform: "xiaohongshu", query: "露营装备", count: 10 }) of @sdgw/client ` +
    `from ${SDK_FROM === "dist" ? "packages/client/dist/index.js" : "packages/client/src/index.ts"} ` +
    `(${SDK_FROM === "dist" ? buildNote : "from source"})`,
);
out(`  both: Node's global fetch, its default keep-alive agent; the server saw, per contender:`);
for (const mode of MODES) {
  for (const s of shapes[mode]) {
    const [request, headers] = s.split("; headers: ");
    out(`    ${pad(mode, 4)} ${request}`);
    out(`         headers: ${headers}`);
  }
}
out("");
out(
  `Per call: ${PAIRS} pair(s) of fresh processes (one raw, one SDK) taking turns: ${WARMUP_MS} ms warm-up per concurrency, then ${ROUNDS} turns per`,
);
out(
  `  concurrency of ${SAMPLE_MS} ms each (the first to go alternating); medians over the ${PAIRS * ROUNDS} samples. time/call = 1e6 / calls/s (at`,
);
out(
  `  concurrency 1 about the mean latency, at 16 the client's throughput cost); latency = from before the call to the parsed body;`,
);
out(
  `  cpu = the client process's CPU time per call, gc = its GC pauses per call; best = the fastest sample; ± = widest sample off the median calls/s;`,
);
out(
  `  per turn = SDK/raw time per call of the two samples taken back to back: median, quartiles, 95% CI of the median.`,
);
out(
  `  ${pad("conc", 5)} ${pad("contender", 10)} ${lpad("calls/s", 8)} ${lpad("best", 7)} ${lpad("±", 5)} ${lpad(
    "time/call µs",
    13,
  )} ${lpad("mean µs", 9)} ${lpad("p50 µs", 9)} ${lpad("p99 µs", 9)} ${lpad(
    "cpu µs",
    8,
  )} ${lpad("gc µs", 7)} ${lpad("calls", 7)}`,
);
for (const row of table) {
  for (const mode of MODES) {
    const s = row[mode];
    out(
      `  ${pad(String(row.concurrency), 5)} ${pad(mode === "raw" ? "raw fetch" : "SDK", 10)} ` +
        `${lpad(s.callsPerSec.toFixed(0), 8)} ${lpad(s.bestCallsPerSec.toFixed(0), 7)} ` +
        `${lpad(`${(s.spread * 100).toFixed(0)}%`, 5)} ${lpad(us(s.timePerCallUs), 13)} ` +
        `${lpad(us(s.meanUs), 9)} ${lpad(us(s.p50Us), 9)} ${lpad(us(s.p99Us), 9)} ` +
        `${lpad(us(s.cpuUs), 8)} ${lpad(us(s.gcUs), 7)} ${lpad(String(s.calls), 7)}`,
    );
  }
  out(
    `  ${pad("", 5)} ${pad("SDK/raw", 10)} time per call ${row.ratio.toFixed(3)}x ` +
      `(${sign(row.sdk.timePerCallUs - row.raw.timePerCallUs)} µs); per turn ${row.turnRatio.toFixed(3)}x ` +
      `(quartiles ${row.turnQuartiles[0].toFixed(2)}-${row.turnQuartiles[1].toFixed(2)}, 95% CI of ` +
      `the median ${row.turnCI[0].toFixed(3)}-${row.turnCI[1].toFixed(3)}); best ` +
      `samples ${row.bestRatio.toFixed(3)}x; client CPU per call ${row.cpuRatio.toFixed(3)}x ` +
      `(${sign(row.sdk.cpuUs - row.raw.cpuUs)} µs)`,
  );
}
out("");
out(
  `Without the network: a fresh pair of processes, fetch replaced by a stub that builds new Request(input, init) as Node's fetch does first`,
);
out(
  `  and answers the fixture as a Response (the SDK gets it through its fetch option); ${STUB_ROUNDS} turns of ${SAMPLE_MS} ms, concurrency 1:`,
);
out(
  `  raw ${us(stub.rawUs)} µs per call, SDK ${us(stub.sdkUs)} µs ` +
    `(${(stub.sdkUs / stub.rawUs).toFixed(2)}x; per turn ${median(stub.turnRatios).toFixed(2)}x): the ` +
    `SDK adds ${us(stubAddedUs)} µs ` +
    `per call on the client (CPU: ${sign(stub.sdkCpuUs - stub.rawCpuUs)} µs)`,
);
out(
  `  ${sign(stubAddedUs)} µs on the raw time per call above would ` +
    `be ${table
      .map(
        (row) =>
          `${((row.raw.timePerCallUs + stubAddedUs) / row.raw.timePerCallUs).toFixed(3)}x ` +
          `at concurrency ${row.concurrency}`,
      )
      .join(", ")}: ` +
    `a lower bound (between real I/O, with the server busy on the other core, the same code runs slower)`,
);
out("");
out(`Bundle: esbuild ${esbuild.version}, bundle + minify, ESM, platform browser, es2022; gzip -9`);
for (const s of sizes)
  out(`  ${pad(s.label, 34)} min ${lpad(String(s.min), 6)} B   gzip ${lpad(String(s.gzip), 5)} B (${kb(s.gzip)})`);
const [a, b] = sizes as [Size, Size, Size];
out(
  `  our own code for createClient, (a) - (b): min ${a.min - b.min} B, gzip ${a.gzip - b.gzip} B (${kb(a.gzip - b.gzip)})`,
);
out("");
if (profile) {
  out(
    `Profile (node --cpu-prof, 100 µs interval): a fresh pair of processes against the server, taking ${PROFILE_TURNS} turns of ${PROFILE_MS} ms at`,
  );
  out(
    `  concurrency 1 after the warm-up; the profile samples of those windows only, in µs per call. The profiler slows everything and`,
  );
  out(
    `  one run's columns differ by a few µs from noise alone: read the SDK-only rows (openapi-fetch, @sdgw/client) and large gaps.`,
  );
  for (const l of profileLines(profile.raw, profile.sdk)) out(l);
  out("");
}
out("Target");
out(
  `  SDK time per call ≤ ${TARGET.toFixed(2)}x raw fetch: ${met ? "MET" : "NOT MET"} (` +
    table.map((row) => `concurrency ${row.concurrency}: ${row.ratio.toFixed(3)}x`).join(", ") +
    `; per turn: ${table.map((row) => `${row.turnRatio.toFixed(3)}x`).join(", ")}; best ` +
    `samples: ${table.map((row) => `${row.bestRatio.toFixed(3)}x`).join(", ")})`,
);
const straddle = table.filter((row) => row.turnCI[0] <= TARGET && row.turnCI[1] >= TARGET);
if (straddle.length) {
  out(
    `  borderline: at concurrency ${straddle.map((row) => row.concurrency).join(" and ")} the 95% CI of the per-turn ratio ` +
      `(${straddle.map((row) => `${row.turnCI[0].toFixed(3)}-${row.turnCI[1].toFixed(3)}`).join(", ")}) ` +
      `contains ${TARGET.toFixed(2)}: another run may give the other verdict`,
  );
}
if (instructions) {
  const { raw, sdk } = instructions;
  out(
    `Instructions per call (valgrind callgrind, concurrency 1, (${INSTR.many} calls - ${INSTR.few} ` +
      `calls) / ${INSTR.many - INSTR.few}; repeatable under load): ` +
      `raw ${Math.round(raw).toLocaleString("en")}, ` +
      `SDK ${Math.round(sdk).toLocaleString("en")}: ${(sdk / raw).toFixed(3)}x ` +
      `(${sdk >= raw ? "+" : ""}${Math.round(sdk - raw).toLocaleString("en")})`,
  );
}
out(`  (run took ${((Date.now() - started) / 1000).toFixed(0)} s)`);

process.stdout.write(`${lines.join("\n")}\n`);

mkdirSync(join(ROOT, "bench/results"), { recursive: true });
writeFileSync(
  join(ROOT, "bench/results/client.json"),
  `${JSON.stringify(
    {
      node: process.version,
      undici: process.versions["undici"],
      cores: availableParallelism(),
      date: new Date().toISOString(),
      sdkFrom: SDK_FROM,
      build: buildNote,
      settings: {
        pairs: PAIRS,
        rounds: ROUNDS,
        sampleMs: SAMPLE_MS,
        warmupMs: WARMUP_MS,
        profileMs: PROFILE_MS,
        concurrencies: CONCURRENCIES,
      },
      requestShapes: shapes,
      perCall: table,
      stub: { ...stub, addedUs: stubAddedUs, samples: stubSamples },
      target: { maxRatio: TARGET, met },
      instructions: instructions && { ...instructions, ratio: instructions.sdk / instructions.raw, calls: INSTR },
      bundle: { esbuild: esbuild.version, sizes, ownCode: { min: a.min - b.min, gzip: a.gzip - b.gzip } },
      profile: profile && {
        raw: {
          ...profile.raw,
          byCategory: Object.fromEntries(profile.raw.byCategory),
          byFunction: undefined,
          callOuts: Object.fromEntries(profile.raw.callOuts),
        },
        sdk: {
          ...profile.sdk,
          byCategory: Object.fromEntries(profile.sdk.byCategory),
          byFunction: undefined,
          callOuts: Object.fromEntries(profile.sdk.callOuts),
        },
      },
      samples,
    },
    null,
    2,
  )}\n`,
);
