/**
 * The console in Debian's Chromium (playwright-core, /usr/bin/chromium), against a real @sdgw/server on
 * 127.0.0.1:0 serving a fresh `vite build`: sign in, run a search (checked in the browser first), run a tool with
 * its quote then confirm and watch its 202 finish, download a CSV, read the results, create and revoke a key, sign
 * out. Each page is screenshotted (test/artifacts/, kept as CI artifacts) and checked by axe-core (no serious or
 * critical violation); no page asks anything of another origin; CSRF and session fixation are refused.
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { launchLocalChromium } from "../../../generators/src/testing/chromium.ts";
import { createServer, type SdgwServer } from "../../server/src/storage/sqlite/server.ts";
import { hashPasswordSync } from "../../server/src/storage/sessions.ts";
import { sessionsOf } from "../../server/src/http/console-session.ts";
import { PKG, buildConsole } from "./build.ts";

const ARTIFACTS = join(PKG, "test", "artifacts");
const AXE = readFileSync(createRequire(join(PKG, "package.json")).resolve("axe-core/axe.min.js"), "utf8");
const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery staple";

let server: SdgwServer | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;
let page: Page;
let origin = "";
let accountId = "";
const requests: string[] = [];
const pageErrors: string[] = [];

async function setUp(): Promise<void> {
  buildConsole();
  mkdirSync(ARTIFACTS, { recursive: true });
  // weibo answers slowly (over waitMs): a tool on weibo answers 202 and is read by handle; xiaohongshu answers at once.
  server = createServer({
    dbPath: ":memory:",
    log: () => undefined,
    waitMs: 300,
    pollAfterSeconds: 1,
    simulator: { knobs: { weibo: { latencyMs: [700, 700] } } },
  });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "Browser test", plan: "paid" });
  accountId = account.id;
  gw.accounts.grant(account.id, 5000, "test");
  sessionsOf(gw).createUser({ accountId: account.id, email: EMAIL, passwordHash: hashPasswordSync(PASSWORD) });
  origin = await server.listen({ host: "127.0.0.1", port: 0 });
  ({ context, profile } = await launchLocalChromium(chromium, "console"));
  // Every request the pages make, whatever its kind; anything not for the server is aborted and remembered.
  await context.route("**/*", (route) => {
    const url = route.request().url();
    requests.push(url);
    return url === origin || url.startsWith(`${origin}/`) ? route.continue() : route.abort();
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => pageErrors.push(String(e)));
}

afterAll(async () => {
  await context?.close();
  await server?.close();
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

const sessionCookie = async () => (await context!.cookies(origin)).find((c) => c.name === "sdgw_session")?.value;

async function signIn(landing = "Playground"): Promise<void> {
  await page.getByLabel("Email").fill(EMAIL);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: landing, exact: true }).waitFor();
}

async function chooseOperation(operationId: string): Promise<void> {
  await page.locator("#op").selectOption(operationId);
}

