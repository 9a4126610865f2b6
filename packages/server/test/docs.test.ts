/**
 * `/docs`: the HTTP reference built by `pnpm run docs` (Redoc and the error catalogue), served with no network;
 * a clear `404 not_found` in the contract's error structure when it was not built. The browser test opens it in
 * Debian's Chromium from a started server and sees the operations and the error catalogue, every request staying on
 * 127.0.0.1.
 */
import { execSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Fastify from "fastify";
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isErrorStructure } from "@sdgw/validators";
import { createServer, type SdgwServer } from "../src/index.ts";
import { ERROR_CATALOGUE } from "@sdgw/types";
import { DOCS_DIR, docsBuilt, docsRoutes, homeAnswer, homeRoute, withCatalogueLink } from "../src/http/docs-routes.ts";
import { launchLocalChromium } from "../../../generators/src/testing/chromium.ts";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
// playwright-core is a dev dependency of the mock and the client, not of the server: taken from beside the mock.
// Its types are not the server's either: the little this test uses is declared here.
interface Locator {
  innerText(): Promise<string>;
  first(): Locator;
  click(): Promise<void>;
}
interface Page {
  on(event: "pageerror", listener: (error: Error) => void): void;
  goto(url: string, options: { waitUntil: "load" }): Promise<unknown>;
  waitForFunction(expression: string, arg: null, options: { timeout: number }): Promise<unknown>;
  locator(selector: string): Locator;
  getByText(text: string, options: { exact: boolean }): Locator;
}
interface BrowserContext {
  on(event: "request", listener: (request: { url(): string }) => void): void;
  newPage(): Promise<Page>;
  close(): Promise<void>;
}
const playwright = (await import(
  createRequire(new URL("../../mock/package.json", import.meta.url)).resolve("playwright-core")
)) as { chromium: Parameters<typeof launchLocalChromium<BrowserContext>>[0] };
const { chromium } = playwright;

let server: SdgwServer;
beforeAll(() => {
  // `pnpm test` builds the references before vitest runs; alone, this file builds the HTTP one (about a second).
  if (!existsSync(`${DOCS_DIR}index.html`)) execSync("pnpm run docs:http", { cwd: ROOT, stdio: "ignore" });
  server = createServer({ dbPath: ":memory:", log: () => undefined });
}, 60_000);
afterAll(() => server.close({ drainMs: 0 }));

describe("fix → the error catalogue (D92)", () => {
  it("the catalogue has an entry (an id) for every code", async () => {
    const page = await server.app.inject({ method: "GET", url: "/docs/errors.html" });
    for (const code of Object.keys(ERROR_CATALOGUE)) expect(page.body, code).toContain(`<section id="${code}">`);
    expect(docsBuilt()).toBe(true);
  });

  it("with docsLinks, every error answered under a non-200 status ends its fix.note with its entry; nothing else changes", async () => {
    const linked = createServer({ dbPath: ":memory:", log: () => undefined, docsLinks: true });
    try {
      const cases = [
        { url: "/v1/nothing", code: "not_found" }, // no note before: one is added
        { url: "/v1/search?platform=x&query=a&count=21", code: "invalid_params" },
        { url: "/v1/account", code: "unauthorized" },
        { url: "/v1/search?platform=x&query=a&key=sdgw_leaked", code: "unauthorized" }, // refused in onRequest
      ];
      for (const c of cases) {
        const res = await linked.app.inject({ method: "GET", url: c.url, headers: { host: "gw.example:8787" } });
        const body = res.json();
        expect(isErrorStructure(body), c.url).toBe(true);
        expect(body.code).toBe(c.code);
        expect(body.fix.note, c.url).toMatch(
          new RegExp(`The error catalogue explains ${c.code}: http://gw\\.example:8787/docs/errors\\.html#${c.code}$`),
        );
        const plain = await server.app.inject({ method: "GET", url: c.url, headers: { host: "gw.example:8787" } });
        expect(plain.json().fix.note ?? "", `without docsLinks, ${c.url}`).not.toMatch(/errors\.html/);
        if (plain.json().fix.note) expect(body.fix.note.startsWith(plain.json().fix.note)).toBe(true);
      }
      const ok = await linked.app.inject({ method: "GET", url: "/v1/capabilities" });
      expect(ok.statusCode).toBe(200);
      expect(ok.body).not.toMatch(/errors\.html/);
    } finally {
      await linked.close({ drainMs: 0 });
    }
  });

  it("leaves what is not an error structure alone, and a Host that cannot stand in a URL out", () => {
    for (const p of [
      undefined,
      "",
      "text",
      '{"a":1}',
      '{"code":"nope","fix":{"note":"x"}}',
      '{"code":"not_found"}',
      Buffer.from("{}"),
    ])
      expect(withCatalogueLink(p, "http", "h")).toBe(p);
    const out = JSON.parse(
      withCatalogueLink('{"code":"rate_limited","fix":{"note":"Wait."}}', "http", "evil host/") as string,
    );
    expect(out.fix).toEqual({
      note: "Wait. The error catalogue explains rate_limited: /docs/errors.html#rate_limited",
    });
  });
});

