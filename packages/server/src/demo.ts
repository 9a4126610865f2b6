/** The demo account a fresh server starts with, seeded once per database. */
import type { Gateway } from "./gateway.ts";

/** What the demo seeding did: the key is known only when it was created now. */
export interface DemoAccount {
  accountId: string;
  /** The demo key's secret: only on the first start (keys are shown once). */
  key: string | null;
  prefix: string;
}

/** Creates the demo account (paid, 5000 credits) and its key on first start; later starts find it. */
export function seedDemo(gw: Gateway): DemoAccount {
  const existing = gw.store.get<{ value: string }>("SELECT value FROM meta WHERE name = 'demo_account'");
  if (existing) {
    const key = gw.accounts.keys(existing.value).find((k) => k.status === "active" && !k.exposed_at);
    return { accountId: existing.value, key: null, prefix: key?.prefix ?? "(no active key: sdgw-admin create-key)" };
  }
  const { account } = gw.accounts.createAccount({ name: "Demo account", plan: "paid" });
  gw.accounts.grant(account.id, 5000, "demo credits");
  const key = gw.accounts.createKey({ accountId: account.id, name: "demo" });
  gw.store.run("INSERT INTO meta (name, value) VALUES ('demo_account', ?)", account.id);
  return { accountId: account.id, key: key.secret, prefix: key.prefix };
}
