/**
 * The answer log when several processes share one database (answer-log.ts): segment numbers are taken exclusively,
 * a segment deleted under a writer fails its turn instead of committing records that point nowhere, and a sweep
 * keeps every segment a record points into and every segment a live process appends to, whatever the order of the
 * records' ids. Two gateways on one file stand for two processes (each has its own connection, answer log and owner).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { AnswerLog } from "../src/storage/sqlite/answer-log.ts";
import { GENEROUS, validateAnswer } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "sdgw-shared-log-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const utf8 = (s: string) => Buffer.from(s, "utf8");
let n = 0;
const tempDir = () => join(dir, `log-${++n}`);

describe("segments of several writers", () => {
  it("a segment number another writer took a moment before is skipped, not shared", () => {
    const d = tempDir();
    const first = new AnswerLog(d);
    const a = first.append(utf8("first"));
    first.flush();
    // A writer that listed the folder before `first` created its segment.
    class Late extends AnswerLog {
      override segments(): number[] {
        return [];
      }
    }
    const late = new Late(d);
    const opened: number[] = [];
    late.onOpen = (file) => opened.push(file);
    const b = late.append(utf8("late"));
    late.flush();
    expect(a.file).toBe(1);
    expect(b.file).toBe(2);
    expect(opened).toEqual([2]);
    expect(first.read(a)?.toString()).toBe("first");
    expect(late.read(b)?.toString()).toBe("late");
    first.close();
    late.close();
  });

  it("a segment deleted while being appended to fails the write (nothing may point there), and the next answer goes to a new one", () => {
    const d = tempDir();
    const log = new AnswerLog(d);
    const before = log.append(utf8("before"));
    log.flush();
    rmSync(join(d, "00000001.answers"));
    log.append(utf8("lost"));
    expect(() => log.flush()).toThrow(/was deleted while being appended to/);
    expect(log.read(before)).toBeNull();
    const after = log.append(utf8("after"));
    log.flush();
    expect(log.read(after)?.toString()).toBe("after");
    log.close();
  });
});

describe("sweeps of two gateways on one file", () => {
  const HOUR = 3_600_000;
  let now = Date.parse("2026-11-21T08:00:00Z");
  const open = (db: string): SdgwServer =>
    createServer({
      dbPath: db,
      now: () => now,
      scheduleTickMs: 0,
      waitMs: 10_000,
      log: () => undefined,
      limits: GENEROUS,
    });
  async function call(s: SdgwServer, key: string, idem: string) {
    const res = await s.app.inject({
      method: "GET",
      url: `/v1/search?platform=weibo&query=${idem}`,
      headers: { "x-api-key": key, "idempotency-key": idem },
    });
    const a = validateAnswer("search", res);
    await s.gateway.store.durable();
    return a;
  }

  it("keep the segments records point into (whatever the order of their ids) and those a live gateway appends to", async () => {
    const db = join(dir, "two.sqlite");
    const a = open(db);
    const { account } = a.gateway.accounts.createAccount({ name: "two", plan: "paid" });
    a.gateway.accounts.grant(account.id, 100);
    const key = a.gateway.accounts.createKey({ accountId: account.id }).secret;
    await a.gateway.store.durable(); // one thread: b's first write would wait for a's turn, which cannot end meanwhile
    const b = open(db);
    const segmentOf = (idem: string) =>
      b.gateway.store.get<{ answer_file: number }>("SELECT answer_file FROM idempotency WHERE idem_key = ?", idem)!
        .answer_file;

    const a1 = await call(a, key, "a1"); // a's segment, the oldest record
    now += HOUR;
    const b1 = await call(b, key, "b1"); // b's segment
    now += HOUR;
    const a2 = await call(a, key, "a2"); // a's segment again, a record younger than b1's
    expect(segmentOf("a1")).toBe(segmentOf("a2"));
    expect(segmentOf("b1")).not.toBe(segmentOf("a1"));
    const aSegment = segmentOf("a1");
    expect(a.gateway.store.get("SELECT answer_segment FROM owners WHERE id = ?", a.gateway.owners.id)).toEqual({
      answer_segment: aSegment,
    });

    await a.close(); // its lease ends: from now on only records keep its segment

    // a1 expires: the oldest record by id is b1's now, yet a2 still points into a's segment.
    now += 22 * HOUR + 30 * 60_000;
    b.gateway.runs.sweep();
    expect(b.gateway.store.get("SELECT COUNT(*) AS n FROM idempotency")).toEqual({ n: 2 });
    expect((await call(b, key, "a2")).text).toBe(a2.text);
    expect((await call(b, key, "b1")).text).toBe(b1.text);
    expect(a1.status).toBe(200);

    // A live gateway's segment stays while it appends to it, even when no record points into it any more.
    const c = open(db);
    const c1 = await call(c, key, "c1");
    const cSegment = segmentOf("c1");
    expect([aSegment, segmentOf("b1")]).not.toContain(cSegment);
    now += 25 * HOUR;
    b.gateway.runs.sweep();
    expect(b.gateway.store.get("SELECT COUNT(*) AS n FROM idempotency")).toEqual({ n: 0 });
    const file = (k: number) => join(`${db}-answers`, `${String(k).padStart(8, "0")}.answers`);
    expect(existsSync(file(aSegment))).toBe(false);
    expect(existsSync(file(cSegment))).toBe(true);
    expect(c1.status).toBe(200);
    const c2 = await call(c, key, "c2");
    expect(segmentOf("c2")).toBe(cSegment);
    expect((await call(b, key, "c2")).text).toBe(c2.text);

    // Once c has closed (its lease ended) and its records expired, its segment goes.
    await c.close();
    now += 25 * HOUR;
    b.gateway.runs.sweep();
    expect(existsSync(file(cSegment))).toBe(false);
    await b.close();
  });
});
