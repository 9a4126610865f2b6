/**
 * How a platform fails, in one set of words: the simulator's faults and the mock's forced outcomes answer with these,
 * so that a failure reads the same whoever produced it. Pure.
 */
import type { ProviderOutcome } from "./port.ts";

/** The outcomes a platform call can end in other than `ok`. */
export type PlatformFailure =
  | "empty"
  | "not_supported"
  | "timeout"
  | "upstream_error"
  | "rate_limited"
  | "not_found"
  | "invalid_target"
  | "temporarily_unavailable";

/** Whether an outcome code is one a platform call can end in (see {@link platformFailure}). */
export function isPlatformFailure(code: string): code is PlatformFailure {
  return (FAILURES as readonly string[]).includes(code);
}

const FAILURES = [
  "empty",
  "not_supported",
  "timeout",
  "upstream_error",
  "rate_limited",
  "not_found",
  "invalid_target",
  "temporarily_unavailable",
] as const satisfies readonly PlatformFailure[];

/**
 * A platform call that ended in `failure`: `platform` names it in the message; `param` is the request parameter a
 * bad target came from (`invalid_target`, default `id`); `retryAfter` the seconds a `rate_limited` platform asks.
 */
export function platformFailure(
  failure: PlatformFailure,
  platform: string,
  o: { param?: string; retryAfter?: number } = {},
): ProviderOutcome {
  const ended = "nothing was charged";
  switch (failure) {
    case "empty":
      return { status: "empty", items: [] };
    case "not_supported":
      return { status: "not_supported", message: `${platform} does not offer this action; ${ended}.` };
    case "timeout":
      return {
        status: "timeout",
        message: `${platform} did not answer in time; it is unknown whether it ran. Nothing was charged.`,
      };
    case "upstream_error": {
      const message = `${platform} answered with a server error (502); ${ended}. A retry later usually works.`;
      return { status: "error", failure: { code: failure, message, retryable: true } };
    }
    case "rate_limited": {
      const retryAfter = o.retryAfter ?? 30;
      const message = `${platform} is limiting how fast the gateway may read; ${ended}. Try again in ${retryAfter} s.`;
      return { status: "error", failure: { code: failure, message, retryAfter } };
    }
    case "not_found": {
      const message = `This ${platform} object is missing, private or deleted; ${ended}.`;
      return { status: "error", failure: { code: failure, message } };
    }
    case "invalid_target": {
      const param = o.param ?? "id";
      const message = `This ${param} does not point at a valid ${platform} target; ${ended}.`;
      return { status: "error", failure: { code: failure, param, message } };
    }
    case "temporarily_unavailable": {
      const message = `Reads of ${platform} are paused; the status page says why. Nothing was charged.`;
      return { status: "error", failure: { code: failure, message } };
    }
  }
}
