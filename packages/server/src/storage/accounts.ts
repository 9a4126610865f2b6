/**
 * Accounts, workspaces and keys as every store keeps them (the embedded `Accounts`, PostgreSQL's `PgAccounts`):
 * the records both answer with, field for field, so that the HTTP layer and the tests read them alike.
 */
import { isoSeconds, keyPrefix } from "@sdgw/engine";
import { hashKey } from "../ids.ts";

/** An account as stored. */
export interface AccountRecord {
  id: string;
  name: string;
  plan: "free" | "paid";
  status: "active" | "suspended";
  balance: number;
  held: number;
  daily_limit: number | null;
  free_calls_used: number;
  free_calls_held: number;
  /** The UTC day of `spend_today`. */
  spend_day: string;
  /** Credits charged on `spend_day`. */
  spend_today: number;
  created_at: string;
  /** The most calls the account may start per UTC day (D74), or `null` for no cap. */
  call_cap: number | null;
  /** The UTC day of `calls_today`. */
  calls_day: string;
  /** Calls started on `calls_day` while the account had a cap. */
  calls_today: number;
}

/** A key as stored (no secret: only its hash and prefix). */
export interface KeyRecord {
  id: string;
  account_id: string;
  workspace_id: string;
  hash: string;
  prefix: string;
  name: string;
  permissions: string;
  status: "active" | "suspended" | "revoked";
  daily_limit: number | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  exposed_at: string | null;
  /** The UTC day of `spend_today`. */
  spend_day: string;
  /** Credits charged on `spend_day`. */
  spend_today: number;
}

/** A workspace as stored. */
export interface WorkspaceRecord {
  id: string;
  account_id: string;
  name: string;
  created_at: string;
}

/** A key just created: the only moment its secret is known. */
export interface CreatedKey {
  id: string;
  secret: string;
  prefix: string;
  accountId: string;
  workspaceId: string;
}

/** What makes an account (`createAccount`): its name, plan (default paid), limits, and optionally its id. */
export interface NewAccount {
  name: string;
  plan?: "free" | "paid";
  dailyLimit?: number | null;
  callCap?: number | null;
  /** A fixed id (the demo account's); one taken already is refused. Default: a new one. */
  id?: string;
}

/** What makes a key (`createKey`): its account, name, permissions, limits, and optionally its secret. */
export interface NewKey {
  accountId: string;
  name?: string;
  permissions?: string[];
  dailyLimit?: number | null;
  expiresAt?: string | null;
  /** A fixed secret (tests, the conformance kit's keys); default: a new random one. */
  secret?: string;
}

/**
 * A new key's stored fields but its id, account, workspace and expiry, in the order of the `keys` columns `hash,
 * prefix, name, permissions, daily_limit, created_at`: its secret only as SHA-256 and a display prefix, named
 * `default` and allowed `read_data` unless said otherwise, made `now`.
 */
export function newKeyValues(
  secret: string,
  input: NewKey,
  now: number,
): [string, string, string, string, number | null, string] {
  return [
    hashKey(secret),
    keyPrefix(secret),
    input.name ?? "default",
    JSON.stringify(input.permissions ?? ["read_data"]),
    input.dailyLimit ?? null,
    isoSeconds(now),
  ];
}
