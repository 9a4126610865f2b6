/**
 * The MCP Inspector's CLI (`@modelcontextprotocol/inspector` 2.x, `mcp-inspector --cli`), the tool server authors
 * check a server with, run as its own process against the started reference server's `/mcp` over a real socket
 * (and once against `sdgw-mcp` over stdio). Its 2.x flags: `--cli <url>` (the transport is told from the URL: `/mcp`
 * is Streamable HTTP), `--method`, `--tool-name`, `--tool-args-json`, `--header "X-API-Key: …"`, `--format json`
 * (one JSON object on stdout: `{ "result": … }`, or `{ "error": … }` on stderr), `--stored-auth-only` (never start
 * an interactive OAuth login). Exit codes seen: 0 ok, 5 a tool result with isError, 3 refused at connect (auth).
 * A missing Inspector fails these tests; they are never skipped.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_BIN, ROOT, sameClockEnv, stopAll } from "../../processes.ts";
import { BODIES } from "../../tool-bodies.ts";
import { balance, CHARGING, FREE, startGateway, type Gateway, type Json } from "./harness.ts";

/** The Inspector's package folder, resolved as the server package's dev dependency (throws when not installed). */
const PACKAGE = dirname(
  createRequire(join(ROOT, "packages", "server", "package.json")).resolve(
    "@modelcontextprotocol/inspector/package.json",
  ),
);
const LAUNCHER = join(PACKAGE, "clients", "launcher", "build", "index.js");

