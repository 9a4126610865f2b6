/**
 * The sessions system's contract (`SessionsPort`: console users, sign-in and sessions, D82–D85) on every engine.
 *
 * - **Written once.** Through the port, on the embedded store and on PostgreSQL (three instances, each call on one
 *   of them in turn): one user an email whatever its case; sign-in, lookup and sign-out; the same refusal for a
 *   wrong password and an unknown email; throttling by email; a disabled user's sessions end; idle and absolute
 *   expiry.
 * - **Differential.** The embedded store's `Sessions` against `PgSessions` on three instances: the same generated
 *   operations give the same results and leave the same rows, with ids and tokens paired by when they were made.
 *
 * PostgreSQL-only behaviour (races across instances, a database whose collation is not C, lifetimes past 9999) is
 * in pg-sessions.test.ts. Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust; CI's `.ci/run` starts it):
 * without it this file fails, it does not skip. Its databases are its own, dropped at the end.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Postgres } from "../../src/storage/postgres/database.ts";
import { PgSessions } from "../../src/storage/postgres/sessions.ts";
import {
  LAST_SEEN_EVERY_MS,
  type SignInResult,
  type UserRecord,
  sessionIdOf,
  verifyPassword,
} from "../../src/storage/sessions.ts";
import { Sessions } from "../../src/storage/sqlite/sessions.ts";
import { Store } from "../../src/storage/sqlite/store.ts";
import { adapters, poolOf, postgres, type Storage } from "./adapters.ts";
import { ACCOUNTS, CHEAP, CONFIG, MINUTE, PASSWORD, T0 } from "./session-fixtures.ts";

/** Three PostgreSQL instances (gateways on one database, each its own pool) for the differential runs. */
let pgs: Storage;
let instances: Postgres[] = [];

beforeAll(async () => {
  pgs = await postgres.open("ses", { now: T0 });
  instances = pgs.instances.map((i) => poolOf(i));
  for (const id of ACCOUNTS)
    await instances[0]!.query(
      "INSERT INTO accounts (id, name, plan, status, created_at) VALUES ($1, $1, 'paid', 'active', $2)",
      [id, new Date(T0).toISOString()],
    );
});
afterAll(() => pgs?.close());

/** One `PgSessions` per instance, on one clock. */
const pgSessions = (clock: { now: number }, config = CONFIG) =>
  instances.map((db) => new PgSessions({ db, now: () => clock.now, config }));

// ------------------------------------------------------------------------------------------ written once

