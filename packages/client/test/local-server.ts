/** A scriptable HTTP server on 127.0.0.1 for client tests: each test answers requests with its own handler. */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
  at: number;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Destroy the socket without answering (a network failure). */
  drop?: boolean;
}

export type Handler = (req: Seen, index: number) => Reply | Promise<Reply>;

export interface LocalServer {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

export async function startServer(handler: Handler): Promise<LocalServer> {
  const seen: Seen[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const entry: Seen = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body: raw ? JSON.parse(raw) : undefined,
      at: Date.now(),
    };
    seen.push(entry);
    const reply = await handler(entry, seen.length - 1);
    if (reply.drop) return req.socket.destroy();
    const text =
      reply.body === undefined ? "" : typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
    const type = typeof reply.body === "string" ? "text/plain; charset=utf-8" : "application/json";
    res.writeHead(reply.status, { "content-type": type, ...reply.headers });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // a request a test left hanging must not keep the server open
      }),
  };
}
