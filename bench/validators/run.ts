/**
 * Validator benchmark: @sdgw/validators against ajv at run time (full and fast formats), TypeBox and zod, on the
 * fixture corpus and on a large search answer; cold start of ours and of runtime ajv; size of the built bundle.
 *
 *   npx -y -p node@24 -p pnpm@12 -- pnpm bench:validators            (or: node bench/validators/run.ts)
 *   flags: --no-build (measure the dist/index.js already there), --quick (shorter samples, for a smoke run)
 *
 * Runs on a fresh clone: the workspace packages are imported from their sources (the `source` export condition;
 * the script restarts itself with `--conditions=source` when Node was not given it, and passes it to its child
 * processes), and @sdgw/validators' dist/ is built with its tsup when missing or older than its sources.
 *
 * Correctness is checked here, in one process with every contender. Throughput runs in a fresh node process per
 * contender (throughput.ts), then ours against runtime ajv in one process, samples interleaved (the head-to-head
 * the targets of issue 18 are judged on); cold start in a fresh process per start (cold.ts). Takes about two
 * minutes on 2 cores. Prints plain tables with ranges over rounds; also writes JSON to
 * bench/results/validators.json (bench/results/ is gitignored).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { ensureBuilt } from "../../generators/src/testing/dist.ts";
import { CONTENDER_KEYS, makeContender, type Check, type Contender } from "./contenders.ts";
import { benchSchemaDocument } from "./schema-doc.ts";
import type { ThroughputInput } from "./throughput.ts";
import { brokenCopies, largeAnswer, loadCorpus, mutations, type AnswerSchema, type Fixture } from "./workloads.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

// The packages' sources import each other by name (`@sdgw/types`): without the `source` condition Node would look
// for their dist/, which a fresh clone does not have. Restart with it.
const NODE_ARGS = ["--conditions=source"];
const flags = [...process.execArgv, ...(process.env["NODE_OPTIONS"] ?? "").split(/\s+/)];
const hasSource = flags.some(
  (f, i) =>
    f === "--conditions=source" ||
    f === "-C=source" ||
    ((f === "--conditions" || f === "-C") && flags[i + 1] === "source"),
);
if (!hasSource) {
  const r = spawnSync(
    process.execPath,
    [...NODE_ARGS, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: "inherit" },
  );
  process.exit(r.status ?? 1);
}

const args = new Set(process.argv.slice(2));
const QUICK = args.has("--quick");
const BUILD = !args.has("--no-build");
/** Fresh processes per contender, and interleaved samples per process. */
const PROCESSES = QUICK ? 1 : 3;
const ROUNDS = QUICK ? 2 : 4;
const SAMPLE_MS = QUICK ? 100 : 300;
const WARMUP_MS = QUICK ? 100 : 400;
const COLD_RUNS = QUICK ? 3 : 7;

const started = Date.now();
const log = (msg: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);

// ------------------------------------------------------------------------------------------ setup and correctness

const { spec, doc } = benchSchemaDocument();
const contenders: Contender[] = await Promise.all(CONTENDER_KEYS.map((k) => makeContender(k, doc)));
const a = contenders[0]!;

function checksOf(c: Contender): (name: AnswerSchema) => Check {
  const cache = new Map<AnswerSchema, Check>();
  return (name) => {
    let check = cache.get(name);
    if (!check) {
      check = c.build(name);
      cache.set(name, check);
    }
    return check;
  };
}

const oursChecks = checksOf(a);
const corpus: Fixture[] = loadCorpus(spec, (name, body) => oursChecks(name)(body));
const { responseValidators: oursResponses } = await import("../../packages/validators/src/index.ts");
const responseValidators = oursResponses as unknown as Record<string, (http: number, body: unknown) => { ok: boolean }>;
for (const f of corpus) {
  if (!responseValidators[f.operationId]!(f.http, f.body).ok)
    throw new Error(`ours refuses ${f.file} as an answer of ${f.operationId} ${f.http}`);
}
const large = largeAnswer();
const broken = brokenCopies(large);
const largeBytes = Buffer.byteLength(JSON.stringify(large));
const mutated = mutations(corpus);
const oursOnMutated = mutated.map((m) => oursChecks(m.schema)(m.value));
const schemaCount = new Set(corpus.map((f) => f.schema)).size;
log(`corpus: ${corpus.length} JSON fixtures over ${schemaCount} schemas; large answer ${largeBytes} bytes of JSON`);

