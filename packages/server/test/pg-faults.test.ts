/**
 * Issue 30 (D109, D110): the reference server on PostgreSQL survives the faults a real database has, as real
 * `main.ts` processes over real sockets:
 * - every backend of the instances terminated again and again under load (`pg_terminate_backend`): every instance
 *   lives on, every call answers 200 or 503, and once it stops nothing is left open;
 * - an instance's connections reset (TCP RST) under load, five times: the same;
 * - an instance's connections blackholed for 14 s (no byte either way), and only its answers lost (the statements
 *   reach PostgreSQL and commit, their answers never come back): every call answers within the documented bound
 *   (503 after at most 11 s), nothing is left open once it answers again, without a restart;
 * - instances whose clocks are minutes apart across UTC midnight, or a day ahead (`faketime`): the daily limits of
 *   an account and of a key hold, `resets_at` is the same on every instance, an answered Idempotency-Key replays.
 * After every fault each Idempotency-Key sent is sent again until it answers 200: each was charged exactly once
 * (`charges = keys`), and the ledger's identity holds. Needs PostgreSQL (pg-helpers.ts) and Debian's faketime.
 */
import { existsSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PgAccounts } from "../src/pg/accounts.ts";
import { PgCalls } from "../src/pg/calls.ts";
import { faultProxy, type FaultProxy } from "./fault-proxy.ts";
import { expectLedgerIdentity, pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";
import { kill, startServer, stopAll, type Started } from "./processes.ts";

let t: TestDatabase;
let accounts: PgAccounts;
let ledger: PgCalls;
const made: string[] = [];

/** The settings of every instance here: many calls of one key at once are the load, not a fault of the caller. */
const LOAD_ENV = {
  SDGW_WAIT_MS: "5000",
  SDGW_LATENCY_MS: "60",
  SDGW_FAILURE_THRESHOLD: "100000",
  SDGW_WORKSPACE_CONCURRENCY: "10000",
  SDGW_KEY_QPS: "100000",
  SDGW_RUN_LEASE_MS: "30000",
};

beforeAll(async () => {
  t = await testDatabase("faults", 1);
  const db = t.instances[0]!;
  accounts = new PgAccounts({ db, now: Date.now });
  ledger = new PgCalls({ db, now: Date.now, idempotencyTtlMs: 86_400_000, freeCalls: 100, owner: "own_test_reader" });
}, 60_000);

afterAll(async () => {
  stopAll();
  await t?.drop();
});

afterEach(() => expectLedgerIdentity(ledger, made.splice(0)));

/** A paid account with `credits` and a key; its secret. */
async function account(
  credits: number,
  o: { dailyLimit?: number; keyDailyLimit?: number } = {},
): Promise<{ id: string; key: string }> {
  const { account } = await accounts.createAccount({
    name: "faults test",
    plan: "paid",
    ...(o.dailyLimit !== undefined ? { dailyLimit: o.dailyLimit } : {}),
  });
  if (credits > 0) await accounts.grant(account.id, credits);
  const { secret } = await accounts.createKey({
    accountId: account.id,
    name: "test",
    ...(o.keyDailyLimit !== undefined ? { dailyLimit: o.keyDailyLimit } : {}),
  });
  made.push(account.id);
  return { id: account.id, key: secret };
}

interface Sent {
  idem: string;
  status: number;
  code: string | undefined;
  ms: number;
  /** When it was sent (`performance.now()`). */
  at: number;
}

async function search(base: string, key: string, idem: string, query = idem) {
  const res = await fetch(`${base}/v1/search?platform=x&count=2&query=${encodeURIComponent(query)}`, {
    headers: { "X-API-Key": key, "Idempotency-Key": idem },
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Record<string, any> };
}

/**
 * `workers` loops sending searches with new Idempotency-Keys to `bases` in turn until `until()` is true; what each
 * answered (a socket error counts as status 0).
 */
async function load(bases: string[], key: string, label: string, workers: number, until: () => boolean) {
  const sent: Sent[] = [];
  let n = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (!until()) {
        const i = n++;
        const idem = `${label}-${i}`;
        const at = performance.now();
        let status = 0;
        try {
          const r = await search(bases[i % bases.length]!, key, idem);
          status = r.status;
          sent.push({ idem, status, code: r.body["code"], ms: performance.now() - at, at });
        } catch {
          sent.push({ idem, status, code: undefined, ms: performance.now() - at, at });
        }
        // A client backs off after a refusal (a 503 comes at once while the database is known to be down).
        if (status !== 200) await new Promise((r) => setTimeout(r, 250));
      }
    }),
  );
  return sent;
}

