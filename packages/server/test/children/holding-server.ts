/**
 * A server in its own process for the crash test: opens the database at argv[2], makes the x platform take 60 s
 * (so a run holds its credits), listens on 127.0.0.1 at a free port and prints its URL. The test kills it with
 * SIGKILL while the run holds.
 */
import { createServer } from "../../src/server.ts";

const server = createServer({ dbPath: process.argv[2]!, waitMs: 30, log: () => undefined, simulator: { knobs: { x: { latencyMs: 60_000 } } } });
const url = await server.listen({ port: 0 });
process.stdout.write(`${JSON.stringify({ url })}\n`);