interface Workload {
  /** null when the contender cannot be timed on it, with the reason. */
  run: (() => number) | null;
  verdict: string;
}

interface Entry {
  contender: Contender;
  corpus: Workload;
  large: Workload;
  rejects: Record<string, boolean | null>;
  /** Verdicts on the mutated fixtures that differ from ours (over the schemas it can build). */
  disagreements: { count: number; of: number; examples: string[] };
}

const short = (e: unknown) => (e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 90);

function prepare(c: Contender): Entry {
  const get = checksOf(c);
  // corpus
  let corpusW: Workload;
  const unbuildable = new Map<string, string>();
  for (const name of new Set(corpus.map((f) => f.schema))) {
    try {
      get(name);
    } catch (e) {
      unbuildable.set(name, short(e));
    }
  }
  if (unbuildable.size) {
    const [first] = unbuildable;
    corpusW = {
      run: null,
      verdict: `cannot build ${unbuildable.size}/${schemaCount} schemas (${[...unbuildable.keys()].join(", ")}): ${first![1]}`,
    };
  } else {
    const checks = corpus.map((f) => get(f.schema));
    const bodies = corpus.map((f) => f.body);
    const refused = corpus.filter((_f, i) => !checks[i]!(bodies[i]));
    corpusW = refused.length
      ? {
          run: null,
          verdict: `refuses ${refused.length}/${corpus.length} valid fixtures: ${refused
            .slice(0, 4)
            .map((f) => f.file)
            .join(", ")}`,
        }
      : {
          run: () => {
            let n = 0;
            for (let i = 0; i < checks.length; i++) if (checks[i]!(bodies[i])) n++;
            return n;
          },
          verdict: `accepts ${corpus.length}/${corpus.length}`,
        };
  }
  // large answer and broken copies
  let largeW: Workload;
  const rejects: Record<string, boolean | null> = {};
  try {
    const check = get("SearchEnvelope");
    largeW = check(large)
      ? { run: () => (check(large) ? 1 : 0), verdict: "accepts" }
      : { run: null, verdict: "REFUSES the valid large answer" };
    for (const b of broken) rejects[b.name] = !check(b.value);
  } catch (e) {
    largeW = { run: null, verdict: `cannot build SearchEnvelope: ${short(e)}` };
    for (const b of broken) rejects[b.name] = null;
  }
  const disagreements = { count: 0, of: 0, examples: [] as string[] };
  mutated.forEach((m, i) => {
    let check: Check;
    try {
      check = get(m.schema);
    } catch {
      return;
    }
    disagreements.of++;
    const verdict = check(m.value);
    if (verdict !== oursOnMutated[i]) {
      disagreements.count++;
      if (disagreements.examples.length < 3)
        disagreements.examples.push(
          `${m.what} (${verdict ? "accepts" : "refuses"}; ours ${verdict ? "refuses" : "accepts"})`,
        );
    }
  });
  return { contender: c, corpus: corpusW, large: largeW, rejects, disagreements };
}

const entries = contenders.map(prepare);
log("correctness checked");

// ------------------------------------------------------------------------------------------------ build and size

let buildNote = "not built (--no-build): measured the dist/index.js already there";
if (BUILD) {
  // Its own tsup, run by this Node, only when dist/ is missing or older than the sources (it bundles @sdgw/types
  // from source, so nothing else needs building).
  const t0 = Date.now();
  ensureBuilt(join(ROOT, "packages/validators"));
  const took = (Date.now() - t0) / 1000;
  buildNote = took > 1 ? `built with tsup in ${took.toFixed(1)} s` : "dist/ up to date with the sources";
  log(buildNote);
}
const distJs = join(ROOT, "packages/validators/dist/index.js");
const bundle = existsSync(distJs) ? readFileSync(distJs) : null;
const size = bundle ? { raw: bundle.length, gzip: gzipSync(bundle, { level: 9 }).length } : null;

// ------------------------------------------------------------------------------------------------------ throughput