/** Rows left open in the database: claims running, holds held, runs running. */
async function open(): Promise<{ claims: number; holds: number; runs: number }> {
  const db = t.instances[0]!;
  const [row] = await db.query<{ claims: number; holds: number; runs: number }>(
    `SELECT (SELECT count(*) FROM idempotency WHERE state = 'running')::int AS claims,
            (SELECT count(*) FROM holds WHERE state = 'held')::int AS holds,
            (SELECT count(*) FROM runs WHERE state = 'running')::int AS runs`,
  );
  return row!;
}

/** Polls `open()` until nothing is open; how long that took (ms), or the rows still open after `withinMs`. */
async function nothingOpen(withinMs: number): Promise<number> {
  const start = performance.now();
  let rows = await open();
  while (rows.claims + rows.holds + rows.runs > 0) {
    if (performance.now() - start > withinMs)
      throw new Error(`still open after ${withinMs} ms: ${JSON.stringify(rows)}`);
    await new Promise((r) => setTimeout(r, 100));
    rows = await open();
  }
  return Math.round(performance.now() - start);
}

/**
 * Sends every key again (to `base`) until it answers 200, as a client with the same Idempotency-Key does after a 503
 * (a 409 while its first run is still being ended, a 503 while the database is still coming back); then each key
 * must have been charged exactly once.
 */
async function everyKeyOnce(base: string, key: string, id: string, sent: Sent[], withinMs = 30_000) {
  const keys = [...new Set(sent.map((s) => s.idem))];
  const deadline = performance.now() + withinMs;
  const queue = [...keys];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let idem = queue.pop(); idem !== undefined; idem = queue.pop()) {
        for (;;) {
          const r = await search(base, key, idem);
          if (r.status === 200) break;
          expect([409, 503], `${idem} answered ${r.status} ${JSON.stringify(r.body)}`).toContain(r.status);
          if (performance.now() > deadline) throw new Error(`${idem} still answers ${r.status} after ${withinMs} ms`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }),
  );
  const a = await ledger.audit(id);
  expect(a.charges, "every Idempotency-Key charged exactly once").toBe(keys.length);
  expect(a).toMatchObject({ held: 0, holdsHeld: 0, balance: a.grants - keys.length });
}

const statuses = (sent: Sent[]) =>
  sent.reduce<Record<string, number>>((m, s) => ({ ...m, [s.status]: (m[s.status] ?? 0) + 1 }), {});

/** What each instance logged since it started (its last words, when it died). */
const logs = new WeakMap<Started, () => string>();

/** What an instance logs from now on; `ended()` counts the calls its reconciliation ended (D109). */
function logOf(s: Started) {
  let text = "";
  s.child.stderr!.on("data", (d: Buffer) => {
    text += d.toString();
  });
  logs.set(s, () => text);
  return {
    ended: () => [...text.matchAll(/ended (\d+) call\(s\) left open/g)].reduce((n, m) => n + Number(m[1]), 0),
    text: () => text,
  };
}

