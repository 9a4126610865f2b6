/**
 * Accounts, workspaces and keys on PostgreSQL, for several instances on one database (D108): the counterpart of the
 * embedded store's `Accounts`, method for method, with the same records back (instants as `YYYY-MM-DDTHH:MM:SSZ`
 * text, credits and counts as numbers).
 *
 * - **No caches.** Several instances write the same rows, so every read goes to the database, one indexed query
 *   (a key by hash, by id or prefix; an account by id; a key with its account in one join). The one exception is
 *   `knownKeyAndAccount` (D186): what authentication last found, which only a data call uses, and only because the
 *   statement that admits it checks the key's row again.
 * - **One statement or one locked transaction per write.** A setter is one conditional `UPDATE` (revoking twice, on
 *   two instances, revokes once); a key is made by one `INSERT … SELECT` from its account's default workspace; a
 *   secret made twice is refused by the unique index on its hash, never by a read first. Setting a key's daily limit
 *   locks the key's row before it sums today's charges, so a charge committed meanwhile by another instance is
 *   counted once, either in the sum or by its own update after.
 * - **Expiry is an instant.** `expires_at` is `timestamptz`: the text given is read as `Date.parse` reads it (as
 *   authentication does) and comes back in UTC, to the second (or the millisecond when it has one); text that is not
 *   a date is refused, where the embedded store would keep it and never expire the key.
 */
import { isoSeconds, keyPrefix } from "@sdgw/engine";
import { hashKey, newId, newKeySecret } from "../../ids.ts";
import {
  type AccountRecord,
  type CreatedKey,
  type KeyRecord,
  type NewAccount,
  type NewKey,
  newKeyValues,
  type WorkspaceRecord,
} from "../accounts.ts";
import type { Postgres, Sql } from "./database.ts";
import { storable } from "./text.ts";

/** Dependencies of {@link PgAccounts}. */
export interface PgAccountsDeps {
  /** This instance's pool on the shared database. */
  db: Postgres;
  /** The clock (ms since the epoch): creation, revocation and exposure instants and the UTC day come from it. */
  now: () => number;
}

/** The columns of `accounts`, in the embedded store's order. */
const ACCOUNT_COLUMNS = [
  "id",
  "name",
  "plan",
  "status",
  "balance",
  "held",
  "daily_limit",
  "free_calls_used",
  "free_calls_held",
  "spend_day",
  "spend_today",
  "created_at",
  "call_cap",
  "calls_day",
  "calls_today",
] as const;

/** The columns of `keys` a record has (not `seq`), in the embedded store's order. */
const KEY_COLUMNS = [
  "id",
  "account_id",
  "workspace_id",
  "hash",
  "prefix",
  "name",
  "permissions",
  "status",
  "daily_limit",
  "created_at",
  "expires_at",
  "revoked_at",
  "exposed_at",
  "spend_day",
  "spend_today",
] as const;

const ACCOUNT = ACCOUNT_COLUMNS.join(", ");
const KEY = KEY_COLUMNS.join(", ");
const WORKSPACE = "id, account_id, name, created_at";

/** A row as `pg` gives it: instants are `Date`s. */
type Instants<T, K extends keyof T> = Omit<T, K> & { [P in K]: T[P] extends string ? Date : Date | null };
type AccountRow = Instants<AccountRecord, "created_at">;
type KeyRow = Instants<KeyRecord, "created_at" | "expires_at" | "revoked_at" | "exposed_at">;
type WorkspaceRow = Instants<WorkspaceRecord, "created_at">;

/** An instant as the embedded store writes it (to the second); one given with milliseconds keeps them. */
function instantText(at: Date): string {
  const ms = at.getTime();
  return ms % 1000 === 0 ? isoSeconds(ms) : at.toISOString();
}

const textOrNull = (at: Date | null) => (at ? instantText(at) : null);

function accountOf(row: AccountRow): AccountRecord {
  return { ...row, created_at: instantText(row.created_at) };
}

function keyOf(row: KeyRow): KeyRecord {
  return {
    ...row,
    created_at: instantText(row.created_at),
    expires_at: textOrNull(row.expires_at),
    revoked_at: textOrNull(row.revoked_at),
    exposed_at: textOrNull(row.exposed_at),
  };
}

function workspaceOf(row: WorkspaceRow): WorkspaceRecord {
  return { ...row, created_at: instantText(row.created_at) };
}

/** The instant of an expiry as text PostgreSQL reads unambiguously, or `null` for never. */
function expiry(expiresAt: string | null | undefined): string | null {
  if (expiresAt == null) return null;
  const ms = Date.parse(expiresAt);
  if (Number.isNaN(ms))
    throw new RangeError(`expiresAt ${JSON.stringify(expiresAt)} is not a date and time (RFC 3339)`);
  return new Date(ms).toISOString();
}

