/**
 * Console users and sessions on PostgreSQL (`PgSessions`, D82–D85 over D108) in its own terms: a database whose
 * collation is not C, and three instances on one database: one user per email whatever the race, throttling counted
 * across instances, a session ended on one refused by the others at once. (What both engines do, and the
 * differential test against the embedded store's `Sessions`, is the storage suite's: storage/sessions.test.ts.)
 * Needs PostgreSQL (see pg-helpers.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Postgres } from "../src/storage/postgres/database.ts";
import { migrate } from "../src/storage/postgres/migrations.ts";
import { PgSessions } from "../src/storage/postgres/sessions.ts";
import { hashPasswordSync, LAST_SEEN_EVERY_MS } from "../src/storage/sessions.ts";
import { pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";
import { ACCOUNTS, CHEAP, CONFIG, PASSWORD, T0 } from "./storage/session-fixtures.ts";

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
// ------------------------------------------------------------------------------------------ collation

describe("PgSessions on a database of another collation", () => {
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
  }, 120_000);
});
