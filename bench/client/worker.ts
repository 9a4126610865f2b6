/**
 * One contender making calls against the local server, in a fresh node process per contender (so the SDK's and raw
 * fetch's JIT and undici state never mix), driven by run.ts over IPC: run.ts keeps one raw and one SDK process alive
 * and lets them take turns, sample after sample, so both see the same load of the (shared, noisy) machine.
 *
 *   node bench/client/worker.ts '<WorkerInput as JSON>'        (spawned by run.ts with an IPC channel)
 *
 * raw: `fetch(url + "?" + new URLSearchParams(query), { headers: { "X-API-Key", "Idempotency-Key": randomUUID() } })`,
 *      then `res.ok` and `await res.json()` (the same work the SDK's caller gets done).
 * sdk: `client.search({ platform: "xiaohongshu", query: "露营装备", count: 10 })` of `@sdgw/client`.
 * Both use Node's global fetch with its default keep-alive agent. At concurrency n, n loops each make calls back to
 * back; a call's latency runs from before the call to after its parsed body. calls/s = calls / wall time of the sample.
 *
 * IPC: sends `{ type: "ready" }` once the first answer checked out (it must be the fixture, parsed); then answers each
 * `{ type: "run", concurrency, ms }` with `{ type: "sample", sample, fromUs, toUs }` (hrtime µs, the clock of a
 * `--cpu-prof` profile's timestamps, so run.ts can keep a profile's samples of that window only); exits on
 * `{ type: "exit" }` or when run.ts goes away.
 */
import { readFileSync } from "node:fs";
import { PerformanceObserver } from "node:perf_hooks";

export interface WorkerInput {
  mode: "raw" | "sdk";
  /** Where the SDK comes from: the built `dist/index.js` (shipped) or `src/index.ts`. */
  sdkFrom: "dist" | "src";
  baseUrl: string;
  apiKey: string;
  /**
   * No network: `fetch` is a stub that builds `new Request(input, init)` as Node's fetch does first, and answers the
   * fixture as a `Response` (the SDK gets it through its `fetch` option). Isolates the client-side cost per call.
   */
  stub?: boolean;
}

export interface Sample {
  concurrency: number;
  calls: number;
  elapsedMs: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  /** CPU time (user + system, all threads) of this process per call, µs. */
  cpuUs: number;
  /** Garbage collection pauses of this process per call, µs (perf_hooks `gc` entries). */
  gcUs: number;
}

export type WorkerCommand =
  | {
      type: "run";
      concurrency: number;
      ms: number /** Stop after this many calls (instructions mode). */;
      calls?: number;
    }
  | { type: "exit" };
export type WorkerReply = { type: "ready" } | { type: "sample"; sample: Sample; fromUs: number; toUs: number };

const input = JSON.parse(process.argv[2] ?? "null") as WorkerInput;
if (!input || !process.send)
  throw new Error("usage: worker.ts '<json input>', spawned with an IPC channel (by run.ts)");
const send = (reply: WorkerReply) => process.send!(reply);

const PARAMS = { platform: "xiaohongshu", query: "露营装备", count: 10 } as const;

const fixtureBytes = readFileSync(new URL("../../fixtures/search/ok-xiaohongshu.json", import.meta.url));
const stubFetch: typeof fetch = async (input, init) => {
  const request = new Request(input, init);
  if (!request.headers.get("x-api-key") || !request.headers.get("idempotency-key"))
    throw new Error("stub: a header is missing");
  return new Response(fixtureBytes, {
    status: 200,
    headers: { "content-type": "application/json", "content-length": String(fixtureBytes.length) },
  });
};
const fetchFn = input.stub ? stubFetch : fetch;

type Call = () => Promise<unknown>;
let call: Call;
if (input.mode === "raw") {
  const { baseUrl, apiKey } = input;
  call = async () => {
    const qs = new URLSearchParams({ platform: PARAMS.platform, query: PARAMS.query, count: String(PARAMS.count) });
    const res = await fetchFn(`${baseUrl}/v1/search?${qs}`, {
      headers: { "X-API-Key": apiKey, "Idempotency-Key": crypto.randomUUID() },
    });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    return await res.json();
  };
} else {
  const href = new URL(
    input.sdkFrom === "src" ? "../../packages/client/src/index.ts" : "../../packages/client/dist/index.js",
    import.meta.url,
  ).href;
  const { createClient } = (await import(href)) as typeof import("../../packages/client/src/index.ts");
  // BENCH_CLIENT_TIMEOUT=Infinity measures the client without its per-attempt timer and signal (D106).
  const timeout = process.env["BENCH_CLIENT_TIMEOUT"] ? Number(process.env["BENCH_CLIENT_TIMEOUT"]) : undefined;
  const client = createClient({
    baseUrl: input.baseUrl,
    apiKey: input.apiKey,
    ...(timeout ? { timeout } : {}),
    ...(input.stub ? { fetch: stubFetch } : {}),
  });
  call = () => client.search({ ...PARAMS });
}

// Correctness: the answer must be the fixture, parsed.
const fixture = JSON.parse(fixtureBytes.toString("utf8")) as { request_id: string; items: unknown[] };
const first = (await call()) as { status?: string; request_id?: string; items?: unknown[] };
if (
  !(first?.status === "ok" && first.request_id === fixture.request_id && first.items?.length === fixture.items.length)
) {
  throw new Error(`${input.mode}: unexpected answer ${JSON.stringify(first).slice(0, 200)}`);
}

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ["gc"] });
const flushGc = () => new Promise<void>((resolve) => setImmediate(resolve));

const MAX_CALLS = 1 << 20;
const latencies = new Float64Array(MAX_CALLS);

/** Runs `concurrency` loops of back-to-back calls for about `ms`; answers the sample. */
async function run(concurrency: number, ms: number, calls = MAX_CALLS): Promise<Sample> {
  let n = 0;
  await flushGc();
  const gc0 = gcMs;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + ms;
  const loop = async () => {
    for (;;) {
      const s = performance.now();
      if (s >= end || n >= calls) return;
      await call();
      latencies[n++] = performance.now() - s;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await flushGc();
  const gcUs = ((gcMs - gc0) * 1000) / n;
  const lat = latencies.subarray(0, n).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += lat[i]!;
  const at = (q: number) => lat[Math.min(n - 1, Math.floor(q * n))]! * 1000;
  return {
    concurrency,
    calls: n,
    elapsedMs,
    meanUs: (sum / n) * 1000,
    p50Us: at(0.5),
    p99Us: at(0.99),
    cpuUs: (cpu.user + cpu.system) / n,
    gcUs,
  };
}

const hrUs = () => Number(process.hrtime.bigint() / 1000n);
process.on("message", async (cmd: WorkerCommand) => {
  if (cmd.type === "exit") process.exit(0);
  const fromUs = hrUs();
  const sample = await run(cmd.concurrency, cmd.ms, cmd.calls);
  send({ type: "sample", sample, fromUs, toUs: hrUs() });
});
process.on("disconnect", () => process.exit(0));
send({ type: "ready" });
