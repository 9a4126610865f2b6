/**
 * @sdgw/mock over real HTTP: a node:http server on 127.0.0.1 that hands each request to the mock's MSW handlers
 * (msw's `getResponse`), so that the suite talks to the mock exactly as to any server.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createMock, type Mock, type MockOptions } from "@sdgw/mock";
import { getResponse } from "msw";

/** A mock listening on 127.0.0.1. */
export interface MockHttp {
  baseUrl: string;
  mock: Mock;
  close(): Promise<void>;
}

async function toRequest(req: IncomingMessage, base: string): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (Array.isArray(v)) for (const one of v) headers.append(k, one);
    else if (v !== undefined) headers.set(k, v);
  }
  const body = chunks.length && req.method !== "GET" && req.method !== "HEAD" ? Buffer.concat(chunks) : undefined;
  return new Request(new URL(req.url ?? "/", base), {
    method: req.method ?? "GET",
    headers,
    ...(body ? { body } : {}),
  });
}

/** Starts the mock on a free port of 127.0.0.1 (its `baseUrl` is that address, so unknown `/v1/` routes answer 404). */
export async function startMockHttp(options: Omit<MockOptions, "baseUrl"> = {}): Promise<MockHttp> {
  let mock: Mock | undefined;
  let base = "";
  const server: Server = createServer((req, res) => {
    void (async () => {
      try {
        const response = mock ? await getResponse(mock.handlers, await toRequest(req, base)) : undefined;
        if (!response) {
          res.writeHead(404, { "content-type": "text/plain" }).end("no mock handler for this request");
          return;
        }
        const headers: Record<string, string> = {};
        response.headers.forEach((v, k) => {
          headers[k] = v;
        });
        res.writeHead(response.status, headers).end(Buffer.from(await response.arrayBuffer()));
      } catch (e) {
        res.writeHead(500, { "content-type": "text/plain" }).end(`mock adapter: ${(e as Error).message}`);
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mock = createMock({ ...options, baseUrl: base });
  return {
    baseUrl: base,
    mock,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}
