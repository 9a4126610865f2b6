/**
 * The PostgreSQL schema, as versioned migrations (D108). `migrate` brings a database to the newest version this
 * build knows: each migration once, in order, in one transaction under an advisory lock, so several instances
 * starting together apply it once, and a database already newer than this build is refused with a message rather
 * than used. A migration is never edited once released: a change is a new one.
 */
import type { Postgres } from "./database.ts";

/** One step of the schema. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * Version 1: every table of the server. Instants are `timestamptz`; a UTC day (of a spend or a count) is its
 * `YYYY-MM-DD` text; credits and counts are `bigint`; answers are kept whole in `bytea` with their status and
 * headers, in the same transaction as the charge (no separate answer log).
 */
const V1 = `
CREATE TABLE accounts (
  id text PRIMARY KEY, name text NOT NULL, plan text NOT NULL CHECK (plan IN ('free','paid')),
  status text NOT NULL CHECK (status IN ('active','suspended')),
  balance bigint NOT NULL DEFAULT 0 CHECK (balance >= 0), held bigint NOT NULL DEFAULT 0 CHECK (held >= 0),
  daily_limit bigint, free_calls_used bigint NOT NULL DEFAULT 0, free_calls_held bigint NOT NULL DEFAULT 0,
  spend_day text NOT NULL DEFAULT '', spend_today bigint NOT NULL DEFAULT 0,
  call_cap bigint, calls_day text NOT NULL DEFAULT '', calls_today bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL
);
CREATE INDEX accounts_by_age ON accounts(created_at, id COLLATE "C");
CREATE TABLE workspaces (
  id text PRIMARY KEY, account_id text NOT NULL REFERENCES accounts(id), name text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX workspaces_by_account ON workspaces(account_id, created_at, id COLLATE "C");
CREATE TABLE keys (
  id text PRIMARY KEY, account_id text NOT NULL REFERENCES accounts(id),
  workspace_id text NOT NULL REFERENCES workspaces(id), hash text NOT NULL UNIQUE, prefix text NOT NULL,
  name text NOT NULL, permissions text NOT NULL,
  status text NOT NULL CHECK (status IN ('active','suspended','revoked')),
  daily_limit bigint, spend_day text NOT NULL DEFAULT '', spend_today bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL, expires_at timestamptz, revoked_at timestamptz, exposed_at timestamptz,
  -- the order keys were made in (the embedded store's rowid): of keys made in the same second, the first is found
  seq bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX keys_by_prefix ON keys(prefix);
CREATE INDEX keys_by_account ON keys(account_id, created_at, id COLLATE "C");
CREATE TABLE ledger (
  id bigserial PRIMARY KEY, account_id text NOT NULL REFERENCES accounts(id),
  kind text NOT NULL CHECK (kind IN ('grant','charge')), amount bigint NOT NULL CHECK (amount > 0),
  key_id text, run_id text, note text, day text NOT NULL, created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX ledger_one_charge_per_run ON ledger(run_id) WHERE kind = 'charge';
CREATE INDEX ledger_by_account_day ON ledger(account_id, day);
CREATE TABLE holds (
  run_id text PRIMARY KEY, account_id text NOT NULL REFERENCES accounts(id), key_id text NOT NULL,
  amount bigint NOT NULL CHECK (amount >= 0), calls bigint NOT NULL, free_plan boolean NOT NULL, day text NOT NULL,
  state text NOT NULL CHECK (state IN ('held','captured','released')), captured bigint NOT NULL DEFAULT 0,
  owner text NOT NULL, created_at timestamptz NOT NULL, ended_at timestamptz
);
CREATE INDEX holds_held_by_owner ON holds(owner) WHERE state = 'held';
CREATE INDEX holds_held_by_key ON holds(key_id) WHERE state = 'held';
CREATE INDEX holds_held_by_account ON holds(account_id) WHERE state = 'held';
CREATE TABLE owners (
  id text PRIMARY KEY, host text NOT NULL, pid integer NOT NULL, started_at timestamptz NOT NULL,
  lease_until timestamptz NOT NULL
);
CREATE TABLE runs (
  id text PRIMARY KEY, handle text UNIQUE, key_id text NOT NULL, account_id text NOT NULL, workspace_id text NOT NULL,
  operation text NOT NULL, request_id text NOT NULL, shape text NOT NULL,
  state text NOT NULL CHECK (state IN ('running','finished','broken')),
  quote bigint NOT NULL, charged bigint NOT NULL DEFAULT 0, http_status integer, headers jsonb, answer bytea,
  waves integer, owner text, started_at timestamptz NOT NULL, ended_at timestamptz, expires_at timestamptz
);
CREATE INDEX runs_running_by_owner ON runs(owner) WHERE state = 'running';
CREATE TABLE idempotency (
  key_id text NOT NULL, idem_key text NOT NULL, fingerprint text NOT NULL,
  state text NOT NULL CHECK (state IN ('running','done')), run_id text, owner text NOT NULL,
  http_status integer, headers jsonb, answer bytea, created_at timestamptz NOT NULL, expires_at timestamptz,
  PRIMARY KEY (key_id, idem_key)
);
CREATE INDEX idempotency_running_by_owner ON idempotency(owner) WHERE state = 'running';
CREATE INDEX idempotency_expiry ON idempotency(expires_at) WHERE state = 'done';
CREATE TABLE meta (name text PRIMARY KEY, value text NOT NULL);
CREATE TABLE schedules (
  id text PRIMARY KEY, workspace_id text NOT NULL, account_id text NOT NULL, key_id text NOT NULL,
  body text NOT NULL, params text NOT NULL, every text NOT NULL CHECK (every IN ('1h','6h','1d')),
  status text NOT NULL CHECK (status IN ('active','paused')), paused_reason text,
  created_at timestamptz NOT NULL, next_run_at timestamptz NOT NULL, last_run text, last_run_id text,
  claimed_run_at timestamptz
);
CREATE INDEX schedules_by_workspace ON schedules(workspace_id);
CREATE INDEX schedules_due ON schedules(next_run_at);
CREATE INDEX schedules_by_last_run ON schedules(last_run_id) WHERE last_run_id IS NOT NULL;
CREATE TABLE follower_readings (
  platform text NOT NULL, account_id text NOT NULL, t bigint NOT NULL, value bigint NOT NULL,
  PRIMARY KEY (platform, account_id, t)
);
CREATE TABLE users (
  id text PRIMARY KEY, account_id text NOT NULL REFERENCES accounts(id), email text NOT NULL UNIQUE,
  password_hash text NOT NULL, created_at timestamptz NOT NULL, disabled boolean NOT NULL DEFAULT false
);
CREATE TABLE sessions (
  id text PRIMARY KEY, user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE, csrf_token text NOT NULL,
  created_at timestamptz NOT NULL, last_seen_at timestamptz NOT NULL, expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_by_user ON sessions(user_id);
CREATE INDEX sessions_by_expiry ON sessions(expires_at);
CREATE TABLE sign_in_failures (
  id bigserial PRIMARY KEY, email text NOT NULL, address text NOT NULL, at timestamptz NOT NULL
);
CREATE INDEX sign_in_failures_email ON sign_in_failures(email, at);
CREATE INDEX sign_in_failures_address ON sign_in_failures(address, at);
CREATE INDEX sign_in_failures_at ON sign_in_failures(at);
`;

