/**
 * A fake upstream on 127.0.0.1, after Airbyte's `HttpMocker`: one hand-written answer per upstream request
 * (`UpstreamExchange`s, the layout of `fixtures/upstream/`), overrides a test adds for its faults, and every
 * request no exchange answers recorded in `unmatched` and answered `501` so that the connector fails loudly and the
 * test can say which request it was. Matching is exact (method, path, every query parameter), the secret ones
 * (`key`) aside; an override matches the query parameters it names.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { SECRET_QUERY_PARAMS, exchangeMatches, requestLine, type UpstreamExchange } from "@sdgw/engine/connectors";

/** One request the fake upstream received. */
export interface ReceivedRequest {
  method: string;
  path: string;
  /** Its query parameters (the secret ones too: a test may check that the key was sent). */
  query: Record<string, string>;
  /** `GET /path?…` without the secret parameters. */
  line: string;
  /** Whether the client went away before the answer was sent (an abandoned request, really cancelled). */
  aborted: boolean;
}

/** An answer a test puts before the exchanges, for the requests it matches. */
export interface UpstreamOverride {
  method?: string;
  path: string;
  /** The query parameters it needs (others may be present); absent: any query. */
  query?: Readonly<Record<string, string>>;
  status?: number;
  headers?: Readonly<Record<string, string>>;
  body?: unknown;
  /** Answer after this many ms. */
  delayMs?: number;
  /** Never answer (until the client goes away or the fake is closed). */
  hang?: boolean;
  /** Close the connection without an answer (a network error). */
  reset?: boolean;
  /** How many requests it answers, then it is spent (default: every one). */
  times?: number;
}

/** A running fake upstream. */
export interface FakeUpstream {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: ReceivedRequest[];
  /** The requests nothing answered. */
  readonly unmatched: ReceivedRequest[];
  /** Puts an answer before the exchanges (the last added first). */
  override(o: UpstreamOverride): void;
  /** Forgets the overrides (the requests received, matched or not, are kept). */
  reset(): void;
  /** Stops listening and drops the connections still open (a hanging answer included). */
  close(): Promise<void>;
}

/** Starts a fake upstream on 127.0.0.1 (a free port) answering `exchanges`. */
export async function startFakeUpstream(o: {
  exchanges: readonly UpstreamExchange[];
  /** Query parameters never matched (default: the secret ones, such as `key`). */
  ignore?: readonly string[];
}): Promise<FakeUpstream> {
  const ignore = o.ignore ?? SECRET_QUERY_PARAMS;
  const requests: ReceivedRequest[] = [];
  const unmatched: ReceivedRequest[] = [];
  let overrides: (UpstreamOverride & { used: number })[] = [];
  const hanging = new Set<ServerResponse>();
  const send = (res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}) => {
    if (res.destroyed) return;
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const method = req.method ?? "GET";
    const got: ReceivedRequest = {
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      line: requestLine(method, url, ignore),
      aborted: false,
    };
    requests.push(got);
    res.on("close", () => {
      if (!res.writableFinished) got.aborted = true;
      hanging.delete(res);
    });
    const over = overrides.find(
      (x) =>
        (x.times === undefined || x.used < x.times) &&
        (x.method ?? "GET").toUpperCase() === method &&
        x.path === url.pathname &&
        Object.entries(x.query ?? {}).every(([k, v]) => url.searchParams.get(k) === v),
    );
    if (over) {
      over.used += 1;
      if (over.hang) {
        hanging.add(res);
        return;
      }
      if (over.reset) {
        req.socket.destroy();
        return;
      }
      const answer = () => send(res, over.status ?? 200, over.body ?? {}, over.headers);
      if (over.delayMs) setTimeout(answer, over.delayMs);
      else answer();
      return;
    }
    const x = o.exchanges.find((e) => exchangeMatches(e, method, url, ignore));
    if (x) return send(res, x.response.status, x.response.body, x.response.headers);
    unmatched.push(got);
    send(res, 501, { error: { code: 501, message: `fake upstream: no exchange answers ${got.line}` } });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    unmatched,
    override: (x) => {
      overrides = [{ ...x, used: 0 }, ...overrides];
    },
    reset: () => {
      overrides = [];
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
