/**
 * What both servers share (`src/serve.ts`): the sweep of old answers every ten minutes. A sweep that fails (the
 * database busy, a disk error) is logged and the server serves on; it is never thrown from the timer, where it
 * would stop the process.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createServer } from "../src/storage/sqlite/server.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("the sweep of old answers", () => {
  it("runs every ten minutes; a failing one is logged, and the server still answers", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const logged: { message: string; error: unknown }[] = [];
    const server = createServer({
      dbPath: ":memory:",
      log: (message, error) => void logged.push({ message, error }),
    });
    let sweeps = 0;
    server.gateway.runs.sweep = () => {
      sweeps++;
      throw new Error("database is locked");
    };
    try {
      await vi.advanceTimersByTimeAsync(10 * 60_000 - 1);
      expect(sweeps).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(sweeps).toBe(1);
      await vi.advanceTimersByTimeAsync(10 * 60_000);
      expect(sweeps).toBe(2);
      expect(logged.map((l) => [l.message, (l.error as Error).message])).toEqual([
        ["sweep of old answers failed", "database is locked"],
        ["sweep of old answers failed", "database is locked"],
      ]);
      const health = await server.app.inject({ method: "GET", url: "/healthz" });
      expect(health.statusCode).toBe(200);
    } finally {
      await server.close({ drainMs: 0 });
    }
  });
});
