/**
 * The store's turn: deferred blind writes run together at the end of the turn, in the turn's transaction; reads
 * see them (`get`, `all`) or, by choice, not yet (`readNow`); a `tx` that does more than blind writes becomes a
 * savepoint; a failure undoes exactly the writes it should and tells whoever waits. And the idempotency record of a
 * call, while its write is deferred, is replayed from memory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { Idempotency } from "../src/storage/sqlite/idempotency.ts";
import { Store } from "../src/storage/sqlite/store.ts";

const stores: Store[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function store(path = ":memory:"): Store {
  const s = new Store(path);
  s.db.exec("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL CHECK (v >= 0))");
  stores.push(s);
  return s;
}

const count = (s: Store) => s.readNow<{ n: number }>("SELECT COUNT(*) AS n FROM t")!.n;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("deferred writes", () => {
  it("run at the end of the turn, all in one transaction, and durable() resolves once they are committed", async () => {
    const s = store();
    for (let i = 0; i < 5; i++) s.tx(() => s.write("INSERT INTO t (v) VALUES (?)", i));
    expect(count(s)).toBe(0); // queued, not run
    const done = s.durable();
    await done;
    expect(count(s)).toBe(5);
  });

  it("run before any read that may need them (get, all) and before any write that runs now", () => {
    const s = store();
    s.tx(() => s.write("INSERT INTO t (v) VALUES (1)"));
    expect(s.get<{ n: number }>("SELECT COUNT(*) AS n FROM t")!.n).toBe(1);
    s.tx(() => s.write("INSERT INTO t (v) VALUES (2)"));
    s.run("UPDATE t SET v = v * 10");
    expect(s.all<{ v: number }>("SELECT v FROM t ORDER BY id").map((r) => r.v)).toEqual([10, 20]);
  });

  it("a tx that reads moves onto the connection: its writes so far run first, in order, and it reads them", () => {
    const s = store();
    const seen = s.tx(() => {
      s.write("INSERT INTO t (v) VALUES (7)");
      const n = s.get<{ n: number }>("SELECT COUNT(*) AS n FROM t")!.n;
      s.write("INSERT INTO t (v) VALUES (8)"); // runs now: the tx is on the connection
      return n;
    });
    expect(seen).toBe(1);
    expect(count(s)).toBe(2);
  });

  it("a tx that throws leaves none of its writes, deferred or run, and the others of the turn stay", async () => {
    const s = store();
    s.tx(() => s.write("INSERT INTO t (v) VALUES (1)"));
    expect(() =>
      s.tx(() => {
        s.write("INSERT INTO t (v) VALUES (2)");
        throw new Error("refused");
      }),
    ).toThrow("refused");
    expect(() =>
      s.tx(() => {
        s.write("INSERT INTO t (v) VALUES (3)");
        s.run("INSERT INTO t (v) VALUES (4)");
        throw new Error("refused too");
      }),
    ).toThrow("refused too");
    await s.durable();
    expect(s.all<{ v: number }>("SELECT v FROM t").map((r) => r.v)).toEqual([1]);
  });

  it(
    "a deferred write that fails undoes the turn's deferred writes, rejects their durable() and " +
      "whenWritten, resets the caches; the rest of the turn commits",
    async () => {
      const s = store();
      let resets = 0;
      s.onReset(() => resets++);
      s.run("INSERT INTO t (v) VALUES (100)"); // runs now, in the turn's transaction
      const told: boolean[] = [];
      s.tx(() => {
        s.write("INSERT INTO t (v) VALUES (1)");
        s.whenWritten((ok) => told.push(ok));
      });
      s.tx(() => s.write("INSERT INTO t (v) VALUES (-1)")); // the CHECK refuses it when it runs
      const waiting = s.durable();
      await expect(waiting).rejects.toThrow(/CHECK/);
      await nextTurn();
      expect(told).toEqual([false]);
      expect(resets).toBe(1);
      expect(s.all<{ v: number }>("SELECT v FROM t").map((r) => r.v)).toEqual([100]);
      // the next turn writes again as usual
      s.tx(() => s.write("INSERT INTO t (v) VALUES (2)"));
      await s.durable();
      expect(count(s)).toBe(2);
    },
  );

  it("whenWritten: true once committed, at once when nothing waits", async () => {
    const s = store();
    const told: string[] = [];
    s.whenWritten((ok) => told.push(`idle ${ok}`));
    s.tx(() => {
      s.write("INSERT INTO t (v) VALUES (1)");
      s.whenWritten((ok) => told.push(`deferred ${ok}`));
    });
    expect(told).toEqual(["idle true"]);
    await s.durable();
    expect(told).toEqual(["idle true", "deferred true"]);
  });

  it("on a file, what a turn committed survives the process: another connection reads it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sdgw-store-"));
    dirs.push(dir);
    const path = join(dir, "s.sqlite");
    const s = store(path);
    for (let i = 0; i < 3; i++) s.tx(() => s.write("INSERT INTO t (v) VALUES (?)", i));
    await s.durable();
    const other = new DatabaseSync(path, { readOnly: true });
    expect(other.prepare("SELECT COUNT(*) AS n FROM t").get()).toEqual({ n: 3 });
    other.close();
  });
});

describe("idempotency records while their write is deferred", () => {
  const body = new TextEncoder().encode('{"ok":true,"text":"露营装备"}');

  it("replay the first answer from memory, then from the database once committed; other parameters conflict", async () => {
    const s = store();
    const idem = new Idempotency({ store: s, now: () => Date.parse("2026-11-21T00:00:00Z"), ttlMs: 86_400_000 });
    expect(idem.claim("key_1", "k", "print-a", "run_1").kind).toBe("claimed");
    expect(idem.peek("key_1", "k", "print-a").kind).toBe("in_progress");
    s.tx(() =>
      idem.complete({
        keyId: "key_1",
        idemKey: "k",
        answer: { status: 200, headers: { "content-type": "application/json" }, body: body },
      }),
    );
    expect(count(s)).toBe(0);
    expect(s.readNow("SELECT * FROM idempotency")).toBeUndefined(); // not written yet
    const early = idem.peek("key_1", "k", "print-a");
    expect(early).toEqual({
      kind: "replay",
      status: 200,
      headers: { "content-type": "application/json" },
      body: '{"ok":true,"text":"露营装备"}',
    });
    expect(idem.peek("key_1", "k", "print-b").kind).toBe("conflict");
    await s.durable();
    expect(idem.peek("key_1", "k", "print-a")).toEqual(early); // now from the row
    expect(idem.peek("key_1", "k", "print-b").kind).toBe("conflict");
  });

  it("leave the key free when their write is rolled back", async () => {
    const s = store();
    const idem = new Idempotency({ store: s, now: () => Date.parse("2026-11-21T00:00:00Z"), ttlMs: 86_400_000 });
    idem.claim("key_1", "k", "print-a", "run_1");
    s.tx(() => idem.complete({ keyId: "key_1", idemKey: "k", answer: { status: 200, headers: {}, body: body } }));
    s.tx(() => s.write("INSERT INTO t (v) VALUES (-1)")); // fails the turn's deferred writes
    await expect(s.durable()).rejects.toThrow();
    expect(idem.peek("key_1", "k", "print-a").kind).toBe("claimed");
  });
});

describe("claims of keys never stored (D100: the filter of records)", () => {
  const at = Date.parse("2026-11-21T00:00:00Z");
  const body = new TextEncoder().encode('{"ok":true}');
  function twoConnections() {
    const dir = mkdtempSync(join(tmpdir(), "sdgw-seen-"));
    dirs.push(dir);
    const a = store(join(dir, "db.sqlite"));
    const b = store(join(dir, "db.sqlite"));
    return {
      a,
      b,
      ia: new Idempotency({ store: a, now: () => at, ttlMs: 86_400_000 }),
      ib: new Idempotency({ store: b, now: () => at, ttlMs: 86_400_000 }),
    };
  }
  const stored = async (s: Store, idem: Idempotency, key: string, print = "p") => {
    expect(idem.claim("key_1", key, print, null).kind).toBe("claimed");
    s.tx(() => idem.complete({ keyId: "key_1", idemKey: key, answer: { status: 200, headers: {}, body: body } }));
    await s.durable();
  };

  it("find what another connection stored after the filter was made, and what was there before", async () => {
    const { a, b, ia } = twoConnections();
    await stored(a, ia, "before");
    const ic = new Idempotency({ store: b, now: () => at, ttlMs: 86_400_000 }); // made now: reads "before"
    await nextTurn();
    expect(ic.peek("key_1", "before", "p").kind).toBe("replay");
    expect(ic.peek("key_1", "fresh", "p").kind).toBe("claimed");
    await stored(a, ia, "after");
    await nextTurn();
    expect(ic.peek("key_1", "after", "p").kind).toBe("replay");
    expect(ic.peek("key_1", "after", "other").kind).toBe("conflict");
  });

  it("find a record whose id was given again after the highest rows were deleted", async () => {
    const { a, b, ia, ib } = twoConnections();
    await stored(a, ia, "one");
    await nextTurn();
    expect(ib.peek("key_1", "one", "p").kind).toBe("replay"); // b's filter now reads up to "one"'s row
    // another connection deletes the highest row, then stores a new pair: SQLite gives it the same id
    const raw = new DatabaseSync(join(a.path));
    raw.exec("DELETE FROM idempotency WHERE idem_key = 'one'");
    raw.exec(
      "INSERT INTO idempotency (key_id, idem_key, fingerprint, state, created_at) VALUES ('key_1', 'two', 'p', 'running', '2026-11-21T00:00:00Z')",
    );
    expect(raw.prepare("SELECT id FROM idempotency WHERE idem_key = 'two'").get()).toEqual({ id: 1 });
    raw.close();
    await nextTurn();
    expect(ib.peek("key_1", "two", "p").kind).toBe("in_progress");
    expect(ib.peek("key_1", "one", "p").kind).toBe("claimed");
    void b;
  });
});
