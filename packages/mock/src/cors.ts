/**
 * CORS of the mock (D117): a page on another origin than the gateway's (a frontend test under happy-dom, whose
 * fetch enforces CORS like a browser; an app at `http://localhost:5173` calling `http://127.0.0.1:8787`) gets its
 * preflights answered and may read the answers, with the headers the reference server sends when
 * `SDGW_CORS_ORIGINS` lets that origin in.
 */

/** The request headers the API reads, allowed by a preflight (and the mock's own `x-sdgw-scenario`). */
export const CORS_ALLOW_HEADERS = "X-API-Key, Authorization, Idempotency-Key, Content-Type, X-Sdgw-Scenario";

/**
 * The answer headers a page may read besides the safelisted ones: the waits and retry advice the client honours,
 * the replay mark, the request id header, a csv or ndjson file's name, and the mock's own `x-sdgw-scenario-skipped`
 * (the reference server's list, D130, and the mock's header).
 */
export const CORS_EXPOSE_HEADERS =
  "Retry-After, Idempotent-Replayed, X-Should-Retry, X-Request-Id, Content-Disposition, X-Sdgw-Scenario-Skipped";

/** The methods of the contract's routes. */
export const CORS_ALLOW_METHODS = "GET, POST, DELETE";

/** How long a browser may keep a preflight's answer, in seconds. */
const MAX_AGE = "600";

/** Which origins may call: `"*"` any, a list of exact origins, or `false` for none (no CORS headers at all). */
export type CorsOrigins = "*" | readonly string[] | false;

/** Checks the `corsOrigins` option; answers the origins as the mock compares them (no trailing slash). */
export function checkCorsOrigins(value: unknown): CorsOrigins {
  if (value === undefined || value === "*") return "*";
  if (value === false) return false;
  const fail = (why: string): never => {
    throw new TypeError(
      `@sdgw/mock: corsOrigins must be "*", false or a list of origins such as ["http://localhost:5173"] (${why})`,
    );
  };
  if (!Array.isArray(value)) return fail(`got ${JSON.stringify(value)}`);
  return value.map((o: unknown) => {
    if (typeof o !== "string") return fail(`got ${JSON.stringify(o)} in the list`);
    let url: URL;
    try {
      url = new URL(o);
    } catch {
      return fail(`${JSON.stringify(o)} is not an origin`);
    }
    if (url.origin === "null" || `${url.origin}` !== o.replace(/\/$/, ""))
      return fail(`${JSON.stringify(o)} is not an origin: scheme, host and port only, like "https://app.example.com"`);
    return url.origin;
  });
}

/** The `Access-Control-Allow-Origin` an origin gets (with `Vary: Origin` when it depends on it), or null. */
function allowOrigin(origins: CorsOrigins, origin: string | null): Record<string, string> | null {
  if (origins === false || origin === null) return null;
  if (origins === "*") return { "Access-Control-Allow-Origin": "*" };
  return origins.includes(origin) ? { "Access-Control-Allow-Origin": origin, Vary: "Origin" } : null;
}

/** The CORS headers of an answer to a request from `origin` (none for a request without `Origin`, or not let in). */
export function corsAnswerHeaders(origins: CorsOrigins, origin: string | null): Record<string, string> {
  const allow = allowOrigin(origins, origin);
  return allow ? { ...allow, "Access-Control-Expose-Headers": CORS_EXPOSE_HEADERS } : {};
}

/**
 * The origin a request comes from: its `Origin` header, else the page's own origin when the mock runs inside a page
 * or a DOM emulation. happy-dom's `Request` drops the forbidden request headers (`Origin`,
 * `Access-Control-Request-Method`, `-Headers`) before msw hands the request to the mock, so under happy-dom the
 * page's `location.origin` (vitest's `http://localhost:3000` by default) is the only sign of where it comes from.
 * Null in plain Node: no origin, no CORS.
 */
export function originOf(request: Request): string | null {
  const sent = request.headers.get("origin");
  if (sent) return sent;
  const page = (globalThis as { location?: { origin?: unknown } }).location?.origin;
  return typeof page === "string" && page !== "null" ? page : null;
}

/**
 * The answer to a preflight (`OPTIONS` from an origin; its `Access-Control-Request-*` headers may be hidden, as
 * above): 204 with the allowed methods and headers when the origin is let in, a bare 204 otherwise (the browser
 * then refuses the call). Never `Access-Control-Allow-Credentials`: keys travel in headers, not cookies.
 */
export function preflight(origins: CorsOrigins, origin: string): Response {
  const allow = allowOrigin(origins, origin);
  if (!allow) return new Response(null, { status: 204 });
  return new Response(null, {
    status: 204,
    headers: {
      ...allow,
      "Access-Control-Allow-Methods": CORS_ALLOW_METHODS,
      "Access-Control-Allow-Headers": CORS_ALLOW_HEADERS,
      "Access-Control-Max-Age": MAX_AGE,
    },
  });
}
