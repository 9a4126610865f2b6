/**
 * `pnpm registry` (serve.ts) as a person runs it: it says what it does while it works (each package built, packed
 * and published, with the seconds since it began), then the `.npmrc` line, and serves the packages until stopped.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

it("prints progress while it packs and publishes, then serves the packages until SIGTERM", async () => {
  const child = spawn(process.execPath, [join(ROOT, "generators", "registry", "serve.ts"), "--port", "0"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const lines: { at: number; text: string }[] = [];
  child.stderr.on("data", (d) => (err += d));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      out += d;
      for (const text of String(d).split("\n").filter(Boolean)) lines.push({ at: Date.now(), text });
      if (out.includes("Serving until Ctrl-C.")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`serve.ts exited ${code} before serving:\n${out}\n${err}`)));
  });
  try {
    await ready;
    const steps = lines.filter((l) => /^\s*\d+ s {2}\[\d+\/\d+\] @sdgw\//.test(l.text));
    const count = Number(/\[\d+\/(\d+)\]/.exec(steps[0]!.text)![1]);
    expect(count).toBeGreaterThanOrEqual(7);
    // every package is packed and published, each step on its own line as it happens
    expect(steps.filter((l) => l.text.includes(": packing…")).length, out).toBe(count);
    expect(steps.filter((l) => l.text.includes(": publishing to http://127.0.0.1:")).length, out).toBe(count);
    const published = lines.findIndex((l) => l.text.includes(" published to http://127.0.0.1:"));
    expect(lines.indexOf(steps.at(-1)!)).toBeLessThan(published);
    // the first line came before the work, not with its end
    expect(lines[0]!.text).toMatch(/^Building, packing and publishing \d+ packages/);
    expect(lines[published]!.at - lines[0]!.at).toBeGreaterThanOrEqual(0);
    const url = /@sdgw:registry=(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)![1]!;
    const meta = await fetch(`${url}@sdgw%2ftypes`);
    expect(meta.status).toBe(200);
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }
});