const tmp = mkdtempSync(join(tmpdir(), "sdgw-bench-"));
const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const throughputScript = fileURLToPath(new URL("./throughput.ts", import.meta.url));
const samples = new Map<Entry, Record<"corpus" | "large", number[]>>(
  entries.map((e) => [e, { corpus: [], large: [] }]),
);
for (let p = 0; p < PROCESSES; p++) {
  for (let k = 0; k < entries.length; k++) {
    // Rotate the order of the contenders from one pass to the next.
    const entry = entries[(k + p) % entries.length]!;
    const workloads = (["corpus", "large"] as const).filter((w) => entry[w].run);
    if (!workloads.length) continue;
    const input: ThroughputInput = {
      doc,
      corpus: corpus.map((f) => ({ schema: f.schema, body: f.body })),
      large,
      workloads,
      rounds: ROUNDS,
      sampleMs: SAMPLE_MS,
      warmupMs: WARMUP_MS,
    };
    const inputPath = join(tmp, `throughput-${entry.contender.key}.json`);
    writeFileSync(inputPath, JSON.stringify(input));
    const r = spawnSync(process.execPath, [...NODE_ARGS, throughputScript, entry.contender.key, inputPath], {
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`throughput of ${entry.contender.label} failed:\n${r.stderr}`);
    const got = JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<
      string,
      Partial<Record<"corpus" | "large", number[]>>
    >;
    for (const w of workloads) samples.get(entry)![w].push(...(got[entry.contender.key]![w] ?? []));
  }
  log(`throughput pass ${p + 1}/${PROCESSES} done`);
}

// Head-to-head (issue 18's targets): ours, runtime ajv with fast formats and with full formats, in one process,
// their samples interleaved round by round; each round gives one ratio per pair.
const H2H_KEYS = ["a", "bf", "b"] as const;
const h2h: Record<(typeof H2H_KEYS)[number], Record<"corpus" | "large", number[]>> = {
  a: { corpus: [], large: [] },
  bf: { corpus: [], large: [] },
  b: { corpus: [], large: [] },
};
for (let p = 0; p < PROCESSES; p++) {
  const input: ThroughputInput = {
    doc,
    corpus: corpus.map((f) => ({ schema: f.schema, body: f.body })),
    large,
    workloads: ["corpus", "large"],
    rounds: ROUNDS,
    sampleMs: SAMPLE_MS,
    warmupMs: WARMUP_MS,
  };
  const inputPath = join(tmp, "throughput-h2h.json");
  writeFileSync(inputPath, JSON.stringify(input));
  const r = spawnSync(process.execPath, [...NODE_ARGS, throughputScript, H2H_KEYS.join(","), inputPath], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`head-to-head throughput failed:\n${r.stderr}`);
  const got = JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<string, Record<"corpus" | "large", number[]>>;
  for (const k of H2H_KEYS) for (const w of ["corpus", "large"] as const) h2h[k][w].push(...got[k]![w]);
  log(`head-to-head pass ${p + 1}/${PROCESSES} done`);
}
/** Per-round ratios of ours over another contender, on one workload. */
const h2hRatios = (other: "bf" | "b", w: "corpus" | "large") => h2h.a[w].map((x, i) => x / h2h[other][w][i]!);
const range = (xs: number[]) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });

const opsOf = (entry: Entry, workload: "corpus" | "large") => {
  const xs = samples.get(entry)![workload];
  return xs.length ? median(xs) : null;
};
const spreadOf = (entry: Entry, workload: "corpus" | "large") => {
  const xs = samples.get(entry)![workload];
  if (!xs.length) return null;
  const m = median(xs);
  return Math.max(...xs.map((s) => Math.abs(s - m) / m));
};

// ---------------------------------------------------------------------------------------------------- cold start

