/**
 * The built command `sdgw-conformance` (dist/cli.js, as installed) against the mock, the broken server, a server
 * that records when the first request came, and the reference server with keys from `sdgw-admin conformance-keys`.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../../../generators/src/testing/dist.ts";
import { startBrokenServer, type BrokenServer } from "./broken-server.ts";
import { startMockHttp, type MockHttp } from "./mock-http.ts";
import { startReferenceServer } from "./reference-server.ts";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(PKG, "dist", "cli.js");

/** Runs the command without blocking this process (which serves the mock it talks to). */
function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { timeout: 60_000, env: { ...process.env, SDGW_KEY: "", SDGW_BASE_URL: "" } },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

let mock: MockHttp;
let broken: BrokenServer;
beforeAll(async () => {
  // The command runs the built package, which imports the built packages it depends on: build those first, so the
  // test does not depend on another test having built them.
  for (const dep of ["types", "validators", "client"]) ensureBuilt(join(PKG, "..", dep));
  ensureBuilt(PKG);
  mock = await startMockHttp({ balance: 10_000 });
  broken = await startBrokenServer();
}, 200_000);
afterAll(async () => {
  await mock?.close();
  await broken?.close();
});

describe("sdgw-conformance", () => {
  it("prints one line per check, the summary, and ends with the coverage summary; exits 0 against the mock", async () => {
    // The mock serves no MCP endpoint: --mcp-path none.
    const r = await cli([
      "--base-url",
      mock.baseUrl,
      "--key",
      "sdgw_test_key",
      "--noscope-key",
      "sdgw_noscope_key",
      "--mcp-path",
      "none",
      "--seed",
      "35",
    ]);
    // Standard error holds only the warning (D180), one line.
    expect(r.stderr).toMatch(
      /^sdgw-conformance: warning: this run spends about \d+ credits of the account of <key> [^\n]*\n$/,
    );
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines.filter((l) => /^(PASS|FAIL|N\/A ) {2}\S+ {2}/.test(l))).toHaveLength(99);
    expect(r.stdout).toMatch(/^N\/A {3}results\.other-key {2}.* — no second key given \(--second-key\)$/m);
    expect(r.stdout).toMatch(
      /^93 passed, 0 failed, 6 not applicable \(http:\/\/127\.0\.0\.1:\d+, [\d.]+ s, seed 35\)$/m,
    );
    expect(r.stdout).toMatch(
      /^PASS {2}flows\.quote-run {2}.* — batch_stats of \d post\(s\): quoted (\d+) \(free\), run and charged \1 /m,
    );
    // The run ends with the coverage: a headline, one line per operation with its statuses, what was not reached.
    const from = lines.findIndex((l) => l.startsWith("Coverage: "));
    expect(from).toBeGreaterThan(lines.findIndex((l) => /^93 passed/.test(l)));
    expect(lines[from]).toMatch(
      /^Coverage: (\d+) of 22 operations exercised, (\d+) of 19 error codes reached, \d+ background runs? started \(\d+ ended\), \d+ requests$/,
    );
    const [, exercised, reached] = /^Coverage: (\d+) of 22 operations exercised, (\d+) of 19/.exec(lines[from]!)!;
    const opLines = lines
      .slice(from + 1)
      .filter((l) => /^ {2}(GET|POST|DELETE) \S+ \(\w+\): \d{3}( \d{3})*( — [a-z_]+(, [a-z_]+)*)?$/.test(l));
    expect(opLines).toHaveLength(Number(exercised));
    expect(lines.slice(from + 1)).toContainEqual(
      expect.stringMatching(/^ {2}GET \/v1\/search \(search\): 200 202 400 401 .*409 422/),
    );
    expect(lines.at(-3)).toMatch(/^ {2}error codes reached: invalid_params, /);
    expect(lines.at(-3)!.split(": ")[1]!.split(", ")).toHaveLength(Number(reached));
    expect(lines.at(-2)).toMatch(/^ {2}error codes not reached: /);
    expect(lines.at(-3)!.split(", ").length + lines.at(-2)!.split(", ").length).toBe(19);
    // Then the checks that could not run, each with why.
    expect(lines.at(-1)).toMatch(
      /^ {2}checks that could not run: .*mcp\.flow \(MCP is not checked \(mcpPath: false\)\)/,
    );
  });

  it("writes JUnit XML with --junit and the JSON report with --json-report, and still prints the lines", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sdgw-conformance-cli-"));
    try {
      const junit = join(dir, "reports", "conformance.xml"); // a folder that does not exist yet
      const json = join(dir, "report.json");
      const r = await cli([
        "--base-url",
        broken.baseUrl,
        "--key",
        "sdgw_test_key",
        "--only",
        "auth.,params.count-21",
        "--junit",
        junit,
        "--json-report",
        json,
      ]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^FAIL {2}params\.count-21 /m);
      expect(r.stdout).toMatch(/^Coverage: /m);
      const report = JSON.parse(readFileSync(json, "utf8")) as {
        results: Array<{ id: string; outcome: string; message: string; ms: number }>;
        passed: number;
        failed: number;
        notApplicable: number;
        coverage: {
          operations: { exercised: number; statuses: Record<string, number[]> };
          errorCodes: { reached: string[] };
        };
      };
      expect(report.results).toHaveLength(11);
      expect([report.passed, report.failed, report.notApplicable]).toEqual([6, 4, 1]);
      expect(report.coverage.operations.statuses["getAccount"]).toEqual([200, 401]);
      expect(report.coverage.errorCodes.reached).toEqual(["unauthorized"]);

      const xml = readFileSync(junit, "utf8");
      expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')).toBe(true);
      const attrs = (tag: string) => Object.fromEntries([...tag.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      const suite = attrs(/<testsuite [^>]*>/.exec(xml)![0]);
      expect(suite).toMatchObject({ name: "sdgw-conformance", tests: "11", failures: "4", skipped: "1", errors: "0" });
      const cases = [...xml.matchAll(/<testcase ([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)].map((m) => ({
        ...attrs(m[1]!),
        body: m[3] ?? "",
      }));
      expect(cases).toHaveLength(11);
      expect(cases.filter((c) => c.body.includes("<failure "))).toHaveLength(4);
      expect(cases.filter((c) => c.body.includes("<skipped "))).toHaveLength(1);
      expect(cases.map((c) => c["name"]!.split(":")[0])).toEqual(report.results.map((x) => x.id));
      for (const [i, c] of cases.entries()) expect(Number(c["time"])).toBeCloseTo(report.results[i]!.ms / 1000, 3);
      const failed = cases.find((c) => c["name"]!.startsWith("params.count-21:"))!;
      expect(failed["classname"]).toBe("params");
      // The message, escaped: its backticks and arrows survive, its quotes and ampersands are entities.
      expect(/<failure message="([^"]*)" type="failed">/.exec(failed.body)![1]).toMatch(
        /count=21 .*→ HTTP 200 \{&quot;request_id&quot;.*\(seed: count is 1 to 20\)/,
      );
      expect(cases.find((c) => c.body.includes("<skipped "))!["name"]).toMatch(/^auth\.scope-denied:/);
      expect(xml).toMatch(/<system-out>Coverage: \d+ of 22 operations exercised/);
      expect(xml).not.toMatch(/sdgw_test_key/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("prints the report as JSON with --json", async () => {
    const r = await cli([
      "--base-url",
      mock.baseUrl,
      "--key",
      "sdgw_test_key",
      "--only",
      "auth.,routes.unknown",
      "--json",
    ]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as {
      passed: number;
      failed: number;
      notApplicable: number;
      results: Array<{ id: string; outcome: string }>;
    };
    expect(report.results.map((x) => x.id)).toEqual(
      expect.arrayContaining(["auth.x-api-key", "auth.scope-denied", "routes.unknown"]),
    );
    expect(report.results).toHaveLength(11);
    expect(report.failed).toBe(0);
  });

  it("exits 1 against a broken server, the failures on FAIL lines", async () => {
    const r = await cli([
      "--base-url",
      broken.baseUrl,
      "--key",
      "sdgw_test_key",
      "--only",
      "params.count-21,auth.key-in-query",
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAIL {2}params\.count-21 {2}.*HTTP 200.*\(seed: count is 1 to 20\)/m);
    expect(r.stdout).toMatch(/^FAIL {2}auth\.key-in-query {2}.*D25\)/m);
    expect(r.stdout).toMatch(/^0 passed, 2 failed, 0 not applicable/m);
  });

  it("exits 2 when a report file cannot be written, or the fallback tool's body is not a JSON object", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sdgw-conformance-cli-"));
    try {
      const r = await cli([
        "--base-url",
        mock.baseUrl,
        "--key",
        "sdgw_test_key",
        "--only",
        "routes.unknown",
        "--junit",
        dir,
      ]); // a folder, not a file
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^sdgw-conformance: could not write the report: /m);
      for (const body of ["[1]", "{nope"]) {
        const bad = await cli(["--base-url", mock.baseUrl, "--key", "sdgw_test_key", "--slow-tool-body", body]);
        expect(bad.code, body).toBe(2);
        expect(bad.stderr).toMatch(/^sdgw-conformance: --slow-tool-body (must be a JSON object|is not JSON)/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("exits 2 with the usage when the base URL or key is missing, or an option is unknown", async () => {
    for (const args of [
      ["--base-url", mock.baseUrl],
      ["--key", "k"],
      ["--base-url", mock.baseUrl, "--key", "k", "--nope"],
      ["--base-url", mock.baseUrl, "--key", "k", "--only", "no.such-check"],
    ]) {
      const r = await cli(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/^sdgw-conformance: /);
    }
  });

  it("lists the checks with --list", async () => {
    const r = await cli(["--list"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n")).toHaveLength(99);
  });
});

/** Runs the command, its output read as it comes (the test looks at what it had said when a request came). */
function spawnCli(args: string[]): {
  stderr: () => string;
  done: Promise<{ code: number; stdout: string; stderr: string }>;
} {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, SDGW_KEY: "", SDGW_BASE_URL: "" } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill(), 120_000);
  return {
    stderr: () => stderr,
    done: new Promise((resolve) =>
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code: code ?? 1, stdout, stderr });
      }),
    ),
  };
}

/** A server on 127.0.0.1 that answers every request 401 and calls `onRequest` as each one comes. */
async function recordingServer(
  onRequest: () => void,
): Promise<{ baseUrl: string; requests: () => number; close(): Promise<void> }> {
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests++;
    onRequest();
    req.resume();
    res.writeHead(401, { "content-type": "application/json" }).end(
      JSON.stringify({
        request_id: "req_rec",
        schema_version: "v1",
        code: "unauthorized",
        reason: "invalid",
        message: "no",
        retryable: false,
        fix: { note: "no" },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("sdgw-conformance: what it does to your keys (D178–D180)", () => {
  it("says before the first request what the run spends and which key its refusals may hold back", async () => {
    let atFirst: string | undefined;
    let run: ReturnType<typeof spawnCli> | undefined;
    const rec = await recordingServer(() => (atFirst ??= run?.stderr() ?? ""));
    try {
      run = spawnCli([
        "--base-url",
        rec.baseUrl,
        "--key",
        "sdgw_mine",
        "--second-key",
        "sdgw_mine_2",
        "--only",
        "auth.x-api-key",
      ]);
      const r = await run.done;
      expect(rec.requests()).toBeGreaterThan(0);
      // What standard error held when the server got the first request: the whole warning.
      expect(atFirst).toMatch(
        /^sdgw-conformance: warning: this run spends about \d+ credits of the account of <key> .*, and sends about 35 deliberate refusals, which can make a server hold <second-key> back for 5 minutes \(429 free_failure_limit, D45\)\. To keep your own keys untouched, give the suite keys of its own: --keys-command "sdgw-admin conformance-keys"/,
      );
      expect(r.stderr).toBe(atFirst);
      expect(r.stderr).not.toMatch(/sdgw_mine/); // the keys are named, never printed
    } finally {
      await rec.close();
    }
  });

  it("a --keys-command whose output is wrong names the field (or says what is wrong) and sends nothing; a key option beside it is refused", async () => {
    const rec = await recordingServer(() => undefined);
    const node = JSON.stringify(process.execPath);
    const printing = (value: unknown) =>
      `${node} -e ${JSON.stringify(`process.stdout.write(${JSON.stringify(JSON.stringify(value))})`)}`;
    try {
      for (const [command, error] of [
        [
          printing({ key: "sdgw_k", secondKey: 5 }),
          /^sdgw-conformance: --keys-command: field "secondKey" must be a key/,
        ],
        [printing({ secondKey: "sdgw_k" }), /^sdgw-conformance: --keys-command: field "key" is missing/],
        [
          printing({ key: "sdgw_k", daily_limit_key: "sdgw_d" }),
          /^sdgw-conformance: --keys-command: unknown field "daily_limit_key"; the fields are key, secondKey/,
        ],
        [printing(["sdgw_k"]), /^sdgw-conformance: --keys-command must give a JSON object .*not an array/],
        [
          `${node} -e "process.stdout.write('key=sdgw_k')"`,
          /^sdgw-conformance: --keys-command printed no JSON \(10 characters on standard output, not shown/,
        ],
        [
          `${node} -e "process.stderr.write('no database'); process.exit(3)"`,
          /^sdgw-conformance: --keys-command exited with status 3: no database/,
        ],
      ] as const) {
        const r = await cli(["--base-url", rec.baseUrl, "--keys-command", command]);
        expect(r.code, command).toBe(2);
        expect(r.stderr, command).toMatch(error);
        expect(r.stdout, command).toBe("");
        expect(r.stderr, command).not.toMatch(/sdgw_k/); // what the command printed may be keys: never shown
      }
      const mixed = await cli([
        "--base-url",
        rec.baseUrl,
        "--key",
        "sdgw_k",
        "--keys-command",
        printing({ key: "sdgw_k" }),
      ]);
      expect(mixed.code).toBe(2);
      expect(mixed.stderr).toMatch(
        /^sdgw-conformance: --keys-command gives every key of the run: leave out --key, or leave out --keys-command/,
      );
      expect(rec.requests()).toBe(0);
    } finally {
      await rec.close();
    }
  });

  it("--keys-command with sdgw-admin conformance-keys on the reference server's database: no failure, your own key untouched", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sdgw-conformance-keys-"));
    const db = join(dir, "sdgw.sqlite");
    const server = await startReferenceServer({ dbPath: db });
    try {
      // The user's own key (of the server's first account): its balance and standing are read before and after.
      const own = server.keys.key;
      const account = async () =>
        (await (await fetch(`${server.baseUrl}/v1/account`, { headers: { "X-API-Key": own } })).json()) as {
          billing: { balance_credits: number };
        };
      const before = (await account()).billing.balance_credits;
      const admin = join(PKG, "..", "server", "src", "bin", "sdgw-admin.ts");
      const command = [process.execPath, "--conditions=source", "--no-warnings", admin, "conformance-keys", "--db", db]
        .map((a) => JSON.stringify(a))
        .join(" ");
      const r = await cli(["--base-url", server.baseUrl, "--keys-command", command, "--seed", "35"]);
      expect(r.stdout).toMatch(/^\d+ passed, 0 failed, 1 not applicable \(/m); // errors.rate-limited: no burst given
      expect(r.stdout).toMatch(/^N\/A {3}errors\.rate-limited /m);
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(
        /^sdgw-conformance: warning: .*these keys came from the keys hook \(--keys-command, D178\)/,
      );
      // Every check that needs an optional key ran: the command gave them all.
      for (const id of ["results.other-key", "auth.scope-denied", "errors.insufficient-balance", "errors.daily-limit"])
        expect(r.stdout).toMatch(new RegExp(`^PASS {2}${id.replace(".", "\\.")} `, "m"));
      // The user's own key: not spent, not held back.
      expect((await account()).billing.balance_credits).toBe(before);
      const call = await fetch(`${server.baseUrl}/v1/search?platform=x&query=after`, {
        headers: { "X-API-Key": own, "Idempotency-Key": crypto.randomUUID() },
      });
      expect(call.status).toBe(200);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
