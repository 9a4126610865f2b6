/**
 * CORS of the reference server (D130): a page on another origin may call the contract's routes when
 * `SDGW_CORS_ORIGINS` (or `createServer({ corsOrigins })`) lets its origin in. None is let in by default.
 *
 * Scope: the contract's paths (`/v1/…`, unknown ones included so a page can read their `404 not_found`, and
 * `/openapi.json`). Never the console (`/console/…`, its cookie session stays on its own origin, D84), `/mcp`,
 * `/docs` or the operator's routes: their answers carry no `Access-Control-*` header and their preflights are not
 * answered. Never `Access-Control-Allow-Credentials`: keys travel in headers, so a page on another origin calls
 * with the key it holds, never with the console user's cookie.
 */
import { OPERATIONS } from "@sdgw/validators";

/** The request headers the API reads, allowed by a preflight. `X-CSRF-Token` is not: it belongs to the cookie. */
export const CORS_ALLOW_HEADERS = "X-API-Key, Authorization, Idempotency-Key, Content-Type";

/**
 * The answer headers a page may read besides the CORS-safelisted ones: what the server sends that a client acts on
 * (`Retry-After` of a 202, 409, 429 or 503; `Idempotent-Replayed` of a replay; `X-Should-Retry` of a timeout;
 * `Content-Disposition` of a csv or ndjson file) and `X-Request-Id`, the mock's list (D117) without its scenario
 * header.
 */
export const CORS_EXPOSE_HEADERS =
  "Retry-After, Idempotent-Replayed, X-Should-Retry, X-Request-Id, Content-Disposition";

/** How long a browser may keep a preflight's answer, in seconds. */
export const CORS_MAX_AGE = "600";

/** The origins let in: `"*"` any origin, or a list of exact origins (`[]`, the default: none). */
export type CorsOrigins = "*" | readonly string[];

/** A value of `SDGW_CORS_ORIGINS` or `corsOrigins` that is not a list of origins; the message says what is. */
export class CorsOriginsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CorsOriginsError";
  }
}

/**
 * Checks `corsOrigins` and answers the origins as browsers send them (`https://app.example.com`: scheme, host
 * and port, lower case, no trailing slash). `"*"` stands alone.
 *
 * @throws {@link CorsOriginsError} naming `name` and the entry at fault.
 */
export function checkCorsOrigins(value: unknown, name = "corsOrigins"): CorsOrigins {
  if (value === undefined || value === null) return [];
  if (value === "*") return "*";
  const fail = (why: string): never => {
    throw new CorsOriginsError(
      `${name} must be "*" or a list of exact origins such as http://localhost:5173,https://app.example.com (${why})`,
    );
  };
  if (!Array.isArray(value)) return fail(`got ${JSON.stringify(value)}`);
  const out: string[] = [];
  for (const o of value as unknown[]) {
    if (typeof o !== "string") return fail(`got ${JSON.stringify(o)} in the list`);
    if (o === "*") return fail(`"*" stands alone, not in a list`);
    let url: URL;
    try {
      url = new URL(o);
    } catch {
      return fail(`${JSON.stringify(o)} is not an origin`);
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.origin !== o.replace(/\/$/, "").toLowerCase())
      return fail(`${JSON.stringify(o)} is not an origin: http or https, host and port only`);
    if (!out.includes(url.origin)) out.push(url.origin);
  }
  return out;
}

/** Reads `SDGW_CORS_ORIGINS`: `*`, or origins separated by commas (spaces around them ignored). */
export function parseCorsOrigins(raw: string, name = "SDGW_CORS_ORIGINS"): CorsOrigins {
  const trimmed = raw.trim();
  if (trimmed === "*") return "*";
  const list = trimmed
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return checkCorsOrigins(list, name);
}

/** The contract's paths as patterns, each with the methods it answers. */
const ROUTES: readonly { pattern: RegExp; methods: string }[] = (() => {
  const byPath = new Map<string, Set<string>>();
  for (const o of Object.values(OPERATIONS)) {
    const methods = byPath.get(o.path) ?? new Set<string>();
    methods.add(o.method.toUpperCase());
    byPath.set(o.path, methods);
  }
  return [...byPath].map(([path, methods]) => ({
    pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    methods: [...methods].join(", "),
  }));
})();

/** The methods a path outside the table but under `/v1/` may be preflighted for: the contract's. */
const ANY_V1_METHODS = "GET, POST, DELETE";

/**
 * The methods a page on another origin may use on `pathname` (`"POST"`, `"GET, POST"`), or null when the path is
 * outside CORS (the console, `/mcp`, `/docs`, the operator's routes).
 */
export function corsMethods(pathname: string): string | null {
  for (const r of ROUTES) if (r.pattern.test(pathname)) return r.methods;
  return pathname.startsWith("/v1/") ? ANY_V1_METHODS : null;
}

/** Whether `origin` is let in. */
function allowed(origins: CorsOrigins, origin: string): boolean {
  return origins === "*" || origins.includes(origin);
}

/** `Access-Control-Allow-Origin` (and `Vary: Origin` when the answer depends on the origin). */
function allowOrigin(origins: CorsOrigins, origin: string): Record<string, string> {
  return origins === "*" ? { "access-control-allow-origin": "*" } : { "access-control-allow-origin": origin };
}

/**
 * The answer to a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) of `pathname`, as headers
 * of a 204; null when the path is outside CORS (the request then goes on as any other, and is not found). An
 * origin not let in gets no `Access-Control-Allow-Origin`, so the browser refuses the call.
 */
export function preflightHeaders(
  origins: CorsOrigins,
  origin: string,
  pathname: string,
): Record<string, string> | null {
  const methods = corsMethods(pathname);
  // Outside CORS, or CORS off: not answered here (the request is then not found, as it always was).
  if (methods === null || (origins !== "*" && origins.length === 0)) return null;
  const vary: Record<string, string> = origins === "*" ? {} : { vary: "Origin" };
  if (!allowed(origins, origin)) return vary;
  return {
    ...allowOrigin(origins, origin),
    ...vary,
    "access-control-allow-methods": methods,
    "access-control-allow-headers": CORS_ALLOW_HEADERS,
    "access-control-max-age": CORS_MAX_AGE,
  };
}

/**
 * The CORS headers of an answer on `pathname` to a request from `origin` (null: it sent none): for an origin let
 * in, `Access-Control-Allow-Origin` and `Access-Control-Expose-Headers`; with a list of origins, `Vary: Origin` on
 * every answer of the contract's paths, so that a cache never hands one origin's answer to another.
 */
export function corsAnswerHeaders(
  origins: CorsOrigins,
  origin: string | null,
  pathname: string,
): Record<string, string> {
  if ((origins !== "*" && origins.length === 0) || corsMethods(pathname) === null) return {};
  const vary: Record<string, string> = origins === "*" ? {} : { vary: "Origin" };
  if (origin === null || !allowed(origins, origin)) return vary;
  return { ...allowOrigin(origins, origin), ...vary, "access-control-expose-headers": CORS_EXPOSE_HEADERS };
}