describe("GET / (D131)", () => {
  it("points to the console, /docs, /v1/capabilities and /openapi.json, each of which answers", async () => {
    const res = await server.app.inject({ method: "GET", url: "/" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    const body = res.json();
    expect(body.links).toMatchObject({
      console: "/console/",
      docs: "/docs",
      capabilities: "/v1/capabilities",
      openapi: "/openapi.json",
    });
    expect(body.docs_built).toBe(true);
    for (const path of ["/docs/", "/v1/capabilities", "/openapi.json", "/docs/errors.html", "/healthz"]) {
      const linked = await server.app.inject({ method: "GET", url: path });
      expect(linked.statusCode, path).toBe(200);
    }
  });

  it("without a built reference, says how to build it on Node 20 and on Node 24", async () => {
    expect(homeAnswer(false)["note"]).toContain("`npx -y -p node@24 -p pnpm@12 -- pnpm run docs`");
    expect(homeAnswer(false)["note"]).toContain("`pnpm run docs` (Node 24");
    const bare = Fastify();
    homeRoute(bare, "/nonexistent/sdgw-docs/");
    const res = await bare.inject({ method: "GET", url: "/" });
    expect(res.json()).toMatchObject({ docs_built: false, links: { docs: "/docs" } });
    await bare.close();
  });
});

describe("/docs", () => {
  it("serves the reference, its error catalogue and Redoc's script, with D53's headers", async () => {
    const moved = await server.app.inject({ method: "GET", url: "/docs" });
    expect(moved.statusCode).toBe(302);
    expect(moved.headers.location).toBe("/docs/");
    const page = await server.app.inject({ method: "GET", url: "/docs/" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(page.headers["cache-control"]).toBe("no-store");
    expect(page.body).toContain("./redoc.standalone.js");
    expect(page.body).not.toMatch(/https:\/\/cdn\.redocly\.com\/redoc/);
    const errors = await server.app.inject({ method: "GET", url: "/docs/errors.html" });
    expect(errors.statusCode).toBe(200);
    expect(errors.body).toContain('id="rate_limited"');
    const script = await server.app.inject({ method: "GET", url: "/docs/redoc.standalone.js" });
    expect(script.headers["content-type"]).toMatch(/^text\/javascript/);
  });

  it("answers a page it does not have, and a reference never built, with the contract's not_found", async () => {
    const missing = await server.app.inject({ method: "GET", url: "/docs/secrets.txt" });
    expect(missing.statusCode).toBe(404);
    expect(isErrorStructure(missing.json())).toBe(true);
    expect(missing.json()).toMatchObject({ code: "not_found", reason: "no_such_route" });

    const bare = Fastify();
    docsRoutes(bare, server.gateway, "/nonexistent/sdgw-docs/");
    const unbuilt = await bare.inject({ method: "GET", url: "/docs" });
    expect(unbuilt.statusCode).toBe(404);
    const body = unbuilt.json();
    expect(isErrorStructure(body)).toBe(true);
    // the exact command for a machine whose Node is 20, and for one with Node 24
    expect(body.message).toContain("`npx -y -p node@24 -p pnpm@12 -- pnpm run docs` (a machine whose Node is 20)");
    expect(body.message).toContain("or `pnpm run docs` (Node 24 and pnpm 12)");
    await bare.close();
  });

  it("opens in Chromium with the operations and the error catalogue, no request leaving 127.0.0.1", async () => {
    const base = await server.listen({ host: "127.0.0.1", port: 0 });
    const { context, profile } = await launchLocalChromium<BrowserContext>(chromium, "docs");
    const requests: string[] = [];
    try {
      context.on("request", (r) => void requests.push(r.url()));
      const page = await context.newPage();
      const problems: string[] = [];
      page.on("pageerror", (e) => void problems.push(e.message));
      await page.goto(`${base}/docs`, { waitUntil: "load" });
      // Redoc's page: the API's title and its five tags in the menu; opening "Data" shows its operations.
      await page.waitForFunction("/Social Data Gateway API/.test(document.body.innerText)", null, { timeout: 30_000 });
      const menu = await page.locator("body").innerText();
      for (const tag of ["Data", "Tools", "Results", "Discovery", "Account"]) expect(menu).toContain(tag);
      await page.getByText("Data", { exact: true }).first().click();
      await page.waitForFunction('(document.body.textContent ?? "").includes("Search one platform or several")', null, {
        timeout: 20_000,
      });
      expect(problems, "errors on the page").toEqual([]);
      expect(await page.locator("body").innerText()).toContain("error catalogue");
      await page.goto(`${base}/docs/errors.html`, { waitUntil: "load" });
      const catalogue = await page.locator("body").innerText();
      for (const code of ["invalid_params", "rate_limited", "timeout", "max_cost_exceeded"])
        expect(catalogue).toContain(code);
      expect(requests.length).toBeGreaterThan(0);
      const outside = requests.filter((u) => !u.startsWith(base) && !u.startsWith("data:") && !u.startsWith("blob:"));
      expect(outside, "requests that left 127.0.0.1").toEqual([]);
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }, 90_000);
});
