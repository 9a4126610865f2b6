/**
 * The local gateway stand-in, run by run.ts in its own node process (so its CPU does not share the event loop of the
 * client being measured): a node:http server on 127.0.0.1, ephemeral port, answering `GET /v1/search?…` with the
 * bytes of fixtures/search/ok-xiaohongshu.json (200, application/json, Content-Length). Anything else is a 404; a
 * search without `X-API-Key` or `Idempotency-Key` is a 400, so a contender that sends less fails its check.
 *
 *   node bench/client/server.ts        (needs an IPC channel: spawned by run.ts with stdio "ipc")
 *
 * IPC: sends `{ port }` once listening; answers `{ type: "stats" }` with `{ type: "stats", requests, refused, shapes }`
 * (since the last stats message; shapes = the distinct method, URL and header names of the first requests) and
 * `{ type: "stop" }` by closing. It stops by itself when the parent goes away (IPC disconnect) and after 180 s at most.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const FIXTURE = new URL("../../fixtures/search/ok-xiaohongshu.json", import.meta.url);
const body = readFileSync(FIXTURE);
const HARD_LIMIT_MS = 180_000;

if (!process.send) throw new Error("server.ts must be spawned with an IPC channel (by run.ts)");

let requests = 0;
let refused = 0;
/** Distinct request shapes, recorded for the first few requests after each stats message only (cheap). */
let shapes = new Map<string, number>();
let recorded = 0;

const server = createServer((req, res) => {
  requests++;
  if (recorded < 32) {
    recorded++;
    const names = Object.keys(req.headers).sort().join(", ");
    const shape = `${req.method} ${req.url}; headers: ${names}`;
    shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
  }
  if (req.method !== "GET" || !req.url?.startsWith("/v1/search?")) {
    refused++;
    res
      .writeHead(404, { "content-type": "application/json" })
      .end('{"code":"not_found","message":"bench server: GET /v1/search only"}');
    return;
  }
  if (!req.headers["x-api-key"] || !req.headers["idempotency-key"]) {
    refused++;
    res
      .writeHead(400, { "content-type": "application/json" })
      .end('{"code":"invalid_request","message":"bench server: X-API-Key and Idempotency-Key required"}');
    return;
  }
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
});

function stop(code = 0) {
  server.closeAllConnections();
  server.close(() => process.exit(code));
  setTimeout(() => process.exit(code), 1000).unref();
}

process.on("message", (msg: { type?: string }) => {
  if (msg?.type === "stats") {
    process.send!({ type: "stats", requests, refused, shapes: [...shapes].map(([shape, n]) => ({ shape, n })) });
    requests = 0;
    refused = 0;
    shapes = new Map();
    recorded = 0;
  } else if (msg?.type === "stop") stop();
});
process.on("disconnect", () => stop());
setTimeout(() => {
  process.stderr.write(`bench server: still running after ${HARD_LIMIT_MS / 1000} s, stopping\n`);
  stop(1);
}, HARD_LIMIT_MS).unref();

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no port");
  process.send!({ type: "listening", port: address.port, bytes: body.length });
});
