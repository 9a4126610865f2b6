/**
 * The answer log's bounds (D67): answers that repeat are stored once by content (chunks), byte for byte on replay;
 * a quota past which the log says it is full (new calls are refused before they start; answers already promised
 * still replay); and a full disk (`ENOSPC` on write) that charges nothing, leaves no hold and no record, and makes
 * the log say it is full for a while.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { AnswerLog, chunkEnds } from "../src/storage/sqlite/answer-log.ts";
import { Idempotency } from "../src/storage/sqlite/idempotency.ts";
import { Store } from "../src/storage/sqlite/store.ts";
import { GENEROUS, validateAnswer } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "sdgw-log-bound-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const tempDir = () => join(dir, `d-${++n}`);
const folderBytes = (d: string) => readdirSync(d).reduce((s, f) => s + statSync(join(d, f)).size, 0);

/** An answer like the search answers: the same items, a new request id and balance each time. */
const ITEMS = JSON.stringify(
  Array.from({ length: 10 }, (_, i) => ({
    id: `item${i}`,
    title: `露营装备 ${i} 全攻略，建议收藏`,
    text: "评论区聊聊你们的看法！".repeat(8),
    metrics: { likes: i * 37 },
  })),
);
const answerOf = (i: number) =>
  Buffer.from(
    `{"request_id":"req_${String(i).padStart(8, "0")}","items":${ITEMS},"billing":{"balance":${1_000_000 - i}}}`,
    "utf8",
  );

describe("answers stored by content", () => {
  it("answers that repeat but for an id and a balance take a few hundred bytes each, and read back byte for byte", () => {
    const d = tempDir();
    const log = new AnswerLog(d);
    const refs = Array.from({ length: 200 }, (_, i) => log.append(answerOf(i)));
    log.flush();
    const size = answerOf(0).byteLength;
    expect(size).toBeGreaterThan(3000);
    const perAnswer = (folderBytes(d) - size) / 199;
    expect(perAnswer).toBeLessThan(600);
    for (const [i, ref] of refs.entries()) expect(log.read(ref)?.equals(answerOf(i))).toBe(true);
    log.close();
    // another process (no chunks in memory) reads them from the file alone
    const other = new AnswerLog(d);
    for (const [i, ref] of refs.entries()) expect(other.read(ref)?.equals(answerOf(i))).toBe(true);
    other.close();
  });

  it("any answers, repeated or not, across rollovers: every one reads back byte for byte; a flipped byte reads as null", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(fc.integer({ min: 0, max: 5 }).map(answerOf), fc.uint8Array({ minLength: 0, maxLength: 5000 })),
          { minLength: 1, maxLength: 30 },
        ),
        fc.integer({ min: 200, max: 20_000 }),
        (bodies, segmentBytes) => {
          const d = tempDir();
          const log = new AnswerLog(d, { segmentBytes });
          const refs = bodies.map((b, i) => {
            const ref = log.append(b);
            if (i % 3 === 2) log.flush();
            return ref;
          });
          log.flush();
          for (const [i, ref] of refs.entries()) expect(log.read(ref)?.equals(Buffer.from(bodies[i]!))).toBe(true);
          log.close();
          rmSync(d, { recursive: true, force: true });
        },
      ),
      { numRuns: 30 },
    );
  });

  it("chunk cuts depend on the content around them, not on where it starts", () => {
    const a = answerOf(1);
    const shifted = Buffer.concat([Buffer.from("a longer prefix than before "), a]);
    const tail = (b: Buffer, ends: number[]) => ends.slice(-3).map((e) => b.byteLength - e);
    expect(tail(shifted, chunkEnds(shifted))).toEqual(tail(a, chunkEnds(a)));
    for (const b of [a, shifted]) {
      const ends = chunkEnds(b);
      expect(ends.at(-1)).toBe(b.byteLength);
      for (let i = 1; i < ends.length; i++) expect(ends[i]! - ends[i - 1]!).toBeLessThanOrEqual(2048);
    }
  });
});

