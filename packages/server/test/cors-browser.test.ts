/**
 * D130 in a real browser: a page served from one 127.0.0.1 port calls the reference server on another port with an
 * `X-API-Key`, through Chromium's own CORS checks (preflight, allowed headers, exposed headers). The page's origin
 * is in `corsOrigins`: it reads a 200 (`GET /v1/account`), a 202 with its handle and `Retry-After`, and then the
 * handle's result. A page on a third port, not let in, cannot call at all: its fetch rejects, the key never sent
 * with a call (the preflight fails first). Needs Debian's chromium at /usr/bin/chromium; nothing leaves 127.0.0.1.
 */
import { rmSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { launchLocalChromium } from "../../../generators/src/testing/chromium.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { GENEROUS } from "./helpers.ts";

// playwright-core is a dev dependency of the mock, not of the server (as in docs.test.ts): the little used is declared.
interface Page {
  goto(url: string, options: { waitUntil: "load" }): Promise<unknown>;
  evaluate<T, A>(fn: (arg: A) => Promise<T>, arg: A): Promise<T>;
}
interface BrowserContext {
  newPage(): Promise<Page>;
  close(): Promise<void>;
}
const { chromium } = (await import(
  createRequire(new URL("../../mock/package.json", import.meta.url)).resolve("playwright-core")
)) as { chromium: Parameters<typeof launchLocalChromium<BrowserContext>>[0] };

/** A page server on a free 127.0.0.1 port: one empty HTML page, so the page's origin is its own. */
async function pageServer(): Promise<{ server: Server; origin: string }> {
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>an app on another origin</title>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const closeHttp = (s: Server | undefined) =>
  s ? new Promise<void>((resolve) => s.close(() => resolve())) : Promise.resolve();

let gateway: SdgwServer | undefined;
let app: Server | undefined;
let stranger: Server | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;
afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await closeHttp(app);
  await closeHttp(stranger);
  await gateway?.close({ drainMs: 0 });
}, 60_000);

/** What the page saw of one call. */
interface Seen {
  status?: number;
  body?: { handle?: string; status?: string; items?: unknown[]; account?: { id?: string } };
  retryAfter?: string | null;
  replayed?: string | null;
  error?: string;
}

describe("a page on another origin (Chromium)", () => {
  it("calls the server with an X-API-Key: a 200, a 202 handle and its result; an origin not let in fails", async () => {
    const appPage = await pageServer();
    app = appPage.server;
    const strangerPage = await pageServer();
    stranger = strangerPage.server;
    gateway = createServer({
      dbPath: ":memory:",
      waitMs: 100,
      pollAfterSeconds: 1,
      log: () => undefined,
      limits: GENEROUS,
      corsOrigins: [appPage.origin],
      // long enough that the search answers 202 within waitMs, short enough to poll its result to the end
      simulator: { knobs: { "*": { latencyMs: [1500, 1500] } } },
    });
    const { account } = gateway.gateway.accounts.createAccount({ name: "Browser app", plan: "paid" });
    gateway.gateway.accounts.grant(account.id, 1000);
    const key = gateway.gateway.accounts.createKey({ accountId: account.id, name: "browser" }).secret;
    // what reached the server, preflights included (Playwright's request events do not show preflights)
    const reached: string[] = [];
    gateway.app.addHook("onResponse", (req, reply, done) => {
      reached.push(`${req.method} ${req.url.split("?")[0]} ${reply.statusCode} ${req.headers.origin ?? "-"}`);
      done();
    });
    const api = await gateway.listen({ host: "127.0.0.1", port: 0 });
    expect(new URL(api).origin).not.toBe(appPage.origin);

    ({ context, profile } = await launchLocalChromium(chromium, "server-cors"));

    const page = await context.newPage();
    await page.goto(`${appPage.origin}/`, { waitUntil: "load" });
    const seen = await page.evaluate(
      async ({ api, key }) => {
        const read = async (res: Response) => ({
          status: res.status,
          body: (await res.json()) as NonNullable<Seen["body"]>,
          retryAfter: res.headers.get("retry-after"),
          replayed: res.headers.get("idempotent-replayed"),
        });
        const account = await read(await fetch(`${api}/v1/account`, { headers: { "X-API-Key": key } }));
        const started = await read(
          await fetch(`${api}/v1/search?platform=reddit&query=cors&count=2`, {
            headers: { "X-API-Key": key, "Idempotency-Key": `browser-${Date.now()}` },
          }),
        );
        let result: Awaited<ReturnType<typeof read>> | undefined;
        const deadline = Date.now() + 30_000;
        while (started.body.handle && Date.now() < deadline) {
          result = await read(
            await fetch(`${api}/v1/results/${started.body.handle}`, { headers: { "X-API-Key": key } }),
          );
          if (result.status !== 202) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        return { account, started, result };
      },
      { api, key },
    );

    expect(seen.account.status).toBe(200);
    expect(seen.account.body.account?.id).toBe(account.id);
    expect(seen.started.status).toBe(202);
    expect(seen.started.body.handle).toMatch(/^h_/);
    // exposed to the page: without Access-Control-Expose-Headers the browser would hide it (null)
    expect(seen.started.retryAfter).toBe("1");
    expect(seen.result?.status).toBe(200);
    expect(seen.result?.body.status).toBe("ok");
    expect(seen.result?.body.items?.length).toBe(2);
    // the browser preflighted the keyed calls, from the page's origin
    expect(reached).toContain(`OPTIONS /v1/account 204 ${appPage.origin}`);
    expect(reached).toContain(`OPTIONS /v1/search 204 ${appPage.origin}`);
    expect(reached).toContain(`GET /v1/search 202 ${appPage.origin}`);

    // a page on an origin not let in: the preflight gets no Access-Control-Allow-Origin, the fetch rejects
    const strangerTab = await context.newPage();
    await strangerTab.goto(`${strangerPage.origin}/`, { waitUntil: "load" });
    const before = gateway.gateway.ledger.audit(account.id);
    const refused = await strangerTab.evaluate(
      async ({ api, key }): Promise<Seen[]> => {
        const attempt = async (url: string, headers: Record<string, string>): Promise<Seen> => {
          try {
            const res = await fetch(url, { headers });
            return { status: res.status };
          } catch (e) {
            return { error: `${(e as Error).name}: ${(e as Error).message}` };
          }
        };
        return [
          await attempt(`${api}/v1/account`, { "X-API-Key": key }),
          await attempt(`${api}/v1/search?platform=reddit&query=stranger&count=1`, {
            "X-API-Key": key,
            "Idempotency-Key": `stranger-${Date.now()}`,
          }),
          // a simple request (no preflight) is sent, but its answer is not the page's to read
          await attempt(`${api}/v1/capabilities`, {}),
        ];
      },
      { api, key },
    );
    for (const r of refused) {
      expect(r.status, JSON.stringify(r)).toBeUndefined();
      expect(r.error).toMatch(/^TypeError: Failed to fetch/);
    }
    // the keyed calls were never sent: their preflights failed (nothing charged); the simple request was sent
    expect(gateway.gateway.ledger.audit(account.id).charges).toBe(before.charges);
    const fromStranger = reached.filter((r) => r.endsWith(strangerPage.origin));
    expect(fromStranger).toEqual([
      `OPTIONS /v1/account 204 ${strangerPage.origin}`,
      `OPTIONS /v1/search 204 ${strangerPage.origin}`,
      `GET /v1/capabilities 200 ${strangerPage.origin}`,
    ]);
  }, 120_000);
});
