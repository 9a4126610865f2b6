/**
 * `pnpm start`'s first start prints the demo user's sign-in beside the demo key (D89), and that sign-in works;
 * a later start on the same database prints no password.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "sdgw-console-start-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

function start(db: string): Promise<{ banner: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ["--conditions=source", "--no-warnings", MAIN], { env: { ...process.env, SDGW_PORT: "0", SDGW_DB: db }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout!.on("data", (d) => {
      out += d;
      if (out.includes("Stop with Ctrl-C.")) resolve({ banner: out, child });
    });
    child.stderr!.on("data", (d) => (err += d));
    child.once("exit", (code) => reject(new Error(`main.ts exited ${code}: ${err}`)));
  });
}
const stop = (child: ChildProcess) => new Promise((r) => (child.once("exit", r), child.kill("SIGTERM")));

describe("pnpm start and the console", () => {
  it("prints the demo user's sign-in on the first start only, and it signs in", async () => {
    const db = join(dir, "demo.sqlite");
    const first = await start(db);
    const url = /reference server on (http:\/\/127\.0\.0\.1:\d+)/.exec(first.banner)![1]!;
    const password = /sign in as demo@sdgw\.dev with the password[^\n]*\n\n {2}(\S+)$/m.exec(first.banner)?.[1];
    expect(password, first.banner).toBeDefined();
    const res = await fetch(`${url}/console/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "demo@sdgw.dev", password }) });
    expect(res.status).toBe(200);
    // The console key of the demo user reads the demo account.
    const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
    const account = (await (await fetch(`${url}/v1/account`, { headers: { cookie } })).json()) as { billing: { balance_credits: number } };
    expect(account.billing.balance_credits).toBe(5000);
    await stop(first.child);
    const later = await start(db);
    await stop(later.child);
    expect(later.banner).toContain("sign in as demo@sdgw.dev");
    expect(later.banner).not.toContain(password!);
  }, 60_000);
});
