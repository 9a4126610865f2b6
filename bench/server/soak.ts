/**
 * `pnpm test:soak`: the reference server under sustained load, as `pnpm start` runs it (its own process, over a
 * database file, on loopback), to see that its memory levels off. Varied charged searches (a new query each time,
 * so the simulator's memo does not answer them) at 32 connections; one in 20 is a GET with a new Idempotency-Key
 * (its answer goes to the answer log), the others POSTs without one, so the log (about 8 KB per keyed answer) stays
 * far under its 1 GiB quota and the disk of a CI machine is spared:
 * a warm-up of a number of requests (default 40 000: the server's heap has reached its working size by then, about
 * 420 MiB of RSS here), then the load (default 120 s); the resident set size of the server's process is read from
 * /proc after each. Fails (exit 1) when it grew by more than the bound (default 64 MiB) after the warm-up, or when a
 * request failed with a 5xx. `--warmup N` (requests), `--seconds S`, `--bound MiB` change the figures.
 *
 * The warm-up counts requests, not seconds: CI runs this beside `test:registry`, and on a busy machine 20 s of
 * warm-up served a tenth of the requests it serves on an idle one, so the heap was still growing to its working size
 * during the measured load — a growth that is not a leak.
 */
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { admin, kill, startServer } from "../../packages/server/test/processes.ts";

const require = createRequire(new URL("../../packages/server/package.json", import.meta.url));
const autocannon = require("autocannon") as (options: unknown) => Promise<{
  requests: { average: number; total: number };
  non2xx: number;
  errors: number;
  "5xx"?: number;
  statusCodeStats?: Record<string, { count: number }>;
}>;

const { values } = parseArgs({
  options: {
    warmup: { type: "string", default: "40000" },
    seconds: { type: "string", default: "120" },
    bound: { type: "string", default: "64" },
  },
});
const warmup = Number(values.warmup);
const seconds = Number(values.seconds);
const boundMiB = Number(values.bound);
for (const [name, v] of [
  ["--warmup", warmup],
  ["--seconds", seconds],
  ["--bound", boundMiB],
] as const) {
  if (!(Number.isFinite(v) && v > 0)) throw new Error(`${name} must be a positive number (got ${v})`);
}

/** The resident set size of a process, in MiB (Linux: /proc/<pid>/status). */
function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  if (!line) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(line.replace(/\D+/g, "")) / 1024;
}

const dir = mkdtempSync(join(tmpdir(), "sdgw-soak-"));
const db = join(dir, "soak.sqlite");
const server = await startServer(db, {
  SDGW_WAIT_MS: "40000",
  SDGW_WORKSPACE_CONCURRENCY: "10000",
  SDGW_KEY_QPS: "100000",
  SDGW_FAILURE_THRESHOLD: "1000000",
});
try {
  await admin(db, "grant", "--account", server.accountId, "--credits", "100000000");
  let n = 0;
  const load = (amount: { duration: number } | { amount: number }) =>
    autocannon({
      url: server.url,
      connections: 32,
      ...amount,
      requests: [
        {
          method: "GET",
          setupRequest: (req: { method?: string; path?: string; headers?: Record<string, string>; body?: string }) => {
            n++;
            const platform = ["x", "weibo", "reddit", "douyin"][n % 4]!;
            if (n % 20 === 0) {
              req.method = "GET";
              req.path = `/v1/search?platform=${platform}&query=soak+${n}&count=10`;
              req.headers = { "x-api-key": server.key!, "idempotency-key": `soak-${n}` };
              delete req.body;
            } else {
              req.method = "POST";
              req.path = "/v1/search";
              req.headers = { "x-api-key": server.key!, "content-type": "application/json" };
              req.body = JSON.stringify({ platform, query: `soak ${n}`, count: 10 });
            }
            return req;
          },
        },
      ],
    });
  const pid = server.child.pid!;
  const start = rssMiB(pid);
  const warm = await load({ amount: warmup });
  const afterWarmup = rssMiB(pid);
  const run = await load({ duration: seconds });
  const afterLoad = rssMiB(pid);
  const growth = afterLoad - afterWarmup;
  const fivexx = (r: typeof run) =>
    Object.entries(r.statusCodeStats ?? {})
      .filter(([s]) => s.startsWith("5"))
      .reduce((a, [, v]) => a + v.count, 0);
  console.log(
    `RSS of the server: ${start.toFixed(0)} MiB at start, ${afterWarmup.toFixed(0)} MiB after a ` +
      `warm-up of ${warm.requests.total} requests, ${afterLoad.toFixed(0)} MiB after ${seconds} s more ` +
      `(${run.requests.total} requests, ${run.requests.average.toFixed(0)}/s)`,
  );
  const non2xx = warm.non2xx + run.non2xx;
  console.log(
    `growth after the warm-up: ${growth.toFixed(1)} MiB (bound ${boundMiB} MiB); ` +
      `5xx: ${fivexx(warm) + fivexx(run)}; other non-2xx: ${non2xx}; transport errors: ${warm.errors + run.errors}`,
  );
  // Every call here is valid and funded: anything but a 2xx means the load measured something else than calls.
  if (growth > boundMiB || fivexx(warm) + fivexx(run) > 0 || non2xx > 0) {
    console.error("soak: FAILED");
    process.exitCode = 1;
  }
} finally {
  await kill(server.child, "SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}
