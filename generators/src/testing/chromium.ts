/**
 * Test helper: Debian's Chromium (never Playwright's own download), started by playwright-core for the browser
 * tests, with no way to reach anything but 127.0.0.1.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where Debian's chromium package puts the browser (`apt-get install -y chromium`; .ci/run installs it). */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/** Headless, sandbox-free flags for this machine, plus: no host name resolves, so nothing leaves 127.0.0.1. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

/** The part of playwright-core's `chromium` this helper uses. */
export interface PersistentLauncher<C> {
  launchPersistentContext(
    dir: string,
    options: { executablePath: string; headless: boolean; args: string[]; timeout: number },
  ): Promise<C>;
}

/**
 * Starts Chromium on a fresh profile folder (the caller removes it). Throws a clear message when Chromium is
 * missing — call it inside the test, not in `beforeAll`, so a missing browser counts as a failure, not a skip.
 */
export async function launchLocalChromium<C>(
  chromium: PersistentLauncher<C>,
  name: string,
): Promise<{ context: C; profile: string }> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `${CHROMIUM_PATH} not found: install Debian's Chromium with \`apt-get update && apt-get install -y chromium\` (never \`npx playwright install\`).`,
    );
  }
  const profile = mkdtempSync(join(tmpdir(), `sdgw-${name}-`));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: 30_000,
  });
  return { context, profile };
}
