/**
 * The provider port: how the server reads a platform. One provider per platform; each offers a list of
 * operations (the typed routes' `search`, `trending`, `detail`, `comments`, `user_profile`, `user_posts`, and
 * catalog-only ops such as `bilibili.video_danmaku`). The default providers are the deterministic simulator
 * (`./simulator`); a real connector implements the same interface.
 */
import type { ContentItem, Item, LeaderboardItem, Page, Platform, ProfileCard } from "@sdgw/types";

/** The six operations with a typed route (`POST /v1/<name>`, and `GET /v1/search`). */
export const ROUTE_OPERATIONS = ["search", "trending", "detail", "comments", "user_profile", "user_posts"] as const;

/** One of the six operations with a typed route. */
export type RouteOperation = (typeof ROUTE_OPERATIONS)[number];

/** A parameter of a catalog-only op (typed ops take their route's parameters). */
export interface OpParam {
  name: string;
  type: "string" | "integer";
  required?: boolean;
  /** Bounds: characters for strings, values for integers. */
  min?: number;
  max?: number;
  default?: string | number;
  allowed?: readonly string[];
}

/** One operation a platform offers. */
export interface OperationSpec {
  /** `search`, …, or a catalog-only name such as `video_danmaku`. */
  name: string;
  /** What it does, in English and Chinese: `English · 中文`. */
  description: string;
  /** Price of one call, in credits (at least 1: `ok` and `empty` cost more than 0). */
  price: number;
  pricing: "standard" | "placeholder";
  /** Parameters of a catalog-only op; typed ops take their route's. */
  params?: readonly OpParam[];
}

/** A call to a platform: one platform, one target at most, the parameters as applied. */
export interface ProviderRequest {
  platform: Platform;
  operation: string;
  /** The applied parameters of this call (for a target: `id` or `url` holds that one value). */
  params: Readonly<Record<string, unknown>>;
  /** Aborted when the call passed its time. */
  signal: AbortSignal;
  /**
   * When the call's time runs out (ms since the epoch, on the gateway's clock), if the caller knows it: a live
   * connector retries an upstream request only inside the time left (D116).
   */
  deadline?: number;
}

/** A failure the platform reports (answered inside HTTP 200, never charged). */
export type ProviderFailure =
  | { code: "upstream_error"; message: string; retryable: boolean }
  | { code: "rate_limited"; message: string; retryAfter: number }
  | { code: "not_found"; message: string }
  | { code: "invalid_target"; message: string; param: string }
  | { code: "temporarily_unavailable"; message: string };

/**
 * What one call cost upstream, reported by a live connector for the operator (D121): upstream units spent and
 * requests sent (a call that shared a batched request counts its share, so both may be fractions), and whether the
 * answer came from the cache (then both are 0).
 */
export interface UpstreamUsage {
  units: number;
  requests: number;
  cached: boolean;
}

/** What a provider answers. A thrown exception is a failure on the server's side (the run breaks). */
export type ProviderOutcome = (
  | { status: "ok" | "empty"; items: Item[]; page?: Page; warnings?: string[] }
  | { status: "error"; failure: ProviderFailure }
  | { status: "not_supported"; message: string }
  | { status: "timeout"; message: string }
) & { upstream?: UpstreamUsage };

/**
 * Where a platform's data comes from (D114): `simulated` (the deterministic simulator), `live` (a connector of
 * ours on the platform's official API with the operator's credentials) or `plugged` (an operator's own module).
 */
export type ProviderSource = "live" | "simulated" | "plugged";

/** What a provider's `check()` of its credentials found. */
export type CredentialsCheck = { ok: true; message: string } | { ok: false; message: string };

/** A platform's provider. */
export interface PlatformProvider {
  readonly platform: Platform;
  readonly operations: readonly OperationSpec[];
  /** Null when the platform offers `operation` with these parameters; otherwise one sentence why not. */
  unsupported(operation: string, params: Readonly<Record<string, unknown>>): string | null;
  /** Whether `scope` means something on this platform (D18). */
  readonly scoped: boolean;
  /**
   * Whether a `cursor` is one this provider wrote for this operation (a refused cursor is `invalid_params`);
   * `params` are the other parameters of the call as applied, to which a live connector's cursor is bound (D115).
   */
  cursorValid(operation: string, cursor: string, params?: Readonly<Record<string, unknown>>): boolean;
  /** Makes one call to the platform; resolves to its outcome, rejects only on a failure of the server's side (the run breaks). */
  call(request: ProviderRequest): Promise<ProviderOutcome>;
  /** Where its data comes from (D114); absent means `simulated`. */
  readonly source?: ProviderSource;
  /**
   * What one call of `operation` with these parameters costs upstream at most, in the platform's own units (YouTube
   * quota units), for the quote beside its price in credits (D121). Absent: nothing (the simulator).
   */
  upstreamCost?(operation: string, params: Readonly<Record<string, unknown>>): number;
  /**
   * Why `operation` cannot run on this provider yet, or null (D120: a live platform answers `not_supported`,
   * reason `not_available_yet`, rather than simulated data). Absent: every listed operation runs.
   */
  notAvailableYet?(operation: string): string | null;
  /** Asks the platform whether the credentials work (one cheap upstream request). Absent: nothing to check. */
  check?(signal: AbortSignal): Promise<CredentialsCheck>;
}

export type { ContentItem, Item, LeaderboardItem, Page, Platform, ProfileCard };
