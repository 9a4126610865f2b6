/**
 * The answer log: idempotency records on a database file keep their first answer in append-only segments next to
 * it. What a caller would notice: a replay after a restart is byte for byte the first answer; an answer is written
 * before the record that points to it commits (a failed write leaves no record and no charge); bytes that went
 * missing are told apart from an answer (`lost`, never another charge); old segments go once nothing needs them;
 * a database made before the log still replays its records.
 */
import { closeSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { AnswerLog } from "../src/storage/sqlite/answer-log.ts";
import { Idempotency } from "../src/storage/sqlite/idempotency.ts";
import { Store } from "../src/storage/sqlite/store.ts";

const dirs: string[] = [];
const open: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-answers-"));
  dirs.push(dir);
  return dir;
}

function log(dir: string, segmentBytes?: number): AnswerLog {
  const l = new AnswerLog(dir, segmentBytes === undefined ? {} : { segmentBytes });
  open.push(l);
  return l;
}

function fileStore(path: string): Store {
  const s = new Store(path);
  open.push(s);
  return s;
}

/** Makes the segment being appended to fail its next write, as a disk that fails would (EBADF here). */
function failWrites(l: AnswerLog): void {
  const current = (l as unknown as { current: { fd: number } }).current;
  const fd = current.fd;
  current.fd = 2 ** 30;
  closeSync(fd);
}

const T0 = Date.parse("2026-11-21T00:00:00Z");
const DAY = 86_400_000;
const utf8 = (text: string) => new TextEncoder().encode(text);

describe("AnswerLog", () => {
  it("reads back every answer appended, in any sizes and turns, byte for byte", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string({ unit: "grapheme", maxLength: 300 }), { maxLength: 6 }), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.integer({ min: 64, max: 4096 }),
        (turns, segmentBytes) => {
          const dir = tempDir();
          const l = new AnswerLog(dir, { segmentBytes });
          const written: Array<[ReturnType<AnswerLog["append"]>, string]> = [];
          for (const turn of turns) {
            for (const text of turn) written.push([l.append(utf8(text)), text]);
            l.flush();
          }
          for (const [ref, text] of written) expect(l.read(ref)?.toString("utf8")).toBe(text);
          l.close();
          rmSync(dir, { recursive: true, force: true });
        },
      ),
      { numRuns: 40 },
    );
  });

  it("starts a segment of its own each time it opens, and rolls over past segmentBytes", () => {
    const dir = tempDir();
    const a = log(dir, 100);
    const first = a.append(utf8("x".repeat(60)));
    a.flush();
    const second = a.append(utf8("y".repeat(60)));
    a.flush(); // past 100 bytes: the next append opens segment 2
    const third = a.append(utf8("z"));
    a.flush();
    expect([first.file, second.file, third.file]).toEqual([1, 1, 2]);
    expect(second.at).toBe(60);
    const b = log(dir, 100);
    expect(b.append(utf8("w")).file).toBe(3); // another process: never appends after what an earlier one left
    b.flush();
    expect(b.read(first)?.toString()).toBe("x".repeat(60));
    expect(readdirSync(dir).sort()).toEqual(["00000001.answers", "00000002.answers", "00000003.answers"]);
  });

  it("reads answers spread over more segments than it keeps open", () => {
    const dir = tempDir();
    const l = log(dir, 1); // every flush rolls over
    const refs = Array.from({ length: 40 }, (_, i) => {
      const ref = l.append(utf8(`answer ${i}`));
      l.flush();
      return ref;
    });
    expect(new Set(refs.map((r) => r.file)).size).toBe(40);
    for (let pass = 0; pass < 2; pass++)
      for (const [i, ref] of refs.entries()) expect(l.read(ref)?.toString()).toBe(`answer ${i}`);
  });

  it("tells bytes that are missing or not what was written apart from an answer", () => {
    const dir = tempDir();
    const l = log(dir);
    const a = l.append(utf8('{"a":"露营"}'));
    const b = l.append(utf8('{"b":"装备"}'));
    l.flush();
    const file = join(dir, "00000001.answers");
    const bytes = readFileSync(file);
    bytes[a.at + 2] = bytes[a.at + 2]! ^ 0xff; // one flipped byte in the first answer
    writeFileSync(file, bytes);
    expect(log(dir).read(a)).toBeNull();
    truncateSync(file, b.at + 3); // the second answer cut short
    expect(log(dir).read(b)).toBeNull();
    expect(log(dir).read({ ...b, file: 9 })).toBeNull(); // a segment that is gone
  });

  it("a write that fails throws, and the next append goes to a new segment", () => {
    const dir = tempDir();
    const l = log(dir);
    l.append(utf8("kept"));
    l.flush();
    const lost = l.append(utf8("never written"));
    failWrites(l); // the descriptor fails under it
    expect(() => l.flush()).toThrow();
    expect(l.pending).toBe(false);
    const next = l.append(utf8("after"));
    l.flush();
    expect(next.file).toBe(lost.file + 1);
    expect(l.read(next)?.toString()).toBe("after");
  });

  it("sweep deletes the segments below the oldest one still needed, never the one being appended to", () => {
    const dir = tempDir();
    for (let i = 0; i < 3; i++) {
      const old = new AnswerLog(dir);
      old.append(utf8(`old ${i}`));
      old.close();
    }
    const l = log(dir);
    const ref = l.append(utf8("current"));
    l.flush();
    expect(l.segments()).toEqual([1, 2, 3, 4]);
    expect(l.sweep(2)).toBe(1);
    expect(l.segments()).toEqual([2, 3, 4]);
    expect(l.sweep(null)).toBe(2); // no record points anywhere: all but the current one
    expect(l.segments()).toEqual([4]);
    expect(l.read(ref)?.toString()).toBe("current");
  });
});