/** The fields of one table in a joined row whose columns are named `<prefix><column>`. */
function picked<T>(row: Record<string, unknown>, prefix: string, columns: readonly string[]): T {
  const out: Record<string, unknown> = {};
  for (const c of columns) out[c] = row[prefix + c];
  return out as T;
}

const KEY_AND_ACCOUNT =
  `SELECT ${KEY_COLUMNS.map((c) => `k.${c} AS k_${c}`).join(
    ", ",
  )}, ${ACCOUNT_COLUMNS.map((c) => `a.${c} AS a_${c}`).join(", ")} FROM keys k ` +
  `JOIN accounts a ON a.id = k.account_id WHERE k.hash = $1`;

/** How many keys `knownKeyAndAccount` remembers before it starts over (D101's bound). */
const KNOWN_KEYS = 4096;

/** Accounts, workspaces, keys and grants on PostgreSQL: `Accounts`' methods, each a Promise, with no caches (but D186's). */
export class PgAccounts {
  private readonly deps: PgAccountsDeps;
  /** What `keyAndAccount` last found, by hash (D186); at most `KNOWN_KEYS`, then it starts over (as D101's hashes). */
  private readonly known = new Map<string, { key: KeyRecord; account: AccountRecord }>();

  /** Accounts on the database of `deps.db` (migrated), dated by `deps.now`. */
  constructor(deps: PgAccountsDeps) {
    this.deps = deps;
  }

  /** Creates an account with its default workspace, in one transaction; an `id` taken already is refused. */
  createAccount(input: NewAccount): Promise<{ account: AccountRecord; workspace: WorkspaceRecord }> {
    const at = isoSeconds(this.deps.now());
    const id = input.id ?? newId("acc");
    const ws = newId("ws");
    return this.deps.db.tx(async (sql) => {
      const account = await sql.one<AccountRow>(
        `INSERT INTO accounts (id, name, plan, status, daily_limit, call_cap, created_at) VALUES ($1, $2, $3, 'active', $4, $5, $6) RETURNING ${ACCOUNT}`,
        [id, input.name, input.plan ?? "paid", input.dailyLimit ?? null, input.callCap ?? null, at],
      );
      const workspace = await sql.one<WorkspaceRow>(
        `INSERT INTO workspaces (id, account_id, name, created_at) VALUES ($1, $2, 'Default', $3) RETURNING ${WORKSPACE}`,
        [ws, id, at],
      );
      return { account: accountOf(account!), workspace: workspaceOf(workspace!) };
    });
  }

  /** The account of an id as stored now, or `undefined`. */
  async account(id: string): Promise<AccountRecord | undefined> {
    if (!storable(id)) return undefined;
    const row = await this.deps.db.one<AccountRow>(`SELECT ${ACCOUNT} FROM accounts WHERE id = $1`, [id]);
    return row && accountOf(row);
  }

  /** Every account, oldest first (accounts made in the same second by id). */
  async accounts(): Promise<AccountRecord[]> {
    const rows = await this.deps.db.query<AccountRow>(
      `SELECT ${ACCOUNT} FROM accounts ORDER BY created_at, id COLLATE "C"`,
    );
    return rows.map(accountOf);
  }

  /** The workspace of an id, or `undefined`. */
  async workspace(id: string): Promise<WorkspaceRecord | undefined> {
    if (!storable(id)) return undefined;
    const row = await this.deps.db.one<WorkspaceRow>(`SELECT ${WORKSPACE} FROM workspaces WHERE id = $1`, [id]);
    return row && workspaceOf(row);
  }

  /** The default (first) workspace of an account, where its keys are made. */
  async workspaceOf(accountId: string): Promise<WorkspaceRecord | undefined> {
    const row = await this.deps.db.one<WorkspaceRow>(
      `SELECT ${WORKSPACE} FROM workspaces WHERE account_id = $1 ORDER BY created_at, id COLLATE "C" LIMIT 1`,
      [accountId],
    );
    return row && workspaceOf(row);
  }