/** Every migration, oldest first. */
export const MIGRATIONS: readonly Migration[] = [{ version: 1, name: "initial", sql: V1 }];

/** The advisory lock that makes one instance at a time migrate (an arbitrary 64-bit constant: "sdgw mig"). */
const MIGRATE_LOCK = "7306926204398691687";

/** A database whose schema is newer than this build knows, or otherwise cannot be used. */
export class SchemaError extends Error {
  override readonly name = "SchemaError";
}

/** What `migrate` did: the versions it applied now, and the version the database is at. */
export interface MigrationReport {
  applied: number[];
  version: number;
}

/**
 * Brings the database to the newest version of `migrations`, each once, under an advisory lock held by the
 * transaction (instances starting together wait for the first, then find nothing to do).
 *
 * @throws {@link SchemaError} when the database is at a version this build does not know (a newer server migrated
 * it): use that server, or a build at least as new.
 */
export async function migrate(db: Postgres, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationReport> {
  return db.tx(async (sql) => {
    await sql.query("SELECT pg_advisory_xact_lock($1)", [MIGRATE_LOCK]);
    await sql.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    const row = await sql.one<{ v: number | null }>("SELECT max(version) AS v FROM schema_migrations");
    const at = row?.v ?? 0;
    const newest = migrations.at(-1)?.version ?? 0;
    if (at > newest)
      throw new SchemaError(
        `the database's schema is at version ${at}, newer than this server knows (${newest}): run a server at least as new as the one that migrated it`,
      );
    const applied: number[] = [];
    for (const m of migrations) {
      if (m.version <= at) continue;
      await sql.query(m.sql);
      await sql.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
      applied.push(m.version);
    }
    return { applied, version: Math.max(at, newest) };
  });
}