describe("the quota", () => {
  it("once the segments reach it, full() says so; answers already stored still replay; a sweep that frees space lifts it", async () => {
    const path = join(tempDir(), "db.sqlite");
    let now = Date.parse("2026-11-21T00:00:00Z");
    const store = new Store(path, { answers: { quotaBytes: 4000, now: () => now } });
    const idem = new Idempotency({ store, now: () => now, ttlMs: 86_400_000 });
    try {
      let i = 0;
      while (!idem.full()) {
        expect(idem.claim("key", `k${i}`, "print", `run_${i}`).kind).toBe("claimed");
        store.tx(() =>
          idem.complete({
            keyId: "key",
            idemKey: `k${i}`,
            answer: { status: 200, headers: {}, body: Buffer.from(`{"n":${i},"pad":"${"x".repeat(300)}"}`) },
          }),
        );
        await store.durable();
        i++;
        expect(i).toBeLessThan(100);
      }
      expect(idem.full()).toMatchObject({ reason: "quota" });
      expect(store.answers!.usedBytes()).toBeGreaterThanOrEqual(4000);
      for (let k = 0; k < i; k++)
        expect(idem.peek("key", `k${k}`, "print")).toMatchObject({
          kind: "replay",
          body: `{"n":${k},"pad":"${"x".repeat(300)}"}`,
        });
      // a restart does not forget it: the usage is the folder's
      await store.close();
      const again = new Store(path, { answers: { quotaBytes: 4000, now: () => now } });
      const idem2 = new Idempotency({ store: again, now: () => now, ttlMs: 86_400_000 });
      expect(idem2.full()).toMatchObject({ reason: "quota" });
      now += 86_400_000 + 1000;
      idem2.sweep();
      expect(idem2.full()).toBeNull();
      await again.close();
    } finally {
      if (store.db.isOpen) await store.close();
    }
  });
});

describe("a full disk", () => {
  const now = Date.parse("2026-11-21T08:00:00Z");
  const open = (db: string): SdgwServer =>
    createServer({
      dbPath: db,
      now: () => now,
      scheduleTickMs: 0,
      waitMs: 10_000,
      log: () => undefined,
      limits: GENEROUS,
    });

  function ledgerIdentity(s: SdgwServer) {
    const st = s.gateway.store;
    const sum = (kind: string) =>
      st.get<{ s: number | null }>("SELECT SUM(amount) AS s FROM ledger WHERE kind = ?", kind)!.s ?? 0;
    const balance = st.get<{ b: number; h: number }>("SELECT SUM(balance) AS b, SUM(held) AS h FROM accounts")!;
    const holds = st.get<{ n: number }>("SELECT COUNT(*) AS n FROM holds WHERE state = 'held'")!.n;
    return { grants: sum("grant"), charges: sum("charge"), balance: balance.b, held: balance.h, holds };
  }

  it("ENOSPC on the answer's write: the call answers 500, nothing is charged, no hold, no record; full() says so until fullForMs passed", async () => {
    const db = join(tempDir(), "full.sqlite");
    const s = open(db);
    const log = s.gateway.store.answers!;
    const { account } = s.gateway.accounts.createAccount({ name: "full", plan: "paid" });
    s.gateway.accounts.grant(account.id, 100);
    const key = s.gateway.accounts.createKey({ accountId: account.id }).secret;
    const call = async (idem: string) => {
      const res = await s.app.inject({
        method: "GET",
        url: `/v1/search?platform=weibo&query=${idem}`,
        headers: { "x-api-key": key, "idempotency-key": idem },
      });
      await s.gateway.store.durable().catch(() => undefined);
      return res;
    };
    try {
      const first = validateAnswer("search", await call("before"));
      expect(first.status).toBe(200);
      const before = ledgerIdentity(s);
      expect(before.charges).toBeGreaterThan(0);

      const write = log.writev;
      log.fullForMs = 200;
      log.writev = () => {
        throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
      };
      const failed = await call("during");
      expect(failed.statusCode).toBe(500);
      expect(JSON.parse(failed.body)).toMatchObject({ code: "internal_error" });
      const after = ledgerIdentity(s);
      expect(after).toEqual(before); // nothing charged for it
      expect(after.balance + after.charges).toBe(after.grants);
      expect(after.held).toBe(0);
      expect(after.holds).toBe(0);
      expect(s.gateway.store.get("SELECT COUNT(*) AS n FROM idempotency WHERE idem_key = 'during'")).toEqual({ n: 0 });
      expect(
        s.gateway.idempotency.peek(s.gateway.store.get<{ id: string }>("SELECT id FROM keys")!.id, "during", "x").kind,
      ).toBe("claimed");
      expect(s.gateway.idempotency.full()).toMatchObject({ reason: "disk_full" });
      // the answer stored before replays byte for byte
      const replay = await call("before");
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(replay.body).toBe(first.text);

      log.writev = write;
      await new Promise((r) => setTimeout(r, 250)); // fullForMs on the log's clock (Date.now here)
      expect(s.gateway.idempotency.full()).toBeNull();
      const again = validateAnswer("search", await call("during"));
      expect(again.status).toBe(200);
      const last = ledgerIdentity(s);
      expect(last.balance + last.charges).toBe(last.grants);
      expect(last.charges).toBeGreaterThan(before.charges);
      expect(last.holds).toBe(0);
    } finally {
      await s.close();
    }
  });

  it("a full disk is remembered for fullForMs on the log's clock", () => {
    let t = 1000;
    const log = new AnswerLog(tempDir(), { fullForMs: 500, now: () => t });
    log.append(Buffer.from("x"));
    log.writev = () => {
      throw Object.assign(new Error("no space"), { code: "ENOSPC" });
    };
    expect(() => log.flush()).toThrow(/no space/);
    expect(log.full()).toMatchObject({ reason: "disk_full" });
    t += 499;
    expect(log.full()).not.toBeNull();
    t += 1;
    expect(log.full()).toBeNull();
    log.close();
  });
});