let g: Gateway;
let home: string;
const children: ChildProcess[] = [];
beforeAll(async () => {
  g = await startGateway();
  // The Inspector keeps a catalog and secrets under ~/.mcp-inspector: give it a home of its own.
  home = mkdtempSync(join(tmpdir(), "sdgw-inspector-home-"));
}, 120_000);
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await g?.stop();
  stopAll();
  if (home) rmSync(home, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `mcp-inspector --cli …args` to its end (killed after 30 s). */
function inspector(...args: string[]): Promise<Run> {
  const started = performance.now();
  const child = spawn(process.execPath, [LAUNCHER, "--cli", ...args], {
    cwd: ROOT,
    env: { ...process.env, HOME: home, NO_COLOR: "1", MCP_AUTO_OPEN_ENABLED: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}

/** `--cli <the server's /mcp> … --header "X-API-Key: <key>" --format json --stored-auth-only`. */
const overHttp = (key: string, ...args: string[]) =>
  inspector(g.mcpUrl, ...args, "--header", `X-API-Key: ${key}`, "--format", "json", "--stored-auth-only");
const json = (text: string, label: string): Json => {
  try {
    return JSON.parse(text) as Json;
  } catch {
    throw new Error(`${label}: not one JSON object: ${text.slice(0, 2000)}`);
  }
};
/** The `result` of a run that succeeded. */
function result(run: Run, label: string): Json {
  expect(run.code, `${label}: exit ${run.code}\n${run.stderr}`).toBe(0);
  return json(run.stdout, label)["result"] as Json;
}

describe("MCP Inspector CLI (@modelcontextprotocol/inspector 2.x) against /mcp over Streamable HTTP", {
  timeout: 120_000,
}, () => {
  it("is the pinned 2.x Inspector, installed from the lockfile", () => {
    expect((JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8")) as Json)["version"]).toBe("2.12.0");
  });

  it("tools/list: 16 tools, the 13 charging ones take handle; --strict finds no schema portability error", async () => {
    const run = await overHttp(g.key, "--method", "tools/list", "--strict");
    const tools = result(run, "tools/list")["tools"] as Json[];
    expect(tools.map((t) => t["name"]).sort()).toEqual([...CHARGING, ...FREE].sort());
    expect(
      tools
        .filter((t) => t["inputSchema"]["properties"]["handle"])
        .map((t) => t["name"])
        .sort(),
    ).toEqual([...CHARGING].sort());
    // --strict would have exited 6 (result() asserts 0) had any tool schema an error-severity portability problem.
  });

  it("tools/call capabilities (free): the catalogue of operations, nothing charged", async () => {
    const before = await balance(g);
    const r = result(await overHttp(g.key, "--method", "tools/call", "--tool-name", "capabilities"), "capabilities");
    expect(r["isError"]).toBeFalsy();
    const ops = r["structuredContent"]["operations"] as Json[];
    expect(ops.length).toBeGreaterThan(10);
    expect(ops.map((o) => o["op"])).toContain("weibo.search");
    expect(await balance(g)).toBe(before);
  });

  it("tools/call search (charged): its rows and charge; the balance moved by exactly that", async () => {
    const before = await balance(g);
    const args = JSON.stringify({ platform: "weibo", query: "露营", count: 4 });
    const r = result(
      await overHttp(g.key, "--method", "tools/call", "--tool-name", "search", "--tool-args-json", args),
      "search",
    );
    expect(r["isError"]).toBeFalsy();
    expect(r["structuredContent"]).toMatchObject({ status: "ok", platform: "weibo", billing: { cost: 1 } });
    expect(r["structuredContent"]["items"]).toHaveLength(4);
    expect(JSON.parse(r["content"][0]["text"] as string)).toEqual(r["structuredContent"]);
    expect(await balance(g)).toBe(before - 1);
  });

  it("a background run: started, read by its handle until it ends, then read again for free", async () => {
    const before = await balance(g);
    const call = (args: Json) =>
      overHttp(
        g.key,
        "--method",
        "tools/call",
        "--tool-name",
        "viral_finder",
        "--tool-args-json",
        JSON.stringify(args),
      );
    const started = result(await call(BODIES.viral_finder.background), "viral_finder")["structuredContent"] as Json;
    expect(started).toMatchObject({ status: "running", handle: expect.any(String) });
    let done: Json = started;
    for (let i = 0; i < 30 && done["status"] === "running"; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      done = result(await call({ handle: started["handle"] }), "viral_finder by handle")["structuredContent"] as Json;
    }
    expect(done["status"]).toBe("ok");
    const charged = done["billing"]["cost_credits"] as number;
    expect(charged).toBeGreaterThan(0);
    expect(await balance(g)).toBe(before - charged);
    const again = result(await call({ handle: started["handle"] }), "viral_finder again")["structuredContent"] as Json;
    expect(again).toEqual(done);
    expect(await balance(g)).toBe(before - charged);
  }, 60_000);

  it("bad arguments: an isError result naming the parameter (exit 5, tool_is_error), nothing charged", async () => {
    const before = await balance(g);
    const run = await overHttp(
      g.key,
      "--method",
      "tools/call",
      "--tool-name",
      "search",
      "--tool-args-json",
      JSON.stringify({ platform: "weibo", count: 3 }),
    );
    expect(run.code, run.stderr).toBe(5);
    expect(json(run.stderr.trim().split("\n").at(-1)!, "stderr")["error"]).toMatchObject({ code: "tool_is_error" });
    const r = json(run.stdout, "stdout")["result"] as Json;
    expect(r["isError"]).toBe(true);
    expect(r["structuredContent"]).toMatchObject({ code: "invalid_params", fix: { param: "query" } });
    expect(await balance(g)).toBe(before);
  });

  it("a wrong key is refused at connect: exit 3 with the contract's unauthorized body, at once", async () => {
    const run = await overHttp("sdgw_wrong_key", "--method", "tools/list");
    expect(run.code, run.stderr).toBe(3);
    expect(run.stdout).toBe("");
    const error = json(run.stderr.trim().split("\n").at(-1)!, "stderr")["error"] as Json;
    const body = json(/(\{.*\})\s*$/s.exec(String(error["message"]))![1]!, "error body");
    expect(body).toMatchObject({ code: "unauthorized", reason: "invalid", retryable: false });
    // What the Inspector prints says the key is not valid, not an OAuth failure (D142).
    expect(String(error["message"])).toContain("This key is not valid.");
    expect(run.stderr).not.toMatch(/oauth|TTY/i);
    expect(run.ms).toBeLessThan(15_000);
  });
});

describe("MCP Inspector CLI against sdgw-mcp over stdio", { timeout: 60_000 }, () => {
  it("tools/list gives 16 tools and account answers for SDGW_API_KEY", async () => {
    const env = Object.entries({ SDGW_API_KEY: g.key, SDGW_DB: g.db, ...sameClockEnv() }).flatMap(([k, v]) => [
      "-e",
      `${k}=${v}`,
    ]);
    const command = ["--", process.execPath, "--conditions=source", "--no-warnings", MCP_BIN];
    const list = result(
      await inspector(...env, "--method", "tools/list", "--format", "json", "-q", ...command),
      "stdio tools/list",
    );
    expect(list["tools"]).toHaveLength(16);
    const acct = result(
      await inspector(...env, "--method", "tools/call", "--tool-name", "account", "--format", "json", "-q", ...command),
      "stdio account",
    );
    expect(acct["structuredContent"]["billing"]["balance_credits"]).toBe(await balance(g));
  });
});
