/**
 * The console with Reddit and X live (issue 33): a real @sdgw/server on 127.0.0.1:0 reads Reddit (app-only OAuth2)
 * and X (API v2, Bearer token) from fake upstreams on 127.0.0.1 that answer the hand-written exchanges of
 * fixtures/upstream/reddit and fixtures/upstream/x. In Debian's Chromium (playwright-core, /usr/bin/chromium) the
 * Playground says both are live, runs a Reddit search and an X detail, and shows the items the upstreams answered;
 * each page is screenshotted (test/artifacts/, kept as CI artifacts) and checked by axe-core.
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { launchLocalChromium } from "../../../generators/src/testing/chromium.ts";
import { loadExchanges, startFakeUpstream, type FakeUpstream } from "../../conformance/src/connectors/index.ts";
import { RD, REDDIT_FIXTURES, redditSettings } from "../../conformance/test/reddit-subject.ts";
import { XF, X_FIXTURES, xSettings } from "../../conformance/test/x-subject.ts";
import { createServer, type SdgwServer } from "../../server/src/storage/sqlite/server.ts";
import { hashPasswordSync } from "../../server/src/storage/sessions.ts";
import { sessionsOf } from "../../server/src/http/console-session.ts";
import { PKG, buildConsole } from "./build.ts";

const ARTIFACTS = join(PKG, "test", "artifacts");
const AXE = readFileSync(createRequire(join(PKG, "package.json")).resolve("axe-core/axe.min.js"), "utf8");
const EMAIL = "grace@example.com";
const PASSWORD = "live platforms in the playground";

let redditUp: FakeUpstream | undefined;
let xUp: FakeUpstream | undefined;
let server: SdgwServer | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;
let page: Page;
let origin = "";
const requests: string[] = [];
const pageErrors: string[] = [];

afterAll(async () => {
  await context?.close();
  await server?.close();
  await redditUp?.close();
  await xUp?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** Screenshot of the page, and axe-core's serious and critical violations (none expected). */
async function checkPage(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  // Evaluated through the DevTools protocol: the console's Content-Security-Policy allows no inline script.
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const r = await (
      globalThis as unknown as {
        axe: {
          run(
            o: unknown,
          ): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>;
        };
      }
    ).axe.run({ resultTypes: ["violations"] });
    return r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${JSON.stringify(v.nodes.map((n) => n.target)).slice(0, 300)}`);
  });
  expect(violations, `axe on ${name}`).toEqual([]);
}

/** The ids of the item cards the answer shows (each card links `Open post <id>`). */
async function shownIds(): Promise<string[]> {
  const links = await page.locator('[data-kind="item"] article a').allTextContents();
  return links.map((t) => t.replace(/^Open post /, ""));
}

describe("the console with Reddit and X live against fake upstreams", () => {
  it("says reddit and x are live, and shows a Reddit search and an X post read from their APIs", async () => {
    buildConsole();
    mkdirSync(ARTIFACTS, { recursive: true });
    redditUp = await startFakeUpstream({ exchanges: loadExchanges(REDDIT_FIXTURES) });
    xUp = await startFakeUpstream({ exchanges: loadExchanges(X_FIXTURES) });
    server = createServer({
      dbPath: ":memory:",
      log: () => undefined,
      waitMs: 10_000,
      connectors: { reddit: redditSettings(redditUp.url), x: xSettings(xUp.url) },
    });
    const gw = server.gateway;
    const { account } = gw.accounts.createAccount({ name: "Live browser test", plan: "paid" });
    gw.accounts.grant(account.id, 100, "test");
    sessionsOf(gw).createUser({ accountId: account.id, email: EMAIL, passwordHash: hashPasswordSync(PASSWORD) });
    origin = await server.listen({ host: "127.0.0.1", port: 0 });
    ({ context, profile } = await launchLocalChromium(chromium, "console-live"));
    // The pages reach only the server; anything else is aborted and remembered.
    await context.route("**/*", (route) => {
      const url = route.request().url();
      requests.push(url);
      return url === origin || url.startsWith(`${origin}/`) ? route.continue() : route.abort();
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (e) => pageErrors.push(String(e)));

    await page.goto(`${origin}/console/`);
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Playground", exact: true }).waitFor();

    // D114: /v1/capabilities says which platforms read their API, and the Playground repeats it.
    await page.locator("#op").selectOption("searchPost");
    await expect
      .poll(() => page.getByTestId("sources").textContent())
      .toBe(
        "Platforms: x, reddit live (its official API) · xiaohongshu, douyin, wechat, weibo, bilibili, zhihu, kuaishou, youtube simulated (invented data)",
      );

    // A Reddit search: the two posts of the fake Reddit's first page, asked with the app-only token.
    const redditBefore = redditUp.requests.length;
    await page.getByLabel("platform", { exact: true }).selectOption("reddit");
    await page.getByLabel("query (required)").fill("tide pools");
    await page.getByRole("button", { name: "Run" }).click();
    await page.getByTestId("answer").waitFor();
    await expect.poll(() => page.getByTestId("answer").textContent()).toContain("HTTP 200");
    expect(await shownIds()).toEqual([RD.POST, "t3_c3crab"]);
    const cards = page.locator('[data-kind="item"] article h3');
    expect(await cards.allTextContents()).toEqual([
      "Tide pool walk at dawn: anemones & hermit crabs",
      "Is this a porcelain crab?",
    ]);
    expect(await page.getByTestId("cost").textContent()).toBe("Cost: 1 credit · 99 credits left");
    const asked = redditUp.requests.slice(redditBefore).filter((r) => r.method === "GET");
    expect(asked.map((r) => r.path)).toContain("/search");
    await checkPage("live-reddit-search");

    // An X post by id: the 19-digit id unchanged, author and text from X API v2's data and includes.
    const xBefore = xUp.requests.length;
    await page.locator("#op").selectOption("detail");
    await page.getByLabel("platform (required)").selectOption("x");
    await page.getByLabel("id", { exact: true }).fill(XF.T1);
    await page.getByRole("button", { name: "Run" }).click();
    await expect.poll(() => shownIds()).toEqual([XF.T1]);
    const card = page.locator('[data-kind="item"] article');
    expect(await card.locator("p").first().textContent()).toContain("Tide pool walk at dawn");
    expect(await card.textContent()).toContain("by Tide Pool Notes");
    expect(await card.locator("a").getAttribute("href")).toBe(`https://x.com/${XF.USER}/status/${XF.T1}`);
    expect(await page.getByTestId("cost").textContent()).toBe("Cost: 1 credit · 98 credits left");
    expect(xUp.requests.slice(xBefore).map((r) => r.path)).toEqual(["/2/tweets"]);
    await checkPage("live-x-detail");

    expect(gw.ledger.view(account.id, null).balance).toBe(98);
    expect(requests.filter((u) => !u.startsWith(`${origin}/`))).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 120_000);
});
