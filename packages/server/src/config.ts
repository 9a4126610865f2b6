/** Configuration of the reference server, with the defaults of D27 and the seed's limits. */
import { DEFAULT_URLS, type ServiceUrls } from "@sdgw/validators";

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
  limits: LimitsConfig;
  /** Addresses the errors point to. */
  urls: ServiceUrls;
}

/** A partial configuration; `limits` and `urls` may be partial too. */
export type ServerOptions = Partial<Omit<ServerConfig, "limits" | "urls">> & { limits?: Partial<LimitsConfig>; urls?: Partial<ServiceUrls> };

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
    limits: { ...DEFAULT_LIMITS, ...options.limits },
    urls: { ...DEFAULT_URLS, ...options.urls },
  };
}

/** Reads `SDGW_*` environment variables (used by `src/main.ts`). */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): ServerOptions {
  const num = (name: string): number | undefined => (env[name] !== undefined && env[name] !== "" ? Number(env[name]) : undefined);
  const limits: Partial<LimitsConfig> = {};
  const set = <K extends keyof LimitsConfig>(k: K, v: number | undefined) => {
    if (v !== undefined && Number.isFinite(v)) limits[k] = v;
  };
  set("keyQps", num("SDGW_KEY_QPS"));
  set("workspaceConcurrency", num("SDGW_WORKSPACE_CONCURRENCY"));
  set("addressPerMinute", num("SDGW_ADDRESS_PER_MINUTE"));
  set("failureThreshold", num("SDGW_FAILURE_THRESHOLD"));
  set("freeCalls", num("SDGW_FREE_CALLS"));
  const out: ServerOptions = { limits };
  if (env["SDGW_DB"]) out.dbPath = env["SDGW_DB"];
  const wait = num("SDGW_WAIT_MS");
  if (wait !== undefined) out.waitMs = wait;
  return out;
}