describe("the refusal while the log is full, over HTTP (D67)", () => {
  it("once the quota is reached, a new keyed call answers 503 temporarily_unavailable (paused), uncharged; earlier keys still replay", async () => {
    const db = join(tempDir(), "quota.sqlite");
    const server = createServer({
      dbPath: db,
      waitMs: 2000,
      log: () => undefined,
      limits: GENEROUS,
      answerLogQuotaBytes: 6000,
    });
    try {
      const gw = server.gateway;
      const { account } = gw.accounts.createAccount({ name: "quota", plan: "paid" });
      gw.accounts.grant(account.id, 1000);
      const key = gw.accounts.createKey({ accountId: account.id }).secret;
      const call = async (i: number) =>
        validateAnswer(
          "search",
          await server.app.inject({
            method: "GET",
            url: `/v1/search?platform=x&query=quota+${i}&count=10`,
            headers: { "x-api-key": key, "idempotency-key": `quota-${i}` },
          }),
        );
      const balance = () => gw.accounts.account(account.id)!.balance;
      let refused: Awaited<ReturnType<typeof call>> | null = null;
      let i = 0;
      // The quota is counted from the folder at most once a second: keep calling until it shows.
      for (const end = Date.now() + 5000; !refused && Date.now() < end; i++) {
        const a = await call(i);
        if (a.status === 503) refused = a;
        else {
          expect(a.status).toBe(200);
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      expect(refused, "the quota was never reached").not.toBeNull();
      expect(refused!.json).toMatchObject({ code: "temporarily_unavailable", reason: "paused" });
      expect(refused!.json.message).toMatch(/Idempotency-Key/);
      const before = balance();
      expect((await call(i - 1)).status).toBe(503);
      expect(balance()).toBe(before);
      // An answer already promised still replays, byte for byte and uncharged.
      const first = await call(0);
      expect([first.status, first.headers["idempotent-replayed"]]).toEqual([200, "true"]);
      expect(balance()).toBe(before);
    } finally {
      await server.close();
    }
  });
});

describe("a run that answered 202 and whose final write meets a full disk (D75)", () => {
  /** A server whose weibo answers after 150 ms, so that a call with waitMs 20 answers 202 and ends later. */
  const slow = (name: string, finalRetryMs: number) => {
    const server = createServer({
      dbPath: join(tempDir(), `${name}.sqlite`),
      waitMs: 20,
      scheduleTickMs: 0,
      log: () => undefined,
      limits: GENEROUS,
      finalRetryMs,
    });
    server.gateway.simulator!.setKnobs("weibo", { latencyMs: 150 });
    const { account } = server.gateway.accounts.createAccount({ name, plan: "paid" });
    server.gateway.accounts.grant(account.id, 100);
    const key = server.gateway.accounts.createKey({ accountId: account.id }).secret;
    const call = (idem: string) =>
      server.app.inject({
        method: "GET",
        url: `/v1/search?platform=weibo&query=${idem}`,
        headers: { "x-api-key": key, "idempotency-key": idem },
      });
    // A request whose turn shares a commit that the full disk rolled back answers a retryable 500 without
    // `fix.param` (it may have read what was undone); the handle's own answers are read past those.
    const read = async (handle: string) => {
      for (;;) {
        const res = await server.app.inject({
          method: "GET",
          url: `/v1/results/${handle}`,
          headers: { "x-api-key": key },
        });
        const body = JSON.parse(res.body) as { fix?: { param?: string } } & Record<string, unknown>;
        if (res.statusCode === 500 && body.fix?.param !== "handle") continue;
        return { status: res.statusCode, body, text: res.body };
      }
    };
    const audit = () => server.gateway.ledger.audit(account.id);
    return { server, call, read, audit };
  };
  const noSpace = () => {
    throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
  };
  const until = async (what: () => Promise<boolean>, ms = 8000) => {
    const end = Date.now() + ms;
    while (!(await what())) {
      if (Date.now() > end) throw new Error("timed out");
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  it("keeps the promise: the handle reads 202 while the disk is full, then the answer once space is back, charged once", async () => {
    const { server, call, read, audit } = slow("retry", 60_000);
    const log = server.gateway.store.answers!;
    log.fullForMs = 200;
    const write = log.writev;
    try {
      const started = await call("promised");
      expect(started.statusCode).toBe(202);
      const handle = (JSON.parse(started.body) as { handle: string }).handle;
      log.writev = noSpace;
      await new Promise((r) => setTimeout(r, 600)); // the run ended, its final write failed, and was tried again
      const waiting = await read(handle);
      expect([waiting.status, waiting.body["status"]]).toEqual([202, "running"]);
      expect(audit()).toMatchObject({ charges: 0, held: 1, holdsHeld: 1 }); // nothing charged, the hold kept
      log.writev = write;
      await until(async () => (await read(handle)).status === 200);
      const done = await read(handle);
      expect(done.body).toMatchObject({ status: "ok", billing: { cost: 1 } });
      expect(audit()).toMatchObject({ grants: 100, charges: 1, balance: 99, held: 0, holdsHeld: 0, inMemory: 0 });
      // the same Idempotency-Key answers the same result, not a second charge
      const replay = await call("promised");
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(audit().charges).toBe(1);
    } finally {
      log.writev = write;
      await server.close();
    }
  });

  it("ends the run broken after finalRetryMs when the disk stays full: 500 on the handle, hold released, nothing charged, its key free", async () => {
    const { server, call, read, audit } = slow("give-up", 300);
    const log = server.gateway.store.answers!;
    log.fullForMs = 200;
    const write = log.writev;
    try {
      const started = await call("doomed");
      expect(started.statusCode).toBe(202);
      const handle = (JSON.parse(started.body) as { handle: string }).handle;
      log.writev = noSpace;
      await until(async () => (await read(handle)).status === 500);
      expect((await read(handle)).body).toMatchObject({ code: "internal_error", fix: { param: "handle" } });
      expect(audit()).toMatchObject({ grants: 100, charges: 0, balance: 100, held: 0, holdsHeld: 0, inMemory: 0 });
      log.writev = write;
      await new Promise((r) => setTimeout(r, log.fullForMs + 50));
      // the key was given back: the same call runs now, and is charged once
      const again = await call("doomed");
      expect([200, 202]).toContain(again.statusCode);
      await until(async () => audit().charges === 1);
    } finally {
      log.writev = write;
      await server.close();
    }
  }, 15_000);
});
