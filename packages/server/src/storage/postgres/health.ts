/**
 * D113: the readiness of a gateway on PostgreSQL: its database answers and its schema is at the version this build
 * knows (`schema_migrations`), and its Redis answers when the limits are kept there. Each check is bounded
 * (`CHECK_BOUND_MS`); a database check still running when the next probe comes is shared, not started again, so
 * probes of a database that does not answer do not pile up connection attempts in the pool.
 */
import { bounded, singleFlight, type HealthCheck } from "../../ops/health.ts";
import type { Limits } from "../../limits/limits.ts";
import type { Sql } from "./database.ts";
import { MIGRATIONS } from "./migrations.ts";

/** The checks of a gateway on `db` (through its pool, as its requests go) and its `limits`. */
export function pgHealth(
  db: Sql,
  limits: Pick<Limits, "shared" | "ping">,
  migrations = MIGRATIONS,
): () => Promise<HealthCheck[]> {
  const known = Math.max(0, ...migrations.map((m) => m.version));
  const schema = singleFlight(async () => {
    const row = await db.one<{ version: number | null }>("SELECT max(version) AS version FROM schema_migrations");
    const version = row?.version ?? 0;
    if (version === known) return `schema version ${version}`;
    throw new Error(
      version > known
        ? `the database's schema is at version ${version}, newer than this build knows (${known})`
        : `the database's schema is at version ${version}, older than this build needs (${known})`,
    );
  });
  const redis = singleFlight(() => limits.ping().then(() => "answers PING"));
  return () => Promise.all([bounded("database", schema), ...(limits.shared ? [bounded("redis", redis)] : [])]);
}