/** One instance whose connections to PostgreSQL go through a fault proxy, and its log. */
async function behindProxy(proxy: FaultProxy) {
  const one = await startServer(":memory:", {
    ...LOAD_ENV,
    SDGW_DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/${t.name}`,
  });
  return { one, log: logOf(one) };
}

/** Every instance lives on, and every call answered 200 or 503 `temporarily_unavailable`. */
function expectSurvived(instances: Started[], sent: Sent[]): void {
  for (const s of instances)
    expect(
      alive(s),
      `an instance died (${s.child.exitCode ?? s.child.signalCode}): ${logs.get(s)?.().slice(-3000)}`,
    ).toBe(true);
  for (const s of sent.filter((x) => x.status !== 200))
    expect([s.status, s.code], JSON.stringify(s)).toEqual([503, "temporarily_unavailable"]);
}

const alive = (s: Started) => s.child.exitCode === null && s.child.signalCode === null;

function report(what: string, figures: Record<string, unknown>) {
  console.log(`[faults] ${what}: ${JSON.stringify(figures)}`);
}

describe("PostgreSQL faults under load (issue 30, D109)", () => {
  it("every instance's backends terminated again and again: all three live on, calls answer 200 or 503, nothing left open", async () => {
    const url = pgUrl(t.name);
    const three = await Promise.all(
      [0, 1, 2].map(() => startServer(":memory:", { ...LOAD_ENV, SDGW_DATABASE_URL: url })),
    );
    const logged = three.map(logOf);
    const { id, key } = await account(100_000);
    let stop = false;
    const loading = load(
      three.map((s) => s.url),
      key,
      "terminate",
      24,
      () => stop,
    );
    let terminated = 0;
    for (let round = 0; round < 8; round++) {
      await new Promise((r) => setTimeout(r, 400));
      const rows = await t.admin.query(
        "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = $1 AND application_name = 'sdgw'",
        [t.name],
      );
      terminated += rows.rows.filter((r: { ok: boolean }) => r.ok).length;
    }
    await new Promise((r) => setTimeout(r, 400));
    stop = true;
    const sent = await loading;
    expectSurvived(three, sent);
    const by = statuses(sent);
    const clearedMs = await nothingOpen(10_000);
    await everyKeyOnce(three[0]!.url, key, id, sent);
    // Each instance still serves a charged call.
    for (const s of three) expect((await search(s.url, key, `after-${s.url}`)).status).toBe(200);
    const reconciled = logged.reduce((n, l) => n + l.ended(), 0);
    report("pg_terminate_backend", { terminated, requests: sent.length, statuses: by, clearedMs, reconciled });
    await Promise.all(three.map((s) => kill(s.child, "SIGTERM")));
  }, 120_000);

  it("an instance's connections reset (TCP RST) under load, five times: it lives on, 200 or 503, nothing left open", async () => {
    const proxy = await faultProxy(5432);
    try {
      const { one, log } = await behindProxy(proxy);
      const { id, key } = await account(100_000);
      let stop = false;
      const loading = load([one.url], key, "reset", 16, () => stop);
      for (let round = 0; round < 5; round++) {
        await new Promise((r) => setTimeout(r, 500));
        proxy.reset();
      }
      await new Promise((r) => setTimeout(r, 500));
      stop = true;
      const sent = await loading;
      expectSurvived([one], sent);
      const by = statuses(sent);
      const clearedMs = await nothingOpen(10_000);
      await everyKeyOnce(one.url, key, id, sent);
      report("TCP reset x5", {
        requests: sent.length,
        statuses: by,
        clearedMs,
        reconciled: log.ended(),
        connections: proxy.connections,
      });
      await kill(one.child, "SIGTERM");
    } finally {
      await proxy.close();
    }
  }, 120_000);

  for (const way of ["both", "answers"] as const) {
    it(`an instance's connections blackholed for 14 s (${way === "both" ? "no byte either way" : "statements arrive, answers lost"}): 503 within 11 s, nothing left open once it answers, no restart`, async () => {
      const proxy = await faultProxy(5432);
      try {
        const { one, log } = await behindProxy(proxy);
        const { id, key } = await account(100_000);
        let stop = false;
        const loading = load([one.url], key, `blackhole-${way}`, 12, () => stop);
        await new Promise((r) => setTimeout(r, 1000));
        const holeAt = performance.now();
        proxy.blackhole(way);
        await new Promise((r) => setTimeout(r, 14_000));
        proxy.restore();
        const restoredAt = performance.now();
        await new Promise((r) => setTimeout(r, 500));
        stop = true;
        const sent = await loading;
        expectSurvived([one], sent);
        const by = statuses(sent);
        // D108: a database that does not answer is a 503 within the statement's 10 s and the client's 1 s more.
        const slowest = Math.max(...sent.map((s) => s.ms));
        expect(slowest, "the slowest answer (ms), with 3 s for a busy machine").toBeLessThan(14_000);
        const clearedMs = await nothingOpen(10_000);
        await everyKeyOnce(one.url, key, id, sent);
        const during = sent.filter((s) => s.status === 503);
        report(`blackhole 14 s (${way})`, {
          requests: sent.length,
          statuses: by,
          slowestMs: Math.round(slowest),
          first503AfterMs: during.length ? Math.round(Math.min(...during.map((s) => s.at + s.ms)) - holeAt) : null,
          sentInHole: sent.filter((s) => s.at >= holeAt && s.at < restoredAt).length,
          clearedAfterRestoreMs: Math.round(performance.now() - restoredAt),
          clearedMs,
          reconciled: log.ended(),
        });
        await kill(one.child, "SIGTERM");
      } finally {
        await proxy.close();
      }
    }, 180_000);
  }
});

