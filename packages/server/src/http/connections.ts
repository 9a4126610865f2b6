/**
 * D57: what the HTTP layer refuses before any request object exists: a request that never arrived whole (headers
 * over the limit, too slow, not HTTP) and a connection over the cap of its network address. Written straight to
 * the socket, which is then closed.
 */
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { FastifyInstance } from "fastify";
import { answerHeaders, errorAnswer, invalidParamsAnswer, type InvalidParams } from "@sdgw/validators";
import type { HttpConfig } from "../config.ts";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import { newRequestId } from "../ids.ts";
import type { HttpAnswer } from "../runs/types.ts";
import { fromError, jsonAnswer } from "./answer.ts";
import type { ProxyTrust } from "./proxies.ts";
import { MESSAGES } from "@sdgw/engine";

/**
 * The answer to a request that never became one (D57): headers over the limit, a request that did not arrive in
 * time, or bytes that are not HTTP. Always `400 invalid_params`, naming what to fix.
 */
export function clientErrorAnswer(error: NodeJS.ErrnoException, bounds: HttpConfig, requestId: string): HttpAnswer {
  const why: InvalidParams =
    error.code === "HPE_HEADER_OVERFLOW"
      ? {
          param: "headers",
          message: `The request line and headers are over ${bounds.maxHeaderBytes} bytes.`,
          note: MESSAGES.headersTooLargeNote,
        }
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT" || error.code === "ERR_HTTP_HEADERS_TIMEOUT"
        ? {
            param: "body",
            message: `The request did not arrive whole within ${Math.round(bounds.requestTimeoutMs / 1000)} s.`,
            note: "Send the body at once; its Content-Length must be its size.",
          }
        : {
            param: "request",
            message: MESSAGES.notHttp,
            note: "Percent-encode the URL; header values are visible ASCII.",
          };
  return jsonAnswer(invalidParamsAnswer(why, requestId), 400);
}

/** Writes an answer straight to a socket (no request object exists) and closes the connection. */
export function refuseOnSocket(socket: Duplex, a: HttpAnswer): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = typeof a.body === "string" ? a.body : String(a.body);
  const headers = {
    ...a.headers,
    ...answerHeaders("/", a.headers["content-type"]),
    "content-length": String(Buffer.byteLength(body)),
    connection: "close",
  };
  const reason = a.status === 429 ? "Too Many Requests" : "Bad Request";
  socket.end(
    `HTTP/1.1 ${a.status} ${reason}\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join("\r\n")}\r\n\r\n${body}`,
  );
}

/**
 * D57: connections per network address. One over the cap is answered 429 at once and closed. D111: a trusted
 * proxy's own connections are not counted (it carries many clients; the per-address limits count each of them by
 * its forwarded address instead). With a hop count every peer is taken for a proxy, so the cap applies to none.
 */
export function capConnections(app: FastifyInstance, gw: Gateway, proxies: ProxyTrust | null = null): void {
  const cap = gw.config.http.connectionsPerAddress;
  const open = new Map<string, number>();
  app.server.on("connection", (socket: Socket) => {
    if (proxies?.exempts(socket.remoteAddress)) return;
    const address = socket.remoteAddress ?? "";
    const count = (open.get(address) ?? 0) + 1;
    open.set(address, count);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
    if (count > cap) {
      const extra = { reason: "address", message: MESSAGES.tooManyConnections(cap), retry_after: 1 };
      const a = errorAnswer("rate_limited", newRequestId(gw.now()), extra as never, {
        urls: gw.config.urls,
        now: new Date(gw.now()),
      });
      refuseOnSocket(socket, fromError(a));
    }
  });
}
