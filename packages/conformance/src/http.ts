/**
 * The wire: every request the suite sends goes through one recording fetch, so that every answer (the SDK's too)
 * is kept as an {@link Exchange}, checked against the contract, and quoted in messages with the keys redacted.
 */
import { OPERATIONS } from "@sdgw/validators";

/** An operation of the contract, by `operationId`. */
export type OperationKey = keyof typeof OPERATIONS;

/** One request and its answer, as the suite saw them on the wire. */
export interface Exchange {
  /** The operation the route belongs to (`null`: no route of the contract, e.g. an unknown path). */
  op: OperationKey | null;
  method: string;
  /** Path and query as sent, keys redacted. */
  target: string;
  /** Request headers as sent (lower-case names), keys redacted. */
  requestHeaders: Record<string, string>;
  /** The request body as sent, if any. */
  requestBody?: string;
  status: number;
  headers: Headers;
  /** The answer's body as text. */
  text: string;
  /** The body parsed as JSON when the answer says it is JSON; `undefined` otherwise. */
  json: unknown;
  /** When the answer arrived (`Date.now()`). */
  at: number;
  /** How long it took. */
  ms: number;
}

/** Which key carrier(s) a request uses. */
export type Auth = "x-api-key" | "bearer" | "none" | { xApiKey?: string; bearer?: string };

/** A request to send. */
export interface RequestSpec {
  method?: "GET" | "POST" | "DELETE";
  /** The path, e.g. `/v1/search`. */
  path: string;
  /** Query parameters (sent in this order), or a raw query string without `?`. */
  query?: Readonly<Record<string, string | number>> | string;
  /** Carrier of the key (default `x-api-key`). */
  auth?: Auth;
  /** The key to carry (default the main key). */
  key?: string;
  /** `GET /v1/search` gets a fresh `Idempotency-Key` unless one is given here; `null` sends none. */
  idempotencyKey?: string | null;
  /** More headers; they replace the ones the spec's other members set (e.g. a `Content-Type` other than JSON's). */
  headers?: Readonly<Record<string, string>>;
  /** A JSON body (sent with `Content-Type: application/json`, unless `headers` name another). */
  body?: unknown;
  /** Retry a `429 rate_limited` after its `Retry-After` (default true; false where the 429 is the point). */
  retryRateLimited?: boolean;
}

const routes = Object.values(OPERATIONS).map((o) => ({
  op: o.operationId as OperationKey,
  method: o.method.toUpperCase(),
  pattern: new RegExp(`^${o.path.replace(/\{\w+\}/g, "[^/]+")}$`),
}));

/** The operation of a request, by method and path; `null` when no route of the contract matches. */
export function operationOf(method: string, pathname: string): OperationKey | null {
  return routes.find((r) => r.method === method.toUpperCase() && r.pattern.test(pathname))?.op ?? null;
}

/** Waits `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A background run the suite started: an answer 202 with a handle, seen on the wire (whichever check or SDK call sent it). */
export interface TrackedRun {
  /** The handle of the 202 answer. */
  readonly handle: string;
  /** What started it (`sent` of the exchange, keys redacted), for messages. */
  readonly startedBy: string;
  /** When the 202 arrived (`Date.now()`). */
  readonly startedAt: number;
  /** True once a read of the handle with the starting key answered that the run is over (200, 404, 410 or 500). */
  readonly ended: boolean;
  /** The HTTP status of the last read of the handle with the starting key (202 while it runs; the 202 itself before any read). */
  readonly lastStatus: number;
}

/** What {@link Http.settle} did: how long it waited, how many reads it sent, and the runs still going after it. */
export interface Settled {
  /** Wall time of the settle. */
  waitedMs: number;
  /** Reads of handles it sent. */
  reads: number;
  /** Runs that had not ended when the settle gave up (their budget spent): a balance read now may still move. */
  open: TrackedRun[];
}

/** A tracked run with what the suite needs to follow it: the key that may read it (never printed) and when to ask next. */
interface RunState {
  handle: string;
  startedBy: string;
  startedAt: number;
  ended: boolean;
  lastStatus: number;
  /** The key the run was started with: only it may read the handle (seed Authentication 6). */
  key: string;
  /** Not before this (`Date.now()`): the last answer's Retry-After. */
  nextAt: number;
}