describe.each(adapters)("console users and sessions through the port ($engine)", (adapter) => {
  let s: Storage;
  beforeAll(async () => {
    s = await adapter.open("sessions", { now: T0, gateway: { sessions: CONFIG } });
  });
  afterAll(() => s?.close());
  const port = (i: number) => s.on(i).ports.sessions;
  let seq = 0;
  const freshEmail = (label: string) => `${label}-${++seq}@example.com`;
  const signedIn = async (i: number, email: string, address: string) => {
    const r = await port(i).signIn(email, PASSWORD, address);
    if (!r.ok) throw new Error(`not signed in: ${JSON.stringify(r)}`);
    return r.created;
  };

  it("one user an email, whatever its case and spaces: found by it in any case, listed under its account", async () => {
    s.clock.now = T0;
    const { id: accountId } = await s.account(0);
    const email = freshEmail("one");
    const user = await port(0).createUser({ accountId, email: ` ${email.toUpperCase()} `, passwordHash: CHEAP });
    expect(user).toMatchObject({ account_id: accountId, email, disabled: 0 });
    await expect(
      Promise.resolve().then(() => port(1).createUser({ accountId, email, passwordHash: CHEAP })),
    ).rejects.toThrow(`a user with the email ${email} exists`);
    await expect(
      Promise.resolve().then(() => port(2).createUser({ accountId, email: "not-an-email", passwordHash: CHEAP })),
    ).rejects.toThrow();
    expect(await port(2).userByEmail(email.toUpperCase())).toEqual(user);
    expect(await port(0).userByEmail(freshEmail("nobody"))).toBeUndefined();
    expect(await port(1).users(accountId)).toEqual([user]);
    expect((await port(2).users()).map((u) => u.id)).toContain(user.id);
  });

  it("sign-in, lookup on every instance, sign-out; a wrong password and an unknown email get the same refusal", async () => {
    s.clock.now = T0;
    const { id: accountId } = await s.account(0);
    const email = freshEmail("round");
    await port(0).createUser({ accountId, email, passwordHash: CHEAP });
    expect(await port(1).signIn(email, "wrong password 1234", "10.7.0.1")).toEqual({ ok: false, refusal: "invalid" });
    expect(await port(2).signIn(freshEmail("unknown"), PASSWORD, "10.7.0.1")).toEqual({
      ok: false,
      refusal: "invalid",
    });
    const { token, session } = await signedIn(0, email, "10.7.0.2");
    expect(session.id).toBe(sessionIdOf(token));
    expect(session.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    for (const i of [0, 1, 2]) expect((await port(i).lookup(token))?.session).toEqual(session);
    expect(await port(1).lookup(`${"A".repeat(43)}`)).toBeNull();
    expect(await port(2).end(session.id)).toBe(true);
    for (const i of [0, 1, 2]) expect(await port(i).lookup(token)).toBeNull();
    expect(await port(0).end(session.id)).toBe(false);
  });

  it("after the limit of failures for an email, sign-in is refused (the right password too) until the window ends", async () => {
    s.clock.now = T0;
    const { id: accountId } = await s.account(0);
    const email = freshEmail("throttle");
    await port(0).createUser({ accountId, email, passwordHash: CHEAP });
    for (let k = 0; k < CONFIG.failuresPerEmail; k++) {
      s.clock.now += 1000;
      expect(await port(k).signIn(email, "wrong password 1234", `10.8.0.${k}`)).toEqual({
        ok: false,
        refusal: "invalid",
      });
    }
    expect(await port(1).signIn(email, PASSWORD, "10.8.1.1")).toEqual({
      ok: false,
      refusal: "throttled",
      by: "email",
      retryAfterMs: CONFIG.failureWindowMs - (CONFIG.failuresPerEmail - 1) * 1000,
    });
    s.clock.now = T0 + 1000 + CONFIG.failureWindowMs; // the first failure leaves the window
    expect((await port(2).signIn(email, PASSWORD, "10.8.1.1")).ok).toBe(true);
  });

  it("a disabled user's sessions end everywhere, and its right password says so", async () => {
    s.clock.now = T0;
    const { id: accountId } = await s.account(0);
    const email = freshEmail("disabled");
    await port(0).createUser({ accountId, email, passwordHash: CHEAP });
    const a = await signedIn(0, email, "10.9.0.1");
    const b = await signedIn(2, email, "10.9.0.2");
    const disabled = await port(1).disableUser(email.toUpperCase());
    expect(disabled).toMatchObject({ user: { email, disabled: 1 }, sessionsEnded: 2 });
    for (const i of [0, 1, 2]) {
      expect(await port(i).lookup(a.token)).toBeNull();
      expect(await port(i).lookup(b.token)).toBeNull();
    }
    expect(await port(2).signIn(email, PASSWORD, "10.9.0.3")).toEqual({ ok: false, refusal: "disabled" });
    expect(await port(0).disableUser(freshEmail("nobody"))).toBeNull();
  });

  it("expiry: last_seen_at moves at most once a minute; idle past idleMs ends a session, and so does the lifetime however often it is used", async () => {
    s.clock.now = T0;
    const { id: accountId } = await s.account(0);
    const email = freshEmail("expiry");
    await port(0).createUser({ accountId, email, passwordHash: CHEAP });
    const { token } = await signedIn(0, email, "10.10.0.1");
    s.clock.now += LAST_SEEN_EVERY_MS - 1;
    expect((await port(1).lookup(token))?.session.last_seen_at).toBe(T0);
    s.clock.now = T0 + LAST_SEEN_EVERY_MS;
    expect(await port(2).lookup(token)).toMatchObject({
      session: { last_seen_at: T0 + LAST_SEEN_EVERY_MS },
      idleExpiresAt: T0 + LAST_SEEN_EVERY_MS + CONFIG.idleMs,
    });
    s.clock.now += CONFIG.idleMs; // unused for the whole idle time
    expect(await port(0).lookup(token)).toBeNull();

    s.clock.now = T0;
    const used = (await signedIn(1, email, "10.10.0.2")).token;
    while (s.clock.now + 10 * MINUTE < T0 + CONFIG.lifetimeMs) {
      s.clock.now += 10 * MINUTE;
      expect(await port(2).lookup(used)).not.toBeNull();
    }
    s.clock.now = T0 + CONFIG.lifetimeMs;
    expect(await port(0).lookup(used)).toBeNull();
  });
});

// ------------------------------------------------------------------------------------------ the differential test

/** Emails as a caller may type them: known ones in several cases, one made only by the sequence, and non-emails. */
const EMAILS = ["ada@example.com", " ADA@Example.com", "bob@example.com", "Bob@EXAMPLE.com ", "cy@example.com"];
const NOT_EMAILS = ["not-an-email", "a b@example.com"];
/** Steps of the clock: mostly short (within a window), sometimes to a limit's edge or past a lifetime. */
const TICKS = [1, 1000, 1000, 59_999, MINUTE, MINUTE, 5 * MINUTE, 10 * MINUTE, 30 * MINUTE, 2 * 3600_000];

type Op =
  | { op: "createUser"; account: number; email: string; on: number }
  | { op: "disableUser"; email: string; on: number }
  | { op: "signIn"; email: string; right: boolean; address: number; on: number }
  | { op: "lookup"; which: number | string; on: number }
  | { op: "end"; which: number | string; on: number }
  | { op: "userByEmail"; email: string; on: number }
  | { op: "users"; account: number | undefined; on: number }
  | { op: "tick"; ms: number };

const on = fc.nat({ max: 2 });
/** A session made so far (its index, taken modulo their count), a well-shaped unknown token, or no token at all. */
const which = fc.oneof(
  { weight: 4, arbitrary: fc.nat({ max: 20 }) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{43}$/) },
  { weight: 1, arbitrary: fc.constantFrom("", "abc", `${"A".repeat(43)};`, "é".repeat(43)) },
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("createUser" as const),
      // 2: an account that does not exist
      account: fc.nat({ max: 2 }),
      email: fc.oneof(
        { weight: 3, arbitrary: fc.constant(EMAILS[4]!) },
        { weight: 2, arbitrary: fc.constantFrom(...EMAILS.slice(0, 4)) },
        { weight: 1, arbitrary: fc.constantFrom(...NOT_EMAILS) },
      ),
      on,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("disableUser" as const), email: fc.constantFrom(...EMAILS), on }),
  },
  {
    weight: 12,
    arbitrary: fc.record({
      op: fc.constant("signIn" as const),
      // cy@ has no user until the sequence makes one: its sign-ins check a full-cost dummy hash, so they are rarer
      email: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...EMAILS.slice(0, 4)) },
        { weight: 1, arbitrary: fc.constant(EMAILS[4]!) },
      ),
      // mostly wrong, so that the counts reach their limits
      right: fc.oneof({ weight: 1, arbitrary: fc.constant(true) }, { weight: 2, arbitrary: fc.constant(false) }),
      address: fc.nat({ max: 1 }),
      on,
    }),
  },
  { weight: 10, arbitrary: fc.record({ op: fc.constant("lookup" as const), which, on }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("end" as const), which, on }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("userByEmail" as const), email: fc.constantFrom(...EMAILS), on }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("users" as const), account: fc.constantFrom(0, 1, undefined), on }),
  },
  { weight: 8, arbitrary: fc.record({ op: fc.constant("tick" as const), ms: fc.constantFrom(...TICKS) }) },
);

