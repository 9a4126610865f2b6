/** Configuration of the reference server, with the defaults of D27 and the seed's limits. */
import { DEFAULT_URLS, type ServiceUrls } from "@sdgw/validators";
import type { Platform } from "@sdgw/types";
import {
  CONNECTORS,
  type ConnectorDefinition,
  isConnectorConfigError,
  type RawSettings,
  switchedOn,
} from "@sdgw/engine/connectors";
import { type CorsOriginsError, checkCorsOrigins, parseCorsOrigins, type CorsOrigins } from "./http/cors.ts";
import { type TrustProxyError, checkTrustProxy, parseTrustProxy, type TrustProxy } from "./http/proxies.ts";
import {
  MCP_READ_ONLY_ENV,
  MCP_TOOLSETS_ENV,
  type McpToolsetError,
  parseReadOnly,
  parseToolsets,
} from "./mcp/toolsets.ts";
import type { PlatformProvider, SimulatorOptions } from "@sdgw/engine";
import type { LogFormat } from "./ops/log.ts";
import type { MetricsOptions } from "./ops/metrics.ts";

/** Numeric limits (D27). All configurable; tests use small numbers. */
export interface LimitsConfig {
  /** Calls per second per key (`rate_limited`, reason `key_qps`). */
  keyQps: number;
  /** Running calls per workspace (`rate_limited`, reason `workspace_concurrency`). */
  workspaceConcurrency: number;
  /** Calls per minute per network address on the keyless routes (`rate_limited`, reason `address`). */
  addressPerMinute: number;
  /** Failed calls of one key within `failureWindowSeconds` that trigger `free_failure_limit`. */
  failureThreshold: number;
  /** The window of `failureThreshold`, in seconds. */
  failureWindowSeconds: number;
  /** How long `free_failure_limit` lasts once triggered, in seconds (`retry_at`). */
  failureBlockSeconds: number;
  /** Calls a free account makes before `plan_limit` (reason `free_calls_used`). */
  freeCalls: number;
}