describe("Redis faults under load (issue 30, D107)", () => {
  it("the limits' Redis reset three times, then blackholed for 6 s: the instance lives on, 200 or 503, calls resume by themselves", async () => {
    const proxy = await faultProxy(6379);
    try {
      const one = await startServer(":memory:", {
        ...LOAD_ENV,
        SDGW_DATABASE_URL: pgUrl(t.name),
        SDGW_REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
        SDGW_REDIS_PREFIX: `sdgw-faults-${process.pid}:`,
      });
      const { id, key } = await account(100_000);
      let stop = false;
      const loading = load([one.url], key, "redis", 12, () => stop);
      for (let round = 0; round < 3; round++) {
        await new Promise((r) => setTimeout(r, 500));
        proxy.reset();
      }
      await new Promise((r) => setTimeout(r, 500));
      proxy.blackhole();
      await new Promise((r) => setTimeout(r, 6000));
      proxy.restore();
      const restoredAt = performance.now();
      // Calls resume by themselves: the first 200 after the restore, with nothing restarted.
      let resumedMs: number | null = null;
      const resume: Sent[] = [];
      for (let i = 0; resumedMs === null && performance.now() - restoredAt < 15_000; i++) {
        const at = performance.now();
        const r = await search(one.url, key, `redis-resume-${i}`);
        resume.push({ idem: `redis-resume-${i}`, status: r.status, code: r.body["code"], ms: 0, at });
        if (r.status === 200) resumedMs = Math.round(performance.now() - restoredAt);
        else await new Promise((r) => setTimeout(r, 200));
      }
      stop = true;
      const sent = (await loading).concat(resume);
      expectSurvived([one], sent);
      expect(resumedMs, "a call answered 200 after Redis came back").not.toBeNull();
      const slowest = Math.max(...sent.map((s) => s.ms));
      await nothingOpen(10_000);
      await everyKeyOnce(one.url, key, id, sent);
      report("Redis reset x3, blackhole 6 s", {
        requests: sent.length,
        statuses: statuses(sent),
        slowestMs: Math.round(slowest),
        resumedMs,
      });
      await kill(one.child, "SIGTERM");
    } finally {
      await proxy.close();
    }
  }, 120_000);
});

const FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/** The environment that runs a child `seconds` off the database's clock (Debian's libfaketime). */
function clockOff(seconds: number): Record<string, string> {
  const s = Math.round(seconds);
  return { LD_PRELOAD: FAKETIME_LIB, FAKETIME: s < 0 ? `${s}` : `+${s}`, FAKETIME_NO_CACHE: "1" };
}