const largePath = join(tmp, "large.json");
const docPath = join(tmp, "schema.json");
writeFileSync(largePath, JSON.stringify(large));
writeFileSync(docPath, JSON.stringify(doc));
const coldScript = fileURLToPath(new URL("./cold.ts", import.meta.url));
const modes = ["ours-src", ...(bundle ? ["ours-dist"] : []), "ajv"];
const cold: Record<string, { inner: number[]; wall: number[] }> = Object.fromEntries(
  modes.map((m) => [m, { inner: [], wall: [] }]),
);
for (let i = 0; i < COLD_RUNS; i++) {
  for (const mode of modes) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [...NODE_ARGS, coldScript, mode, largePath, docPath], { encoding: "utf8" });
    const wall = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status !== 0) throw new Error(`cold start ${mode} failed:\n${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as { ms: number; ok: boolean };
    if (!out.ok) throw new Error(`cold start ${mode}: the large answer was refused`);
    cold[mode]!.inner.push(out.ms);
    cold[mode]!.wall.push(wall);
  }
}
rmSync(tmp, { recursive: true, force: true });
const coldMedian = (mode: string) =>
  cold[mode] ? { inner: median(cold[mode].inner), wall: median(cold[mode].wall) } : null;
log("cold starts measured");

// --------------------------------------------------------------------------------------------------------- report

const fmtOps = (x: number | null) =>
  x === null ? "-" : x >= 1e6 ? `${(x / 1e6).toFixed(2)}M` : x >= 1e3 ? `${(x / 1e3).toFixed(1)}k` : x.toFixed(0);
const fmtRatio = (x: number | null, base: number | null) =>
  x === null || base === null ? "-" : `${(x / base).toFixed(2)}x`;
const pad = (s: string, w: number) => s + " ".repeat(Math.max(0, w - [...s].length));
const lpad = (s: string, w: number) => " ".repeat(Math.max(0, w - [...s].length)) + s;
const yesNo = (b: boolean | null | undefined) => (b === null || b === undefined ? "n/a" : b ? "yes" : "NO");
const lines: string[] = [];
const out = (s = "") => lines.push(s);

const aEntry = entries[0]!;
const aCorpus = opsOf(aEntry, "corpus");
const aLarge = opsOf(aEntry, "large");
const W = 28;

out(
  `Validator benchmark: node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? "?"}), ${new Date().toISOString()}`,
);
out(
  `Workloads: corpus = ${corpus.length} JSON fixtures of fixtures/index.json over ${schemaCount} answer schemas, one op = one full pass;`,
);
out(
  `           large  = SearchEnvelope status ok, 20 items of kind item with every optional field (${largeBytes} bytes of JSON).`,
);
out("");
out("Contenders");
for (const e of entries) out(`  ${pad(e.contender.label, W)} ${e.contender.route}`);
out("");
out("Correctness (checked before timing; a contender is timed only on workloads it gets right)");
out(
  `  ${pad("contender", W)} ${pad("corpus", 14)} ${pad("large", 8)} ${broken.map((b) => pad(`rejects ${b.name}`, 33)).join("")}agrees ` +
    `with (a) on mutated fixtures`,
);
for (const e of entries) {
  const corpusV = e.corpus.run ? e.corpus.verdict : "FAILS";
  const largeV = e.large.run ? e.large.verdict : "FAILS";
  const agree = `${e.disagreements.of - e.disagreements.count}/${e.disagreements.of}`;
  out(
    `  ${pad(e.contender.label, W)} ${pad(corpusV, 14)} ${pad(largeV, 8)} ${broken.map((b) => pad(yesNo(e.rejects[b.name]), 33)).join("")}${agree}`,
  );
}
for (const e of entries) {
  if (!e.corpus.run) out(`  ${e.contender.label} corpus: ${e.corpus.verdict}`);
  if (!e.large.run) out(`  ${e.contender.label} large: ${e.large.verdict}`);
  for (const ex of e.disagreements.examples) out(`  ${e.contender.label} differs: ${ex}`);
}
out(
  `  (mutated fixtures: ${mutated.length} variants, ${oursOnMutated.filter((x) => !x).length} of ` +
    `them refused by ours: first key dropped, unknown key at the top and in the last object, last ` +
    `string emptied, last number -1)`,
);
out("");
out(
  `Throughput: ops/s, median of ${PROCESSES * ROUNDS} samples of ${SAMPLE_MS} ms: ${PROCESSES} fresh node process(es) per contender (rotating order),`,
);
out(
  `  ${ROUNDS} samples each, the two workloads interleaved in one process, after ${WARMUP_MS} ms warm-up each. vs (a) = median ops/s over`,
);
out(`  that of (a): above 1x is faster than ours. range = slowest–fastest sample; ±: widest sample off the median.`);
out(
  `  ${pad("contender", W)} ${lpad("corpus ops/s", 13)} ${lpad("range", 13)} ${lpad(
    "vs (a)",
    7,
  )} ${lpad("±", 5)}   ${lpad("large ops/s", 12)} ${lpad("range", 13)} ${lpad("vs (a)", 7)} ${lpad("±", 5)}`,
);
for (const e of entries) {
  const cells = (w: "corpus" | "large", base: number | null) => {
    const ops = opsOf(e, w);
    const spread = spreadOf(e, w);
    const xs = samples.get(e)![w];
    return [
      fmtOps(ops),
      xs.length ? `${fmtOps(Math.min(...xs))}–${fmtOps(Math.max(...xs))}` : "-",
      fmtRatio(ops, base),
      spread === null ? "-" : `${(spread * 100).toFixed(0)}%`,
    ];
  };
  const [c, cb, cr, cs] = cells("corpus", aCorpus);
  const [l, lb, lr, ls] = cells("large", aLarge);
  out(
    `  ${pad(e.contender.label, W)} ${lpad(c!, 13)} ${lpad(cb!, 13)} ${lpad(cr!, 7)} ${lpad(cs!, 5)} ` +
      `  ${lpad(l!, 12)} ${lpad(lb!, 13)} ${lpad(lr!, 7)} ${lpad(ls!, 5)}`,
  );
}
out("");
out(
  `Head-to-head in one process: (a), (bf) and (b) loaded together, samples interleaved, ${PROCESSES} process(es) x ${ROUNDS} rounds; ratio = (a) / other`,
);
out(`  per round (same moments of the machine): median (min–max over ${h2h.a.large.length} rounds)`);
const fmtRange = (r: { median: number; min: number; max: number }, f: (x: number) => string) =>
  `${f(r.median)} (${f(r.min)}–${f(r.max)})`;
const x2 = (x: number) => `${x.toFixed(2)}x`;
for (const w of ["large", "corpus"] as const) {
  out(
    `  ${pad(w, 7)} (a) ${fmtRange(range(h2h.a[w]), fmtOps)} ops/s   (bf) ${fmtRange(range(h2h.bf[w]), fmtOps)}   (b) ${fmtRange(range(h2h.b[w]), fmtOps)}`,
  );
  out(
    `  ${pad("", 7)} (a)/(bf) ${fmtRange(range(h2hRatios("bf", w)), x2)}   (a)/(b) ${fmtRange(range(h2hRatios("b", w)), x2)}`,
  );
}
out("");
const coldA = coldMedian("ours-src");
const coldDist = coldMedian("ours-dist");
const coldB = coldMedian("ajv");
out(
  `Cold start: fresh node process each, import + first validation of the large answer, median of ${COLD_RUNS} (whole process wall time in brackets)`,
);
const coldLine = (label: string, m: { inner: number; wall: number } | null) =>
  m && out(`  ${pad(label, 50)} ${lpad(m.inner.toFixed(1), 7)} ms   (${m.wall.toFixed(0)} ms)`);
coldLine("(a) @sdgw/validators, src (as the bench imports)", coldA);
coldLine("(a) @sdgw/validators, dist/index.js (shipped)", coldDist);
coldLine("(b) ajv 8 runtime: import, read JSON, compile", coldB);
const coldRatio = coldA && coldB ? coldB.inner / coldA.inner : null;
const coldRatioDist = coldDist && coldB ? coldB.inner / coldDist.inner : null;
out(
  `  ratio (b) / (a): ${coldRatio?.toFixed(1) ?? "-"}x from src${coldRatioDist === null ? "" : `, ${coldRatioDist.toFixed(1)}x from dist`}`,
);
out("");
out(`Bundle: packages/validators/dist/index.js (${buildNote})`);
if (size)
  out(
    `  raw ${size.raw} bytes (${(size.raw / 1024).toFixed(1)} KiB), gzip -9 ${size.gzip} bytes (${(size.gzip / 1024).toFixed(1)} KiB)`,
  );
else out("  no dist/index.js");
out("");
// The contenders that check what the contract says (both broken copies refused): (bf) lets 2025-02-30 through.
const others = entries
  .slice(1)
  .filter((e) => Object.values(e.rejects).every((r) => r === true))
  .map((e) => ({ e, ops: opsOf(e, "large") }))
  .filter((x): x is { e: Entry; ops: number } => x.ops !== null);
const fastest = others.sort((x, y) => y.ops - x.ops)[0];
const speedMet = aLarge !== null && fastest !== undefined && aLarge >= fastest.ops;
const best = (e: Entry) => Math.max(...samples.get(e)!.large);
const bestOther = others.length
  ? others.map((x) => ({ e: x.e, ops: best(x.e) })).sort((x, y) => y.ops - x.ops)[0]!
  : undefined;
const vsFast = range(h2hRatios("bf", "large"));
const vsFullCorpus = range(h2hRatios("b", "corpus"));
out("Targets");
out(
  `  (a) >= 0.9x runtime ajv with fast formats on the large answer, one process: ${vsFast.median >= 0.9 ? "MET" : "NOT MET"} (${fmtRange(vsFast, x2)})`,
);
out(
  `  (a) >= 3x runtime ajv with full formats on the fixture corpus, one ` +
    `process: ${vsFullCorpus.median >= 3 ? "MET" : "NOT MET"} (${fmtRange(vsFullCorpus, x2)})`,
);
out(
  `  (a) at least as fast as the fastest of (b), (c), (d) on the large answer: ${speedMet ? "MET" : "NOT MET"}` +
    (fastest && aLarge !== null
      ? ` (median: (a) ${fmtOps(aLarge)} ops/s, fastest ` +
        `other ${fastest.e.contender.label} ${fmtOps(fastest.ops)}, (a) ` +
        `at ${(aLarge / fastest.ops).toFixed(2)}x of it;`
      : "") +
    (bestOther && aLarge !== null
      ? ` best samples: (a) ${fmtOps(best(aEntry))}, ${bestOther.e.contender.label} ${fmtOps(bestOther.ops)})`
      : ""),
);
const coldVerdict = (r: number | null) => (r === null ? "-" : `${r >= 5 ? "MET" : "NOT MET"} (${r.toFixed(1)}x)`);
out(
  `  cold start of (a) at least 5x faster than (b), judged on the shipped ` +
    `bundle: ${coldVerdict(coldRatioDist)} (from src, where Node also strips the types of our ` +
    `.ts: ${coldRatio === null ? "-" : `${coldRatio.toFixed(1)}x`})`,
);
out(`  (run took ${((Date.now() - started) / 1000).toFixed(0)} s)`);

process.stdout.write(`${lines.join("\n")}\n`);

mkdirSync(join(ROOT, "bench/results"), { recursive: true });
writeFileSync(
  join(ROOT, "bench/results/validators.json"),
  `${JSON.stringify(
    {
      node: process.version,
      cores: availableParallelism(),
      date: new Date().toISOString(),
      corpus: {
        fixtures: corpus.length,
        schemas: schemaCount,
        mapping: corpus.map((f) => ({ file: f.file, schema: f.schema })),
      },
      largeAnswerBytes: largeBytes,
      contenders: entries.map((e) => ({
        key: e.contender.key,
        label: e.contender.label,
        route: e.contender.route,
        corpus: {
          verdict: e.corpus.verdict,
          opsPerSec: opsOf(e, "corpus"),
          vsOurs: aCorpus && opsOf(e, "corpus") ? opsOf(e, "corpus")! / aCorpus : null,
        },
        large: {
          verdict: e.large.verdict,
          opsPerSec: opsOf(e, "large"),
          vsOurs: aLarge && opsOf(e, "large") ? opsOf(e, "large")! / aLarge : null,
        },
        rejects: e.rejects,
        disagreements: e.disagreements,
        samples: samples.get(e),
      })),
      headToHead: {
        samples: h2h,
        oursOverAjvFast: { large: range(h2hRatios("bf", "large")), corpus: range(h2hRatios("bf", "corpus")) },
        oursOverAjvFull: { large: range(h2hRatios("b", "large")), corpus: range(h2hRatios("b", "corpus")) },
      },
      coldStartMs: {
        oursSrc: coldA,
        oursDist: coldDist,
        ajvRuntime: coldB,
        ratioSrc: coldRatio,
        ratioDist: coldRatioDist,
      },
      bundle: size,
      targets: {
        fastestOnLarge: speedMet,
        ajvFast09xOnLarge: vsFast.median >= 0.9,
        ajvFull3xOnCorpus: vsFullCorpus.median >= 3,
        coldStart5x: coldRatioDist !== null && coldRatioDist >= 5,
      },
    },
    null,
    2,
  )}\n`,
);
