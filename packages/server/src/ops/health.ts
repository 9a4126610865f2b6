/**
 * D113: the checks of `GET /readyz`. Each is bounded in time, so a database or a Redis that does not answer (a
 * blackholed address included) makes the check fail within its bound instead of keeping the probe waiting.
 */
import { redact } from "./log.ts";

/** One check of readiness: its name, whether it passed, how long it took, and why it failed (never a secret). */
export interface HealthCheck {
  /** `database`, `redis`, `shutdown`. */
  name: string;
  ok: boolean;
  /** Milliseconds the check took (its bound when it did not answer). */
  ms: number;
  /** What it found when it passed (`schema version 1`). */
  detail?: string;
  /** Why it failed, in words an operator acts on. */
  error?: string;
}

/** The bound of each check, in ms. */
export const CHECK_BOUND_MS = 1500;

/**
 * Runs `check` within `boundMs`: passed with its detail, failed with its error's message (passwords in URLs
 * masked), or failed as `no answer within N ms`. The work of a check that timed out is left to end by itself.
 */
export async function bounded(
  name: string,
  check: () => Promise<string | undefined> | string | undefined,
  boundMs = CHECK_BOUND_MS,
): Promise<HealthCheck> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((r) => {
    timer = setTimeout(r, boundMs, "late");
  });
  try {
    const out = await Promise.race([Promise.resolve().then(check), late]);
    if (out === "late") return { name, ok: false, ms: ms(), error: `no answer within ${boundMs} ms` };
    return { name, ok: true, ms: ms(), ...(out ? { detail: out } : {}) };
  } catch (e) {
    return { name, ok: false, ms: ms(), error: redact(e instanceof Error ? e.message : String(e)) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `fn` run once at a time: callers while it runs share its promise (probes of a database that does not answer do
 * not pile up connection attempts).
 */
export function singleFlight<T>(fn: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | null = null;
  return () => {
    running ??= fn().finally(() => {
      running = null;
    });
    return running;
  };
}

/** Whether a listen address is loopback only (127.0.0.0/8, ::1, `localhost`). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === "::ffff:127.0.0.1";
}
