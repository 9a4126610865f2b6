/**
 * The client in a real browser: the sources bundled by esbuild for the browser, served with a page and the API
 * routes it calls from one local origin (127.0.0.1, so no CORS), and driven in Debian's Chromium by playwright-core.
 * The page makes a plain search and a search answered 202 that the client polls, and renders both; the test reads
 * the page and checks on the server what the browser sent.
 *
 * Needs Debian's chromium at /usr/bin/chromium (`apt-get install -y chromium`; CI installs it in .ci/run).
 * Playwright's own browser downloads are never used.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { launchLocalChromium } from "../../../generators/src/testing/chromium.ts";
import { startServer, type LocalServer, type Reply } from "./local-server.ts";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const fixture = (file: string) =>
  JSON.parse(readFileSync(new URL(`../../../fixtures/${file}`, import.meta.url), "utf8"));
const OK = fixture("search/ok-xiaohongshu.json") as { items: Array<{ title: string }> };
const RUNNING = { ...fixture("search/running-202.json"), retry_after_seconds: 1 } as {
  handle: string;
  retry_after_seconds: number;
};
const TITLES = OK.items.map((i) => i.title);

/** The page's script: both calls through the client, rendered into the DOM; `body[data-done]` says it ended. */
const PAGE_SCRIPT = `
import { createClient } from ${JSON.stringify(join(PKG, "src", "index.ts"))};

const list = (id, items) => {
  const ul = document.createElement("ul");
  ul.id = id;
  for (const item of items) {
    const li = document.createElement("li");
    li.textContent = item.title;
    ul.append(li);
  }
  document.body.append(ul);
};

(async () => {
  try {
    const sdgw = createClient({ baseUrl: location.origin, apiKey: "k" });
    const plain = await sdgw.search({ platform: "xiaohongshu", query: "plain" });
    list("plain", plain.items);
    const progress = [];
    const polled = await sdgw.search({ platform: "xiaohongshu", query: "polled" }, { onProgress: (r) => progress.push(r.handle) });
    list("polled", polled.items);
    const polls = document.createElement("output");
    polls.id = "polls";
    polls.textContent = String(progress.length);
    polls.dataset.handles = progress.join(",");
    document.body.append(polls);
    document.body.dataset.done = "ok";
  } catch (error) {
    const pre = document.createElement("pre");
    pre.id = "error";
    pre.textContent = String(error && error.stack || error);
    document.body.append(pre);
    document.body.dataset.done = "error";
  }
})();
`;

const HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>@sdgw/client in the browser</title><link rel="icon" href="data:,"></head>
<body><script src="/app.js"></script></body></html>`;

let server: LocalServer | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;
let page: Page;
/** Requests the page tried to send anywhere but the local server (aborted; expected none). */
const offOrigin: string[] = [];
const pageErrors: string[] = [];

/**
 * Bundles the page, starts the server and launches Chromium. Run inside the test, not in beforeAll: a failing
 * beforeAll reports its tests as skipped, and CI counts "N failed" from the closing line.
 */
async function setUp(): Promise<void> {
  const bundled = await build({
    stdin: { contents: PAGE_SCRIPT, resolveDir: PKG, sourcefile: "page.js", loader: "js" },
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
  });
  const script = bundled.outputFiles[0]!.text;

  const polls = new Map<string, number>();
  server = await startServer((req): Reply => {
    if (req.method === "GET" && req.path === "/")
      return { status: 200, body: HTML, headers: { "content-type": "text/html; charset=utf-8" } };
    if (req.method === "GET" && req.path === "/app.js")
      return { status: 200, body: script, headers: { "content-type": "text/javascript; charset=utf-8" } };
    if (req.method === "GET" && req.path === "/v1/search") {
      const query = req.query.get("query");
      if (query === "plain") return { status: 200, body: OK };
      if (query === "polled") return { status: 202, body: RUNNING, headers: { "retry-after": "1" } };
    }
    if (req.method === "GET" && req.path === `/v1/results/${RUNNING.handle}`) {
      const n = (polls.get(RUNNING.handle) ?? 0) + 1;
      polls.set(RUNNING.handle, n);
      return n === 1 ? { status: 202, body: RUNNING, headers: { "retry-after": "1" } } : { status: 200, body: OK };
    }
    return {
      status: 404,
      body: {
        request_id: "req_404",
        schema_version: "v1",
        code: "not_found",
        message: `no route ${req.method} ${req.path}`,
      },
    };
  });

  ({ context, profile } = await launchLocalChromium(chromium, "client-chromium"));
  const origin = server.url;
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url === origin || url.startsWith(`${origin}/`)) return route.continue();
    offOrigin.push(url);
    return route.abort();
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && pageErrors.push(m.text()));
}

afterAll(async () => {
  await context?.close();
  await server?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe("@sdgw/client in Chromium", () => {
  it("makes a plain call and a polled call from a page, with the key in a header and the call sent once", async () => {
    await setUp();
    await page.goto(`${server!.url}/`);
    await page.locator("body[data-done]").waitFor({ state: "attached", timeout: 30_000 });
    const done = await page.locator("body").getAttribute("data-done");
    const error = done === "error" ? await page.locator("#error").textContent() : undefined;
    expect({ done, error, pageErrors }).toEqual({ done: "ok", error: undefined, pageErrors: [] });

    // What the page shows.
    expect(await page.locator("#plain li").allTextContents()).toEqual(TITLES);
    expect(await page.locator("#polled li").allTextContents()).toEqual(TITLES);
    const polls = Number(await page.locator("#polls").textContent());
    expect(polls).toBeGreaterThanOrEqual(1);
    expect(polls).toBe(2); // the search's 202 and the first poll's 202
    expect(await page.locator("#polls").getAttribute("data-handles")).toBe(`${RUNNING.handle},${RUNNING.handle}`);

    // What the browser sent.
    const seen = server!.seen;
    const searches = (query: string) => seen.filter((r) => r.path === "/v1/search" && r.query.get("query") === query);
    expect(searches("plain")).toHaveLength(1);
    expect(searches("polled")).toHaveLength(1); // the original search is never repeated while polling
    const reads = seen.filter((r) => r.path.startsWith("/v1/results/"));
    expect(reads.map((r) => r.path)).toEqual([`/v1/results/${RUNNING.handle}`, `/v1/results/${RUNNING.handle}`]);
    for (const r of [...searches("plain"), ...searches("polled"), ...reads]) expect(r.headers["x-api-key"]).toBe("k");
    expect(searches("polled")[0]!.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/);
    const polledAt = [searches("polled")[0]!.at, ...reads.map((r) => r.at)];
    for (let i = 1; i < polledAt.length; i++) expect(polledAt[i]! - polledAt[i - 1]!).toBeGreaterThanOrEqual(990); // Retry-After: 1
    expect(
      seen.filter(
        (r) => r.path.startsWith("/v1/") && !r.path.startsWith("/v1/search") && !r.path.startsWith("/v1/results/"),
      ),
    ).toEqual([]);
    expect(offOrigin).toEqual([]);
  }, 60_000);
});
