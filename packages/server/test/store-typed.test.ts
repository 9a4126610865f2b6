/**
 * The store's typed parts: the checkpointer thread (checkpointer.ts, started from its source text) runs and reports,
 * and a store on a file has its WAL checkpointed into the database file by it; statements take named parameters,
 * deferred or not, and `returning` gives the row a write returned or refuses a write that matched none.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { CHECKPOINTER_SOURCE, type CheckpointerData } from "../src/storage/sqlite/checkpointer.ts";
import { Store } from "../src/storage/sqlite/store.ts";

const stores: Store[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempFile(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-typed-"));
  dirs.push(dir);
  return join(dir, name);
}

describe("the checkpointer thread", () => {
  it("runs from its source text: reports a WAL past its limit and stops on close", async () => {
    const path = tempFile("report.db");
    const db = new DatabaseSync(path);
    db.exec(
      "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('x')",
    );
    const workerData: CheckpointerData = { path, everyMs: 5, limit: 0 };
    const worker = new Worker(CHECKPOINTER_SOURCE, { eval: true, workerData });
    try {
      const report = await new Promise<unknown>((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
        worker.once("exit", (code) => reject(new Error(`the checkpointer exited (${code}) before it reported`)));
      });
      expect(report).toBe("wal");
    } finally {
      const exited = new Promise<number>((resolve) => worker.once("exit", resolve));
      worker.postMessage("close");
      expect(await exited).toBe(0);
      db.close();
    }
  });

  it("checkpoints a store's WAL into the database file (the store itself never does: wal_autocheckpoint = 0)", async () => {
    const path = tempFile("store.db");
    const s = new Store(path);
    stores.push(s);
    const before = statSync(path).size;
    s.tx(() => {
      const pad = "x".repeat(1000);
      for (let i = 0; i < 2000; i++)
        s.run("INSERT INTO meta (name, value) VALUES (:name, :value)", { name: `pad${i}`, value: pad });
    });
    await s.durable();
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(2_000_000); // committed, in the WAL
    const deadline = Date.now() + 4_000;
    while (statSync(path).size < before + 2_000_000 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(statSync(path).size).toBeGreaterThan(before + 2_000_000);
    // still 0: the thread did it (had it died, the store would have handed checkpoints back to SQLite: 1000)
    expect(s.db.prepare("PRAGMA wal_autocheckpoint").get()).toEqual({ wal_autocheckpoint: 0 });
  });
});

describe("named parameters and returned rows", () => {
  it("bind by name in run, write (deferred), get and all; positional ones still work", async () => {
    const s = new Store(":memory:");
    stores.push(s);
    s.db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, v INTEGER NOT NULL, b BLOB)");
    expect(s.run("INSERT INTO t (name, v) VALUES (:name, :v)", { name: "a", v: 1 })).toBe(1);
    s.tx(() =>
      s.write("INSERT INTO t (name, v, b) VALUES (:name, :v, :b)", { name: "b", v: 2, b: new Uint8Array([1, 2]) }),
    );
    s.tx(() => s.write("INSERT INTO t (name, v, b) VALUES (?, ?, ?)", "c", 3, new Uint8Array([3])));
    await s.durable();
    expect(s.get<{ v: number }>("SELECT v FROM t WHERE name = :name", { name: "b" })?.v).toBe(2);
    const names = s
      .all<{ name: string }>("SELECT name FROM t WHERE v >= :min ORDER BY v", { min: 2 })
      .map((r) => r.name);
    expect(names).toEqual(["b", "c"]);
    expect(s.get<{ b: Uint8Array }>("SELECT b FROM t WHERE b = ?", new Uint8Array([3]))?.b).toEqual(
      new Uint8Array([3]),
    );
    expect(() => s.run("INSERT INTO t (name, v) VALUES (:name, :v)", { name: "d", v: 4, extra: 1 })).toThrow();
  });

  it("returning: the row a write returned, typed; an error when it matched none", () => {
    const s = new Store(":memory:");
    stores.push(s);
    s.db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
    s.run("INSERT INTO t (id, v) VALUES (1, 10)");
    const bump = "UPDATE t SET v = v + :by WHERE id = :id RETURNING *";
    const row = s.tx(() => s.returning<{ id: number; v: number }>(bump, { by: 5, id: 1 }));
    expect(row).toEqual({ id: 1, v: 15 });
    expect(() => s.tx(() => s.returning("UPDATE t SET v = v + 1 WHERE id = ? RETURNING *", 2))).toThrow(
      /no row returned/,
    );
  });
});
