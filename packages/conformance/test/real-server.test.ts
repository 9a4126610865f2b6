/**
 * The command against the real reference server, as a user starts it: `node --conditions=source
 * packages/server/src/main.ts` in a child process (a free port of 127.0.0.1, a fresh SQLite file), its banner read
 * for the address, the demo account and its key, the other keys made with `sdgw-admin` (`pnpm admin`). Twice, at
 * once: with the defaults (every call answers within the request, so the 202 comes from the tool fallback, D51) and
 * with `SDGW_WAIT_MS=50 SDGW_LATENCY_MS=1000 SDGW_POLL_AFTER_SECONDS=1` (every call answers 202, and runs started by earlier checks are
 * charged while later ones compare balances unless the suite settles them first). Both must fail nothing, and the
 * checks that follow a 202 must pass, not be skipped.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConformanceReport } from "../src/index.ts";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const MAIN = join(ROOT, "packages", "server", "src", "main.ts");
const ADMIN = join(ROOT, "packages", "server", "src", "bin", "sdgw-admin.ts");
const CLI = join(ROOT, "packages", "conformance", "src", "cli.ts");

/** The environment without any SDGW_* of the caller's (the servers and the command get only what is set here). */
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SDGW_")));
const children = new Set<ChildProcess>();
const dirs: string[] = [];

interface Started {
  url: string;
  key: string;
  account: string;
  db: string;
  child: ChildProcess;
}

/** Starts the server like `pnpm start` and reads its banner (the key is printed once, on the first start). */
function startServer(env: Record<string, string>): Promise<Started> {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-conformance-real-"));
  dirs.push(dir);
  const db = join(dir, "sdgw.sqlite");
  const child = spawn(process.execPath, ["--conditions=source", MAIN], {
    cwd: ROOT,
    env: { ...baseEnv, SDGW_HOST: "127.0.0.1", SDGW_PORT: "0", SDGW_DB: db, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(
      () => reject(new Error(`the server printed no banner within 30 s (stderr: ${err.slice(0, 500)})`)),
      30_000,
    );
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.once("exit", (code) =>
      reject(new Error(`the server exited with ${code} before its banner (stderr: ${err.slice(0, 500)})`)),
    );
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (!out.includes("Stop with Ctrl-C.")) return;
      clearTimeout(timer);
      const url = /reference server on (http:\/\/127\.0\.0\.1:\d+) /.exec(out)?.[1];
      const key = /^ {2}(sdgw_\S+)$/m.exec(out)?.[1];
      const account = /Demo account (acc_\w+) with/.exec(out)?.[1];
      if (!url || !key || !account) reject(new Error("the banner names no address, demo account or key"));
      else resolve({ url, key, account, db, child });
    });
  });
}

/** Runs a node script of the repository; resolves its exit code and output (it never rejects). */
function node(
  script: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ["--conditions=source", script, ...args],
      // Since issue 35 the suite sends every operation a valid request; on the server where every call is a
      // background run (Retry-After 1 s there; with the default 5 s the run takes about three minutes).
      { cwd: ROOT, env: { ...baseEnv, ...env }, timeout: 400_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        children.delete(child);
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
      },
    );
    children.add(child);
  });
}