/** The wait an answer asks for, in ms: `Retry-After` or `retry_after_seconds`, at least 1 s. */
export function retryAfterMs(x: Exchange): number {
  const body = x.json as { retry_after_seconds?: unknown } | undefined;
  return 1000 * Math.max(1, Number(x.headers.get("retry-after")) || 0, Number(body?.retry_after_seconds) || 0);
}

/** Statuses of a handle read (with the starting key) that say the run is over: finished, unknown, expired, broken. */
const RUN_OVER = new Set([200, 404, 410, 500]);

/** The recording transport of one suite run. */
export class Http {
  /** Every exchange of the run, in order. */
  readonly exchanges: Exchange[] = [];
  /** A fetch that records every exchange; hand it to the SDK. */
  readonly fetch: typeof fetch;
  readonly #base: string;
  readonly #key: string;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #secrets: Array<[string, string]>;
  readonly #runs = new Map<string, RunState>();

  constructor(options: {
    baseUrl: string;
    key: string;
    fetch: typeof fetch;
    requestTimeoutMs: number;
    rateLimitRetries: number;
    secrets: Record<string, string | undefined>;
  }) {
    this.#base = options.baseUrl.replace(/\/+$/, "");
    this.#key = options.key;
    this.#fetch = options.fetch;
    this.#timeoutMs = options.requestTimeoutMs;
    this.#retries = options.rateLimitRetries;
    // Longest first, so that a key that contains another is redacted whole.
    this.#secrets = Object.entries(options.secrets)
      .filter((e): e is [string, string] => typeof e[1] === "string" && e[1].length > 0)
      .map(([name, value]) => [value, `<${name}>`] as [string, string])
      .sort((a, b) => b[0].length - a[0].length);
    this.fetch = ((input: string | URL | Request, init?: RequestInit) => this.#record(input, init)) as typeof fetch;
  }

  /** Replaces every key the suite was given with its name (`<key>`, `<second-key>`, …). */
  redact(text: string): string {
    let out = text;
    for (const [secret, name] of this.#secrets) out = out.split(secret).join(name);
    return out;
  }

  /** A fresh Idempotency-Key (printable ASCII, unique per run). */
  newIdempotencyKey(label = "k"): string {
    return `conformance-${label}-${crypto.randomUUID()}`;
  }

  /** Every background run the suite started so far (each 202 with a handle it received), in order. */
  get runs(): TrackedRun[] {
    return [...this.#runs.values()].map((r) => ({
      handle: r.handle,
      startedBy: r.startedBy,
      startedAt: r.startedAt,
      ended: r.ended,
      lastStatus: r.lastStatus,
    }));
  }

