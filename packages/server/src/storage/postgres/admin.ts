/** The admin CLI's view of a PostgreSQL database (D108): accounts and keys, the pause, console users. */
import { defaultConfig } from "../../config.ts";
import type { GatewayPorts } from "../port.ts";
import type { Pause } from "../service.ts";
import { PgAccounts } from "./accounts.ts";
import { PgCalls } from "./calls.ts";
import { Postgres } from "./database.ts";
import { migrate } from "./migrations.ts";
import { PgSessions } from "./sessions.ts";

/** Opens the database for `sdgw-admin` (migrating it to this build's schema if needed): no lease, no runs. */
export async function openPgAdmin(
  url: string,
): Promise<Pick<GatewayPorts, "accounts" | "service" | "sessions"> & { close(): Promise<void> }> {
  const db = new Postgres(url, { max: 2, applicationName: "sdgw-admin" });
  try {
    await migrate(db);
  } catch (e) {
    await db.close();
    throw e;
  }
  const config = defaultConfig({});
  const now = Date.now;
  const calls = new PgCalls({
    db,
    now,
    idempotencyTtlMs: config.idempotencyTtlMs,
    freeCalls: config.limits.freeCalls,
    owner: "admin",
  });
  return {
    accounts: new PgAccounts({ db, now }),
    sessions: new PgSessions({ db, now, config: config.sessions }),
    service: {
      paused: async (): Promise<Pause | null> => {
        const row = await db.one<{ value: string }>("SELECT value FROM meta WHERE name = 'paused'");
        return row ? (JSON.parse(row.value) as Pause) : null;
      },
      pause: (message: string) => calls.pause(message),
      unpause: () => calls.unpause(),
    },
    close: () => db.close(),
  };
}
