/**
 * Upstream exchanges in the layout of `fixtures/upstream/<platform>/<resource>/<name>.json` (the body) beside
 * `<name>.request.json` (`method`, `path`, `query`, and a `response` block with `status` and `headers`): what the
 * fake upstream serves (`@sdgw/conformance/connectors`), what record mode writes and replay mode serves (D123).
 * Matching is exact: the method, the path, and every query parameter, except those a connector says are secret or
 * volatile. Pure: the files are read by whoever serves them.
 */

/** One upstream request and the answer to give it. */
export interface UpstreamExchange {
  request: { method: string; path: string; query: Readonly<Record<string, string>> };
  response: { status: number; headers?: Readonly<Record<string, string>>; body: unknown };
  /** Where it was read from (a file), for messages. */
  source?: string;
}

/** A `<name>.request.json` as written beside a body. */
export interface RequestFile {
  method?: string;
  path: string;
  query?: Record<string, string>;
  response?: { status?: number; headers?: Record<string, string> };
  /** The captured samples' spelling of the status of an error body. */
  http_status?: number;
}

/** An exchange from its request file and body; `source` names it in messages. */
export function exchangeOf(file: RequestFile, body: unknown, source?: string): UpstreamExchange {
  if (typeof file.path !== "string" || !file.path.startsWith("/"))
    throw new TypeError(`${source ?? "a request file"}: "path" must be the request's path, starting with /`);
  return {
    request: { method: (file.method ?? "GET").toUpperCase(), path: file.path, query: { ...file.query } },
    response: {
      status: file.response?.status ?? file.http_status ?? 200,
      ...(file.response?.headers ? { headers: file.response.headers } : {}),
      body,
    },
    ...(source !== undefined ? { source } : {}),
  };
}

/** The query of a URL without the ignored parameters, sorted: what a recording keeps and a match compares. */
export function keptQuery(url: URL, ignore: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of [...url.searchParams.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    if (!ignore.includes(k)) out[k] = v;
  return out;
}

/** Whether a request (`method`, its URL) is the one an exchange answers: same path and query, ignored ones aside. */
export function exchangeMatches(x: UpstreamExchange, method: string, url: URL, ignore: readonly string[]): boolean {
  if (x.request.method !== method.toUpperCase() || x.request.path !== url.pathname) return false;
  const got = keptQuery(url, ignore);
  const want = Object.entries(x.request.query).filter(([k]) => !ignore.includes(k));
  return want.length === Object.keys(got).length && want.every(([k, v]) => got[k] === v);
}

/** A request as one line for messages: `GET /youtube/v3/videos?id=…&part=…` (ignored parameters left out). */
export function requestLine(method: string, url: URL, ignore: readonly string[]): string {
  const q = new URLSearchParams(keptQuery(url, ignore)).toString();
  return `${method.toUpperCase()} ${url.pathname}${q ? `?${q}` : ""}`;
}

/**
 * The exchanges of a folder's files (`path` relative, `/`-separated; `text` the file's content): each
 * `<name>.request.json` with the body `<name>.json` beside it. A request file without its body is an error that
 * names it; other files are ignored.
 */
export function exchangesOf(files: readonly { path: string; text: string }[]): UpstreamExchange[] {
  const byPath = new Map(files.map((f) => [f.path, f.text]));
  const out: UpstreamExchange[] = [];
  for (const f of files) {
    if (!f.path.endsWith(".request.json")) continue;
    const bodyPath = `${f.path.slice(0, -".request.json".length)}.json`;
    const body = byPath.get(bodyPath);
    if (body === undefined) throw new TypeError(`${f.path}: no body ${bodyPath} beside it`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = body;
    }
    out.push(exchangeOf(JSON.parse(f.text) as RequestFile, parsed, bodyPath));
  }
  return out;
}
