/**
 * A server in its own process for the crash tests: opens the database at argv[2], makes the x platform take 60 s
 * (so a run holds its credits), waits argv[3] ms (default 30) before a call answers 202, listens on 127.0.0.1 at a
 * free port and prints its URL. The tests kill it with SIGKILL while the run holds: past the wait (a durable hold)
 * or within it (a hold in memory).
 */
import { createServer } from "../../src/storage/sqlite/server.ts";

const server = createServer({
  dbPath: process.argv[2]!,
  waitMs: Number(process.argv[3] ?? 30),
  log: () => undefined,
  simulator: { knobs: { x: { latencyMs: 60_000 } } },
});
const url = await server.listen({ port: 0 });
process.stdout.write(`${JSON.stringify({ url })}\n`);
