/**
 * The SDK's errors (issue 32, D118): an API refusal's message keeps its code, every error carries the answer's
 * headers and the request id, and aborts and timeouts are the SDK's own typed errors (one base class, the cause
 * kept), while `instanceof`, `code`, `fix` and the fields users read stay as they were.
 */
import { readFileSync } from "node:fs";
import type { HandleAnswer } from "@sdgw/types";
import { afterEach, describe, expect, it } from "vitest";
import {
  collectMore,
  createClient,
  isSdgwError,
  SdgwAbortError,
  SdgwBaseError,
  SdgwError,
  SdgwPollTimeoutError,
  SdgwTimeoutError,
  SdgwTransportError,
} from "../src/index.ts";
import { startServer, type Handler, type LocalServer } from "./local-server.ts";

const fixture = (file: string) =>
  JSON.parse(readFileSync(new URL(`../../../fixtures/${file}`, import.meta.url), "utf8"));
const RUNNING: HandleAnswer = fixture("search/running-202.json");
const KEY = "sdgw_live_SECRET_4f7a9c";
const never = () => new Promise<never>(() => {});
const insufficient = {
  request_id: "req_01JD3Z0INSUF",
  schema_version: "v1",
  code: "insufficient_balance",
  message: "Not enough credits for this call: it needs 3 and 1 is left.",
  retryable: false,
  fix: { action_url: "https://billing.example.com/" },
};

let server: LocalServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
async function serve(handler: Handler, options: Partial<Parameters<typeof createClient>[0]> = {}) {
  server = await startServer(handler);
  return createClient({ baseUrl: server.url, apiKey: KEY, retryBaseMs: 20, ...options });
}

describe("an API refusal (SdgwError)", () => {
  it("keeps its code in the message, the API's words in body.message, and every field as before", async () => {
    const sdgw = await serve(() => ({ status: 402, body: insufficient, headers: { "x-request-id": "req_hdr" } }));
    const e = await sdgw.search({ platform: "x", query: "q" }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SdgwError);
    expect(e).toBeInstanceOf(SdgwBaseError);
    expect(e).toBeInstanceOf(Error);
    if (!isSdgwError(e, "insufficient_balance")) throw new Error("not narrowed");
    expect(e.message).toBe("insufficient_balance: Not enough credits for this call: it needs 3 and 1 is left.");
    expect(String(e)).toBe(`SdgwError: ${e.message}`);
    expect(e.body.message).toBe(insufficient.message);
    expect(e).toMatchObject({ name: "SdgwError", status: 402, code: "insufficient_balance", retryable: false });
    expect(e.fix).toEqual(insufficient.fix);
    expect(e.request_id).toBe("req_01JD3Z0INSUF");
    expect(e.requestId).toBe("req_01JD3Z0INSUF");
    expect(e.headers).toBeInstanceOf(Headers);
    expect(e.headers?.get("content-type")).toMatch(/^application\/json/);
    expect(e.headers?.get("x-request-id")).toBe("req_hdr");
  });

  it("one made by hand, as tests do, still works with two arguments", () => {
    const e = new SdgwError(402, insufficient as never);
    expect(e.message).toBe(`insufficient_balance: ${insufficient.message}`);
    expect(e.headers).toBeUndefined();
    expect(e.requestId).toBe(insufficient.request_id);
  });

  it("from an MCP tool result: status 0, no headers, the same message", async () => {
    const mcp = { callTool: async () => ({ isError: true, structuredContent: insufficient }) };
    const e = await collectMore(mcp, "search", { platform: "x", query: "q" }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SdgwError);
    expect(e).toMatchObject({ status: 0, headers: undefined, requestId: insufficient.request_id });
    expect((e as Error).message).toBe(`insufficient_balance: ${insufficient.message}`);
  });
});

