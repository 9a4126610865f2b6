/**
 * Throughput of one contender, run by run.ts in a fresh node process per contender (so no library's JIT state or
 * shared helpers affect another's). Prints `{"corpus": [ops/s, …], "large": [ops/s, …]}`.
 *
 *   node bench/validators/throughput.ts <contender key> <input.json>
 *
 * input.json: { doc, corpus: [{ schema, body }], large, workloads: ["corpus", "large"], rounds, sampleMs, warmupMs }.
 * Each workload is warmed up, then calibrated to batches of about 5 ms; the samples alternate between workloads.
 * A corpus op is one pass over every fixture, each with its schema's check.
 */
import { readFileSync } from "node:fs";
import { CONTENDER_KEYS, makeContender, type Check, type ContenderKey } from "./contenders.ts";
import type { SchemaDoc } from "./schema-doc.ts";
import type { AnswerSchema } from "./workloads.ts";

export interface ThroughputInput {
  doc: SchemaDoc;
  corpus: Array<{ schema: AnswerSchema; body: unknown }>;
  large: unknown;
  workloads: Array<"corpus" | "large">;
  rounds: number;
  sampleMs: number;
  warmupMs: number;
}

const [key, inputPath] = process.argv.slice(2);
if (!key || !inputPath || !(CONTENDER_KEYS as readonly string[]).includes(key)) throw new Error("usage: throughput.ts <a|b|c|d1|d2> <input.json>");
const input = JSON.parse(readFileSync(inputPath, "utf8")) as ThroughputInput;
const contender = await makeContender(key as ContenderKey, input.doc);

const cache = new Map<AnswerSchema, Check>();
const check = (name: AnswerSchema) => {
  let c = cache.get(name);
  if (!c) cache.set(name, (c = contender.build(name)));
  return c;
};

let sink = 0;
const runs: Record<string, () => number> = {};
if (input.workloads.includes("corpus")) {
  const checks = input.corpus.map((f) => check(f.schema));
  const bodies = input.corpus.map((f) => f.body);
  runs["corpus"] = () => {
    let n = 0;
    for (let i = 0; i < checks.length; i++) if (checks[i]!(bodies[i])) n++;
    return n;
  };
}
if (input.workloads.includes("large")) {
  const largeCheck = check("SearchEnvelope");
  const large = input.large;
  runs["large"] = () => (largeCheck(large) ? 1 : 0);
}

/** Runs batches of `n` for about `ms`; answers ops/s. */
function sample(fn: () => number, n: number, ms: number): number {
  let iterations = 0;
  const t0 = process.hrtime.bigint();
  const until = t0 + BigInt(Math.round(ms * 1e6));
  let now = t0;
  while (now < until) {
    for (let i = 0; i < n; i++) sink += fn();
    iterations += n;
    now = process.hrtime.bigint();
  }
  return iterations / (Number(now - t0) / 1e9);
}

const batch: Record<string, number> = {};
for (const [name, fn] of Object.entries(runs)) {
  sample(fn, 1, input.warmupMs);
  // Iterations per batch of about 5 ms, from the warmed-up rate.
  batch[name] = Math.max(1, Math.round(sample(fn, 1, 50) * 0.005));
}
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
const names = Object.keys(runs);
for (let r = 0; r < input.rounds; r++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + r) % names.length]!;
    samples[name]!.push(sample(runs[name]!, batch[name]!, input.sampleMs));
  }
}
process.stdout.write(JSON.stringify({ ...samples, sink }) + "\n");