/** Everything the server can be told. Every field has a default (`defaultConfig`). */
export interface ServerConfig {
  /** SQLite file (`./data/sdgw.sqlite`), or `:memory:`. */
  dbPath: string;
  /** How long a call may take inside the request before it answers 202 with a handle (seed: 40 s). */
  waitMs: number;
  /** How long a finished result is kept after its run ended (seed: 24 h), then 410. */
  retentionMs: number;
  /** How long an idempotency record is kept after its call ended (24 h). */
  idempotencyTtlMs: number;
  /** `retry_after_seconds` of a 202 answer (whole seconds, at least 1). */
  pollAfterSeconds: number;
  /** `Retry-After` of a 409 `idempotency_in_progress` (whole seconds, at least 1). */
  inProgressRetrySeconds: number;
  /** A platform call not answered within this many ms ends with status `timeout`. */
  providerTimeoutMs: number;
  /** Largest request body in bytes; larger bodies are `invalid_params` (seed case 16). */
  bodyLimit: number;
  /** How often the scheduler looks for schedules that fell due, in ms (0: never; `Scheduler.tick` still works). */
  scheduleTickMs: number;
  /** The answer log (D67): its disk quota in bytes across every process on the database (default 1 GiB). */
  answerLogQuotaBytes: number;
  /** After a write found the disk full, how long new keyed calls are refused before trying again (default 10 s). */
  answerLogFullMs: number;
  /**
   * How long a run that answered 202 keeps trying its final write when it is rolled back (a full disk, D75) before it
   * ends broken and uncharged (default 10 minutes).
   */
  finalRetryMs: number;
  /**
   * Store answers as content-defined chunks, each stored once (D67): about 0.6 KB of disk per charged call instead of
   * 8 KB when answers repeat, for about 40 µs more CPU per call on this machine. Default false.
   */
  answerLogChunks: boolean;
  /** HTTP connections: how long a request may take to arrive, header sizes, idle keep-alive, connections per address (D57). */
  http: HttpConfig;
  /** The tools `/mcp` offers (D79); `mcpRoutes` options override it. */
  mcp: McpConfig;
  limits: LimitsConfig;
  /** Addresses the errors point to. */
  urls: ServiceUrls;
  /**
   * D92: the `fix.note` of every error answered under a non-200 status ends with the address of the code's entry in
   * the error catalogue this server serves (`<origin>/docs/errors.html#<code>`). Default false; `main.ts` turns it
   * on when the HTTP reference is built (`pnpm run docs`), since only then does the address open.
   */
  docsLinks: boolean;
  /** Console sign-in sessions (D82–D85): lifetimes and sign-in throttling. */
  sessions: SessionConfig;
  /**
   * D107: where the limits (`limits`) are counted when several instances serve together: a Redis URL
   * (`redis://[user:password@]host[:port][/db]` or `rediss://…`; env `SDGW_REDIS_URL`). Every instance on the same
   * Redis and `redisKeyPrefix` shares one count of each key's rate, each address's rate, each workspace's running
   * calls and each key's failed calls; while Redis does not answer, calls are refused with `503
   * temporarily_unavailable` (nothing runs, nothing is charged). Null (the default): each instance counts alone,
   * in memory, so N instances allow up to N times each limit.
   */
  redisUrl: string | null;
  /** Prefix of every Redis key of the limits (default `sdgw:`; env `SDGW_REDIS_PREFIX`). */
  redisKeyPrefix: string;
  /**
   * D108: the PostgreSQL database several instances share (`postgres://user[:password]@host[:port]/database`; env
   * `SDGW_DATABASE_URL`), instead of the embedded SQLite file `dbPath`. Null (the default): the embedded store.
   */
  databaseUrl: string | null;
  /**
   * D111: the proxies in front of the server, whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed (env
   * `SDGW_TRUST_PROXY`): a number of proxies every request passes (each socket's peer is taken for the nearest), or
   * the proxies' addresses and CIDR ranges (IPv4, IPv6, or `loopback`, `linklocal`, `uniquelocal`). The client's
   * address (per-address limits, sign-in throttling) and scheme (the console cookie's `Secure`) then come from
   * those headers, and the proxies' own connections are not capped per address. Null (the default): the socket's
   * peer is the client and the headers are ignored. List the proxies' addresses rather than a count: with a count,
   * a client that reaches the server directly chooses the address it is counted under.
   */
  trustProxy: TrustProxy;
  /**
   * D130: the origins whose pages may call the contract's routes from a browser (env `SDGW_CORS_ORIGINS`): exact
   * origins (`["http://localhost:5173", "https://app.example.com"]`), or `"*"` for any. Their preflights are
   * answered with the headers the API reads, their answers expose `Retry-After`, `Idempotent-Replayed`,
   * `X-Should-Retry`, `X-Request-Id` and `Content-Disposition`. Never with credentials: the console's cookie
   * session stays on its own origin. Default `[]`: no origin but the server's own.
   */
  corsOrigins: CorsOrigins;
  /**
   * D114: settings of live connectors by platform, as text by option name (`{ youtube: { apiKey, baseUrl } }`; env
   * `SDGW_YOUTUBE_API_KEY`, `SDGW_YOUTUBE_BASE_URL`, …). A platform whose credentials are set reads its official
   * API; the others stay on the simulator. Default: none.
   */
  connectors: Partial<Record<Platform, RawSettings>>;
  /**
   * D158: an operator's own connectors (plug-ins), each a `ConnectorDefinition` for one of the ten platforms, in
   * place of the simulator (or of this build's connector); their settings are `connectors[platform]` (env: the
   * variables each names). `pnpm start` loads them from the modules `SDGW_CONNECTORS` names. Default: none.
   */
  plugins: readonly ConnectorDefinition[];
  /** D122: keep the answers of live connectors for a while, per operation (default true; env `SDGW_UPSTREAM_CACHE=0`). */
  upstreamCache: boolean;
  /** D123: record what live connectors receive, redacted, into this folder (env `SDGW_UPSTREAM_RECORD`). */
  upstreamRecordDir: string | null;
  /** D123: answer live connectors from the recordings in this folder only (env `SDGW_UPSTREAM_REPLAY`). */
  upstreamReplayDir: string | null;
}

export type { TrustProxy, CorsOrigins };

