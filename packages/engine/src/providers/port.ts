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
}

/** A failure the platform reports (answered inside HTTP 200, never charged). */
export type ProviderFailure =
  | { code: "upstream_error"; message: string; retryable: boolean }
  | { code: "rate_limited"; message: string; retryAfter: number }
  | { code: "not_found"; message: string }
  | { code: "invalid_target"; message: string; param: string }
  | { code: "temporarily_unavailable"; message: string };

/** What a provider answers. A thrown exception is a failure on the server's side (the run breaks). */
export type ProviderOutcome =
  | { status: "ok" | "empty"; items: Item[]; page?: Page; warnings?: string[] }
  | { status: "error"; failure: ProviderFailure }
  | { status: "not_supported"; message: string }
  | { status: "timeout"; message: string };

/** A platform's provider. */
export interface PlatformProvider {
  readonly platform: Platform;
  readonly operations: readonly OperationSpec[];
  /** Null when the platform offers `operation` with these parameters; otherwise one sentence why not. */
  unsupported(operation: string, params: Readonly<Record<string, unknown>>): string | null;
  /** Whether `scope` means something on this platform (D18). */
  readonly scoped: boolean;
  /** Whether a `cursor` is one this provider wrote for this operation (a refused cursor is `invalid_params`). */
  cursorValid(operation: string, cursor: string): boolean;
  /** Makes one call to the platform; resolves to its outcome, rejects only on a failure of the server's side (the run breaks). */
  call(request: ProviderRequest): Promise<ProviderOutcome>;
}

export type { ContentItem, Item, LeaderboardItem, Page, Platform, ProfileCard };
