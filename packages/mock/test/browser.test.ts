/**
 * The mock in a real browser, as a frontend team runs it: a page bundles msw/browser's `setupWorker` with the
 * mock's handlers and @sdgw/client (sources, by esbuild), registers msw's service worker, and calls the gateway on
 * its own origin. The local server serves only the page, its script and the worker file: every /v1/ call is
 * answered inside the browser. The page makes a plain search, a polled search (202, read by handle), a call with
 * the `x-sdgw-scenario` header, and a forced `invalid_params` thrown by the client; the test reads what the page
 * rendered.
 *
 * Needs Debian's chromium at /usr/bin/chromium (CI installs it in .ci/run). Playwright's downloads are never used.
 */
import { readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { launchLocalChromium } from "../../../generators/src/testing/chromium.ts";
import { startServer, type LocalServer, type Reply } from "../../client/test/local-server.ts";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const CLIENT = fileURLToPath(new URL("../../client/src/index.ts", import.meta.url));
const WORKER = readFileSync(
  join(createRequire(join(PKG, "package.json")).resolve("msw/package.json"), "..", "lib", "mockServiceWorker.js"),
  "utf8",
);

const PAGE_SCRIPT = `
import { setupWorker } from "msw/browser";
import { createMock, scenario } from ${JSON.stringify(join(PKG, "src", "index.ts"))};
import { createClient, isSdgwError } from ${JSON.stringify(CLIENT)};

const out = (id, value) => {
  const el = document.createElement("output");
  el.id = id;
  el.textContent = typeof value === "string" ? value : JSON.stringify(value);
  document.body.append(el);
};

(async () => {
  try {
    const mock = createMock({ polls: 1, retryAfter: 1 });
    const worker = setupWorker(...mock.handlers);
    await worker.start({ serviceWorker: { url: "/mockServiceWorker.js" }, onUnhandledFrame: "bypass", quiet: true });
    const sdgw = createClient({ baseUrl: location.origin, apiKey: "sdgw_test_key" });

    const plain = await sdgw.search({ platform: "xiaohongshu", query: "露营装备", count: 2 });
    out("plain", { status: plain.status, items: plain.items.length, cost: plain.billing.cost });

    const progress = [];
    const polled = await sdgw.search({ platform: "weibo", query: "slow 热搜" }, { onProgress: (r) => progress.push(r.status) });
    out("polled", { status: polled.status, platform: polled.platform, progress });

    const forced = await fetch("/v1/account", { headers: { "X-API-Key": "sdgw_test_key", "x-sdgw-scenario": "rate_limited" } });
    out("forced", { status: forced.status, retryAfter: forced.headers.get("retry-after"), code: (await forced.json()).code });

    mock.use(scenario("invalid_params", { operation: "trending", times: 1 }));
    const error = await sdgw.trending({ platform: "weibo" }).catch((e) => e);
    out("thrown", { typed: isSdgwError(error, "invalid_params"), status: error.status });

    out("balance", String(mock.state.balance));
    document.body.dataset.done = "ok";
  } catch (error) {
    out("error", String((error && error.stack) || error));
    document.body.dataset.done = "error";
  }
})();
`;

const HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>@sdgw/mock in the browser</title><link rel="icon" href="data:,"></head>
<body><script src="/app.js"></script></body></html>`;

let server: LocalServer | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;
let page: Page;
const offOrigin: string[] = [];
const pageErrors: string[] = [];

/** Bundles the page, serves it and launches Chromium (inside the test: a failing beforeAll reports skipped tests). */
async function setUp(): Promise<void> {
  const bundled = await build({
    stdin: { contents: PAGE_SCRIPT, resolveDir: PKG, sourcefile: "page.js", loader: "js" },
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "es2022",
    conditions: ["source"],
    write: false,
    logLevel: "silent",
  });
  const script = bundled.outputFiles[0]!.text;
  server = await startServer((req): Reply => {
    if (req.method === "GET" && req.path === "/")
      return { status: 200, body: HTML, headers: { "content-type": "text/html; charset=utf-8" } };
    if (req.method === "GET" && req.path === "/app.js")
      return { status: 200, body: script, headers: { "content-type": "text/javascript; charset=utf-8" } };
    if (req.method === "GET" && req.path === "/mockServiceWorker.js")
      return { status: 200, body: WORKER, headers: { "content-type": "text/javascript; charset=utf-8" } };
    return {
      status: 404,
      body: {
        request_id: "req_404",
        schema_version: "v1",
        code: "not_found",
        message: `the server was asked ${req.method} ${req.path}`,
      },
    };
  });
  ({ context, profile } = await launchLocalChromium(chromium, "mock-chromium"));
  const origin = server.url;
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url === origin || url.startsWith(`${origin}/`)) return route.continue();
    offOrigin.push(url);
    return route.abort();
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => pageErrors.push(String(e)));
}

afterAll(async () => {
  await context?.close();
  await server?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

const read = async (id: string) => JSON.parse((await page.locator(`#${id}`).textContent()) ?? "null") as unknown;

describe("@sdgw/mock in Chromium with msw/browser", () => {
  it("answers a page's calls inside the browser: plain, polled, forced by header, and thrown typed by the client", async () => {
    await setUp();
    await page.goto(`${server!.url}/`);
    await page.locator("body[data-done]").waitFor({ state: "attached", timeout: 30_000 });
    const done = await page.locator("body").getAttribute("data-done");
    const error = done === "error" ? await page.locator("#error").textContent() : undefined;
    expect({ done, error, pageErrors }).toEqual({ done: "ok", error: undefined, pageErrors: [] });

    expect(await read("plain")).toEqual({ status: "ok", items: 2, cost: 1 });
    expect(await read("polled")).toEqual({ status: "ok", platform: "weibo", progress: ["running", "running"] });
    expect(await read("forced")).toEqual({ status: 429, retryAfter: "1", code: "rate_limited" });
    expect(await read("thrown")).toEqual({ typed: true, status: 400 });
    expect(await read("balance")).toBe(98);

    // Every /v1/ call was answered by the worker: the server saw the page, its script and the worker file only.
    expect(server!.seen.map((r) => r.path).filter((p) => p.startsWith("/v1/"))).toEqual([]);
    expect(offOrigin).toEqual([]);
  }, 60_000);
});