describe("instances whose clocks disagree (issue 30, D110)", () => {
  it("two instances 4 minutes apart across UTC midnight: an account's limit of 20 and a key's of 7 charge 20 and 7; resets_at is the database's", async () => {
    expect(existsSync(FAKETIME_LIB), `${FAKETIME_LIB} (Debian's faketime; .ci/run installs it)`).toBe(true);
    const url = pgUrl(t.name);
    // Offsets from the database's clock (under test:clock this process's own is a year ahead): one instance 2
    // minutes before the next UTC midnight, the other 2 minutes after it.
    const [{ ms }] = (await t.admin.query("SELECT (extract(epoch from clock_timestamp()) * 1000)::float8 AS ms")).rows;
    const midnight = Math.ceil((ms + 1) / 86_400_000) * 86_400_000;
    const before = await startServer(":memory:", {
      ...LOAD_ENV,
      SDGW_DATABASE_URL: url,
      ...clockOff((midnight - 120_000 - ms) / 1000),
    });
    const after = await startServer(":memory:", {
      ...LOAD_ENV,
      SDGW_DATABASE_URL: url,
      ...clockOff((midnight + 120_000 - ms) / 1000),
    });
    const bases = [before.url, after.url];
    const dbDay = new Date(ms).toISOString().slice(0, 10);
    const resets = `${new Date(midnight).toISOString().slice(0, 10)}T00:00:00Z`;
    for (const [label, o, most] of [
      ["account", { dailyLimit: 20 }, 20],
      ["key", { keyDailyLimit: 7 }, 7],
    ] as const) {
      const { id, key } = await account(1000, o);
      const got: number[] = [];
      const resetsAt = new Set<string>();
      for (let i = 0; i < 2 * most + 4; i++) {
        const r = await search(bases[i % 2]!, key, `${label}-limit-${i}`);
        got.push(r.status);
        if (r.status === 429) {
          expect(r.body["code"]).toBe("daily_limit_reached");
          expect(r.body["reason"]).toBe(label);
          resetsAt.add(r.body["resets_at"]);
        }
      }
      expect(got.filter((s) => s === 200).length, `${label} limit of ${most}: ${got.join(",")}`).toBe(most);
      expect((await ledger.audit(id)).charges).toBe(most);
      // Both instances name the database's next midnight, whatever their own clocks say.
      expect([...resetsAt]).toEqual([resets]);
      const account_ = await fetch(`${after.url}/v1/account`, { headers: { "X-API-Key": key } });
      const body = (await account_.json()) as Record<string, any>;
      expect(JSON.stringify(body), "today's spend counted on the database's day").toContain(`${most}`);
      report(`clocks 4 min apart across midnight (${label} limit ${most})`, {
        dbDay,
        statuses: statuses(got.map((s) => ({ status: s }) as Sent)),
        resetsAt: [...resetsAt],
      });
    }
    await Promise.all([before, after].map((s) => kill(s.child, "SIGTERM")));
  }, 120_000);

  it("an instance a day ahead: an Idempotency-Key answered elsewhere replays, not charged again; handles still read", async () => {
    const url = pgUrl(t.name);
    const [{ ms }] = (await t.admin.query("SELECT (extract(epoch from clock_timestamp()) * 1000)::float8 AS ms")).rows;
    const same = await startServer(":memory:", {
      ...LOAD_ENV,
      SDGW_DATABASE_URL: url,
      ...clockOff((ms - Date.now()) / 1000),
    });
    const ahead = await startServer(":memory:", {
      ...LOAD_ENV,
      SDGW_DATABASE_URL: url,
      ...clockOff((ms - Date.now()) / 1000 + 25 * 3600),
    });
    const { id, key } = await account(10);
    const first = await search(same.url, key, "day-ahead-1");
    expect(first.status).toBe(200);
    const again = await search(ahead.url, key, "day-ahead-1");
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await ledger.audit(id)).charges).toBe(1);
    await Promise.all([same, ahead].map((s) => kill(s.child, "SIGTERM")));
  }, 120_000);
});