/**
 * Pairs what each side made at random (user ids, tokens, session ids, CSRF tokens) by the order they were made, and
 * writes each as its pair's name (`usr#0`, `tok#1`…), so that the two sides' results compare as equal.
 */
class Pairs {
  private readonly names = [new Map<string, string>(), new Map<string, string>()];
  private readonly count = new Map<string, number>();

  pair(kind: string, a: string, b: string): void {
    const n = this.count.get(kind) ?? 0;
    this.count.set(kind, n + 1);
    this.names[0]!.set(a, `${kind}#${n}`);
    this.names[1]!.set(b, `${kind}#${n}`);
  }

  /** `value` with every string this side made written as its pair's name. */
  norm(side: 0 | 1, value: unknown): unknown {
    if (typeof value === "string") return this.names[side]!.get(value) ?? value;
    if (Array.isArray(value)) return value.map((v) => this.norm(side, v));
    if (value && typeof value === "object")
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.norm(side, v)]));
    return value;
  }
}

/** A result, or the message of what was thrown. */
type Outcome<T> = { ok: T } | { threw: string };

/** What `fn` gives, or the message of what it throws. */
async function outcome<T>(fn: () => T | Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: await fn() };
  } catch (e) {
    return { threw: (e as Error).message };
  }
}

/** The embedded store's order of users: creation second, then id byte by byte. */
const byCreationThenId = (u: UserRecord, v: UserRecord) =>
  u.created_at < v.created_at ? -1 : u.created_at > v.created_at ? 1 : u.id < v.id ? -1 : u.id > v.id ? 1 : 0;

