/** The built command `sdgw-conformance` (dist/cli.js, as installed) against the mock and the broken server. */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../../../generators/src/testing/dist.ts";
import { startBrokenServer, type BrokenServer } from "./broken-server.ts";
import { startMockHttp, type MockHttp } from "./mock-http.ts";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(PKG, "dist", "cli.js");

/** Runs the command without blocking this process (which serves the mock it talks to). */
function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { timeout: 60_000, env: { ...process.env, SDGW_KEY: "", SDGW_BASE_URL: "" } }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
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
  it("prints one line per check and the summary, and exits 0 against the mock", async () => {
    const r = await cli(["--base-url", mock.baseUrl, "--key", "sdgw_test_key", "--noscope-key", "sdgw_noscope_key"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines.filter((l) => /^(PASS|FAIL|N\/A ) {2}\S+ {2}/.test(l))).toHaveLength(53);
    expect(r.stdout).toMatch(/^N\/A {3}results\.other-key {2}.* — no second key given \(--second-key\)$/m);
    expect(lines.at(-1)).toMatch(/^49 passed, 0 failed, 4 not applicable \(http:\/\/127\.0\.0\.1:\d+, [\d.]+ s\)$/);
  });

  it("prints the report as JSON with --json", async () => {
    const r = await cli(["--base-url", mock.baseUrl, "--key", "sdgw_test_key", "--only", "auth.,routes.unknown", "--json"]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { passed: number; failed: number; notApplicable: number; results: Array<{ id: string; outcome: string }> };
    expect(report.results.map((x) => x.id)).toEqual(expect.arrayContaining(["auth.x-api-key", "auth.scope-denied", "routes.unknown"]));
    expect(report.results).toHaveLength(11);
    expect(report.failed).toBe(0);
  });

  it("exits 1 against a broken server, the failures on FAIL lines", async () => {
    const r = await cli(["--base-url", broken.baseUrl, "--key", "sdgw_test_key", "--only", "params.count-21,auth.key-in-query"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAIL {2}params\.count-21 {2}.*HTTP 200.*\(seed: count is 1 to 20\)/m);
    expect(r.stdout).toMatch(/^FAIL {2}auth\.key-in-query {2}.*D25\)/m);
    expect(r.stdout).toMatch(/^0 passed, 2 failed, 0 not applicable/m);
  });

  it("exits 2 with the usage when the base URL or key is missing, or an option is unknown", async () => {
    for (const args of [["--base-url", mock.baseUrl], ["--key", "k"], ["--base-url", mock.baseUrl, "--key", "k", "--nope"], ["--base-url", mock.baseUrl, "--key", "k", "--only", "no.such-check"]]) {
      const r = await cli(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/^sdgw-conformance: /);
    }
  });

  it("lists the checks with --list", async () => {
    const r = await cli(["--list"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n")).toHaveLength(53);
  });
});