describe("idempotency records on a database file", () => {
  const answer = utf8(JSON.stringify({ request_id: "req_1", items: [{ title: "露营装备清单" }] }));

  function idem(s: Store, now: () => number = () => T0) {
    return new Idempotency({ store: s, now, ttlMs: DAY });
  }

  /** A store on a new file with one committed record: key_1's `k1`, 200, `answer`. */
  async function oneRecord(headers: Record<string, string> = {}) {
    const path = join(tempDir(), "db.sqlite");
    const s = fileStore(path);
    const i = idem(s);
    i.claim("key_1", "k1", "print", "run_1");
    s.tx(() => i.complete({ keyId: "key_1", idemKey: "k1", answer: { status: 200, headers: headers, body: answer } }));
    await s.durable();
    return { path, s, i };
  }

  it("keep the answer in the log, not in the row, and replay it byte for byte after a restart", async () => {
    const { path, s } = await oneRecord({ "content-type": "application/json" });
    const row = s.readNow<{ answer: string | null; answer_file: number; answer_len: number }>(
      "SELECT answer, answer_file, answer_len FROM idempotency",
    )!;
    expect(row).toMatchObject({ answer: null, answer_file: 1, answer_len: answer.byteLength });
    await s.close();
    const again = fileStore(path);
    expect(idem(again).claim("key_1", "k1", "print")).toEqual({
      kind: "replay",
      status: 200,
      headers: { "content-type": "application/json" },
      body: new TextDecoder().decode(answer),
    });
  });

  it("a record whose answer bytes are gone reads as lost, not as a free key", async () => {
    const { path, s } = await oneRecord();
    await s.close();
    truncateSync(join(`${path}-answers`, "00000001.answers"), 0);
    expect(idem(fileStore(path)).claim("key_1", "k1", "print")).toEqual({ kind: "lost" });
  });

  it("when the log cannot be written, the turn is rolled back: no record, the key free again", async () => {
    const { s, i } = await oneRecord();
    i.claim("key_1", "k2", "print", "run_2");
    s.tx(() => {
      s.write("INSERT INTO meta (name, value) VALUES ('same turn', 'x')");
      i.complete({ keyId: "key_1", idemKey: "k2", answer: { status: 200, headers: {}, body: answer } });
    });
    failWrites(s.answers!);
    await expect(s.durable()).rejects.toThrow();
    expect(s.readNow("SELECT * FROM idempotency WHERE idem_key = 'k2'")).toBeUndefined();
    expect(s.readNow("SELECT * FROM meta WHERE name = 'same turn'")).toBeUndefined();
    expect(i.peek("key_1", "k2", "print").kind).toBe("claimed");
    expect(i.peek("key_1", "k1", "print").kind).toBe("replay"); // what was committed before stays
  });

  it("sweep drops expired records, then the segments no record points into", async () => {
    const path = join(tempDir(), "db.sqlite");
    let now = T0;
    const first = fileStore(path);
    const i1 = idem(first, () => now);
    i1.claim("key_1", "old", "print", "run_1");
    first.tx(() => i1.complete({ keyId: "key_1", idemKey: "old", answer: { status: 200, headers: {}, body: answer } }));
    await first.close();
    now = T0 + DAY / 2;
    const second = fileStore(path);
    const i2 = idem(second, () => now);
    i2.claim("key_1", "new", "print", "run_2");
    second.tx(() =>
      i2.complete({ keyId: "key_1", idemKey: "new", answer: { status: 200, headers: {}, body: answer } }),
    );
    await second.durable();
    expect(second.answers!.segments()).toEqual([1, 2]);
    expect(i2.sweep()).toBe(0);
    expect(second.answers!.segments()).toEqual([1, 2]); // "old" still points into 1
    now = T0 + DAY;
    expect(i2.sweep()).toBe(1);
    expect(second.answers!.segments()).toEqual([2]);
    expect(i2.claim("key_1", "new", "print").kind).toBe("replay");
  });

  it("a database made before the log gets its columns, and its records still replay from the row", async () => {
    const path = join(tempDir(), "db.sqlite");
    const old = new DatabaseSync(path);
    old.exec(`CREATE TABLE idempotency (
      id INTEGER PRIMARY KEY, key_id TEXT NOT NULL, idem_key TEXT NOT NULL, fingerprint TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('running','done')), run_id TEXT, http_status INTEGER, headers TEXT, answer TEXT,
      created_at TEXT NOT NULL, expires_at TEXT
    ); CREATE UNIQUE INDEX idempotency_key ON idempotency(key_id, idem_key);`);
    old
      .prepare(
        "INSERT INTO idempotency (key_id, idem_key, fingerprint, state, http_status, headers, " +
          "answer, created_at, expires_at) VALUES ('key_1', 'k', 'print', 'done', 200, '{}', " +
          "'{\"old\":true}', '2026-11-21T00:00:00Z', '2026-11-22T00:00:00Z')",
      )
      .run();
    old.close();
    const s = fileStore(path);
    const i = idem(s);
    expect(i.claim("key_1", "k", "print")).toEqual({ kind: "replay", status: 200, headers: {}, body: '{"old":true}' });
    i.claim("key_1", "k2", "print", "run_2");
    s.tx(() => i.complete({ keyId: "key_1", idemKey: "k2", answer: { status: 200, headers: {}, body: answer } }));
    await s.durable();
    expect(i.claim("key_1", "k2", "print").kind).toBe("replay");
    expect(i.sweep()).toBe(0);
  });
});