describe("no answer", () => {
  it("an HTTP answer that is not the API's carries its status and headers", async () => {
    const sdgw = await serve(() => ({ status: 502, body: "<html>bad gateway</html>", headers: { via: "proxy" } }), {
      maxRetries: 0,
    });
    const e = await sdgw.account().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SdgwTransportError);
    expect(e).toBeInstanceOf(SdgwBaseError);
    expect(e).toMatchObject({ status: 502, attempts: 1 });
    expect((e as SdgwTransportError).headers?.get("via")).toBe("proxy");
  });

  it("a timeout is an SdgwTimeoutError (a transport error, as before) whose cause is what fetch threw", async () => {
    const sdgw = await serve(never, { timeout: 100, maxRetries: 0 });
    const e = await sdgw.search({ platform: "x", query: "q" }, { idempotencyKey: "idem-t" }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SdgwTimeoutError);
    expect(e).toBeInstanceOf(SdgwTransportError);
    expect(e).toBeInstanceOf(SdgwBaseError);
    expect(e).toMatchObject({ name: "SdgwTimeoutError", requestId: "idem-t", timeoutMs: 100, headers: undefined });
    expect((e as Error).cause).toBeInstanceOf(Error);
    expect(((e as Error).cause as Error).name).toBe("AbortError");
  });
});

describe("aborts", () => {
  it("the caller's signal during an attempt: SdgwAbortError, its reason the cause, the request id kept", async () => {
    const sdgw = await serve(never);
    const controller = new AbortController();
    const reason = new Error("user left");
    setTimeout(() => controller.abort(reason), 50);
    const e = await sdgw
      .search({ platform: "x", query: "q" }, { signal: controller.signal, idempotencyKey: "idem-a" })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SdgwAbortError);
    expect(e).toBeInstanceOf(SdgwBaseError);
    expect(e).not.toBeInstanceOf(SdgwTransportError); // not retried, not a failure of the network
    expect(e).toMatchObject({ name: "AbortError", requestId: "idem-a" });
    expect((e as Error).message).toBe("GET /v1/search was aborted: user left");
    expect((e as Error).cause).toBe(reason);
  });

  it("a signal already aborted: nothing is sent; AbortSignal.timeout's TimeoutError is the cause", async () => {
    const sdgw = await serve(never);
    const signal = AbortSignal.timeout(1);
    await new Promise((r) => setTimeout(r, 20));
    const e = await sdgw.account({ signal }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SdgwAbortError);
    expect(((e as Error).cause as DOMException).name).toBe("TimeoutError");
    expect(server!.seen).toHaveLength(0);
  });

  it("during a wait before a retry, and while polling a 202", async () => {
    const sdgw = await serve((req) =>
      req.path.startsWith("/v1/results/")
        ? { status: 202, body: RUNNING, headers: { "retry-after": "5" } }
        : req.path === "/v1/account"
          ? {
              status: 503,
              body: { ...insufficient, code: "temporarily_unavailable", reason: "paused", retryable: true },
              headers: { "retry-after": "5" },
            }
          : { status: 202, body: RUNNING, headers: { "retry-after": "5" } },
    );
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const retrying = await sdgw.account({ signal: controller.signal }).catch((x: unknown) => x);
    expect(retrying).toBeInstanceOf(SdgwAbortError);
    expect(((retrying as Error).cause as DOMException).name).toBe("AbortError");

    const polling = new AbortController();
    setTimeout(() => polling.abort(new Error("enough")), 100);
    const t0 = Date.now();
    const e = await sdgw.search({ platform: "x", query: "q" }, { signal: polling.signal }).catch((x: unknown) => x);
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(e).toBeInstanceOf(SdgwAbortError);
    expect((e as Error).message).toMatch(/was aborted: enough$/);
  });

  it("a poll that outlives maxWaitMs is an SdgwPollTimeoutError with the handle, request id and headers", async () => {
    const sdgw = await serve(() => ({ status: 202, body: RUNNING, headers: { "retry-after": "1" } }));
    const e = await sdgw.search({ platform: "x", query: "q" }, { maxWaitMs: 50 }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SdgwPollTimeoutError);
    expect(e).toBeInstanceOf(SdgwBaseError);
    expect(e).toMatchObject({ handle: RUNNING.handle, requestId: RUNNING.request_id });
    expect((e as SdgwPollTimeoutError).headers?.get("retry-after")).toBe("1");
  });
});
