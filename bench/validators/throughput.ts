/**
 * Throughput of one contender, run by run.ts in a fresh node process per contender (so no library's JIT state or
 * shared helpers affect another's), or of several in one process, their samples interleaved round by round (the
 * head-to-head of issue 18: ours against runtime ajv in the same process, the same moments of the machine).
 * Prints `{"<key>": {"corpus": [ops/s, …], "large": [ops/s, …]}, …}`, sample i of each taken in round i.
 *
 *   node --conditions=source bench/validators/throughput.ts <key>[,<key>…] <input.json>
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

const [keyList, inputPath] = process.argv.slice(2);
const keys = (keyList ?? "").split(",");
if (!inputPath || !keys.every((k) => (CONTENDER_KEYS as readonly string[]).includes(k)))
  throw new Error("usage: throughput.ts <a|b|bf|c|d1|d2>[,…] <input.json>");
const input = JSON.parse(readFileSync(inputPath, "utf8")) as ThroughputInput;

let sink = 0;
/** Each (contender, workload) as a function doing one op. */
const runs: Array<{ key: string; workload: "corpus" | "large"; fn: () => number; batch: number }> = [];
for (const key of keys) {
  const contender = await makeContender(key as ContenderKey, input.doc);
  const cache = new Map<AnswerSchema, Check>();
  const check = (name: AnswerSchema) => {
    let c = cache.get(name);
    if (!c) {
      c = contender.build(name);
      cache.set(name, c);
    }
    return c;
  };
  if (input.workloads.includes("corpus")) {
    const checks = input.corpus.map((f) => check(f.schema));
    const bodies = input.corpus.map((f) => f.body);
    runs.push({
      key,
      workload: "corpus",
      batch: 1,
      fn: () => {
        let n = 0;
        for (let i = 0; i < checks.length; i++) if (checks[i]!(bodies[i])) n++;
        return n;
      },
    });
  }
  if (input.workloads.includes("large")) {
    const largeCheck = check("SearchEnvelope");
    const large = input.large;
    runs.push({ key, workload: "large", batch: 1, fn: () => (largeCheck(large) ? 1 : 0) });
  }
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

for (const run of runs) {
  sample(run.fn, 1, input.warmupMs);
  // Iterations per batch of about 5 ms, from the warmed-up rate.
  run.batch = Math.max(1, Math.round(sample(run.fn, 1, 50) * 0.005));
}
const samples: Record<string, Record<string, number[]>> = Object.fromEntries(
  keys.map((k) => [k, { corpus: [], large: [] }]),
);
for (let r = 0; r < input.rounds; r++) {
  // Rotate the order within a round, so no run always follows the same other.
  for (let k = 0; k < runs.length; k++) {
    const run = runs[(k + r) % runs.length]!;
    samples[run.key]![run.workload]!.push(sample(run.fn, run.batch, input.sampleMs));
  }
}
process.stdout.write(`${JSON.stringify({ ...samples, sink })}\n`);
