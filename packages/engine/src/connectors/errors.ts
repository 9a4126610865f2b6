/**
 * Upstream faults as the contract's outcomes, honestly (D120): a missing object is `not_found`; our own credentials
 * refused is `upstream_error`, not retryable, with a loud line for the operator (the caller's key is fine); a
 * platform's limit or a drained budget is `rate_limited` with a real `retry_after`; a budget that cannot be
 * checked is `temporarily_unavailable`; a 5xx or a network error is `upstream_error`, retryable; no answer in time
 * is `timeout`. None is charged: every one is a failure (seed). A connector classifies its platform's own error
 * bodies first and leaves the rest to `faultOutcome`.
 */
import { isoSeconds } from "../time.ts";
import type { ProviderOutcome } from "../providers/port.ts";
import type { ConnectorLog } from "./context.ts";
import type { UpstreamFault } from "./http.ts";

const NOTHING = "Nothing was charged.";

/** Seconds from `now` until `at`, at least 1. */
export function secondsUntil(at: number, now: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}

/** `not_found`: the object is missing, private or deleted. */
export function notFound(platform: string, what: string): ProviderOutcome {
  return {
    status: "error",
    failure: { code: "not_found", message: `This ${platform} ${what} is missing, private or deleted. ${NOTHING}` },
  };
}

/** `invalid_target`: a link or id that names no object of the kind this call reads; `param` names it. */
export function invalidTarget(param: string, message: string): ProviderOutcome {
  return { status: "error", failure: { code: "invalid_target", param, message: `${message} ${NOTHING}` } };
}

/** `rate_limited` until `until` (a platform's limit or its drained budget). */
export function rateLimitedUntil(message: string, until: number, now: number): ProviderOutcome {
  const retryAfter = secondsUntil(until, now);
  return { status: "error", failure: { code: "rate_limited", message: `${message} ${NOTHING}`, retryAfter } };
}

/** `upstream_error`; `retryable` says whether a retry can help. */
export function upstreamError(message: string, retryable: boolean): ProviderOutcome {
  return { status: "error", failure: { code: "upstream_error", message: `${message} ${NOTHING}`, retryable } };
}

/** `timeout`: no answer in time, unknown whether it ran. */
export function timedOut(platform: string): ProviderOutcome {
  return {
    status: "timeout",
    message: `${platform} did not answer in time; it is unknown whether it ran. ${NOTHING}`,
  };
}

/** Our credentials refused by the platform: logged loudly once per call, answered as a non-retryable upstream_error. */
export function credentialsRefused(platform: string, detail: string, log: ConnectorLog): ProviderOutcome {
  log.error(
    `${platform}: the platform refused the gateway's own credentials (${detail}); every ${platform} call fails until the operator fixes them`,
  );
  return upstreamError(
    `${platform} refused the gateway's access (a problem on the service's side, not with your key).`,
    false,
  );
}

/** The outcome of a fault a connector did not classify itself. */
export function faultOutcome(
  fault: UpstreamFault,
  o: { platform: string; now: number; log: ConnectorLog },
): ProviderOutcome {
  const p = o.platform;
  switch (fault.kind) {
    case "timeout":
      return timedOut(p);
    case "budget": {
      const r = fault.refusal;
      if (r.reason === "unavailable")
        return {
          status: "error",
          failure: {
            code: "temporarily_unavailable",
            message: `Reads of ${p} are paused: the gateway cannot check its ${p} budget now. ${NOTHING}`,
          },
        };
      return rateLimitedUntil(
        `The gateway's daily ${r.label} budget (${r.limit} units) is used up; it refills at ${isoSeconds(r.resetsAt)}.`,
        r.resetsAt,
        o.now,
      );
    }
    case "network":
      return upstreamError(`${p} could not be reached (${fault.message}). A retry later usually works.`, true);
    case "body":
      return upstreamError(
        `${p} answered something that is not JSON (HTTP ${fault.status}). A retry later may work.`,
        true,
      );
    case "http": {
      const s = fault.status;
      if (s === 404) return notFound(p, "object");
      if (s === 401) return credentialsRefused(p, `HTTP ${s}`, o.log);
      if (s === 403) return credentialsRefused(p, `HTTP ${s}, forbidden`, o.log);
      if (s === 429)
        return rateLimitedUntil(
          `${p} is limiting how fast the gateway may read.`,
          o.now + 1000 * (fault.retryAfter ?? 60),
          o.now,
        );
      if (s >= 500)
        return upstreamError(`${p} answered with a server error (${s}). A retry later usually works.`, true);
      o.log.error(
        `${p}: the platform refused a request of the gateway's connector (HTTP ${s}): a bug or an API change`,
      );
      return upstreamError(`${p} refused the gateway's request (HTTP ${s}); a retry will not help.`, false);
    }
  }
}

/** How a connector reads the target of a link: an account's link or a post's, and what to say of one it cannot read. */
export interface TargetLinks {
  /** The account a link names, or undefined. */
  user(url: string): string | null | undefined;
  /** The post a link names, or undefined. */
  post(url: string): string | null | undefined;
  /** Why a link names no account (the forms that do). */
  noUser: string;
  /** Why a link names no post (the forms that do). */
  noPost: string;
}

/**
 * The target of an operation that reads one (detail, comments: a post; user_profile, user_posts: an account), from
 * its `url` (read by `links`, then dropped from `params`) or its `id`: the raw id and whether it names an account,
 * or the refusal of a link that names none or of a call that gives neither (`invalid_target`). Null for an
 * operation that reads no single target.
 */
export function targetOf(
  op: string,
  params: Readonly<Record<string, unknown>>,
  out: Record<string, unknown>,
  links: TargetLinks,
): { id: string; users: boolean } | { outcome: ProviderOutcome } | null {
  if (op !== "detail" && op !== "comments" && op !== "user_profile" && op !== "user_posts") return null;
  const users = op === "user_profile" || op === "user_posts";
  const url = typeof params["url"] === "string" ? params["url"] : undefined;
  let id = typeof params["id"] === "string" ? params["id"] : undefined;
  delete out["url"];
  if (url !== undefined) {
    const found = users ? links.user(url) : links.post(url);
    if (!found) return { outcome: invalidTarget("url", users ? links.noUser : links.noPost) };
    id = found;
  }
  if (id === undefined) return { outcome: invalidTarget("id", "No id or link was given.") };
  return { id, users };
}