/** Console sign-in sessions (D82–D85). */
export interface SessionConfig {
  /** A session unused for this long ends (default 12 h; `SDGW_SESSION_IDLE_MS`). Seen to the minute (D83). */
  idleMs: number;
  /** A session ends this long after sign-in, used or not (default 7 days; `SDGW_SESSION_LIFETIME_MS`). */
  lifetimeMs: number;
  /** Failed sign-ins for one email within `failureWindowMs` after which sign-ins for it are refused (default 5). */
  failuresPerEmail: number;
  /** Failed sign-ins from one network address within `failureWindowMs` after which its sign-ins are refused (default 20). */
  failuresPerAddress: number;
  /** The window of the two counts above, in ms (default 15 minutes). */
  failureWindowMs: number;
}

/** The session defaults (D83, D84). */
export const DEFAULT_SESSIONS: SessionConfig = {
  idleMs: 12 * 3600_000,
  lifetimeMs: 7 * 24 * 3600_000,
  failuresPerEmail: 5,
  failuresPerAddress: 20,
  failureWindowMs: 15 * 60_000,
};

/** Bounds of the HTTP connections (D57): a stalled or oversized request is answered in the contract's words, and closed. */
export interface HttpConfig {
  /** The whole request (line, headers and body) must arrive within this many ms (default 30 s). */
  requestTimeoutMs: number;
  /** The request line and headers must arrive within this many ms (default 10 s; at most `requestTimeoutMs`). */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this many ms (default 72 s). */
  keepAliveTimeoutMs: number;
  /** Largest request line plus headers, in bytes (default 64 KiB: a 20,000-character `cursor` fits in a URL). */
  maxHeaderBytes: number;
  /** Open connections one network address may hold; more are answered 429 and closed (default 64). */
  connectionsPerAddress: number;
}

/** Which tools `/mcp` offers (D79). */
export interface McpConfig {
  /** The toolsets offered (`data`, `tools`, `discovery`, `account`); null for all. Env `SDGW_MCP_TOOLSETS`. */
  toolsets: readonly string[] | null;
  /** Offer only the free tools (`find`, `capabilities`, `account`). Env `SDGW_MCP_READ_ONLY=1`. */
  readOnly: boolean;
}

/** A partial configuration; `limits`, `http`, `urls`, `mcp` and `sessions` may be partial too. */
export type ServerOptions = Partial<Omit<ServerConfig, "limits" | "urls" | "http" | "mcp" | "sessions">> & {
  limits?: Partial<LimitsConfig>;
  urls?: Partial<ServiceUrls>;
  http?: Partial<HttpConfig>;
  mcp?: Partial<McpConfig>;
  sessions?: Partial<SessionConfig>;
};

/** The HTTP bounds' defaults (D57). */
export const DEFAULT_HTTP: HttpConfig = {
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 72_000,
  maxHeaderBytes: 64 * 1024,
  connectionsPerAddress: 64,
};

/** The defaults: the seed's 40 s and 24 h, and D27's limits. */
export const DEFAULT_LIMITS: LimitsConfig = {
  keyQps: 10,
  workspaceConcurrency: 5,
  addressPerMinute: 60,
  failureThreshold: 20,
  failureWindowSeconds: 60,
  failureBlockSeconds: 300,
  freeCalls: 100,
};

/** Fills in every default. */
export function defaultConfig(options: ServerOptions = {}): ServerConfig {
  return {
    dbPath: options.dbPath ?? "./data/sdgw.sqlite",
    waitMs: options.waitMs ?? 40_000,
    retentionMs: options.retentionMs ?? 24 * 3600_000,
    idempotencyTtlMs: options.idempotencyTtlMs ?? 24 * 3600_000,
    pollAfterSeconds: Math.max(1, Math.ceil(options.pollAfterSeconds ?? 5)),
    inProgressRetrySeconds: Math.max(1, Math.ceil(options.inProgressRetrySeconds ?? 2)),
    providerTimeoutMs: options.providerTimeoutMs ?? 120_000,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    scheduleTickMs: options.scheduleTickMs ?? 30_000,
    answerLogQuotaBytes: options.answerLogQuotaBytes ?? 1024 * 1024 * 1024,
    answerLogFullMs: options.answerLogFullMs ?? 10_000,
    finalRetryMs: options.finalRetryMs ?? 600_000,
    answerLogChunks: options.answerLogChunks ?? false,
    http: withHeadersWithin({ ...DEFAULT_HTTP, ...options.http }),
    limits: { ...DEFAULT_LIMITS, ...options.limits },
    urls: { ...DEFAULT_URLS, ...options.urls },
    docsLinks: options.docsLinks ?? false,
    mcp: { toolsets: options.mcp?.toolsets ?? null, readOnly: options.mcp?.readOnly ?? false },
    sessions: { ...DEFAULT_SESSIONS, ...options.sessions },
    redisUrl: options.redisUrl ?? null,
    databaseUrl: options.databaseUrl ?? null,
    redisKeyPrefix: options.redisKeyPrefix ?? "sdgw:",
    trustProxy: checkTrustProxy(options.trustProxy ?? null),
    corsOrigins: checkCorsOrigins(options.corsOrigins ?? []),
    connectors: options.connectors ?? {},
    plugins: options.plugins ?? [],
    upstreamCache: options.upstreamCache ?? true,
    upstreamRecordDir: options.upstreamRecordDir ?? null,
    upstreamReplayDir: options.upstreamReplayDir ?? null,
  };
}

