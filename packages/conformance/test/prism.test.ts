/**
 * A third-party checker: Stoplight Prism's validating proxy (a pinned devDependency of this package, run with this
 * Node from its own bin file: no download while testing, and the process killed is Prism itself, not a launcher
 * that would leave it running) stands in front of the reference server while the conformance suite drives it. Prism reports what it
 * finds wrong in each answer in an `sl-violations` header; any violation of an ANSWER fails this test (the suite
 * sends deliberately bad requests, so request violations are expected and only counted).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runConformance } from "../src/index.ts";
import { startBrokenServer } from "./broken-server.ts";
import { startReferenceServer } from "./reference-server.ts";

const SPEC = fileURLToPath(new URL("../../../spec/openapi.yaml", import.meta.url));
const PRISM_PACKAGE = createRequire(import.meta.url).resolve("@stoplight/prism-cli/package.json");
const PRISM = join(
  dirname(PRISM_PACKAGE),
  (createRequire(import.meta.url)(PRISM_PACKAGE) as { bin: { prism: string } }).bin.prism,
);

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

interface Violation {
  location?: string[];
  severity?: string;
  message?: string;
  code?: string;
}

const prisms: ChildProcess[] = [];
const server = await startReferenceServer();
const broken = await startBrokenServer();
afterAll(async () => {
  await Promise.all(
    prisms.map((p) =>
      p.exitCode !== null || p.signalCode !== null
        ? undefined
        : new Promise((resolve) => p.once("exit", resolve).kill("SIGTERM")),
    ),
  );
  await server.close();
  await broken.close();
});

/** Starts Prism's validating proxy in front of `upstream`; answers its base URL once it answers. */
async function startPrism(upstream: string): Promise<string> {
  const port = await freePort();
  const prism = spawn(
    process.execPath,
    [PRISM, "proxy", SPEC, upstream, "--port", String(port), "--host", "127.0.0.1", "--errors", "false", "-v", "warn"],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  prisms.push(prism);
  let log = "";
  prism.stdout!.on("data", (c: Buffer) => (log += c.toString()));
  prism.stderr!.on("data", (c: Buffer) => (log += c.toString()));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await fetch(`${base}/v1/capabilities`);
      return base;
    } catch {
      if (Date.now() > deadline || prism.exitCode !== null) throw new Error(`Prism did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** A fetch that collects what Prism says of each answer. */
function recorder() {
  const answerViolations: string[] = [];
  const counts = { answers: 0, requestViolations: 0 };
  const fetchRecording: typeof fetch = async (input, init) => {
    let res: Response;
    try {
      res = await fetch(input, init);
    } catch (error) {
      // Prism's own server closes an idle keep-alive connection after 5 s, the interval the suite polls a handle at:
      // a GET sent on a connection Prism closes at that moment fails without reaching the gateway. A GET changes
      // nothing, so it is sent once more (on a new connection); anything else fails as it is.
      if ((init?.method ?? "GET") !== "GET") throw error;
      res = await fetch(input, init);
    }
    counts.answers++;
    const header = res.headers.get("sl-violations");
    if (header) {
      for (const v of JSON.parse(header) as Violation[]) {
        if (v.location?.[0] === "response")
          answerViolations.push(
            `${init?.method ?? "GET"} ${String(input)} → ${res.status}: ${v.location.join(".")} ${v.message ?? v.code}`,
          );
        else counts.requestViolations++;
      }
    }
    return res;
  };
  return { fetch: fetchRecording, answerViolations, counts };
}

describe("the reference server behind Prism's validating proxy", () => {
  it("gives no answer that Prism flags while the conformance suite drives it", async () => {
    const base = await startPrism(server.baseUrl);
    const seen = recorder();
    const report = await runConformance({ baseUrl: base, ...server.keys, rateLimitBurst: 15, fetch: seen.fetch });
    console.log(
      `Prism: ${seen.counts.answers} answers checked, ${seen.answerViolations.length} answer ` +
        `violations, ${seen.counts.requestViolations} request violations (the suite's deliberate bad ` +
        `requests); suite ${report.passed} passed, ${report.failed} failed, ${report.notApplicable} n/a`,
    );
    expect(seen.answerViolations).toEqual([]);
    expect(seen.counts.answers).toBeGreaterThan(50);
    expect(seen.counts.requestViolations).toBeGreaterThan(0); // Prism is really checking
    expect(
      report.failed,
      JSON.stringify(
        report.results.filter((r) => r.outcome === "failed"),
        null,
        1,
      ),
    ).toBe(0);
  }, 240_000);

  it("flags the answers of a deliberately broken server", async () => {
    const base = await startPrism(broken.baseUrl);
    const seen = recorder();
    await runConformance(
      { baseUrl: base, key: "sdgw_test_key", fetch: seen.fetch },
      { only: ["search.", "auth.x-api-key"] },
    );
    console.log(
      `Prism on the broken server: ${seen.answerViolations.length} answer violations, e.g. ${seen.answerViolations[0]}`,
    );
    expect(seen.answerViolations.length).toBeGreaterThan(0);
  }, 240_000);
});
