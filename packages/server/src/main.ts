#!/usr/bin/env node
/**
 * `pnpm start`: the reference server on 127.0.0.1:8787 over ./data/sdgw.sqlite, with a demo account seeded on
 * the first start. Prints the demo key (first start only: keys are shown once) and a first call to try.
 * Environment (see `configFromEnv`, `listenFromEnv`): SDGW_DB, SDGW_HOST, SDGW_PORT, SDGW_WAIT_MS,
 * SDGW_POLL_AFTER_SECONDS, SDGW_LATENCY_MS, SDGW_KEY_QPS, SDGW_WORKSPACE_CONCURRENCY, SDGW_ADDRESS_PER_MINUTE,
 * SDGW_FAILURE_THRESHOLD, SDGW_FREE_CALLS, SDGW_RUN_LEASE_MS, SDGW_REDIS_URL and SDGW_REDIS_PREFIX (the limits
 * shared by every instance on one Redis, D107), SDGW_DATABASE_URL (the state in PostgreSQL, shared by every
 * instance on it, D108), and the operator's (D113): SDGW_LOG_FORMAT (text or json lines), SDGW_METRICS and
 * SDGW_METRICS_TOKEN (who may read /metrics), SDGW_SHUTDOWN_GRACE_MS (how long SIGTERM waits for runs in flight).
 * A variable that is not a valid value stops the start, named.
 * Other processes (sdgw-mcp, sdgw-admin) may open the same database meanwhile.
 *
 * SIGTERM or SIGINT (D113): readyz answers 503 at once, no new connections, new requests on open ones answered 503
 * temporarily_unavailable; runs in flight get SDGW_SHUTDOWN_GRACE_MS (25 s) to end; then the lease ends (what is
 * still running is ended broken, uncharged, by the next process), the storage and Redis close, exit status 0. A
 * second signal exits at once (128 + the signal's number).
 */
import { ConfigError, configFromEnv, listenFromEnv, runLeaseFromEnv, withoutPassword } from "./config.ts";
import { isLoopback } from "./ops/health.ts";
import { seedDemo, seedDemoUser } from "./demo.ts";
import { CONSOLE_DIST, consoleBuilt } from "./http/console-static.ts";
import { DOCS_BUILD_COMMANDS, docsBuilt } from "./http/docs-routes.ts";
import { randomBytes } from "node:crypto";
import { createServer } from "./storage/sqlite/server.ts";
import { withPluginsFromEnv } from "./connectors/plugins.ts";
import { DatabaseUnavailable } from "./storage/postgres/database.ts";
import { SchemaError } from "./storage/postgres/migrations.ts";
import { createPgServer, seedPgDemo, seedPgDemoUser } from "./storage/postgres/server.ts";
import { opsFromEnv, type OpsSettings } from "./ops/env.ts";
import { createLogger, type LogFn } from "./ops/log.ts";

/** Lines of the process itself (a refused start, the stop), in the format of the logs. */
let log: LogFn = createLogger();

/** Opens the server on PostgreSQL; a database that does not answer or is newer than this build stops the start. */
async function openShared(o: Parameters<typeof createPgServer>[0]) {
  try {
    return await createPgServer(o);
  } catch (e) {
    // Not reachable, a newer schema, or PostgreSQL's own refusal at connect (no such database, a wrong password…).
    const refused = typeof (e as { code?: unknown }).code === "string" && "severity" in (e as object);
    if (!(e instanceof DatabaseUnavailable || e instanceof SchemaError || refused)) throw e;
    notStarted(`SDGW_DATABASE_URL: ${(e as Error).message}`);
  }
}

/** A start refused: one line on standard error (a JSON line with SDGW_LOG_FORMAT=json), exit status 2. */
function notStarted(why: string): never {
  if (ops?.logFormat === "json") log(`not started: ${why}`, new Error(why));
  else console.error(`sdgw: not started: ${why}.`);
  process.exit(2);
}