/** Node refuses a headers timeout longer than the request timeout; a shorter request timeout shortens it. */
function withHeadersWithin(http: HttpConfig): HttpConfig {
  return { ...http, headersTimeoutMs: Math.min(http.headersTimeoutMs, http.requestTimeoutMs) };
}

/** A setting read from the environment that is not what it must be: the message names the variable. */
export class ConfigError extends Error {
  /** Each variable at fault, with what it must be. */
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid environment: ${problems.join("; ")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/** A reader of `SDGW_*` variables that collects every problem before refusing (so one start names them all). */
function envReader(env: NodeJS.ProcessEnv) {
  const problems: string[] = [];
  const text = (name: string): string | undefined =>
    env[name] !== undefined && env[name] !== "" ? env[name] : undefined;
  /** A whole number in [min, max], or undefined when the variable is unset or empty. */
  const whole = (name: string, what: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined => {
    const raw = text(name);
    if (raw === undefined) return undefined;
    const value = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      problems.push(
        `${name} must be ${what}, a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? " up" : ` to ${max}`} (got ${JSON.stringify(raw)})`,
      );
      return undefined;
    }
    return value;
  };
  const done = () => {
    if (problems.length) throw new ConfigError(problems);
  };
  return { text, whole, done, problems };
}

/**
 * Reads the `SDGW_*` environment variables that configure the gateway (used by `pnpm start` and `sdgw-mcp`):
 * `SDGW_DB`, `SDGW_WAIT_MS`, `SDGW_POLL_AFTER_SECONDS`, `SDGW_LATENCY_MS` (the simulator's latency: each call
 * takes between half and one and a half times it), `SDGW_KEY_QPS`, `SDGW_WORKSPACE_CONCURRENCY`,
 * `SDGW_ADDRESS_PER_MINUTE`, `SDGW_FAILURE_THRESHOLD`, `SDGW_FREE_CALLS`, `SDGW_REQUEST_TIMEOUT_MS`,
 * `SDGW_CONNECTIONS_PER_ADDRESS`, `SDGW_ANSWER_LOG_QUOTA_BYTES`, `SDGW_ANSWER_LOG_CHUNKS`, and the tools `/mcp` offers,
 * `SDGW_MCP_TOOLSETS` (comma-separated toolsets) and `SDGW_MCP_READ_ONLY` (1: only the free tools), and the console's
 * sign-in sessions, `SDGW_SESSION_IDLE_MS` and `SDGW_SESSION_LIFETIME_MS` (D83), and where several instances count
 * the limits together, `SDGW_REDIS_URL` (a `redis://` or `rediss://` URL) and `SDGW_REDIS_PREFIX` (D107), and
 * the PostgreSQL database they share, `SDGW_DATABASE_URL` (D108), the proxies in front whose `X-Forwarded-For`
 * and `X-Forwarded-Proto` are believed, `SDGW_TRUST_PROXY` (a number of proxies or their addresses, D111), the
 * origins whose pages may call from a browser, `SDGW_CORS_ORIGINS` (`*` or a comma list of origins, D130), and the
 * live connectors' settings, `SDGW_<PLATFORM>_*` (`SDGW_YOUTUBE_API_KEY`, …), `SDGW_UPSTREAM_CACHE`,
 * `SDGW_UPSTREAM_RECORD` and `SDGW_UPSTREAM_REPLAY` (D114, D122, D123). Unset or empty means the default.
 *
 * @throws {@link ConfigError} naming every variable that is not a valid value (e.g. `SDGW_WAIT_MS=abc`).
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): GatewayOptions {
  const r = envReader(env);
  const limits: Partial<LimitsConfig> = {};
  const set = <K extends keyof LimitsConfig>(k: K, v: number | undefined) => {
    if (v !== undefined) limits[k] = v;
  };
  set("keyQps", r.whole("SDGW_KEY_QPS", "calls per second per key", 1));
  set("workspaceConcurrency", r.whole("SDGW_WORKSPACE_CONCURRENCY", "running calls per workspace", 1));
  set("addressPerMinute", r.whole("SDGW_ADDRESS_PER_MINUTE", "calls per minute per address", 1));
  set("failureThreshold", r.whole("SDGW_FAILURE_THRESHOLD", "failed calls that hold a key back", 1));
  set("freeCalls", r.whole("SDGW_FREE_CALLS", "calls of a free account", 0));
  const out: GatewayOptions = { limits };
  const db = r.text("SDGW_DB");
  if (db !== undefined) out.dbPath = db;
  const wait = r.whole("SDGW_WAIT_MS", "the milliseconds a call may take before it answers 202", 0);
  if (wait !== undefined) out.waitMs = wait;
  const pollAfter = r.whole(
    "SDGW_POLL_AFTER_SECONDS",
    "the seconds a 202 asks the caller to wait (Retry-After)",
    1,
    3600,
  );
  if (pollAfter !== undefined) out.pollAfterSeconds = pollAfter;
  const latency = r.whole("SDGW_LATENCY_MS", "the simulated platforms' latency in milliseconds", 0, 600_000);
  if (latency) out.simulator = { knobs: { "*": { latencyMs: [latency / 2, latency * 1.5] } } };
  const http: Partial<HttpConfig> = {};
  const requestTimeout = r.whole(
    "SDGW_REQUEST_TIMEOUT_MS",
    "the milliseconds a request may take to arrive",
    1000,
    600_000,
  );
  if (requestTimeout !== undefined) http.requestTimeoutMs = requestTimeout;
  const perAddress = r.whole("SDGW_CONNECTIONS_PER_ADDRESS", "open connections per network address", 1, 100_000);
  if (perAddress !== undefined) http.connectionsPerAddress = perAddress;
  if (Object.keys(http).length) out.http = http;
  const quota = r.whole(
    "SDGW_ANSWER_LOG_QUOTA_BYTES",
    "the answer log's disk quota in bytes",
    1024 * 1024,
    Number.MAX_SAFE_INTEGER,
  );
  if (quota !== undefined) out.answerLogQuotaBytes = quota;
  const chunks = r.whole("SDGW_ANSWER_LOG_CHUNKS", "0 or 1 (store answers as chunks, each once)", 0, 1);
  if (chunks !== undefined) out.answerLogChunks = chunks === 1;
  const mcp: Partial<McpConfig> = {};
  try {
    const sets = r.text(MCP_TOOLSETS_ENV);
    if (sets !== undefined) mcp.toolsets = parseToolsets(sets, MCP_TOOLSETS_ENV);
  } catch (error) {
    r.problems.push((error as McpToolsetError).message);
  }
  try {
    const ro = r.text(MCP_READ_ONLY_ENV);
    if (ro !== undefined && parseReadOnly(ro, MCP_READ_ONLY_ENV)) mcp.readOnly = true;
  } catch (error) {
    r.problems.push((error as McpToolsetError).message);
  }
  if (Object.keys(mcp).length) out.mcp = mcp;
  const sessions: Partial<SessionConfig> = {};
  const idle = r.whole("SDGW_SESSION_IDLE_MS", "the milliseconds a console session may go unused", 60_000);
  if (idle !== undefined) sessions.idleMs = idle;
  const lifetime = r.whole("SDGW_SESSION_LIFETIME_MS", "the milliseconds a console session lasts at most", 60_000);
  if (lifetime !== undefined) sessions.lifetimeMs = lifetime;
  if (Object.keys(sessions).length) out.sessions = sessions;
  const redisUrl = r.text("SDGW_REDIS_URL");
  if (redisUrl !== undefined) {
    if (isRedisUrl(redisUrl)) out.redisUrl = redisUrl;
    else
      r.problems.push(
        `SDGW_REDIS_URL must be a Redis URL, redis://[user:password@]host[:port][/db] or rediss://… (got ${JSON.stringify(withoutPassword(redisUrl))})`,
      );
  }
  const databaseUrl = r.text("SDGW_DATABASE_URL");
  if (databaseUrl !== undefined) {
    if (isPostgresUrl(databaseUrl)) out.databaseUrl = databaseUrl;
    else
      r.problems.push(
        `SDGW_DATABASE_URL must be a PostgreSQL URL, postgres://user[:password]@host[:port]/database (got ${JSON.stringify(withoutPassword(databaseUrl))})`,
      );
  }
  const trustProxy = r.text("SDGW_TRUST_PROXY");
  if (trustProxy !== undefined) {
    try {
      out.trustProxy = parseTrustProxy(trustProxy, "SDGW_TRUST_PROXY");
    } catch (error) {
      r.problems.push((error as TrustProxyError).message);
    }
  }
  const cors = r.text("SDGW_CORS_ORIGINS");
  if (cors !== undefined) {
    try {
      out.corsOrigins = parseCorsOrigins(cors, "SDGW_CORS_ORIGINS");
    } catch (error) {
      r.problems.push((error as CorsOriginsError).message);
    }
  }
  const prefix = r.text("SDGW_REDIS_PREFIX");
  if (prefix !== undefined) {
    if (/^[!-~]{1,100}$/.test(prefix)) out.redisKeyPrefix = prefix;
    else
      r.problems.push(
        `SDGW_REDIS_PREFIX must be the prefix of the limits' Redis keys, 1 to 100 printable ASCII characters without spaces (got ${JSON.stringify(prefix)})`,
      );
  }
  Object.assign(out, upstreamFromEnv(env, r.problems));
  r.done();
  return out;
}

/** Whether `raw` is a PostgreSQL connection URL (`postgres://` or `postgresql://` with a host; D108). */
export function isPostgresUrl(raw: string): boolean {
  try {
    const u = new URL(raw);
    return (u.protocol === "postgres:" || u.protocol === "postgresql:") && u.hostname !== "";
  } catch {
    return false;
  }
}

/** Whether a URL is one the limits can use (D107): `redis://` or `rediss://`, a host, a database number if a path. */
export function isRedisUrl(raw: string): boolean {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return false;
  }
  return (
    (url.protocol === "redis:" || url.protocol === "rediss:") &&
    url.hostname !== "" &&
    /^(\/\d{0,5})?$/.test(url.pathname)
  );
}

/** A URL as it may be shown (a message, a banner): its password, if any, as `***`. */
export function withoutPassword(raw: string): string {
  try {
    const url = new URL(raw);
    if (!url.password) return raw;
    url.password = "***";
    return url.href;
  } catch {
    return raw;
  }
}

/**
 * Where `pnpm start` listens: `SDGW_HOST` (default 127.0.0.1) and `SDGW_PORT` (default 8787; 0 picks a free port).
 *
 * @throws {@link ConfigError} when `SDGW_PORT` is not a port number.
 */
export function listenFromEnv(env: NodeJS.ProcessEnv = process.env): { host: string; port: number } {
  const r = envReader(env);
  const port = r.whole("SDGW_PORT", "a TCP port", 0, 65_535);
  const host = r.text("SDGW_HOST");
  r.done();
  return { host: host ?? "127.0.0.1", port: port ?? 8787 };
}

/** Options of `createGateway`: the configuration, and optionally other providers, a clock or a logger. */
export interface GatewayOptions extends ServerOptions {
  /** Providers per platform; default: the simulator. */
  providers?: Readonly<Record<Platform, PlatformProvider>>;
  /** Options of the default simulator. */
  simulator?: SimulatorOptions;
  /** The `fetch` of live connectors (D114; default `globalThis.fetch`): tests pass their own. */
  upstreamFetch?: typeof fetch;
  /** The clock (ms). */
  now?: () => number;
  /**
   * Where failures of the server's side are reported; default: standard error, in `logFormat`, each line about a
   * request with its `request_id` (D113).
   */
  log?: (message: string, error?: unknown) => void;
  /** D113: the default logger's format (`SDGW_LOG_FORMAT`): `text` (default, `[sdgw] …`) or `json` (one object a line). */
  logFormat?: LogFormat;
  /** D113: who may read `GET /metrics` (`SDGW_METRICS`, `SDGW_METRICS_TOKEN`); default: only on a loopback listen address. */
  metrics?: MetricsOptions;
  /**
   * Whether this gateway serves (default true): it opens the store by ending the runs of processes that are gone
   * (never those of a live process sharing the file), holds a lease renewed every sixth of `runLeaseMs`, and with
   * each renewal ends the runs of owners gone since. The admin CLI passes false: it only edits accounts and keys.
   * A gateway that passes false and still runs a call that answers 202 takes a lease then, and renews it.
   */
  recover?: boolean;
  /**
   * How long the runs of this process stay its own after its last lease renewal, in ms (default 30 000; `SDGW_RUN_LEASE_MS`):
   * another process sharing the database ends them as broken only after that (at once when it sees, on the same
   * machine, that the process is gone). Renewed every sixth of it.
   */
  runLeaseMs?: number;
}

/**
 * Reads `SDGW_RUN_LEASE_MS` (the `runLeaseMs` of `createGateway`, used by `pnpm start` and `sdgw-mcp`): a whole
 * number of milliseconds from 300 up; unset or empty means the default (30 000).
 *
 * @throws {@link ConfigError} when it is not such a number.
 */
export function runLeaseFromEnv(env: NodeJS.ProcessEnv = process.env): { runLeaseMs?: number } {
  const raw = env["SDGW_RUN_LEASE_MS"];
  if (raw === undefined || raw === "") return {};
  const value = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < 300)
    throw new ConfigError([
      `SDGW_RUN_LEASE_MS must be the milliseconds the runs of a process stay its own without a ` +
        `heartbeat, a whole number from 300 up (got ${JSON.stringify(raw)})`,
    ]);
  return { runLeaseMs: value };
}

