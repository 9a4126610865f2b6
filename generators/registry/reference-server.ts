/** The reference server of this checkout for the registry tests, started as a reader starts it. */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../src/generate.ts";

/** A reference server of this checkout, started as `pnpm start` starts it. */
export interface Started {
  url: string;
  key: string;
  db: string;
  stop(): Promise<void>;
}

/**
 * Starts the reference server of this checkout as `pnpm start` starts it (its `main.ts`), with `env`'s `SDGW_*`
 * settings, on a new database under `scratch` and a free port; answers once its banner says it listens.
 */
export async function startServer(env: Record<string, string>, scratch: string): Promise<Started> {
  const db = join(mkdtempSync(join(scratch, "db-")), "sdgw.sqlite");
  const child: ChildProcess = spawn(
    process.execPath,
    ["--conditions=source", join(ROOT, "packages", "server", "src", "main.ts")],
    {
      cwd: ROOT,
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: process.env["HOME"] ?? "",
        SDGW_HOST: "127.0.0.1",
        SDGW_PORT: "0",
        SDGW_DB: db,
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (out += d));
  const banner = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the reference server printed no banner in 30 s:\n${out}`)),
      30_000,
    );
    child.once("exit", (code) => reject(new Error(`the reference server exited (${code}):\n${out}`)));
    child.stdout!.on("data", () => {
      if (out.includes("Stop with Ctrl-C.")) {
        clearTimeout(timer);
        resolve(out);
      }
    });
  });
  const url = /reference server on (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1];
  const key = /^\s+(sdgw_\S+)\s*$/m.exec(banner)?.[1];
  if (!url || !key) throw new Error(`no URL or demo key in the banner:\n${banner}`);
  return {
    url,
    key,
    db,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
