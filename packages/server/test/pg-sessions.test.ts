/**
 * Console users and sessions on PostgreSQL (`PgSessions`, D82–D85 over D108): a differential test against the
 * embedded store's `Sessions` (the same generated operations give the same results and leave the same rows, with ids
 * and tokens paired by when they were made), and three instances on one database: one user per email whatever the
 * race, throttling counted across instances, a session ended on one refused by the others at once. Needs PostgreSQL
 * (see pg-helpers.ts).
 */
import { randomBytes, scryptSync } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionConfig } from "../src/config.ts";
import { Postgres } from "../src/storage/postgres/database.ts";
import { migrate } from "../src/storage/postgres/migrations.ts";
import { PgSessions } from "../src/storage/postgres/sessions.ts";
import { Sessions } from "../src/storage/sqlite/sessions.ts";
import { LAST_SEEN_EVERY_MS } from "../src/storage/sessions.ts";
import {
  hashPasswordSync,
  type SignInResult,
  type UserRecord,
  sessionIdOf,
  verifyPassword,
} from "../src/storage/sessions.ts";
import { Store } from "../src/storage/sqlite/store.ts";
import { pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";

const T0 = Date.UTC(2026, 10, 25, 9, 0, 0);
const MINUTE = 60_000;
const PASSWORD = "correct horse battery staple";
/** Small limits and lifetimes, so that generated sequences reach them. */
const CONFIG: SessionConfig = {
  idleMs: 30 * MINUTE,
  lifetimeMs: 2 * 3600_000,
  failuresPerEmail: 3,
  failuresPerAddress: 4,
  failureWindowMs: 10 * MINUTE,
};
const ACCOUNTS = ["acc_diff_a", "acc_diff_b"];

/**
 * A hash in `hashPasswordSync`'s format at the lowest cost `verifyPassword` takes (N = 16, r = 1), so that the
 * generated sign-ins check passwords quickly. The format and the check are the module's; only the cost is the test's.
 */
function cheapHash(password: string): string {
  const salt = randomBytes(16);
  const key = scryptSync(password.normalize("NFC"), salt, 32, { N: 16, r: 1, p: 1 });
  return `scrypt$16$1$1$${salt.toString("base64url")}$${key.toString("base64url")}`;
}
const CHEAP = cheapHash(PASSWORD);

let t: TestDatabase;

beforeAll(async () => {
  t = await testDatabase("sessions");
  for (const id of ACCOUNTS)
    await t.instances[0]!.query(
      "INSERT INTO accounts (id, name, plan, status, created_at) VALUES ($1, $1, 'paid', 'active', $2)",
      [id, new Date(T0).toISOString()],
    );
});
afterAll(() => t?.drop());

/** One `PgSessions` per instance, on one clock. */
const pgSessions = (clock: { now: number }, config = CONFIG) =>
  t.instances.map((db) => new PgSessions({ db, now: () => clock.now, config }));

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
  const db = t.instances[0]!;
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
        await t.instances[0]!.query("TRUNCATE sessions, users, sign_in_failures RESTART IDENTITY");
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

  it("users() lists the users of one second by id byte by byte, as SQLite does, on a database whose collation is not C", async () => {
    // The differential test's database may sort text byte by byte already (a C locale): this one does not.
    const name = `${t.name}_icu`;
    await t.admin.query(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`);
    const db = new Postgres(pgUrl(name), { max: 2 });
    try {
      await migrate(db);
      await db.query(
        "INSERT INTO accounts (id, name, plan, status, created_at) VALUES ($1, $1, 'paid', 'active', $2)",
        [ACCOUNTS[0], new Date(T0).toISOString()],
      );
      const s = new PgSessions({ db, now: () => T0 + 500, config: CONFIG });
      for (let k = 0; k < 24; k++)
        await s.createUser({ accountId: ACCOUNTS[0]!, email: `order-${k}@example.com`, passwordHash: CHEAP });
      const ids = (await s.users()).map((u) => u.id);
      expect(ids).toHaveLength(24);
      expect(ids).toEqual(ids.toSorted()); // UTF-16 order: byte order for these ASCII ids
      expect((await s.users(ACCOUNTS[0])).map((u) => u.id)).toEqual(ids);
      // The database's own order of these ids is another (mixed case: "a" before "B"), or this test proves nothing.
      const own = await db.query<{ id: string }>("SELECT id FROM users ORDER BY id");
      expect(own.map((r) => r.id)).not.toEqual(ids);
    } finally {
      await db.close();
      await t.admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  });

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

// ------------------------------------------------------------------------------------------ several instances

let seq = 0;
/** An email no other test uses. */
const freshEmail = (label: string) => `${label}-${++seq}@example.com`;

describe("PgSessions on three instances", () => {
  it("one email created at once on three instances (any case, twice each): exactly one user, the others refused in Sessions' words", async () => {
    const pgs = pgSessions({ now: T0 });
    for (let round = 0; round < 5; round++) {
      const email = freshEmail("race");
      const variants = [email, email.toUpperCase(), ` ${email.replace("race", "Race")}`];
      const results = await Promise.allSettled(
        [0, 1, 2, 0, 1, 2].map((i, k) =>
          pgs[i]!.createUser({ accountId: ACCOUNTS[k % 2]!, email: variants[k % 3]!, passwordHash: CHEAP }),
        ),
      );
      const made = results.filter((r) => r.status === "fulfilled");
      expect(made, `round ${round}`).toHaveLength(1);
      for (const r of results)
        if (r.status === "rejected") expect((r.reason as Error).message).toBe(`a user with the email ${email} exists`);
      const rows = await t.instances[2]!.query<{ id: string }>("SELECT id FROM users WHERE lower(email) = $1", [email]);
      expect(rows.map((r) => r.id)).toEqual([made[0]!.value.id]);
      expect(await pgs[1]!.userByEmail(email.toUpperCase())).toEqual(made[0]!.value);
    }
  });

  it("throttling counts the failures of every instance: by email, by address, and for attempts sent together", async () => {
    const clock = { now: T0 };
    const pgs = pgSessions(clock);
    const email = freshEmail("throttle");
    await pgs[0]!.createUser({ accountId: ACCOUNTS[0]!, email, passwordHash: CHEAP });
    // By email: one failure on each instance (from three addresses) reaches the limit of 3.
    for (const i of [0, 1, 2]) {
      clock.now += 1000;
      expect(await pgs[i]!.signIn(email, "wrong password 1234", `10.1.0.${i}`)).toEqual({
        ok: false,
        refusal: "invalid",
      });
    }
    for (const i of [0, 1, 2])
      expect(await pgs[i]!.signIn(email, PASSWORD, "10.1.1.1")).toEqual({
        ok: false,
        refusal: "throttled",
        by: "email",
        retryAfterMs: CONFIG.failureWindowMs - 2000,
      });
    clock.now = T0 + 1000 + CONFIG.failureWindowMs; // the first failure leaves the window
    const ok = await pgs[1]!.signIn(email, PASSWORD, "10.1.1.1");
    expect(ok.ok).toBe(true);

    // By address: as many failures as the limit from one address, each for another email, over the three instances.
    for (let k = 0; k < CONFIG.failuresPerAddress; k++)
      expect((await pgs[k % 3]!.signIn(freshEmail("nobody"), "whatever it is", "10.2.0.1")).ok).toBe(false);
    const byAddress = await pgs[2]!.signIn(email, PASSWORD, "10.2.0.1");
    expect(byAddress).toMatchObject({ ok: false, refusal: "throttled", by: "address" });
    expect((await pgs[0]!.signIn(email, PASSWORD, "10.2.0.2")).ok).toBe(true);

    // Together: 12 wrong attempts for one email at once, four on each instance, from 12 addresses: exactly the
    // limit are checked (and counted), the rest are refused before their passwords are.
    const together = freshEmail("together");
    await pgs[2]!.createUser({ accountId: ACCOUNTS[1]!, email: together, passwordHash: CHEAP });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, k) => pgs[k % 3]!.signIn(together, `wrong password ${k}`, `10.3.0.${k}`)),
    );
    const refusals = answers.map((a) => (a.ok ? "ok" : a.refusal));
    expect(refusals.filter((r) => r === "invalid")).toHaveLength(CONFIG.failuresPerEmail);
    expect(refusals.filter((r) => r === "throttled")).toHaveLength(12 - CONFIG.failuresPerEmail);
    const counted = await t.instances[0]!.one<{ n: number }>(
      "SELECT count(*)::int AS n FROM sign_in_failures WHERE email = $1",
      [together],
    );
    expect(counted?.n).toBe(CONFIG.failuresPerEmail);
  });

  it("a user disabled on another instance while its password is checked gets no session", async () => {
    const clock = { now: T0 };
    const email = freshEmail("meanwhile");
    const [real, other] = [
      t.instances[0]!,
      new PgSessions({ db: t.instances[1]!, now: () => clock.now, config: CONFIG }),
    ];
    // Instance 0's pool, except that right after the sign-in reads the user, instance 1 disables it.
    const db = {
      query: real.query.bind(real),
      tx: real.tx.bind(real),
      async one(text: string, params?: readonly unknown[]) {
        const row = await real.one(text, params);
        if (text.startsWith("SELECT * FROM users WHERE email")) await other.disableUser(email);
        return row;
      },
    } as unknown as Postgres;
    const meanwhile = new PgSessions({ db, now: () => clock.now, config: CONFIG });
    await other.createUser({ accountId: ACCOUNTS[0]!, email, passwordHash: CHEAP });
    expect(await meanwhile.signIn(email, PASSWORD, "10.6.0.1")).toEqual({ ok: false, refusal: "disabled" });
    const sessions = await real.query("SELECT 1 FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = $1", [
      email,
    ]);
    expect(sessions).toHaveLength(0);
  });

  it("lifetimes past the year 9999, up to the longest the configuration takes, are stored and read", async () => {
    const clock = { now: T0 };
    const YEAR = 365 * 86_400_000;
    const pgs = pgSessions(clock, { ...CONFIG, idleMs: 10_000 * YEAR, lifetimeMs: Number.MAX_SAFE_INTEGER });
    const email = freshEmail("forever");
    await pgs[0]!.createUser({ accountId: ACCOUNTS[0]!, email, passwordHash: CHEAP });
    const signedIn = await pgs[0]!.signIn(email, PASSWORD, "10.5.0.1");
    if (!signedIn.ok) throw new Error(`not signed in: ${JSON.stringify(signedIn)}`);
    clock.now += 100 * YEAR;
    const found = await pgs[1]!.lookup(signedIn.created.token);
    expect(found?.session.last_seen_at).toBe(clock.now);
    expect(found?.idleExpiresAt).toBe(clock.now + 10_000 * YEAR);
    clock.now += 10_000 * YEAR;
    expect(await pgs[2]!.lookup(signedIn.created.token)).toBeNull();
  });

  it("a session made on one instance is read on the others; signed out or its user disabled on one, the others refuse it at once", async () => {
    const clock = { now: T0 };
    const pgs = pgSessions(clock);
    const email = freshEmail("signout");
    // A real hash (the server's cost), made once and used by both users.
    const hash = hashPasswordSync(PASSWORD);
    await pgs[0]!.createUser({ accountId: ACCOUNTS[0]!, email, passwordHash: hash });
    const signedIn = await pgs[0]!.signIn(email, PASSWORD, "10.4.0.1");
    if (!signedIn.ok) throw new Error(`not signed in: ${JSON.stringify(signedIn)}`);
    const { token, session } = signedIn.created;
    for (const p of pgs) expect((await p.lookup(token))?.session).toEqual(session);
    // last_seen_at moved by one instance is what the others read.
    clock.now += LAST_SEEN_EVERY_MS;
    expect((await pgs[1]!.lookup(token))?.session.last_seen_at).toBe(clock.now);
    clock.now += 1000;
    expect(await pgs[2]!.lookup(token)).toMatchObject({
      session: { last_seen_at: T0 + LAST_SEEN_EVERY_MS },
      idleExpiresAt: T0 + LAST_SEEN_EVERY_MS + CONFIG.idleMs,
    });
    // Signed out on instance 2: refused on 0 and 1 at once; a second sign-out finds nothing.
    expect(await pgs[2]!.end(session.id)).toBe(true);
    expect(await pgs[0]!.lookup(token)).toBeNull();
    expect(await pgs[1]!.lookup(token)).toBeNull();
    expect(await pgs[1]!.end(session.id)).toBe(false);

    // Disabled on instance 1: the sessions made on 0 and 2 stop everywhere; its right password says "disabled".
    const other = freshEmail("disabled");
    await pgs[1]!.createUser({ accountId: ACCOUNTS[1]!, email: other, passwordHash: hash });
    const s0 = await pgs[0]!.signIn(other, PASSWORD, "10.4.0.2");
    const s2 = await pgs[2]!.signIn(other, PASSWORD, "10.4.0.3");
    if (!s0.ok || !s2.ok) throw new Error("not signed in");
    expect(await pgs[1]!.lookup(s2.created.token)).not.toBeNull();
    const disabled = await pgs[1]!.disableUser(other.toUpperCase());
    expect(disabled).toMatchObject({ user: { email: other, disabled: 1 }, sessionsEnded: 2 });
    for (const p of pgs) {
      expect(await p.lookup(s0.created.token)).toBeNull();
      expect(await p.lookup(s2.created.token)).toBeNull();
    }
    expect(await pgs[2]!.signIn(other, PASSWORD, "10.4.0.4")).toEqual({ ok: false, refusal: "disabled" });
  }, 30_000);
});