/** The lease of an owner when nothing else is said: 30 s, renewed every 5 s. */
export const DEFAULT_RUN_LEASE_MS = 30000;

/** The settings of live connectors in the server's configuration (D114, D122, D123). */
export type UpstreamConfig = Pick<
  ServerConfig,
  "connectors" | "upstreamCache" | "upstreamRecordDir" | "upstreamReplayDir"
> &
  Partial<Pick<ServerConfig, "plugins">>;

/**
 * Reads the connectors' `SDGW_<PLATFORM>_*` variables and `SDGW_UPSTREAM_CACHE`, `SDGW_UPSTREAM_RECORD`,
 * `SDGW_UPSTREAM_REPLAY` (D114, D122, D123); every problem, named by its variable, goes into `problems`.
 */
export function upstreamFromEnv(env: NodeJS.ProcessEnv, problems: string[]): Partial<UpstreamConfig> {
  const out: Partial<UpstreamConfig> = {};
  const connectors: Partial<Record<Platform, RawSettings>> = {};
  for (const def of CONNECTORS) {
    const raw: Record<string, string> = {};
    for (const s of def.settings) if (env[s.env] !== undefined && env[s.env] !== "") raw[s.name] = env[s.env]!;
    if (!switchedOn(def, raw)) continue;
    try {
      def.configure(raw, (name) => def.settings.find((s) => s.name === name)?.env ?? name);
      connectors[def.platform] = raw;
    } catch (e) {
      if (!isConnectorConfigError(e)) throw e;
      problems.push(...e.problems);
    }
  }
  if (Object.keys(connectors).length) out.connectors = connectors;
  const cache = env["SDGW_UPSTREAM_CACHE"];
  if (cache !== undefined && cache !== "") {
    if (cache === "0" || cache === "1") out.upstreamCache = cache === "1";
    else
      problems.push(`SDGW_UPSTREAM_CACHE must be 0 (no cache of upstream answers) or 1 (got ${JSON.stringify(cache)})`);
  }
  const record = env["SDGW_UPSTREAM_RECORD"];
  const replay = env["SDGW_UPSTREAM_REPLAY"];
  if (record && replay)
    problems.push("SDGW_UPSTREAM_RECORD and SDGW_UPSTREAM_REPLAY cannot both be set: record, or replay");
  if (record) out.upstreamRecordDir = record;
  if (replay) out.upstreamReplayDir = replay;
  return out;
}