/** An order of users by their pair names, the same on both sides. */
const byPair = (pairs: Pairs, side: 0 | 1) => (u: UserRecord, v: UserRecord) =>
  String(pairs.norm(side, u.id)).localeCompare(String(pairs.norm(side, v.id)));

/** Every row the two systems keep, in the embedded store's shapes (no autoincrement ids), to compare after a step. */
async function pgRows(pairs: Pairs) {
  const db = instances[0]!;
  const users = await db.query<Record<string, unknown>>("SELECT * FROM users");
  const sessions = await db.query<Record<string, unknown>>("SELECT * FROM sessions");
  const failures = await db.query<{ email: string; address: string; at: Date }>(
    "SELECT email, address, at FROM sign_in_failures",
  );
  return sortRows(
    pairs.norm(1, {
      users: users.map((u) => ({
        ...u,
        created_at: (u["created_at"] as Date).getTime(),
        disabled: u["disabled"] ? 1 : 0,
      })),
      sessions: sessions.map((s) => ({
        ...s,
        created_at: (s["created_at"] as Date).getTime(),
        last_seen_at: (s["last_seen_at"] as Date).getTime(),
        expires_at: (s["expires_at"] as Date).getTime(),
      })),
      failures: failures.map((f) => ({ ...f, at: f.at.getTime() })),
    }),
  );
}

function sqliteRows(store: Store, pairs: Pairs) {
  const users = store.all<Record<string, unknown>>("SELECT * FROM users");
  return sortRows(
    pairs.norm(0, {
      users: users.map((u) => ({ ...u, created_at: Date.parse(u["created_at"] as string) })),
      sessions: store.all("SELECT * FROM sessions"),
      failures: store.all("SELECT email, address, at FROM sign_in_failures"),
    }),
  );
}

const sortRows = (rows: unknown) =>
  Object.fromEntries(
    Object.entries(rows as Record<string, unknown[]>).map(([k, v]) => [
      k,
      v.map((r) => JSON.stringify(r, Object.keys(r as object).sort())).sort(),
    ]),
  );

