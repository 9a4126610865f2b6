/**
 * Record and replay of live connectors (D123), as `fetch` wrappers. Record mode (`SDGW_UPSTREAM_RECORD=<dir>`)
 * sends each request upstream and writes what came back under `<dir>/<platform>/<resource>/<status>-<hash>.json`,
 * beside `<…>.request.json` (the layout of `fixtures/upstream/`): credentials removed (the secret query parameters,
 * every header but a few harmless ones, each secret value wherever it appears in the body, an OAuth token
 * endpoint's `access_token`), volatile parameters
 * dropped. Replay mode (`SDGW_UPSTREAM_REPLAY=<dir>`) answers from such files only, and fails loudly on a request
 * none of them answers: the call breaks (500) and the log names the request. Recordings are for review, never
 * for git as they are: `.gitignore` keeps `recordings/` out, and docs/guides/connectors.md says how one becomes a
 * fixture.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import {
  SECRET_QUERY_PARAMS,
  UpstreamReplayMiss,
  exchangeMatches,
  exchangesOf,
  keptQuery,
  redactJsonSecrets,
  redactText,
  requestLine,
  type UpstreamExchange,
} from "@sdgw/engine/connectors";

/** Response headers a recording keeps (the rest may carry cookies or nothing of use). */
const KEPT_HEADERS = [
  "content-type",
  "retry-after",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "x-rate-limit-remaining",
  "x-rate-limit-reset",
];

/** What record and replay need to know of a connector. */
export interface CassetteOptions {
  /** The folder of the recordings (the platform's are under `<dir>/<platform>/`). */
  dir: string;
  platform: string;
  /** Secret values (the API key): never written. */
  secrets: readonly string[];
  /** Query parameters neither written nor matched: secret ones and volatile ones (D123). */
  ignore: readonly string[];
  log: (message: string, error?: unknown) => void;
}

/** The query parameters a recording leaves out: the usual secret ones and the connector's volatile ones. */
export function ignoredParams(volatile: readonly string[] = []): string[] {
  return [...SECRET_QUERY_PARAMS, ...volatile];
}

const urlOf = (input: string | URL | Request) =>
  new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);

/** A `fetch` that sends every request and writes what came back, redacted, into `o.dir`. */
export function recordingFetch(inner: typeof fetch, o: CassetteOptions): typeof fetch {
  return async (input, init) => {
    const res = await inner(input, init);
    const url = urlOf(input as string | URL | Request);
    const method = (init?.method ?? "GET").toUpperCase();
    try {
      const text = redactJsonSecrets(redactText(await res.clone().text(), o.secrets));
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
      const line = requestLine(method, url, o.ignore);
      const resource = url.pathname.split("/").filter(Boolean).at(-1) ?? "root";
      const name = `${res.status}-${createHash("sha256").update(line).digest("hex").slice(0, 12)}`;
      const folder = join(o.dir, o.platform, resource.replace(/[^A-Za-z0-9_-]/g, "_"));
      mkdirSync(folder, { recursive: true });
      const headers = Object.fromEntries(
        KEPT_HEADERS.flatMap((h) => (res.headers.get(h) ? [[h, res.headers.get(h)!]] : [])),
      );
      const request = {
        method,
        host: url.origin,
        path: url.pathname,
        query: keptQuery(url, o.ignore),
        response: { status: res.status, headers },
        recorded: "by SDGW_UPSTREAM_RECORD; review before it becomes a fixture (docs/guides/connectors.md)",
      };
      writeFileSync(join(folder, `${name}.json`), `${JSON.stringify(body, null, 2)}\n`);
      writeFileSync(
        join(folder, `${name}.request.json`),
        `${redactText(JSON.stringify(request, null, 2), o.secrets)}\n`,
      );
    } catch (e) {
      o.log(`record: could not write the recording of ${requestLine(method, url, o.ignore)}`, e);
    }
    return res;
  };
}

/** Every file under `dir`, with its path relative to it (`/`-separated). */
function filesUnder(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith(".json"))
        out.push({ path: relative(dir, p).split(sep).join("/"), text: readFileSync(p, "utf8") });
    }
  };
  walk(dir);
  return out;
}

/** The recordings of a platform in `dir` (none when the folder does not exist). */
export function loadRecordings(dir: string, platform: string): UpstreamExchange[] {
  const folder = join(dir, platform);
  let files: { path: string; text: string }[];
  try {
    files = filesUnder(folder);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  return exchangesOf(files).map((x) => ({ ...x, source: join(folder, x.source ?? "") }));
}

/** A `fetch` that answers from the recordings in `o.dir` only; any other request throws {@link UpstreamReplayMiss}. */
export function replayingFetch(o: CassetteOptions): typeof fetch {
  const recordings = loadRecordings(o.dir, o.platform);
  return async (input, init) => {
    const url = urlOf(input as string | URL | Request);
    const method = (init?.method ?? "GET").toUpperCase();
    if (init?.signal?.aborted) throw init.signal.reason ?? new DOMException("aborted", "AbortError");
    const found = recordings.find((x) => exchangeMatches(x, method, url, o.ignore));
    if (!found) {
      const message = `replay: no recording in ${o.dir} answers ${requestLine(method, url, o.ignore)}; record it (SDGW_UPSTREAM_RECORD) or add a fixture`;
      o.log(message);
      throw new UpstreamReplayMiss(message);
    }
    const body = typeof found.response.body === "string" ? found.response.body : JSON.stringify(found.response.body);
    return new Response(body, {
      status: found.response.status,
      headers: { "content-type": "application/json; charset=utf-8", ...found.response.headers },
    });
  };
}