describe("the console in Chromium", () => {
  it("signs in (a cookie set before is not the session after), and refuses a wrong password", async () => {
    await setUp();
    // Session fixation: a session token planted before sign-in (here a real one, of another sign-in) is replaced.
    const planted = await fetch(`${origin}/console/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    const plantedToken = /sdgw_session=([^;]+)/.exec(planted.headers.get("set-cookie") ?? "")![1]!;
    await context!.addCookies([{ name: "sdgw_session", value: plantedToken, url: origin }]);
    await fetch(`${origin}/console/session`, {
      method: "DELETE",
      headers: {
        cookie: `sdgw_session=${plantedToken}`,
        "x-csrf-token": ((await planted.json()) as { csrf_token: string }).csrf_token,
      },
    });
    await page.goto(`${origin}/console/`);
    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
    await checkPage("sign-in");
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill("not the password at all");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("The email or the password is wrong");
    await signIn();
    const after = await sessionCookie();
    expect(after).toBeDefined();
    expect(after).not.toBe(plantedToken);
    const cookie = (await context!.cookies(origin)).find((c) => c.name === "sdgw_session")!;
    expect({ httpOnly: cookie.httpOnly, sameSite: cookie.sameSite }).toEqual({ httpOnly: true, sameSite: "Strict" });
  }, 60_000);

  it("checks a search in the browser before sending it, then runs it and shows its cards", async () => {
    await chooseOperation("searchPost");
    // D114: the Playground says where each platform's data comes from (here every one is simulated).
    await expect
      .poll(() => page.getByTestId("sources").textContent())
      .toBe(
        "Platforms: none live · xiaohongshu, douyin, x, reddit, wechat, weibo, bilibili, zhihu, kuaishou, youtube simulated (invented data)",
      );
    const before = requests.length;
    await page.getByRole("button", { name: "Run" }).click();
    // Nothing sent: @sdgw/validators refused the body (neither platform nor platforms) in the page, with the fix.
    await expect.poll(() => page.getByTestId("problem").textContent()).toContain("platform is required");
    // the API's words as a person reads them: code as code (no backticks), no decision numbers
    expect(await page.getByTestId("problem").locator("code").first().textContent()).toBe("platform");
    expect(await page.getByTestId("problem").textContent()).not.toMatch(/`|\bD\d+\b/);
    expect(await page.getByTestId("problem").textContent()).toContain("Allowed: xiaohongshu, douyin");
    // every hint of the form likewise; and a word on platform against platforms
    const hints = await page.locator("form .hint").allTextContents();
    expect(hints.length).toBeGreaterThan(5);
    for (const hint of hints) expect(hint).not.toMatch(/`|\bD\d+\b/);
    expect(hints.join(" ")).toContain("or all (every platform that offers the operation)");
    expect(await page.getByTestId("platform-choice").textContent()).toMatch(
      /^Fill in one of platform and platforms, not both: platform searches one platform/,
    );
    expect(requests.slice(before).filter((u) => u.includes("/v1/"))).toEqual([]);
    await page.getByLabel("platform", { exact: true }).selectOption("reddit");
    await page.getByLabel("query (required)").fill("typescript");
    await page.getByLabel("count").fill("3");
    await page.getByRole("button", { name: "Run" }).click();
    await page.getByTestId("answer").waitFor();
    expect(await page.getByTestId("answer").textContent()).toContain("HTTP 200");
    expect(await page.locator('[data-kind="item"] article').count()).toBe(3);
    // the card view says what the call cost (its billing), above the cards
    expect(await page.getByTestId("cost").textContent()).toMatch(/^Cost: [1-9]\d* credits? · [\d,]+ credits left$/);
    await checkPage("playground-search");
  }, 60_000);

  it("runs a tool: the free quote first, then on confirm a 202 whose waves are shown until it ends", async () => {
    await chooseOperation("brandBuzz");
    await page.getByLabel("query (required)").fill("瑞幸咖啡");
    await page.getByRole("group", { name: "platforms" }).getByLabel("weibo").check();
    await page.getByRole("button", { name: "Get the quote (free)" }).click();
    const quote = page.getByTestId("quote");
    await quote.waitFor();
    expect(await quote.textContent()).toMatch(/Quote: \d+ credits for \d+ calls/);
    await checkPage("playground-quote");
    await page.getByRole("button", { name: "Confirm and run" }).click();
    const progress = page.getByTestId("progress");
    await progress.waitFor({ timeout: 10_000 });
    expect(await progress.textContent()).toMatch(/waves \d+ of \d+ done/);
    await page.getByTestId("answer").waitFor({ timeout: 30_000 });
    expect(await page.getByTestId("answer").getByRole("status").textContent()).toContain("HTTP 200");
    // Rendered by kind: share of voice as bars, volume over time as a line, top posts as a table.
    expect(await page.locator("table.bars").count()).toBeGreaterThan(0);
    expect(await page.locator("figure svg path").count()).toBeGreaterThan(0);
    expect(await page.getByTestId("cost").textContent()).toMatch(/^Cost: [1-9]\d* credits? · [\d,]+ credits left; /);
    await checkPage("playground-tool");
  }, 60_000);

  it("downloads batch_stats as CSV", async () => {
    await chooseOperation("batchStats");
    await page
      .getByLabel("targets (required)")
      .fill("xiaohongshu:6734a1f2000000001d03b7c4\nxiaohongshu:6734a1f2000000001d03b7c5");
    await page.getByLabel("format").selectOption("csv");
    await page.getByRole("button", { name: "Get the quote (free)" }).click();
    await page.getByRole("button", { name: "Confirm and run" }).click();
    const link = page.getByRole("link", { name: /Download CSV/ }).first();
    await link.waitFor({ timeout: 30_000 });
    const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
    const path = await download.path();
    const csv = readFileSync(path, "utf8");
    expect(csv.split("\n")[0]).toMatch(/^kind,/);
    expect(csv.trim().split("\n").length).toBeGreaterThan(1);
  }, 60_000);

  it("lists the Playground's calls under the sign-in, with the 202's handle readable", async () => {
    await page.getByRole("link", { name: "Results" }).click();
    await page.getByRole("heading", { name: "Results" }).waitFor();
    const read = page.getByRole("button", { name: /^Read h_/ }).first();
    await read.waitFor();
    expect(await page.locator("tbody tr").count()).toBeGreaterThanOrEqual(3);
    // a call that answered at once keeps its operation's name (the search of the first test)
    const atOnce = await page.locator("tbody tr", { hasText: "answered at once" }).allTextContents();
    expect(atOnce.length, "calls that answered at once").toBeGreaterThan(0);
    for (const row of atOnce) expect(row).not.toContain("(not recorded)");
    expect(
      atOnce.some((row) => /search/.test(row)),
      atOnce.join("\n"),
    ).toBe(true);
    await read.click();
    await page.getByRole("region", { name: "Answer" }).waitFor();
    await checkPage("results");
  }, 60_000);

  it("shows the balance and today's spend", async () => {
    await page.getByRole("link", { name: "Account", exact: true }).click();
    const balance = page.getByTestId("balance");
    await balance.waitFor();
    const credits = Number((await balance.textContent())!.replace(/\D/g, ""));
    expect(credits).toBeLessThan(5000);
    expect(credits).toBe(server!.gateway.ledger.view(accountId, null).balance);
    expect(await page.getByTestId("today").textContent()).toMatch(/[1-9]\d* credits; daily limit: no limit/);
    await page.locator("figure svg").waitFor();
    // The chart's axes: 30 days ending today (UTC, as the server's clock says), from 0 up to today's spend.
    const axis = (name: string) => page.locator(`figure svg text[data-axis="${name}"]`).textContent();
    const today = new Date(server!.gateway.now()).toISOString().slice(0, 10);
    expect(await axis("last")).toBe(today);
    expect(await axis("first")).toBe(new Date(Date.parse(today) - 29 * 86_400_000).toISOString().slice(0, 10));
    expect(await axis("min")).toBe("0");
    expect(Number((await axis("max"))!.replace(/,/g, ""))).toBe(5000 - credits);
    await checkPage("account");
  }, 60_000);

  it("creates a key shown once, and revokes it", async () => {
    await page.getByRole("link", { name: "Keys" }).click();
    const form = page.getByRole("form", { name: "New key" });
    await form.getByLabel("Name").fill("ci-key");
    await form.getByLabel(/Daily limit/).fill("40");
    await page.getByRole("button", { name: "Create key" }).click();
    const shown = page.getByTestId("new-key");
    await shown.waitFor();
    const secret = (await shown.locator(".secret").textContent())!.trim();
    expect((await fetch(`${origin}/v1/account`, { headers: { "x-api-key": secret } })).status).toBe(200);
    const row = page.locator('tr[data-key="ci-key"]');
    const limit = row.getByLabel("Daily limit of ci-key in credits (empty: none)");
    await expect.poll(() => limit.inputValue()).toBe("40");
    await checkPage("keys");
    // Its daily limit changed and read_data taken away: the key then refuses data calls.
    await limit.fill("25");
    await row.getByRole("button", { name: "Save the daily limit of ci-key" }).click();
    await row.getByLabel("read_data for ci-key").uncheck();
    await expect
      .poll(() => server!.gateway.accounts.keys(accountId).find((k) => k.name === "ci-key")?.permissions)
      .toBe("[]");
    expect(server!.gateway.accounts.keys(accountId).find((k) => k.name === "ci-key")!.daily_limit).toBe(25);
    const denied = await fetch(`${origin}/v1/search`, {
      method: "POST",
      headers: { "x-api-key": secret, "content-type": "application/json" },
      body: JSON.stringify({ platform: "x", query: "a" }),
    });
    expect(((await denied.json()) as { code: string }).code).toBe("key_scope_denied");
    await row.getByRole("button", { name: "Revoke ci-key" }).click();
    await expect.poll(() => row.locator("td").nth(2).textContent()).toBe("revoked");
    expect(
      ((await (await fetch(`${origin}/v1/account`, { headers: { "x-api-key": secret } })).json()) as { reason: string })
        .reason,
    ).toBe("revoked");
  }, 60_000);

  it("creates a schedule with account_watch, lists it and deletes it", async () => {
    await page.getByRole("link", { name: "Schedules" }).click();
    await page.getByText("0 of 20 schedules.").waitFor();
    await page.getByRole("link", { name: "Create one with account_watch" }).click();
    await page.getByLabel("accounts (required)").fill("xiaohongshu:5a0b1c2d3e4f5a6b7c8d9e0f");
    await page.getByLabel("schedule.every").selectOption("1d");
    await page.getByRole("button", { name: "Get the quote (free)" }).click();
    await page.getByRole("button", { name: "Confirm and run" }).click();
    await page.getByTestId("answer").waitFor({ timeout: 30_000 });
    await page.getByRole("link", { name: "Schedules" }).click();
    await page.getByText("1 of 20 schedules.").waitFor();
    expect(await page.locator("tbody tr td").nth(1).textContent()).toBe("1d");
    await checkPage("schedules");
    await page.getByRole("button", { name: "Delete" }).click();
    await page.getByText("0 of 20 schedules.").waitFor();
  }, 60_000);

  it("refuses a state-changing call that carries the cookie but not the CSRF token", async () => {
    const results = await page.evaluate(async () => {
      const post = (path: string, body: unknown) =>
        fetch(path, {
          method: "POST",
          credentials: "include",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        }).then(async (r) => ({
          status: r.status,
          param: ((await r.json()) as { fix?: { param?: string } }).fix?.param,
        }));
      return [
        await post("/console/api/keys", { name: "forged" }),
        await post("/v1/search", { platform: "xiaohongshu", query: "x" }),
      ];
    });
    expect(results).toEqual([
      { status: 403, param: "X-CSRF-Token" },
      { status: 403, param: "X-CSRF-Token" },
    ]);
    // And from another origin, even with the token, the cookie's request is refused.
    const cookie = `sdgw_session=${await sessionCookie()}`;
    const cross = await fetch(`${origin}/console/api/keys`, {
      method: "POST",
      headers: { cookie, origin: "https://evil.example", "content-type": "application/json" },
      body: JSON.stringify({ name: "forged" }),
    });
    expect(cross.status).toBe(403);
    expect(server!.gateway.accounts.keys(accountId).some((k) => k.name === "forged")).toBe(false);
  }, 60_000);

  it("goes back to the sign-in page when the session ends elsewhere, and signs in again", async () => {
    // The session is ended behind the page's back (as an idle end or a sign-out in another tab would).
    const token = await sessionCookie();
    const csrf = (
      (await (await fetch(`${origin}/console/session`, { headers: { cookie: `sdgw_session=${token}` } })).json()) as {
        csrf_token: string;
      }
    ).csrf_token;
    expect(
      (
        await fetch(`${origin}/console/session`, {
          method: "DELETE",
          headers: { cookie: `sdgw_session=${token}`, "x-csrf-token": csrf },
        })
      ).status,
    ).toBe(200);
    await page.getByRole("link", { name: "Account", exact: true }).click();
    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
    // Signed in again, the page asked for is shown.
    await signIn("Account");
    await page.getByTestId("balance").waitFor();
  }, 60_000);

  it("signs out: the session ends and the sign-in page is back; no page asked another origin", async () => {
    const token = await sessionCookie();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
    expect(await sessionCookie()).toBeUndefined();
    expect((await fetch(`${origin}/console/session`, { headers: { cookie: `sdgw_session=${token}` } })).status).toBe(
      401,
    );
    expect(
      requests.filter(
        (u) => !(u === origin || u.startsWith(`${origin}/`) || u.startsWith("blob:") || u.startsWith("data:")),
      ),
    ).toEqual([]);
    expect(requests.length).toBeGreaterThan(10);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
