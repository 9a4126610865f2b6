/**
 * The reference server as users run it, for tests that need real processes: `main.ts` started as a child process
 * on a free loopback port (its banner read for the URL and the demo key), the admin CLI run as its own process,
 * and a signal sent to a child with its exit awaited. `stopAll()` (in an `afterAll`) kills every child still alive.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

/** The repository's root (the server runs from its sources: `--conditions=source`). */
export const ROOT = join(import.meta.dirname, "..", "..", "..");
const MAIN = join(ROOT, "packages", "server", "src", "main.ts");
const ADMIN = join(ROOT, "packages", "server", "src", "bin", "sdgw-admin.ts");
/** The stdio MCP server's entry point. */
export const MCP_BIN = join(ROOT, "packages", "server", "src", "bin", "sdgw-mcp.ts");

const children: ChildProcess[] = [];

/** Kills every child started here that is still running (SIGCONT first: a stopped process cannot die). */
export function stopAll(): void {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill("SIGCONT");
      c.kill("SIGKILL");
    }
  }
}

/** A started `main.ts`: its process, base URL, demo key (first start only) and demo account. */
export interface Started {
  child: ChildProcess;
  url: string;
  key: string | null;
  accountId: string;
  banner: string;
  /** Everything it wrote so far, standard output then standard error (its logs), read when called. */
  output(): { stdout: string; stderr: string };
}

/**
 * Starts `main.ts` on a free loopback port over `db`; resolves once its banner ends (`Stop with Ctrl-C.`, or with
 * `SDGW_LOG_FORMAT=json` its JSON line `"msg":"listening"`, which shows no key: `key` is then null). Defaults:
 * `SDGW_WAIT_MS=50`, `SDGW_POLL_AFTER_SECONDS=1`, `SDGW_KEY_QPS=1000`; `env` overrides them.
 */
export function startServer(db: string, env: Record<string, string> = {}): Promise<Started> {
  const child = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], {
    cwd: ROOT,
    env: {
      ...process.env,
      SDGW_PORT: "0",
      SDGW_HOST: "127.0.0.1",
      SDGW_DB: db,
      SDGW_WAIT_MS: "50",
      SDGW_POLL_AFTER_SECONDS: "1",
      SDGW_KEY_QPS: "1000",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error(`main.ts did not start within 40 s: ${out}\n${err}`)), 40_000);
    let started = false;
    const output = () => ({ stdout: out, stderr: err });
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (started) return;
      const json = /^\{.*"msg":"listening".*\}$/m.exec(out)?.[0];
      if (json) {
        started = true;
        clearTimeout(timer);
        const line = JSON.parse(json) as { url: string; demo_account: string };
        resolve({ child, url: line.url, key: null, accountId: line.demo_account, banner: out, output });
        return;
      }
      if (!out.includes("Stop with Ctrl-C.")) return;
      started = true;
      clearTimeout(timer);
      const url = /^Social Data Gateway reference server on (http:\/\/127\.0\.0\.1:\d+)/m.exec(out)?.[1];
      const accountId = /Demo account (acc_\w+)/.exec(out)?.[1];
      if (!url || !accountId) return reject(new Error(`unexpected banner: ${out}`));
      resolve({ child, url, key: /^ {2}(sdgw_\S+)$/m.exec(out)?.[1] ?? null, accountId, banner: out, output });
    });
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`main.ts exited ${code ?? signal}: ${err}`));
    });
  });
}

/** Runs the admin CLI on `db` as its own process; resolves to its JSON output. */
export async function admin(db: string, ...args: string[]): Promise<unknown> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--conditions=source", "--no-warnings", ADMIN, ...args, "--db", db],
    { cwd: ROOT, timeout: 20_000 },
  );
  return JSON.parse(stdout);
}

/** Sends SIGKILL (or another signal) and resolves when the child has exited (and was reaped). */
export function kill(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): Promise<unknown> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  return exited;
}

/**
 * The variables that give a child process this process's clock: under `faketime` (CI runs the suites 400 days
 * ahead) a child started with a bare environment would read the real clock, and two processes of one machine that
 * disagree on the time would judge each other's leases wrongly. Spread into a child's `env`.
 */
export function sameClockEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] => e[1] !== undefined && (e[0] === "LD_PRELOAD" || e[0].startsWith("FAKETIME")),
    ),
  );
}