  /**
   * Follows every background run the suite started until it ends: reads each open handle (with the key that
   * started it) no sooner than its last `Retry-After`, until every run has ended or has been followed for
   * `budgetMs` since its 202. A run past its budget is read at most once more (when due) and then reported open.
   * Reads go through the recording wire like any request (so they are validated against the contract too).
   *
   * A balance read compared with another must come after a settle: a run started earlier by any check is charged
   * when it ends, and would move the balance in between.
   */
  async settle(budgetMs: number): Promise<Settled> {
    const start = Date.now();
    let reads = 0;
    const readOnce = new Set<string>();
    const read = async (r: RunState) => {
      reads++;
      try {
        await this.send({ path: `/v1/results/${encodeURIComponent(r.handle)}`, key: r.key });
      } catch {
        r.nextAt = Date.now() + 1000; // no answer this time: ask again later, within the budget
      }
    };
    for (;;) {
      const now = Date.now();
      const open = [...this.#runs.values()].filter((r) => !r.ended);
      const waitable = open.filter((r) => r.startedAt + budgetMs > now);
      for (const r of open) {
        if (r.nextAt > now) continue;
        if (!waitable.includes(r)) {
          if (readOnce.has(r.handle)) continue;
          readOnce.add(r.handle);
        }
        await read(r);
      }
      const still = waitable.filter((r) => !r.ended);
      if (!still.length) return { waitedMs: Date.now() - start, reads, open: this.runs.filter((r) => !r.ended) };
      const wake = Math.min(...still.map((r) => Math.min(r.nextAt, r.startedAt + budgetMs)));
      await sleep(Math.max(10, wake - Date.now()));
    }
  }

  /** The full URL of a path and query. */
  url(path: string, query?: RequestSpec["query"]): string {
    const qs =
      typeof query === "string"
        ? query
        : query
          ? new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()
          : "";
    return `${this.#base}${path}${qs ? `?${qs}` : ""}`;
  }

  /** Sends one request (retrying `429 rate_limited` after its `Retry-After` unless told not to); resolves to its exchange. */
  async send(spec: RequestSpec): Promise<Exchange> {
    const method = spec.method ?? "GET";
    const headers: Record<string, string> = {};
    const key = spec.key ?? this.#key;
    const auth = spec.auth ?? "x-api-key";
    if (auth === "x-api-key") headers["X-API-Key"] = key;
    else if (auth === "bearer") headers["Authorization"] = `Bearer ${key}`;
    else if (typeof auth === "object") {
      if (auth.xApiKey !== undefined) headers["X-API-Key"] = auth.xApiKey;
      if (auth.bearer !== undefined) headers["Authorization"] = `Bearer ${auth.bearer}`;
    }
    if (method === "GET" && spec.path === "/v1/search" && spec.idempotencyKey !== null)
      headers["Idempotency-Key"] = spec.idempotencyKey ?? this.newIdempotencyKey();
    else if (typeof spec.idempotencyKey === "string") headers["Idempotency-Key"] = spec.idempotencyKey;
    const init: RequestInit = { method, headers };
    if (spec.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(spec.body);
    }
    // `headers` win over the ones above, whatever the case of their names (e.g. another Content-Type).
    for (const [name, value] of Object.entries(spec.headers ?? {})) {
      for (const set of Object.keys(headers)) if (set.toLowerCase() === name.toLowerCase()) delete headers[set];
      headers[name] = value;
    }
    const url = this.url(spec.path, spec.query);
    for (let attempt = 0; ; attempt++) {
      const x = await this.#exchange(url, init);
      const body = x.json as { code?: unknown; retry_after?: unknown } | undefined;
      if (
        x.status !== 429 ||
        body?.code !== "rate_limited" ||
        spec.retryRateLimited === false ||
        attempt >= this.#retries
      )
        return x;
      const wait = Math.max(Number(x.headers.get("retry-after")) || 0, Number(body.retry_after) || 0, 1);
      await sleep(Math.min(wait, 5) * 1000);
    }
  }

  async #record(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const request = new Request(input, init);
    const body = request.body ? await request.clone().text() : undefined;
    const response = await this.#raw(request.url, request.method, request.headers, body, init?.signal ?? undefined);
    this.#keep(request.url, request.method, request.headers, body, response.response, response.text, response.start);
    return new Response(response.status === 204 || response.status === 304 ? null : response.text, {
      status: response.status,
      statusText: response.response.statusText,
      headers: response.response.headers,
    });
  }

