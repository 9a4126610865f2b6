/**
 * D113: the operator's settings read from the environment by `pnpm start`: `SDGW_LOG_FORMAT` (`text` or `json`),
 * `SDGW_METRICS` (`loopback`, `on`, `off`) and `SDGW_METRICS_TOKEN` (who may read `/metrics`), and
 * `SDGW_SHUTDOWN_GRACE_MS` (how long a stop waits for runs in flight).
 */
import { ConfigError } from "../config.ts";
import { LOG_FORMATS, type LogFormat } from "./log.ts";
import { METRICS_ACCESS, type MetricsAccess, type MetricsOptions } from "./metrics.ts";
import { DEFAULT_SHUTDOWN_GRACE_MS } from "./stop.ts";

/** What {@link opsFromEnv} reads. */
export interface OpsSettings {
  /** `SDGW_LOG_FORMAT`: `text` (default) or `json`. */
  logFormat: LogFormat;
  /** `SDGW_METRICS`, `SDGW_METRICS_TOKEN`. */
  metrics: Required<MetricsOptions>;
  /** `SDGW_SHUTDOWN_GRACE_MS`: how long SIGTERM or SIGINT waits for runs in flight (default 25 000). */
  shutdownGraceMs: number;
}

/**
 * Reads the operator's variables; unset or empty means the default.
 *
 * @throws {@link ConfigError} naming each variable that is not a valid value (a token's value is never repeated).
 */
export function opsFromEnv(env: NodeJS.ProcessEnv = process.env): OpsSettings {
  const problems: string[] = [];
  const text = (name: string) => (env[name] === undefined || env[name] === "" ? undefined : env[name]);
  const format = text("SDGW_LOG_FORMAT");
  if (format !== undefined && !LOG_FORMATS.includes(format as LogFormat))
    problems.push(`SDGW_LOG_FORMAT must be ${LOG_FORMATS.join(" or ")} (got ${JSON.stringify(format)})`);
  const access = text("SDGW_METRICS");
  if (access !== undefined && !METRICS_ACCESS.includes(access as MetricsAccess))
    problems.push(
      `SDGW_METRICS must be who may read GET /metrics, ${METRICS_ACCESS.join(", ")} (got ${JSON.stringify(access)})`,
    );
  const token = text("SDGW_METRICS_TOKEN");
  if (token !== undefined && !/^[!-~]{16,256}$/.test(token))
    problems.push(
      `SDGW_METRICS_TOKEN must be the bearer token of GET /metrics, 16 to 256 visible ASCII characters without spaces (got ${token.length} characters)`,
    );
  const graceRaw = text("SDGW_SHUTDOWN_GRACE_MS");
  const grace = graceRaw !== undefined && /^\s*\d+\s*$/.test(graceRaw) ? Number(graceRaw) : Number.NaN;
  if (graceRaw !== undefined && !(Number.isSafeInteger(grace) && grace <= 3_600_000))
    problems.push(
      `SDGW_SHUTDOWN_GRACE_MS must be the milliseconds a stop waits for runs in flight, a whole number from 0 to 3600000 (got ${JSON.stringify(graceRaw)})`,
    );
  if (problems.length) throw new ConfigError(problems);
  return {
    logFormat: (format as LogFormat | undefined) ?? "text",
    metrics: { access: (access as MetricsAccess | undefined) ?? "loopback", token: token ?? null },
    shutdownGraceMs: graceRaw === undefined ? DEFAULT_SHUTDOWN_GRACE_MS : grace,
  };
}