  /**
   * Adds credits to an account: a `grant` row in the ledger and the balance, in one transaction (as `PgCalls.grant`).
   * Returns the balance after.
   *
   * @throws when `amount` is not a whole number greater than 0, or there is no such account (nothing is written).
   */
  async grant(accountId: string, amount: number, note = "grant"): Promise<number> {
    if (!Number.isSafeInteger(amount) || amount <= 0)
      throw new Error("a grant is a whole number of credits greater than 0");
    const ms = this.deps.now();
    return this.deps.db.tx(async (sql) => {
      const row = await sql.one<{ balance: number }>(
        "UPDATE accounts SET balance = balance + $2 WHERE id = $1 RETURNING balance",
        [accountId, amount],
      );
      if (!row) throw new Error(`no account ${accountId}`);
      await sql.query(
        "INSERT INTO ledger (account_id, kind, amount, note, day, created_at) VALUES ($1, 'grant', $2, $3, $4, $5)",
        [accountId, amount, note, isoSeconds(ms).slice(0, 10), new Date(ms).toISOString()],
      );
      return row.balance;
    });
  }

  /**
   * Creates a key in the account's default workspace; the returned `secret` is shown once and stored only as a
   * hash. One statement: a secret whose hash is stored already is refused by the unique index.
   *
   * @throws when there is no such account, or the secret is taken.
   */
  async createKey(input: NewKey): Promise<CreatedKey> {
    const secret = input.secret ?? newKeySecret();
    const id = newId("key");
    const expires = expiry(input.expiresAt);
    const row = await this.deps.db.one<{ workspace_id: string }>(
      `INSERT INTO keys (id, account_id, workspace_id, hash, prefix, name, permissions, status, daily_limit, created_at, expires_at)
       SELECT $1, $2, w.id, $3, $4, $5, $6, 'active', $7, $8, $9 FROM workspaces w
       WHERE w.account_id = $2 ORDER BY w.created_at, w.id COLLATE "C" LIMIT 1
       RETURNING workspace_id`,
      [id, input.accountId, ...newKeyValues(secret, input, this.deps.now()), expires],
    );
    if (!row) throw new Error(`no account ${input.accountId}`);
    return { id, secret, prefix: keyPrefix(secret), accountId: input.accountId, workspaceId: row.workspace_id };
  }

  /** The key a secret belongs to, if any. */
  async keyBySecret(secret: string): Promise<KeyRecord | undefined> {
    const row = await this.deps.db.one<KeyRow>(`SELECT ${KEY} FROM keys WHERE hash = $1`, [hashKey(secret)]);
    return row && keyOf(row);
  }

  /**
   * The key of a hash and its account (authentication), both as committed now, in one query. What it found is
   * remembered for `knownKeyAndAccount` (D186).
   */
  async keyAndAccount(hash: string): Promise<{ key: KeyRecord; account: AccountRecord } | undefined> {
    const row = await this.deps.db.one(KEY_AND_ACCOUNT, [hash]);
    if (!row) {
      this.known.delete(hash);
      return undefined;
    }
    const found = {
      key: keyOf(picked<KeyRow>(row, "k_", KEY_COLUMNS)),
      account: accountOf(picked<AccountRow>(row, "a_", ACCOUNT_COLUMNS)),
    };
    if (this.known.size >= KNOWN_KEYS && !this.known.has(hash)) this.known.clear();
    this.known.set(hash, found);
    return found;
  }

  /**
   * D186: the key of a hash and its account as `keyAndAccount` last found them in this process, without a read
   * (undefined when it did not find them or never read them). Another instance may have changed them since: a data
   * call starts on this only because the statement that admits it checks the key's row again (`PgCalls.admit`).
   */
  knownKeyAndAccount(hash: string): { key: KeyRecord; account: AccountRecord } | undefined {
    return this.known.get(hash);
  }

  /** The key of an id as stored now (hash and prefix, never the secret), or `undefined`. */
  async key(id: string): Promise<KeyRecord | undefined> {
    if (!storable(id)) return undefined;
    const row = await this.deps.db.one<KeyRow>(`SELECT ${KEY} FROM keys WHERE id = $1`, [id]);
    return row && keyOf(row);
  }

  /** Keys by id or by display prefix: the oldest that matches (of keys made in the same second, the first made). */
  async findKey(idOrPrefix: string): Promise<KeyRecord | undefined> {
    if (!storable(idOrPrefix)) return undefined;
    const row = await this.deps.db.one<KeyRow>(
      `SELECT ${KEY} FROM keys WHERE id = $1 OR prefix = $1 ORDER BY created_at, seq LIMIT 1`,
      [idOrPrefix],
    );
    return row && keyOf(row);
  }

  /** The keys of one account, or of every account, oldest first (keys made in the same second by id). */
  async keys(accountId?: string): Promise<KeyRecord[]> {
    const rows = accountId
      ? await this.deps.db.query<KeyRow>(
          `SELECT ${KEY} FROM keys WHERE account_id = $1 ORDER BY created_at, id COLLATE "C"`,
          [accountId],
        )
      : await this.deps.db.query<KeyRow>(`SELECT ${KEY} FROM keys ORDER BY created_at, id COLLATE "C"`);
    return rows.map(keyOf);
  }

