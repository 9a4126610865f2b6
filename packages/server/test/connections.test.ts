/**
 * D57 over real sockets: what never becomes a request (oversized headers, a stalled body, bytes that are not
 * HTTP, no Host) and connections over an address's cap are answered in the contract's words and closed, in
 * bounded time; a 20,000-character cursor still fits in a GET.
 */
import { connect } from "node:net";
import { validateErrorStructure } from "@sdgw/validators";
import { afterEach, describe, expect, it } from "vitest";
import { harness, newIdem, type Harness } from "./helpers.ts";

let h: Harness;
afterEach(async () => {
  h.audit();
  await h.server.close();
});

/** Sends raw bytes on a new connection; answers what came back and how long until the server closed it. */
function raw(
  port: number,
  data: (string | Buffer)[],
  opts: { gapMs?: number } = {},
): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => (text += d));
    socket.on("error", reject);
    socket.on("close", () => resolve({ text, ms: Date.now() - started }));
    socket.on("connect", async () => {
      for (const chunk of data) {
        socket.write(chunk);
        if (opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
      }
    });
  });
}

/** The status and JSON body of a raw HTTP/1.1 answer, the body checked against the error structure. */
function parse(text: string): {
  status: number;
  headers: string;
  body: { code: string; request_id: string; fix: { param?: string }; reason?: string };
} {
  const [head, body] = [text.slice(0, text.indexOf("\r\n\r\n")), text.slice(text.indexOf("\r\n\r\n") + 4)];
  const json = JSON.parse(Buffer.from(body, "latin1").toString("utf8"));
  expect(validateErrorStructure(json).ok, body).toBe(true);
  return { status: Number(head.split(" ")[1]), headers: head.toLowerCase(), body: json };
}

async function listen(options: Parameters<typeof harness>[0] = {}): Promise<number> {
  h = harness(options);
  const url = await h.server.listen({ host: "127.0.0.1", port: 0 });
  return Number(new URL(url).port);
}

describe("requests that never arrive whole", () => {
  it("a body that stalls is answered 400 naming body and closed within 4/3 of the timeout; nothing is charged", async () => {
    const port = await listen({ http: { requestTimeoutMs: 1200 } });
    const before = h.server.gateway.accounts.account(h.accountId)!.balance;
    const head =
      `POST /v1/detail HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${h.key}\r\n` +
      `Idempotency-Key: ${newIdem()}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`;
    // 20 such connections at once: each is closed, none outlives the bound.
    const all = await Promise.all(Array.from({ length: 20 }, () => raw(port, [head])));
    for (const { text, ms } of all) {
      const a = parse(text);
      expect([a.status, a.body.code, a.body.fix.param]).toEqual([400, "invalid_params", "body"]);
      expect(ms).toBeLessThan(1200 * (4 / 3) + 1000);
    }
    expect(h.server.gateway.accounts.account(h.accountId)!.balance).toBe(before);
  });

  it("headers over the limit: 400 naming headers, with a request_id, in the contract's words", async () => {
    const port = await listen();
    const { text } = await raw(port, [
      `GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(70 * 1024)}\r\n\r\n`,
    ]);
    const a = parse(text);
    expect([a.status, a.body.fix.param]).toEqual([400, "headers"]);
    expect(a.body.request_id).toMatch(/^req_/);
    expect(a.headers).toContain("x-content-type-options: nosniff");
  });

  it("a 20,000-character cursor fits in a GET and is judged as a cursor", async () => {
    const port = await listen();
    const res = await fetch(`http://127.0.0.1:${port}/v1/search?platform=x&query=a&cursor=${"c".repeat(20_000)}`, {
      headers: { "x-api-key": h.key, "idempotency-key": newIdem() },
    });
    const body = (await res.json()) as { fix: { param: string } };
    expect([res.status, body.fix.param]).toEqual([400, "cursor"]);
  });

  it("bytes that are not HTTP, and a request without Host, are answered 400 in the contract's words", async () => {
    const port = await listen();
    const nul = parse(
      (await raw(port, [Buffer.from("GET /v1/capabilities?a=\u0000 HTTP/1.1\r\nHost: x\r\n\r\n", "latin1")])).text,
    );
    expect([nul.status, nul.body.fix.param]).toEqual([400, "request"]);
    const high = parse(
      (
        await raw(port, [
          Buffer.concat([
            Buffer.from("GET /v1/capabilities?q="),
            Buffer.from([0xe9, 0x9c, 0xb2]),
            Buffer.from(" HTTP/1.1\r\nHost: x\r\n\r\n"),
          ]),
        ])
      ).text,
    );
    expect([high.status, high.body.fix.param]).toEqual([400, "request"]);
    const noHost = parse((await raw(port, ["GET /v1/capabilities HTTP/1.1\r\nConnection: close\r\n\r\n"])).text);
    expect([noHost.status, noHost.body.fix.param]).toEqual([400, "Host"]);
    // A key in the URL is refused first, before the missing Host (D50).
    const both = parse(
      (await raw(port, ["GET /v1/capabilities?key=sdgw_leaked HTTP/1.1\r\nConnection: close\r\n\r\n"])).text,
    );
    expect([both.status, both.body.reason]).toEqual([401, "key_in_query"]);
  });
});

describe("connections per address", () => {
  it("one over the cap is answered 429 rate_limited (reason address) with Retry-After and closed; the others work", async () => {
    const port = await listen({ http: { connectionsPerAddress: 3 } });
    const held = await Promise.all(
      Array.from(
        { length: 3 },
        () =>
          new Promise<ReturnType<typeof connect>>((resolve) => {
            const s = connect(port, "127.0.0.1", () => resolve(s));
          }),
      ),
    );
    const a = parse((await raw(port, ["GET /v1/capabilities HTTP/1.1\r\nHost: x\r\n\r\n"])).text);
    expect([a.status, a.body.code, a.body.reason]).toEqual([429, "rate_limited", "address"]);
    expect(a.headers).toMatch(/retry-after: \d+/);
    for (const s of held) s.destroy();
    await new Promise((r) => setTimeout(r, 50));
    const ok = await fetch(`http://127.0.0.1:${port}/v1/capabilities`);
    expect(ok.status).toBe(200);
  });
});
