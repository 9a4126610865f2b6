/**
 * A deliberately broken gateway for the suite's own tests: a node:http server on 127.0.0.1 in front of @sdgw/mock
 * that gets five things wrong on purpose.
 *
 * 1. a fanout entry's envelope error carries `fix` (the seed closes error objects; D36);
 * 2. a single-platform search of `x` answers `ok` with 0 items (the seed: `ok` has at least 1 item);
 * 3. a key in the query is accepted (dropped and the call answered) instead of `401 key_in_query` (D25);
 * 4. an idempotent replay is charged again (the seed: cost 0; D35);
 * 5. `count=21` is answered 200 (as if it were 20) instead of `400 invalid_params`.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createMock, DEFAULT_KEYS, type Mock } from "@sdgw/mock";
import { getResponse } from "msw";

export interface BrokenServer {
  baseUrl: string;
  close(): Promise<void>;
}

async function read(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? Buffer.concat(chunks) : undefined;
}

export async function startBrokenServer(): Promise<BrokenServer> {
  let mock: Mock | undefined;
  let base = "";
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", base);
      url.searchParams.delete("key"); // (3) a key in the URL goes unnoticed
      if (url.searchParams.get("count") === "21") url.searchParams.set("count", "20"); // (5) count=21 accepted
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      const body = await read(req);
      const request = new Request(url, {
        method: req.method ?? "GET",
        headers,
        ...(body && req.method !== "GET" ? { body } : {}),
      });
      const response = (await getResponse(mock!.handlers, request)) ?? new Response("no route", { status: 404 });
      let text = await response.text();
      const out: Record<string, string> = {};
      response.headers.forEach((v, k) => {
        out[k] = v;
      });
      if (url.pathname === "/v1/search" && response.status === 200 && out["content-type"]?.includes("json")) {
        const answer = JSON.parse(text) as Record<string, any>;
        if (answer["fanout"]?.["reddit"]) {
          // (1) an envelope error with `fix`
          answer["fanout"]["reddit"] = {
            ...answer["fanout"]["reddit"],
            status: "error",
            items: [],
            error: {
              code: "upstream_error",
              message: "reddit failed",
              retryable: true,
              action_url: "https://status.sdgw.dev",
              fix: { note: "retry later" },
            },
          };
        }
        if (answer["platform"] === "x" && answer["status"] === "ok") answer["items"] = []; // (2) ok with 0 items
        if (out["idempotent-replayed"] === "true")
          mock!.state.setBalance(mock!.state.balance - Number(answer["billing"]?.["cost"] ?? 1)); // (4) a replay charged
        text = JSON.stringify(answer);
        delete out["content-length"];
      }
      res.writeHead(response.status, out).end(text);
    })().catch((e: Error) => res.writeHead(500, { "content-type": "text/plain" }).end(e.message));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mock = createMock({
    baseUrl: base,
    keys: { ...DEFAULT_KEYS, sdgw_second_key: { permissions: ["read_data"] } },
    balance: 10_000,
    validate: false,
  });
  return {
    baseUrl: base,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}
