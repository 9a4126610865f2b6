/** Test helpers: a server on `:memory:` with generous limits, a funded account and key, and calls validated by @sdgw/validators. */
import { responseValidators, validateErrorStructure } from "@sdgw/validators";
import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import type { GatewayOptions } from "../src/config.ts";

export const GENEROUS = {
  keyQps: 100_000,
  workspaceConcurrency: 100_000,
  addressPerMinute: 100_000,
  failureThreshold: 100_000,
} as const;

export interface Harness {
  server: SdgwServer;
  key: string;
  accountId: string;
  call(
    operationId: keyof typeof responseValidators | null,
    method: "GET" | "POST" | "DELETE",
    url: string,
    options?: { headers?: Record<string, string>; body?: unknown; raw?: string; key?: string | null },
  ): Promise<Answer>;
  audit(): void;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  json: any;
  text: string;
}

let idem = 0;
/** A fresh Idempotency-Key. */
export const newIdem = () => `test-${process.pid}-${Date.now()}-${++idem}`;

/** Validates an answer against its operation's contract (unknown routes and 401s on keyless routes: the error structure). */
export function validateAnswer(
  operationId: keyof typeof responseValidators | null,
  res: LightMyRequestResponse | { statusCode: number; headers: Record<string, unknown>; body: string },
): Answer {
  const type = String(res.headers["content-type"] ?? "");
  const text = res.body;
  const json = type.startsWith("application/json") ? JSON.parse(text) : undefined;
  if (json !== undefined) {
    const validator = operationId ? responseValidators[operationId] : null;
    const documented = validator && (validator.statuses as readonly number[]).includes(res.statusCode);
    const v = documented ? validator(res.statusCode as never, json) : validateErrorStructure(json);
    expect(
      v.ok,
      `${operationId} ${res.statusCode}: ${JSON.stringify(v.ok ? "" : v.errors)}\n${text.slice(0, 2000)}`,
    ).toBe(true);
    if (!documented)
      expect(
        res.statusCode === 404 || res.statusCode === 401,
        `undocumented status ${res.statusCode} for ${operationId}`,
      ).toBe(true);
  }
  if ([202, 409, 429, 503].includes(res.statusCode))
    expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  // D53, on every answer any test sees: never sniffed; never stored by a cache but the two public documents.
  expect(res.headers["x-content-type-options"]).toBe("nosniff");
  const cacheable = operationId === "listCapabilities" || operationId === "getOpenApiDocument";
  expect(res.headers["cache-control"], `${operationId} ${res.statusCode}`).toBe(cacheable ? undefined : "no-store");
  return { status: res.statusCode, headers: res.headers as Record<string, string>, json, text };
}

/** A server with one funded paid account (`credits`) and its key. */
export function harness(options: GatewayOptions & { credits?: number } = {}): Harness {
  const { credits = 1000, ...rest } = options;
  const server = createServer({
    dbPath: ":memory:",
    waitMs: 2000,
    log: () => undefined,
    ...rest,
    limits: { ...GENEROUS, ...rest.limits },
  });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "Test account", plan: "paid" });
  if (credits > 0) gw.accounts.grant(account.id, credits);
  const key = gw.accounts.createKey({ accountId: account.id, name: "test" }).secret;
  return {
    server,
    key,
    accountId: account.id,
    async call(operationId, method, url, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.key !== null) headers["x-api-key"] ??= o.key ?? key;
      if (method === "GET" && url.startsWith("/v1/search")) headers["idempotency-key"] ??= newIdem();
      let payload: string | undefined = o.raw;
      if (o.body !== undefined) {
        payload = JSON.stringify(o.body);
        headers["content-type"] ??= "application/json";
      }
      const res = await server.app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) });
      return validateAnswer(operationId, res);
    },
    audit() {
      for (const a of gw.accounts.accounts()) {
        const s = gw.ledger.audit(a.id);
        expect(s.balance + s.charges, `ledger of ${a.id}`).toBe(s.grants);
        expect(s.balance).toBeGreaterThanOrEqual(0);
        expect(s.held).toBe(s.holdsHeld);
        if (gw.runs.inFlight === 0) expect(s.inMemory, `holds in memory of ${a.id} with no run in flight`).toBe(0);
        // the cache every check reads, moved by the ledger's writes without reading back, equals the stored row
        const cached = gw.accounts.cachedAccount(a.id);
        expect(cached, `cached account ${a.id}`).toEqual(gw.accounts.account(a.id));
      }
    },
  };
}
