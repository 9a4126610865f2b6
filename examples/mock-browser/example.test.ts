/** Builds the example page, serves it with msw's worker on 127.0.0.1, and checks in Chromium what a person sees. */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium, type BrowserContext } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { launchLocalChromium } from "../../generators/src/testing/chromium.ts";
import { startServer, type LocalServer } from "../../packages/client/test/local-server.ts";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const fromHere = createRequire(join(HERE, "package.json"));

let server: LocalServer | undefined;
let context: BrowserContext | undefined;
const profiles: string[] = [];
afterAll(async () => {
  await context?.close();
  await server?.close();
  for (const dir of profiles) rmSync(dir, { recursive: true, force: true });
});

describe("examples/mock-browser", () => {
  it("renders a polled search and a refused call with its fix", async () => {
    const bundle = await build({
      entryPoints: [join(HERE, "main.ts")],
      bundle: true,
      format: "esm",
      platform: "browser",
      write: false,
      conditions: ["source"],
    });
    const files: Record<string, [string, string]> = {
      "/": ["text/html; charset=utf-8", readFileSync(join(HERE, "index.html"), "utf8")],
      "/main.js": ["text/javascript; charset=utf-8", bundle.outputFiles[0]!.text],
      "/mockServiceWorker.js": [
        "text/javascript; charset=utf-8",
        readFileSync(join(fromHere.resolve("msw/package.json"), "..", "lib", "mockServiceWorker.js"), "utf8"),
      ],
    };
    server = await startServer((req) => {
      const file = files[req.path];
      return file
        ? { status: 200, body: file[1], headers: { "content-type": file[0] } }
        : { status: 404, body: "not here" };
    });
    let profileDir: string;
    ({ context, profile: profileDir } = await launchLocalChromium(chromium, "example"));
    profiles.push(profileDir);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${server.url}/`);
    await page.waitForSelector("body[data-done]", { timeout: 30_000 });
    expect(await page.getAttribute("body", "data-done")).toBe("yes");

    const status = await page.textContent("#search-status");
    // polls: 2 → the first 202 and two running reads: three progress reports, then the finished answer, charged once.
    expect(status).toMatch(/^ok: \d+ items after 3 progress reports; cost 1 credit\(s\), balance 99$/);
    const titles = await page.locator("#search-items li .title").allTextContents();
    expect(titles.length).toBeGreaterThan(0);
    expect(titles.join(" ")).toMatch(/[\u4e00-\u9fff]/);
    expect(await page.textContent("#error-code")).toBe("400 invalid_params");
    expect(await page.textContent("#error-fix")).toMatch(/^fix: \{"param":/);
    writeFileSync(join(tmpdir(), "sdgw-example.png"), await page.screenshot({ fullPage: true }));
    expect(errors).toEqual([]);
    // The gateway's routes never reached the network: the service worker answered them in the page.
    expect(server.seen.map((r) => r.path).filter((p) => p.startsWith("/v1/"))).toEqual([]);
  }, 60_000);
});
