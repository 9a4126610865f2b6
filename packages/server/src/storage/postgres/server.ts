/**
 * The reference server on PostgreSQL (D108): the same HTTP app, MCP and scheduler as the embedded one, over a
 * gateway whose state several instances share. `pnpm start` with `SDGW_DATABASE_URL` runs it.
 */
import type { FastifyInstance } from "fastify";
import type { Scheduler } from "../../scheduler.ts";
import { serve } from "../../serve.ts";
import { hashPasswordSync, newPassword } from "../sessions.ts";
import { DEMO_EMAIL, type DemoAccount, type DemoUser } from "../../demo.ts";
import { createPgGateway, type PgGateway, type PgGatewayOptions } from "./gateway.ts";
import type { Lifecycle } from "../../ops/http.ts";

/** A server instance on PostgreSQL: its app, gateway and scheduler. */
export interface PgServer {
  app: FastifyInstance;
  gateway: PgGateway;
  /** Runs schedules as they fall due; each due run is claimed by one instance (ticking from `listen` on). */
  scheduler: Scheduler;
  /** Listens on `host:port` (default 127.0.0.1:8787); resolves to the base URL. */
  listen(options?: { host?: string; port?: number }): Promise<string>;
  /** D113: where it listens and whether its stop began (`readyz` answers 503 from the first moment of `close`). */
  lifecycle: Lifecycle;
  /**
   * Stops (D113): at once `readyz` answers 503, new connections are refused and a request that still arrives on an
   * open one is answered `503 temporarily_unavailable`; then waits up to `drainMs` (default 2000; `pnpm start`:
   * `SDGW_SHUTDOWN_GRACE_MS`) for runs in flight, cuts the connections still open, ends this instance's lease (a
   * run still in flight is ended broken, uncharged, by another instance at its next heartbeat) and closes Redis
   * and the pool.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

/** Opens a gateway on PostgreSQL (migrating it if needed) and builds the server over it. */
export async function createPgServer(options: PgGatewayOptions): Promise<PgServer> {
  const gateway = await createPgGateway(options);
  const served = serve(gateway, {
    sweep: () => gateway.runner.sweep(),
    drain: () => gateway.runner.drain(),
    release: () => gateway.close({ drainMs: 0 }),
  });
  return { ...served, gateway };
}

/**
 * The demo account (paid, 5000 credits) and its key, made once for the database whoever starts first: its id is
 * fixed (`acc_demo`), so instances starting together make it once; the key's secret is given to the one that made
 * it.
 */
export async function seedPgDemo(gw: PgGateway): Promise<DemoAccount> {
  const accountId = "acc_demo";
  const made = await gw.db.query(
    "INSERT INTO meta (name, value) VALUES ('demo_account', $1) ON CONFLICT (name) DO NOTHING RETURNING 1",
    [accountId],
  );
  if (made.length === 1) {
    await gw.accounts.createAccount({ id: accountId, name: "Demo account", plan: "paid" });
    await gw.accounts.grant(accountId, 5000, "demo credits");
    const key = await gw.accounts.createKey({ accountId, name: "demo" });
    return { accountId, key: key.secret, prefix: key.prefix };
  }
  const keys = await gw.accounts.keys(accountId);
  const key = keys.find((k) => k.status === "active" && !k.exposed_at && !k.name.startsWith("console:"));
  return { accountId, key: null, prefix: key?.prefix ?? "(no active key: sdgw-admin create-key)" };
}

/** The demo console user (`demo@sdgw.dev`), made once for the database; the password only to the one that made it. */
export async function seedPgDemoUser(gw: PgGateway, accountId: string): Promise<DemoUser> {
  if (await gw.sessions.userByEmail(DEMO_EMAIL)) return { email: DEMO_EMAIL, password: null };
  const password = newPassword();
  try {
    await gw.sessions.createUser({ accountId, email: DEMO_EMAIL, passwordHash: hashPasswordSync(password) });
  } catch (e) {
    if (await gw.sessions.userByEmail(DEMO_EMAIL)) return { email: DEMO_EMAIL, password: null }; // another instance
    throw e;
  }
  return { email: DEMO_EMAIL, password };
}
