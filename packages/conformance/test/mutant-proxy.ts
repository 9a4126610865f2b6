/**
 * The proxy of the mutants (issue 35): a node:http server on 127.0.0.1 in front of a real server that forwards
 * every request and answer, except what one {@link Mutant} changes. The mutants themselves are in mutants.ts.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A request as the proxy got it (the mutant may change it before it is forwarded). */
export interface ProxyRequest {
  method: string;
  url: URL;
  /** Lower-case header names. */
  headers: Record<string, string>;
  body?: string;
}

/** An answer (the origin's, or one the mutant makes up). */
export interface ProxyAnswer {
  status: number;
  /** Lower-case header names. */
  headers: Record<string, string>;
  body: string;
}

/** The keys of the account the suite runs with, for mutants that swap or inject keys. */
export interface MutantKeys {
  key: string;
  secondKey: string;
  noscopeKey: string;
}

/** What a mutant's transforms may use: the origin, the keys, and a state of its own (fresh per proxy). */
export interface MutantContext {
  keys: MutantKeys;
  state: Map<string, unknown>;
  /** Sends a request to the origin (not through the mutant), e.g. to charge behind the suite's back. */
  forward(req: ProxyRequest): Promise<ProxyAnswer>;
}

/** One server broken on purpose: exactly one rule, declared with what it breaks and the checks that must catch it. */
export interface Mutant {
  /** Stable name, kebab-case. */
  name: string;
  /** The rule it breaks, in words (and where the rule comes from). */
  breaks: string;
  /** The checks that must fail on it (each is asserted by mutants.test.ts, and listed in the README). */
  caughtBy: readonly string[];
  /** Changes a request before it is forwarded, or answers it without forwarding. */
  request?(req: ProxyRequest, ctx: MutantContext): ProxyRequest | ProxyAnswer | Promise<ProxyRequest | ProxyAnswer>;
  /** Changes the origin's answer. */
  response?(req: ProxyRequest, answer: ProxyAnswer, ctx: MutantContext): ProxyAnswer | Promise<ProxyAnswer>;
}

/** A JSON answer. */
export function jsonAnswer(status: number, body: unknown, headers: Record<string, string> = {}): ProxyAnswer {
  return {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
    body: JSON.stringify(body),
  };
}

/** The answer of a server that broke: HTTP 500 internal_error as the contract words it. */
export function internalError(): ProxyAnswer {
  return jsonAnswer(500, {
    request_id: "req_mutant_500",
    schema_version: "v1",
    code: "internal_error",
    message: "Something broke on our side (mutant).",
    retryable: true,
    fix: { note: "Retry later." },
  });
}

/** The JSON of an answer, or undefined. */
export function parse(a: ProxyAnswer): Record<string, any> | undefined {
  if (!/json/.test(a.headers["content-type"] ?? "")) return undefined;
  try {
    const v = JSON.parse(a.body) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, any>) : undefined;
  } catch {
    return undefined;
  }
}

/** The answer with its JSON changed by `fn` (answers that are not a JSON object are left as they are). */
export function editJson(a: ProxyAnswer, fn: (body: Record<string, any>) => void): ProxyAnswer {
  const body = parse(a);
  if (!body) return a;
  fn(body);
  return { ...a, body: JSON.stringify(body) };
}

const HOP = new Set(["host", "connection", "content-length", "transfer-encoding", "keep-alive", "content-encoding"]);

async function read(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? Buffer.concat(chunks).toString("utf8") : undefined;
}

export interface MutantProxy {
  baseUrl: string;
  close(): Promise<void>;
}

/** Starts a proxy on 127.0.0.1 in front of `origin` that applies one mutant (none: a faithful proxy). */
export async function startMutantProxy(origin: string, keys: MutantKeys, mutant?: Mutant): Promise<MutantProxy> {
  const forward = async (r: ProxyRequest): Promise<ProxyAnswer> => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(r.headers)) if (!HOP.has(k)) headers[k] = v;
    const res = await fetch(`${origin}${r.url.pathname}${r.url.search}`, {
      method: r.method,
      headers,
      ...(r.body !== undefined && r.method !== "GET" ? { body: r.body } : {}),
    });
    const out: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      if (!HOP.has(k)) out[k] = v;
    });
    return { status: res.status, headers: out, body: await res.text() };
  };
  const ctx: MutantContext = { keys, state: new Map(), forward };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      const body = await read(req);
      let r: ProxyRequest = {
        method: req.method ?? "GET",
        url: new URL(req.url ?? "/", "http://proxy"),
        headers,
        ...(body !== undefined ? { body } : {}),
      };
      let answer: ProxyAnswer | undefined;
      if (mutant?.request) {
        const changed = await mutant.request(r, ctx);
        if ("status" in changed) answer = changed;
        else r = changed;
      }
      if (!answer) {
        answer = await forward(r);
        if (mutant?.response) answer = await mutant.response(r, answer, ctx);
      }
      res.writeHead(answer.status, answer.headers).end(answer.body);
    })().catch((e: Error) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`mutant proxy: ${e.message}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
