/** The demo account a fresh server starts with, seeded once per database: its key and a console user. */
import type { Gateway } from "./storage/sqlite/gateway.ts";
import { hashPasswordSync, newPassword } from "./storage/sessions.ts";
import { sessionsOf } from "./http/console-session.ts";

/** The demo console user's email (D89). */
export const DEMO_EMAIL = "demo@sdgw.dev";

/** What the demo seeding did: the key and the password are known only when they were created now. */
export interface DemoAccount {
  accountId: string;
  /** The demo key's secret: only on the first start (keys are shown once). */
  key: string | null;
  prefix: string;
}

/** The demo console user's sign-in: the password only when the user was created now (shown once). */
export interface DemoUser {
  email: string;
  password: string | null;
}

/** Creates the demo account (paid, 5000 credits) and its key on first start; later starts find it. */
export function seedDemo(gw: Gateway): DemoAccount {
  const existing = gw.store.get<{ value: string }>("SELECT value FROM meta WHERE name = 'demo_account'");
  let accountId: string;
  let secret: string | null = null;
  let prefix: string;
  if (existing) {
    accountId = existing.value;
    const key = gw.accounts
      .keys(accountId)
      .find((k) => k.status === "active" && !k.exposed_at && !k.name.startsWith("console:"));
    prefix = key?.prefix ?? "(no active key: sdgw-admin create-key)";
  } else {
    const { account } = gw.accounts.createAccount({ name: "Demo account", plan: "paid" });
    gw.accounts.grant(account.id, 5000, "demo credits");
    const key = gw.accounts.createKey({ accountId: account.id, name: "demo" });
    gw.store.run("INSERT INTO meta (name, value) VALUES ('demo_account', ?)", account.id);
    accountId = account.id;
    secret = key.secret;
    prefix = key.prefix;
  }
  return { accountId, key: secret, prefix };
}

/**
 * Creates the demo console user (`demo@sdgw.dev`, a random password) of the demo account when no user has that
 * email; the password is given only then (stored only as its scrypt hash). A database seeded before the console
 * existed gets its demo user on its next start.
 */
export function seedDemoUser(gw: Gateway, accountId: string): DemoUser {
  const sessions = sessionsOf(gw);
  if (sessions.userByEmail(DEMO_EMAIL)) return { email: DEMO_EMAIL, password: null };
  const password = newPassword();
  sessions.createUser({ accountId, email: DEMO_EMAIL, passwordHash: hashPasswordSync(password) });
  return { email: DEMO_EMAIL, password };
}