describe("the answer log under any sequence of calls, turns, restarts, sweeps and time", () => {
  type Step =
    | { op: "call"; size: number }
    | { op: "turn" }
    | { op: "restart" }
    | { op: "advance"; hours: number }
    | { op: "sweep" };
  const step: fc.Arbitrary<Step> = fc.oneof(
    { arbitrary: fc.record({ op: fc.constant("call" as const), size: fc.integer({ min: 1, max: 200 }) }), weight: 5 },
    { arbitrary: fc.constant({ op: "turn" as const }), weight: 2 },
    { arbitrary: fc.constant({ op: "restart" as const }), weight: 1 },
    {
      arbitrary: fc.record({ op: fc.constant("advance" as const), hours: fc.integer({ min: 1, max: 30 }) }),
      weight: 2,
    },
    { arbitrary: fc.constant({ op: "sweep" as const }), weight: 2 },
  );

  it("every record not yet expired replays its answer byte for byte; sweeps leave no segment nobody needs", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        const path = join(tempDir(), "db.sqlite");
        let now = T0;
        const openAll = () => {
          const s = new Store(path, { answers: { segmentBytes: 300 } }); // rolls over every few answers
          return { s, i: new Idempotency({ store: s, now: () => now, ttlMs: DAY }) };
        };
        let { s, i } = openAll();
        const model = new Map<string, { body: string; expiresAt: number }>();
        const check = () => {
          for (const [key, r] of model) {
            const found = i.peek("key_1", key, "print");
            if (r.expiresAt > now) expect(found).toEqual({ kind: "replay", status: 200, headers: {}, body: r.body });
            else expect(found.kind).toBe("claimed");
          }
        };
        try {
          for (const st of steps) {
            if (st.op === "call") {
              const key = `k${model.size}`;
              const body = `{"n":${model.size},"pad":"${"露".repeat(st.size)}"}`;
              i.claim("key_1", key, "print", `run_${model.size}`);
              s.tx(() =>
                i.complete({ keyId: "key_1", idemKey: key, answer: { status: 200, headers: {}, body: utf8(body) } }),
              );
              model.set(key, { body, expiresAt: now + DAY });
            } else if (st.op === "turn") await s.durable();
            else if (st.op === "restart") {
              await s.close();
              ({ s, i } = openAll());
            } else if (st.op === "advance") now += st.hours * 3_600_000;
            else {
              await s.durable();
              i.sweep();
              check();
            }
          }
          await s.durable();
          check();
          now += 2 * DAY;
          i.sweep();
          expect(s.answers!.segments().length).toBeLessThanOrEqual(1); // only the one being appended to, if any
        } finally {
          await s.close();
        }
      }),
      { numRuns: 25 },
    );
  }, 60_000);
});