  async #exchange(url: string, init: RequestInit): Promise<Exchange> {
    const headers = new Headers(init.headers);
    const body = typeof init.body === "string" ? init.body : undefined;
    const r = await this.#raw(url, String(init.method ?? "GET"), headers, body, undefined);
    return this.#keep(url, String(init.method ?? "GET"), headers, body, r.response, r.text, r.start);
  }

  async #raw(
    url: string,
    method: string,
    headers: Headers,
    body: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ response: Response; text: string; status: number; start: number }> {
    const start = Date.now();
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const init: RequestInit = {
      method,
      headers,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      redirect: "manual",
    };
    if (body !== undefined) init.body = body;
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, init);
      text = await response.text();
    } catch (cause) {
      const why = timeout.aborted
        ? `no answer within ${this.#timeoutMs} ms`
        : `no answer (${(cause as Error).message})`;
      throw new Error(this.redact(`${method} ${new URL(url).pathname}${new URL(url).search}: ${why}`), { cause });
    }
    return { response, text, status: response.status, start };
  }

  #keep(
    url: string,
    method: string,
    headers: Headers,
    body: string | undefined,
    response: Response,
    text: string,
    start: number,
  ): Exchange {
    const u = new URL(url);
    const type = response.headers.get("content-type") ?? "";
    let json: unknown;
    if (/^application\/(?:[\w.+-]+\+)?json\b/i.test(type) && text !== "") {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
    }
    const requestHeaders: Record<string, string> = {};
    headers.forEach((v, k) => {
      requestHeaders[k] = this.redact(v);
    });
    const x: Exchange = {
      op: operationOf(method, u.pathname),
      method: method.toUpperCase(),
      target: this.redact(`${u.pathname}${u.search}`),
      requestHeaders,
      ...(body !== undefined ? { requestBody: this.redact(body) } : {}),
      status: response.status,
      headers: response.headers,
      text,
      json,
      at: Date.now(),
      ms: Date.now() - start,
    };
    this.exchanges.push(x);
    this.#track(x, headers);
    return x;
  }

  /** Keeps the runs the suite started (every 202 with a handle) and whether a read with the starting key saw their end. */
  #track(x: Exchange, headers: Headers): void {
    const key = headers.get("x-api-key") ?? headers.get("authorization")?.replace(/^Bearer\s+/i, "") ?? undefined;
    if (x.op === "getResult") {
      const handle = decodeURIComponent(new URL(x.target, "http://x").pathname.split("/").pop() ?? "");
      const run = this.#runs.get(handle);
      // Another key's read (404 by design) or a refused read (a bad format, a rate limit) says nothing of the run.
      if (!run || key !== run.key) return;
      if (x.status === 202) {
        run.lastStatus = 202;
        run.nextAt = x.at + retryAfterMs(x);
      } else if (RUN_OVER.has(x.status)) {
        run.lastStatus = x.status;
        run.ended = true;
      }
      return;
    }
    const handle = (x.json as { handle?: unknown } | undefined)?.handle;
    if (x.status !== 202 || typeof handle !== "string" || !key || this.#runs.has(handle)) return;
    this.#runs.set(handle, {
      handle,
      startedBy: sent(x),
      startedAt: x.at,
      ended: false,
      lastStatus: 202,
      key,
      nextAt: x.at + retryAfterMs(x),
    });
  }
}

/** Shortens a text to `max` characters. */
export function clip(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;
}

/** One line for a message: what was sent. */
export function sent(x: Exchange): string {
  const carriers = ["x-api-key", "authorization", "idempotency-key"]
    .filter((h) => h in x.requestHeaders)
    .map((h) =>
      h === "idempotency-key"
        ? `Idempotency-Key(${x.requestHeaders[h]!.length} chars)`
        : h === "authorization"
          ? x.requestHeaders[h]!.replace(/^(\S+).*$/, "Authorization: $1 …")
          : "X-API-Key",
    );
  const body = x.requestBody !== undefined ? ` body ${clip(x.requestBody, 200)}` : "";
  return `${x.method} ${clip(x.target, 160)}${carriers.length ? ` [${carriers.join(", ")}]` : " [no key]"}${body}`;
}

/** One line for a message: what came back. */
export function got(x: Exchange, max = 300): string {
  return `HTTP ${x.status} ${clip(x.text.replace(/\s+/g, " "), max)}`;
}

/**
 * When an answer is `429 free_failure_limit`: why the check cannot tell anything (the server holds the key back
 * after failed calls, D45, and the suite makes some on purpose). `undefined` for any other answer.
 */
export function heldBack(x: Exchange): string | undefined {
  const body = x.json as { code?: unknown; retry_at?: unknown } | undefined;
  if (x.status !== 429 || body?.code !== "free_failure_limit") return undefined;
  const until = String(body.retry_at);
  return (
    `the server held the key back with 429 free_failure_limit until ${until} (${sent(x)}): it ` +
    `counts failed calls (D45), and this suite makes some on purpose; run again after ${until}, or ` +
    `give --second-key to carry the deliberate refusals`
  );
}

/** `sent → got`, the usual way a message quotes an exchange. */
export function exchangeLine(x: Exchange, max = 300): string {
  return `${sent(x)} → ${got(x, max)}`;
}