let ops: OpsSettings | undefined;
let options: ReturnType<typeof configFromEnv>;
let address: ReturnType<typeof listenFromEnv>;
try {
  ops = opsFromEnv();
  log = createLogger({ format: ops.logFormat });
  // D158: with the operator's own connectors, from the modules SDGW_CONNECTORS names.
  options = await withPluginsFromEnv({
    ...configFromEnv(),
    ...runLeaseFromEnv(),
    log,
    logFormat: ops.logFormat,
    metrics: ops.metrics,
  });
  address = listenFromEnv();
  // D92: with the HTTP reference built, every error's fix.note ends with its entry in the catalogue at /docs.
  options = { docsLinks: docsBuilt(), ...options };
  // D86: when this server serves the console, the errors' console, sign-in and billing links are its own pages
  // (absolute URLs from the listen address); without a build they stay the library's https defaults.
  if (consoleBuilt() && address.port !== 0) {
    const base = `http://${address.host.includes(":") ? `[${address.host}]` : address.host}:${address.port}/console`;
    options = {
      ...options,
      urls: { console: `${base}/keys`, signIn: `${base}/sign-in`, billing: `${base}/account`, ...options.urls },
    };
  }
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  notStarted(e.problems.join("; "));
}
// D108: with SDGW_DATABASE_URL the state is in PostgreSQL, shared with every instance on it; else the SQLite file.
let shared: Awaited<ReturnType<typeof openShared>> | null = null;
let embedded: ReturnType<typeof createServer> | null = null;
try {
  shared = options.databaseUrl ? await openShared({ ...options, databaseUrl: options.databaseUrl }) : null;
  embedded = shared ? null : createServer(options);
} catch (e) {
  // A connector's settings or a plug-in's provider that is not what it must be (D158).
  if (!(e instanceof ConfigError)) throw e;
  notStarted(e.problems.join("; "));
}
const server = (shared ?? embedded)!;
const demo = shared ? await seedPgDemo(shared.gateway) : seedDemo(embedded!.gateway);
const demoUser = shared
  ? await seedPgDemoUser(shared.gateway, demo.accountId)
  : seedDemoUser(embedded!.gateway, demo.accountId);
const url = await server.listen(address);
const key = demo.key ?? "<your key>";
// A new Idempotency-Key each start: the banner's first call runs (and may answer 202) instead of replaying the
// answer a previous start's same command stored.
const firstCallKey = `first-call-${randomBytes(4).toString("hex")}`;
// The commands printed below run the repository's scripts with the same toolchain that runs this server: started
// through `npx -p node@24 -p pnpm@12` (the README's command, for a machine whose own Node is older), they say so.
const viaNpx = /[\\/]_npx[\\/]/.test(process.execPath);
const pnpm = viaNpx ? "npx -y -p node@24 -p pnpm@12 -- pnpm" : "pnpm";
const config = server.gateway.config;
const storage = shared
  ? `PostgreSQL at ${withoutPassword(config.databaseUrl!)}, shared by every instance on it; schema version ${shared.gateway.migration.version}`
  : config.dbPath;
const lines = [
  `Social Data Gateway reference server on ${url} (storage: ${storage})`,
  // D114: which platforms read their official API, which the deterministic simulator (never a secret).
  `Platforms: ${server.gateway.upstream.summary()}.`,
  config.redisUrl
    ? `Limits: counted in Redis at ${withoutPassword(config.redisUrl)}, shared by every instance on ` +
      `it (prefix ${config.redisKeyPrefix}); while it does not answer, calls are refused with 503.`
    : "",
  embedded?.gateway.recovered
    ? `Recovered ${embedded.gateway.recovered} run(s) left running by a process that is gone: ended as broken, holds released, nothing charged.`
    : "",
  demo.key
    ? `Demo account ${demo.accountId} with 5000 credits. Its key, shown once (stored only as a hash):\n\n  ${demo.key}\n`
    : `Demo account ${demo.accountId} (key ${demo.prefix}…, shown on the first start). A new key: ${pnpm} admin create-key --account ${demo.accountId}`,
  `Console: ${consoleBuilt() ? `${url}/console/` : `not built (${CONSOLE_DIST}); build it with ${pnpm} console:build, then open ${url}/console/`} — ${
    demoUser.password
      ? `sign in as ${demoUser.email} with the password (shown once, stored only as a hash):\n\n  ${demoUser.password}\n`
      : `sign in as ${demoUser.email} (its password was shown on the first start; another ` +
        `user: ${pnpm} admin create-user --account ${demo.accountId} --email you@example.com)`
  }`,
  "Send the key in a header (X-API-Key or Authorization: Bearer). A key sent in a URL (?key=…) is refused and burned:",
  "the server marks it exposed and refuses it from then on; revoke it and create a new one.",
  "Try (each start prints a new Idempotency-Key: the same key again replays the first answer, charged once):",
  `  curl -s -H 'X-API-Key: ${key}' -H 'Idempotency-Key: ${firstCallKey}' '${url}/v1/search?platform=xiaohongshu&query=%E9%9C%B2%E8%90%A5&count=3'`,
  `  curl -s ${url}/v1/capabilities`,
  `  curl -s -H 'X-API-Key: ${key}' -H 'Content-Type: application/json' -d ` +
    `'{"query":"露营","platforms":["weibo","xiaohongshu"],"confirm":false}' ${url}/v1/tools/brand_buzz`,
  `Calls answer within ${config.waitMs} ms or 202 with a handle to poll ` +
    `every ${config.pollAfterSeconds} s; to see 202s, start with SDGW_WAIT_MS=50 SDGW_LATENCY_MS=1000.`,
  `Read a 202's handle (its "handle", h_…) until it answers 200: curl -s -H 'X-API-Key: ${key}' ${url}/v1/results/h_…`,
  docsBuilt()
    ? `HTTP reference: ${url}/docs (errors: ${url}/docs/errors.html); the contract: ${url}/openapi.json`
    : `HTTP reference: not built; build it in the repository with ${DOCS_BUILD_COMMANDS}, then open ${url}/docs`,
  // D130: which pages on other origins may call (none unless SDGW_CORS_ORIGINS says).
  config.corsOrigins === "*"
    ? "Browsers: pages on any origin may call the API (SDGW_CORS_ORIGINS=*), never with the console's cookie."
    : config.corsOrigins.length
      ? `Browsers: pages on ${config.corsOrigins.join(", ")} may call the API (SDGW_CORS_ORIGINS), never with the console's cookie.`
      : "",
  `MCP (Streamable HTTP): ${url}/mcp with the header X-API-Key (or Authorization: Bearer); stdio: SDGW_API_KEY=… ${pnpm} --silent mcp`,
  `Operators: ${url}/healthz, ${url}/readyz; metrics (Prometheus): ${metricsLine()}.`,
  "Stop with Ctrl-C.",
].filter(Boolean);
if (ops!.logFormat === "json") {
  // D113: JSON lines only, and no secret in them: a log collector keeps what it reads (the demo key and password
  // are shown in text mode only; make a key with `sdgw-admin create-key`).
  const started = {
    time: new Date().toISOString(),
    level: "info",
    msg: "listening",
    url,
    storage,
    platforms: server.gateway.upstream.summary(),
    limits: config.redisUrl ? `Redis at ${withoutPassword(config.redisUrl)}` : "in memory",
    demo_account: demo.accountId,
    metrics: metricsLine(),
    shutdown_grace_ms: ops!.shutdownGraceMs,
  };
  console.log(JSON.stringify(started));
} else console.log(lines.join("\n"));
// D114: each live platform is asked once whether it accepts the operator's credentials (one cheap request).
if (server.gateway.upstream.live.length)
  void server.gateway.upstream.check().then((checks) => {
    for (const c of checks)
      if (c.ok) log(`${c.platform}: ${c.message}.`);
      else {
        // An error line (level "error" in JSON) without a stack: the place in main.ts tells the operator nothing.
        const failure = new Error(c.message);
        failure.stack = undefined;
        const source = server.gateway.upstream.live.find((l) => l.platform === c.platform)?.source ?? "live";
        log(
          `${c.platform} is ${source === "plugged" ? "plugged in" : "live"} but ${c.message.replace(/\.$/, "")}; its calls fail until this is fixed.`,
          failure,
        );
      }
  });