  /**
   * Revokes a key: it answers `unauthorized` reason `revoked` from the next call on, on every instance. Returns
   * whether this call revoked it (of concurrent revocations, exactly one does).
   */
  async revokeKey(id: string): Promise<boolean> {
    const rows = await this.deps.db.query(
      "UPDATE keys SET status = 'revoked', revoked_at = $2 WHERE id = $1 AND status <> 'revoked' RETURNING 1",
      [id, isoSeconds(this.deps.now())],
    );
    return rows.length === 1;
  }

  /** Pauses or resumes a key (support's `suspended`); a revoked key stays revoked. */
  async setKeyStatus(id: string, status: "active" | "suspended"): Promise<void> {
    await this.deps.db.query("UPDATE keys SET status = $2 WHERE id = $1 AND status <> 'revoked'", [id, status]);
  }

  /** Replaces a key's permissions (`read_data` is the only one, D26); it holds from the next call. */
  async setKeyPermissions(id: string, permissions: string[]): Promise<void> {
    await this.deps.db.query("UPDATE keys SET permissions = $2 WHERE id = $1", [id, JSON.stringify(permissions)]);
  }

  /**
   * Sets or removes a key's daily limit; its spend of today is taken from the ledger (the key's charges of this
   * UTC day). The key's row is locked first, so a charge another instance commits meanwhile is counted exactly once.
   */
  async setKeyDailyLimit(id: string, limit: number | null): Promise<void> {
    const day = isoSeconds(this.deps.now()).slice(0, 10);
    await this.deps.db.tx(async (sql: Sql) => {
      const key = await sql.one<{ account_id: string }>("SELECT account_id FROM keys WHERE id = $1 FOR UPDATE", [id]);
      if (!key) return;
      const spent = await sql.one<{ s: number }>(
        "SELECT COALESCE(SUM(amount), 0) AS s FROM ledger WHERE account_id = $1 AND day = $2 AND key_id = $3 AND kind = 'charge'",
        [key.account_id, day, id],
      );
      await sql.query("UPDATE keys SET daily_limit = $2, spend_day = $3, spend_today = $4 WHERE id = $1", [
        id,
        limit,
        day,
        spent!.s,
      ]);
    });
  }

  /**
   * Sets when a key stops working (RFC 3339, read as `Date.parse` reads it), or `null` for never.
   *
   * @throws RangeError when `expiresAt` is not a date and time.
   */
  async setKeyExpiry(id: string, expiresAt: string | null): Promise<void> {
    await this.deps.db.query("UPDATE keys SET expires_at = $2 WHERE id = $1", [id, expiry(expiresAt)]);
  }

  /** Suspends an account (every key answers `unauthorized`, reason `suspended`) or makes it active again. */
  async setAccountStatus(id: string, status: "active" | "suspended"): Promise<void> {
    await this.deps.db.query("UPDATE accounts SET status = $2 WHERE id = $1", [id, status]);
  }

  /** Moves an account between the free plan (a number of calls) and the paid plan. */
  async setAccountPlan(id: string, plan: "free" | "paid"): Promise<void> {
    await this.deps.db.query("UPDATE accounts SET plan = $2 WHERE id = $1", [id, plan]);
  }

  /** Sets the credits an account may spend per UTC day, or `null` for no limit. */
  async setAccountDailyLimit(id: string, limit: number | null): Promise<void> {
    await this.deps.db.query("UPDATE accounts SET daily_limit = $2 WHERE id = $1", [id, limit]);
  }

  /**
   * Sets how many calls the account may start per UTC day (D74), or `null` for no cap. A call over the cap answers
   * `503 temporarily_unavailable`, reason `daily_cap`, until the next UTC midnight. The count of today is kept, so
   * lowering the cap below it refuses the next call at once.
   */
  async setAccountCallCap(id: string, cap: number | null): Promise<void> {
    await this.deps.db.query("UPDATE accounts SET call_cap = $2 WHERE id = $1", [id, cap]);
  }

  /**
   * Marks the key of a secret as exposed (it was sent in a URL). It is refused with `key_in_query` until replaced.
   * Returns whether this call marked it (of concurrent marks, exactly one does).
   */
  async markExposed(secret: string): Promise<boolean> {
    const rows = await this.deps.db.query(
      "UPDATE keys SET exposed_at = $2 WHERE hash = $1 AND exposed_at IS NULL RETURNING 1",
      [hashKey(secret), isoSeconds(this.deps.now())],
    );
    return rows.length === 1;
  }
}