/** `pnpm admin …` against a server's database: the JSON it prints. */
async function admin(db: string, args: string[]): Promise<Record<string, string>> {
  const r = await node(ADMIN, [...args, "--db", db]);
  if (r.code !== 0) throw new Error(`sdgw-admin ${args[0]}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, string>;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  report: ConformanceReport;
  junit: string;
  keys: string[];
}

/** Starts a server, makes every optional key, and runs the whole suite through the command with both report files. */
async function conformance(env: Record<string, string>): Promise<Run> {
  const s = await startServer(env);
  const secret = async (args: string[]) =>
    (await admin(s.db, ["create-key", "--account", s.account, ...args]))["secret"]!;
  const secondKey = await secret(["--name", "second"]);
  const noscopeKey = await secret(["--name", "no read_data", "--no-read-data"]);
  const dailyLimitKey = await secret(["--name", "daily limit 0", "--daily-limit", "0"]);
  const broke = (await admin(s.db, ["create-account", "--name", "No credits"]))["account"]!;
  const insufficientBalanceKey = (await admin(s.db, ["create-key", "--account", broke, "--name", "broke"]))["secret"]!;
  const out = mkdtempSync(join(tmpdir(), "sdgw-conformance-reports-"));
  dirs.push(out);
  const junit = join(out, "junit.xml");
  const json = join(out, "report.json");
  const r = await node(
    CLI,
    [
      "--base-url",
      s.url,
      "--second-key",
      secondKey,
      "--noscope-key",
      noscopeKey,
      "--daily-limit-key",
      dailyLimitKey,
      "--insufficient-balance-key",
      insufficientBalanceKey,
      "--rate-limit-burst",
      "15",
      "--junit",
      junit,
      "--json-report",
      json,
    ],
    { SDGW_KEY: s.key },
  );
  return {
    ...r,
    report: JSON.parse(readFileSync(json, "utf8")) as ConformanceReport,
    junit: readFileSync(junit, "utf8"),
    keys: [s.key, secondKey, noscopeKey, dailyLimitKey, insufficientBalanceKey],
  };
}

/** The checks that follow the suite's 202 run once it has ended: they must pass on both servers. */
const FOLLOW_THE_RUN = [
  "runs.202-answer",
  "runs.lifecycle",
  "runs.charged-once",
  "results.request-id",
  "results.json",
  "results.csv",
  "results.ndjson",
  "idempotency.replay-after-run",
  "results.other-key",
  "results.format-invalid",
];
/** The checks that need the run still going when they ask. */
const WHILE_RUNNING = ["idempotency.in-progress", "runs.running-read"];

let plain: Run;
let slow: Run;
beforeAll(async () => {
  [plain, slow] = await Promise.all([
    conformance({}),
    conformance({ SDGW_WAIT_MS: "50", SDGW_LATENCY_MS: "1000", SDGW_POLL_AFTER_SECONDS: "1" }),
  ]);
}, 420_000);
afterAll(async () => {
  await Promise.all(
    [...children].map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once("exit", () => resolve());
          c.kill("SIGTERM");
          setTimeout(() => {
            c.kill("SIGKILL");
            resolve();
          }, 5000).unref();
        }),
    ),
  );
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const outcome = (run: Run, id: string) => run.report.results.find((r) => r.id === id)?.outcome ?? "(no such check)";
const messageOf = (run: Run, id: string) => run.report.results.find((r) => r.id === id)?.message ?? "";
const text = (run: Run) => `${run.stdout}\n${run.stderr}`;

describe.each([
  ["the defaults (pnpm start)", () => plain],
  ["SDGW_WAIT_MS=50 SDGW_LATENCY_MS=1000 SDGW_POLL_AFTER_SECONDS=1", () => slow],
])("sdgw-conformance against the reference server started with %s", (_name, get) => {
  it("fails nothing, exits 0, and prints no key", () => {
    const run = get();
    expect(run.report.failed, text(run)).toBe(0);
    expect(run.code, text(run)).toBe(0);
    // Standard error holds the warning of what the run does to the keys (D180), and nothing else.
    expect(run.stderr).toMatch(/^sdgw-conformance: warning: this run spends about \d+ credits [^\n]*\n$/);
    expect(run.stdout).not.toMatch(/^FAIL /m);
    for (const k of run.keys) expect(run.stdout + run.junit + JSON.stringify(run.report)).not.toContain(k);
  });

  it("passes every check that follows the 202 run (none is skipped), the balance checks included", () => {
    const run = get();
    for (const id of [...FOLLOW_THE_RUN, "capabilities.no-value", "errors.max-cost", "errors.rate-limited"])
      expect(outcome(run, id), `${id}: ${messageOf(run, id)}`).toBe("passed");
  });

  it("follows every background run it started to its end", () => {
    const { runs } = get().report.coverage;
    expect(runs.started).toBeGreaterThan(0);
    expect(runs.ended).toBe(runs.started);
  });

  it("writes JUnit XML whose counts are the report's", () => {
    const run = get();
    const suite = /<testsuite name="sdgw-conformance" tests="(\d+)" failures="(\d+)" errors="0" skipped="(\d+)"/.exec(
      run.junit,
    );
    expect(suite?.slice(1).map(Number)).toEqual([run.report.results.length, 0, run.report.notApplicable]);
    expect(run.junit.match(/<testcase /g)).toHaveLength(run.report.results.length);
    expect(run.junit.match(/<skipped /g) ?? []).toHaveLength(run.report.notApplicable);
    expect(run.junit).not.toMatch(/<failure /);
  });
});

describe("the 202 on each server", () => {
  it("with the defaults, comes from the tool fallback: the slow search answers 200, batch_stats of 11 calls answers 202 (D51)", () => {
    expect(messageOf(plain, "runs.202-answer")).toMatch(
      /^POST \/v1\/tools\/batch_stats .*\(the slow search answered 200; the batch_stats fallback, 11 planned calls, D51\): handle h_/,
    );
    expect(messageOf(plain, "runs.charged-once")).toMatch(/^batch_stats run: charged 11 once/);
    // 400: params.generated.batchStats, an invalid request drawn from its schema
    expect(plain.report.coverage.operations.statuses.batchStats).toEqual([200, 202, 400]);
  });

  it("with the defaults, the run ends before anything can see it running: those two checks say exactly why", () => {
    for (const id of WHILE_RUNNING) {
      expect(outcome(plain, id), messageOf(plain, id)).toBe("not_applicable");
      expect(messageOf(plain, id)).toMatch(
        /^the run had already ended when .*, \d+ ms after its 202 .*: the fallback batch_stats run \(11 planned calls\) ended within that time, as this server's platforms answer at once .* so it cannot be seen running/,
      );
    }
    expect(plain.report.results.filter((r) => r.outcome === "not_applicable").map((r) => r.id)).toEqual(WHILE_RUNNING);
  });

  it("with SDGW_WAIT_MS=50 SDGW_LATENCY_MS=1000 SDGW_POLL_AFTER_SECONDS=1, comes from the slow search, and the checks of a running run pass too", () => {
    expect(messageOf(slow, "runs.202-answer")).toMatch(/^handle h_\w+, Retry-After \d+$/);
    for (const id of WHILE_RUNNING) expect(outcome(slow, id), messageOf(slow, id)).toBe("passed");
    // Every call answers 202 there: the checks of a call answered in the request have nothing to look at.
    expect(slow.report.results.filter((r) => r.outcome === "not_applicable").map((r) => r.id)).toEqual([
      "search.single",
      "search.fanout",
      "idempotency.replay",
    ]);
    expect(slow.report.coverage.runs.started).toBeGreaterThan(5);
  });
});