/** Where /metrics is served, as the banner says it. */
function metricsLine(): string {
  const m = ops!.metrics;
  if (m.access === "off") return "off (SDGW_METRICS=off)";
  if (m.token) return `${url}/metrics with Authorization: Bearer <SDGW_METRICS_TOKEN>`;
  if (m.access === "on") return `${url}/metrics (SDGW_METRICS=on: to anyone who reaches this address)`;
  return server.lifecycle.host !== null && isLoopback(server.lifecycle.host)
    ? `${url}/metrics (loopback only)`
    : "off on this address (set SDGW_METRICS_TOKEN, or SDGW_METRICS=on behind your own network policy)";
}

// D113: the first signal stops gracefully within SDGW_SHUTDOWN_GRACE_MS; a second one exits at once.
const SIGNALS = { SIGINT: 2, SIGTERM: 15 } as const;
let stopping = false;
const inFlight = () => (shared ? shared.gateway.runner.inFlight : embedded!.gateway.runs.inFlight);
function stop(signal: keyof typeof SIGNALS): void {
  if (stopping) {
    log(`${signal} again: exiting at once; runs still in flight are ended broken, uncharged, by the next process`);
    process.exit(128 + SIGNALS[signal]);
  }
  stopping = true;
  const grace = ops!.shutdownGraceMs;
  log(
    `${signal}: stopping; readyz answers 503, no new connections or calls; ${inFlight()} run(s) in flight get up to ${grace} ms to end`,
  );
  // The storage's own close is bounded too (a database that does not answer): past it, exit anyway.
  setTimeout(() => {
    log(`the stop did not end within ${grace + 10_000} ms; exiting`);
    process.exit(1);
  }, grace + 10_000).unref();
  server.close({ drainMs: grace }).then(
    () => {
      const left = inFlight();
      log(
        left
          ? `stopped; ${left} run(s) did not end within ${grace} ms: ended broken, uncharged, by the next process (their Idempotency-Keys freed)`
          : "stopped; every run in flight ended",
      );
      process.exit(0);
    },
    (e: unknown) => {
      log("the stop failed", e);
      process.exit(1);
    },
  );
}
process.on("SIGINT", () => stop("SIGINT"));
process.on("SIGTERM", () => stop("SIGTERM"));
