/**
 * D113: the cost of counting every answer for `/metrics` (the `onResponse` hook and `Metrics.request`) and of
 * running a handler as its request's (`withRequestId`, AsyncLocalStorage), measured as an A/B of a bare Fastify 5
 * route: `bare` answers `{"status":"ok"}`; `counted` is the same route with the hook and the request's context.
 * Each in its own process, autocannon on 127.0.0.1, rounds alternating (order reversed every other round).
 *
 * `node --conditions=source bench/server/ops.ts [--rounds 4] [--seconds 5] [--connections 16]`
 */
import { fork, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { Metrics } from "../../packages/server/src/ops/metrics.ts";
import { withRequestId } from "../../packages/server/src/ops/log.ts";

// autocannon and fastify are the server package's (dev) dependencies.
const require = createRequire(new URL("../../packages/server/package.json", import.meta.url));
const autocannon = require("autocannon") as (options: {
  url: string;
  connections: number;
  duration: number;
}) => Promise<{ requests: { average: number; total: number } }>;
const Fastify = require("fastify") as typeof import("../../packages/server/node_modules/fastify/fastify.js").default;

const BODY = '{"status":"ok"}';

if (process.argv[2] === "serve") {
  const counted = process.argv[3] === "counted";
  const app = Fastify({ logger: false });
  if (counted) {
    const metrics = new Metrics();
    app.addHook("onResponse", (req, reply, done) => {
      metrics.request(req.method, req.routeOptions.url ?? "(unmatched)", reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
    let n = 0;
    app.get("/ping", (_req, reply) =>
      withRequestId(`req_${++n}`, () => reply.header("content-type", "application/json; charset=utf-8").send(BODY)),
    );
  } else {
    app.get("/ping", (_req, reply) => reply.header("content-type", "application/json; charset=utf-8").send(BODY));
  }
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  process.send!({ port: typeof address === "object" && address ? address.port : 0 });
} else {
  const { values } = parseArgs({
    options: {
      rounds: { type: "string", default: "4" },
      seconds: { type: "string", default: "5" },
      connections: { type: "string", default: "16" },
    },
  });
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const children: ChildProcess[] = [];
  const start = (mode: string) =>
    new Promise<{ child: ChildProcess; port: number }>((resolve) => {
      const child = fork(import.meta.filename, ["serve", mode], {
        execArgv: ["--conditions=source", "--no-warnings"],
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      });
      children.push(child);
      child.once("message", (m: { port: number }) => resolve({ child, port: m.port }));
    });
  const cpuOf = (pid: number | undefined) => {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  };
  try {
    const servers = { bare: await start("bare"), counted: await start("counted") };
    const got: Record<string, { rps: number[]; cpu: number[] }> = {
      bare: { rps: [], cpu: [] },
      counted: { rps: [], cpu: [] },
    };
    for (const s of Object.values(servers))
      await autocannon({ url: `http://127.0.0.1:${s.port}/ping`, connections, duration: 1 });
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 ? (["counted", "bare"] as const) : (["bare", "counted"] as const);
      for (const name of order) {
        const s = servers[name];
        const before = cpuOf(s.child.pid);
        const res = await autocannon({ url: `http://127.0.0.1:${s.port}/ping`, connections, duration: seconds });
        const cpu = (cpuOf(s.child.pid) - before) / res.requests.total;
        got[name]!.rps.push(res.requests.average);
        got[name]!.cpu.push(cpu);
        console.log(
          `round ${r + 1} ${name.padEnd(7)} ${Math.round(res.requests.average)} requests/s, ${cpu.toFixed(1)} µs CPU per request`,
        );
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const [b, c] = [got["bare"]!, got["counted"]!];
    console.log(
      `median: bare ${Math.round(median(b.rps))} requests/s, ${median(b.cpu).toFixed(1)} µs; ` +
        `counted ${Math.round(median(c.rps))} requests/s, ${median(c.cpu).toFixed(1)} µs; ` +
        `the hook and the request's context: ${(median(c.cpu) - median(b.cpu)).toFixed(1)} µs CPU per request`,
    );
  } finally {
    for (const c of children) c.kill();
  }
}