describe("PgSessions against the embedded store's Sessions (differential)", () => {
  it("the same generated operations give the same results and leave the same rows", async () => {
    expect(await verifyPassword(PASSWORD, CHEAP)).toBe(true);
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40, size: "max" }), async (ops) => {
        runs++;
        await instances[0]!.query("TRUNCATE sessions, users, sign_in_failures RESTART IDENTITY");
        const clock = { now: T0 };
        const store = new Store(":memory:");
        try {
          for (const id of ACCOUNTS)
            store.run(
              "INSERT INTO accounts (id, name, plan, status, created_at) VALUES (?, ?, 'paid', 'active', ?)",
              id,
              id,
              new Date(T0).toISOString(),
            );
          const lite = new Sessions({ store, now: () => clock.now, config: CONFIG });
          const pgs = pgSessions(clock);
          const pairs = new Pairs();
          const tokens: Array<[string, string]> = [];
          // Two users to begin with; cy@ is made (or not) by the sequence.
          for (const [i, email] of ["ada@example.com", "bob@example.com"].entries()) {
            const input = { accountId: ACCOUNTS[i]!, email, passwordHash: CHEAP };
            pairs.pair("usr", lite.createUser(input).id, (await pgs[i]!.createUser(input)).id);
          }
          /** The token (or text) an operation names, on each side. */
          const tokenOf = (w: number | string): [string, string] =>
            typeof w === "string" ? [w, w] : tokens.length === 0 ? ["", ""] : tokens[w % tokens.length]!;
          for (const [step, o] of ops.entries()) {
            if (o.op === "tick") {
              clock.now += o.ms;
              continue;
            }
            const pg = pgs[o.on]!;
            let a: Outcome<unknown>;
            let b: Outcome<unknown>;
            switch (o.op) {
              case "createUser": {
                const input = { accountId: ACCOUNTS[o.account] ?? "acc_none", email: o.email, passwordHash: CHEAP };
                const x = await outcome(() => lite.createUser(input));
                const y = await outcome(() => pg.createUser(input));
                if ("ok" in x && "ok" in y) pairs.pair("usr", x.ok.id, y.ok.id);
                [a, b] = [x, y];
                break;
              }
              case "disableUser":
                a = await outcome(() => lite.disableUser(o.email));
                b = await outcome(() => pg.disableUser(o.email));
                break;
              case "signIn": {
                const password = o.right ? PASSWORD : "wrong password 1234";
                const address = `10.0.0.${o.address}`;
                const x = await outcome(() => lite.signIn(o.email, password, address));
                const y = await outcome(() => pg.signIn(o.email, password, address));
                const [sx, sy] = [x, y].map((r) => ("ok" in r && r.ok.ok ? r.ok.created : null));
                if (sx && sy) {
                  expect(sy.session.id).toBe(sessionIdOf(sy.token));
                  expect(sy.session.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
                  pairs.pair("tok", sx.token, sy.token);
                  pairs.pair("sid", sx.session.id, sy.session.id);
                  pairs.pair("csrf", sx.session.csrf_token, sy.session.csrf_token);
                  tokens.push([sx.token, sy.token]);
                }
                [a, b] = [x, y];
                break;
              }
              case "lookup": {
                const [x, y] = tokenOf(o.which);
                a = await outcome(() => lite.lookup(x));
                b = await outcome(() => pg.lookup(y));
                break;
              }
              case "end": {
                const [x, y] = tokenOf(o.which).map((k) => (typeof o.which === "string" ? k : sessionIdOf(k)));
                a = await outcome(() => lite.end(x!));
                b = await outcome(() => pg.end(y!));
                break;
              }
              case "userByEmail":
                a = await outcome(() => lite.userByEmail(o.email));
                b = await outcome(() => pg.userByEmail(o.email));
                break;
              case "users": {
                const account = o.account === undefined ? undefined : ACCOUNTS[o.account];
                // Users made in one second are in the order of their ids, which each side draws at random: each
                // list must be in that order, and the two must hold the same users.
                const x = lite.users(account);
                const y = await pg.users(account);
                for (const list of [x, y]) expect(list).toEqual(list.toSorted(byCreationThenId));
                a = { ok: x.toSorted(byPair(pairs, 0)) };
                b = { ok: y.toSorted(byPair(pairs, 1)) };
                break;
              }
            }
            const where = `step ${step} ${JSON.stringify(o)} of ${JSON.stringify(ops)}`;
            expect(pairs.norm(1, b), where).toEqual(pairs.norm(0, a));
            expect(await pgRows(pairs), `rows after ${where}`).toEqual(sqliteRows(store, pairs));
          }
        } finally {
          await store.close();
        }
      }),
      { numRuns: 100 },
    );
    expect(runs).toBeGreaterThanOrEqual(100);
  }, 240_000);

  it("results that differ are seen: a sign-in result altered on one side fails the comparison", async () => {
    // The comparison's own check: pairing must not make unequal results equal.
    const pairs = new Pairs();
    pairs.pair("tok", "x1", "y1");
    const base: SignInResult = { ok: false, refusal: "throttled", by: "email", retryAfterMs: 1000 };
    expect(pairs.norm(1, { ...base, retryAfterMs: 999, t: "y1" })).not.toEqual(pairs.norm(0, { ...base, t: "x1" }));
    expect(pairs.norm(1, { ...base, t: "y1" })).toEqual(pairs.norm(0, { ...base, t: "x1" }));
    expect(pairs.norm(1, { t: "x1" })).not.toEqual(pairs.norm(0, { t: "x1" }));
  });
});
