/**
 * Accounts, workspaces and keys. A key is stored as its SHA-256 hash and a short display prefix; the secret is
 * returned once, by `createKey`, and never again (unkey's habit).
 *
 * Authentication and the ledger read keys (by hash) and accounts from caches instead of the database on every
 * request. They stay right because every write of this process either refreshes them from what it returned
 * (`remember`, `rememberKey`, `updateCachedKey`: the ledger's captures) or drops them (every setter here: revoke, suspend, expose,
 * permissions, expiry, limits, plan, grants), and the store drops them all when a write rolls back or another
 * connection (the admin CLI) committed (`Store.onReset`, `Store.sync`). Misses are not cached.
 */
import { keyPrefix } from "@sdgw/engine";
import { hashKey, newId, newKeySecret } from "../../ids.ts";
import { isoSeconds, type Store } from "./store.ts";
import {
  type AccountRecord,
  type CreatedKey,
  type KeyRecord,
  type NewAccount,
  type NewKey,
  newKeyValues,
  type WorkspaceRecord,
} from "../accounts.ts";

/** Dependencies of the accounts system. */
export interface AccountsDeps {
  store: Store;
  now: () => number;
}

/** Entries a cache keeps before it starts afresh (a bound on memory, far above the keys of a busy server). */
const CACHE_LIMIT = 50_000;

/** Accounts, workspaces, keys and grants. */
export class Accounts {
  private readonly deps: AccountsDeps;
  /** Keys by hash, as the database holds them. */
  private readonly keyCache = new Map<string, KeyRecord>();
  /** Accounts by id, as the database holds them. */
  private readonly accountCache = new Map<string, AccountRecord>();

  constructor(deps: AccountsDeps) {
    this.deps = deps;
    deps.store.onReset(() => {
      this.keyCache.clear();
      this.accountCache.clear();
    });
  }

  /** The account of an id from the cache (read from the database on a miss): what authentication and holds read. */
  cachedAccount(id: string): AccountRecord | undefined {
    this.deps.store.sync();
    let account = this.accountCache.get(id);
    if (!account) {
      account = this.account(id);
      if (account) {
        if (this.accountCache.size >= CACHE_LIMIT) this.accountCache.clear();
        this.accountCache.set(id, account);
      }
    }
    return account;
  }

  /** The key of a hash from the cache (read from the database on a miss). */
  cachedKey(hash: string): KeyRecord | undefined {
    this.deps.store.sync();
    let key = this.keyCache.get(hash);
    if (!key) {
      key = this.deps.store.get<KeyRecord>("SELECT * FROM keys WHERE hash = ?", hash);
      if (key) {
        if (this.keyCache.size >= CACHE_LIMIT) this.keyCache.clear();
        this.keyCache.set(hash, key);
      }
    }
    return key;
  }

  /** Takes an account as a write of this process left it (the row it returned, or the row its own code moved) as the cached account. */
  remember(row: AccountRecord): void {
    this.accountCache.set(row.id, row);
  }

  /** Applies a write of this process to the cached key of `hash`, if it is cached (a key not cached is read when needed). */
  updateCachedKey(hash: string, update: (key: KeyRecord) => KeyRecord): void {
    const key = this.keyCache.get(hash);
    if (key) this.keyCache.set(hash, update(key));
  }

  /** Takes the whole row a key write of this process returned (`RETURNING *`) as the cached key, if it is cached. */
  rememberKey(row: KeyRecord): void {
    if (this.keyCache.has(row.hash)) this.keyCache.set(row.hash, row);
  }

  /** Creates an account with its default workspace. */
  createAccount(input: NewAccount): { account: AccountRecord; workspace: WorkspaceRecord } {
    const { store } = this.deps;
    const at = isoSeconds(this.deps.now());
    const id = input.id ?? newId("acc");
    const ws = newId("ws");
    store.tx(() => {
      store.run(
        "INSERT INTO accounts (id, name, plan, status, daily_limit, call_cap, created_at) VALUES (?, ?, ?, 'active', ?, ?, ?)",
        id,
        input.name,
        input.plan ?? "paid",
        input.dailyLimit ?? null,
        input.callCap ?? null,
        at,
      );
      store.run("INSERT INTO workspaces (id, account_id, name, created_at) VALUES (?, ?, 'Default', ?)", ws, id, at);
    });
    return { account: this.account(id)!, workspace: this.workspaceOf(id)! };
  }

  /** The account of an id as stored now, or `undefined`. */
  account(id: string): AccountRecord | undefined {
    return this.deps.store.get<AccountRecord>("SELECT * FROM accounts WHERE id = ?", id);
  }

  /** Every account, oldest first. */
  accounts(): AccountRecord[] {
    return this.deps.store.all<AccountRecord>("SELECT * FROM accounts ORDER BY created_at, id");
  }

  /** The workspace of an id, or `undefined`. */
  workspace(id: string): WorkspaceRecord | undefined {
    return this.deps.store.get<WorkspaceRecord>("SELECT * FROM workspaces WHERE id = ?", id);
  }

  /** The default (first) workspace of an account, where its keys are made. */
  workspaceOf(accountId: string): WorkspaceRecord | undefined {
    return this.deps.store.get<WorkspaceRecord>(
      "SELECT * FROM workspaces WHERE account_id = ? ORDER BY created_at, id LIMIT 1",
      accountId,
    );
  }

  /** Adds credits to an account: a `grant` row in the ledger and the balance, in one transaction. */
  grant(accountId: string, amount: number, note = "grant"): number {
    if (!Number.isSafeInteger(amount) || amount <= 0)
      throw new Error("a grant is a whole number of credits greater than 0");
    const { store } = this.deps;
    const now = this.deps.now();
    return store.tx(() => {
      if (!this.account(accountId)) throw new Error(`no account ${accountId}`);
      store.run(
        "INSERT INTO ledger (account_id, kind, amount, note, day, created_at) VALUES (?, 'grant', ?, ?, ?, ?)",
        accountId,
        amount,
        note,
        isoSeconds(now).slice(0, 10),
        isoSeconds(now),
      );
      store.run("UPDATE accounts SET balance = balance + ? WHERE id = ?", amount, accountId);
      this.accountCache.delete(accountId);
      return this.account(accountId)!.balance;
    });
  }

  /** Creates a key; the returned `secret` is shown once and stored only as a hash. */
  createKey(input: NewKey): CreatedKey {
    const ws = this.workspaceOf(input.accountId);
    if (!ws) throw new Error(`no account ${input.accountId}`);
    const secret = input.secret ?? newKeySecret();
    const id = newId("key");
    this.deps.store.run(
      "INSERT INTO keys (id, account_id, workspace_id, hash, prefix, name, permissions, status, " +
        "daily_limit, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?)",
      id,
      input.accountId,
      ws.id,
      ...newKeyValues(secret, input, this.deps.now()),
      input.expiresAt ?? null,
    );
    return { id, secret, prefix: keyPrefix(secret), accountId: input.accountId, workspaceId: ws.id };
  }

  /** The key a secret belongs to, if any. */
  keyBySecret(secret: string): KeyRecord | undefined {
    return this.deps.store.get<KeyRecord>("SELECT * FROM keys WHERE hash = ?", hashKey(secret));
  }

  /** The key of a hash and its account (authentication), from the caches: no read once both are cached. */
  keyAndAccount(hash: string): { key: KeyRecord; account: AccountRecord } | undefined {
    const key = this.cachedKey(hash);
    const account = key && this.cachedAccount(key.account_id);
    return key && account ? { key, account } : undefined;
  }

  /** The key of an id as stored now (hash and prefix, never the secret), or `undefined`. */
  key(id: string): KeyRecord | undefined {
    return this.deps.store.get<KeyRecord>("SELECT * FROM keys WHERE id = ?", id);
  }

  /** Keys by id or by display prefix. */
  findKey(idOrPrefix: string): KeyRecord | undefined {
    return this.deps.store.get<KeyRecord>(
      "SELECT * FROM keys WHERE id = ? OR prefix = ? ORDER BY created_at LIMIT 1",
      idOrPrefix,
      idOrPrefix,
    );
  }

  /** The keys of one account, or of every account, oldest first. */
  keys(accountId?: string): KeyRecord[] {
    return accountId
      ? this.deps.store.all<KeyRecord>("SELECT * FROM keys WHERE account_id = ? ORDER BY created_at, id", accountId)
      : this.deps.store.all<KeyRecord>("SELECT * FROM keys ORDER BY created_at, id");
  }

  /** Revokes a key: it answers `unauthorized` reason `revoked` from the next call on. */
  revokeKey(id: string): boolean {
    const changed =
      this.deps.store.run(
        "UPDATE keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status != 'revoked'",
        isoSeconds(this.deps.now()),
        id,
      ) === 1;
    if (changed) this.keyCache.clear();
    return changed;
  }

  /** Pauses or resumes a key (support's `suspended`). */
  setKeyStatus(id: string, status: "active" | "suspended"): void {
    this.keyCache.clear();
    this.deps.store.run("UPDATE keys SET status = ? WHERE id = ? AND status != 'revoked'", status, id);
  }

  /** Replaces a key's permissions (`read_data` is the only one, D26); it holds from the next call. */
  setKeyPermissions(id: string, permissions: string[]): void {
    this.keyCache.clear();
    this.deps.store.run("UPDATE keys SET permissions = ? WHERE id = ?", JSON.stringify(permissions), id);
  }

  /** Sets or removes a key's daily limit; its spend of today is taken from the ledger. */
  setKeyDailyLimit(id: string, limit: number | null): void {
    const { store } = this.deps;
    const day = isoSeconds(this.deps.now()).slice(0, 10);
    this.keyCache.clear();
    store.tx(() => {
      const spent =
        store.get<{ s: number | null }>(
          "SELECT SUM(amount) AS s FROM ledger WHERE key_id = ? AND kind = 'charge' AND day = ?",
          id,
          day,
        )!.s ?? 0;
      store.run("UPDATE keys SET daily_limit = ?, spend_day = ?, spend_today = ? WHERE id = ?", limit, day, spent, id);
    });
  }

  /** Sets when a key stops working (RFC 3339), or `null` for never. */
  setKeyExpiry(id: string, expiresAt: string | null): void {
    this.keyCache.clear();
    this.deps.store.run("UPDATE keys SET expires_at = ? WHERE id = ?", expiresAt, id);
  }

  /** Suspends an account (every key answers `unauthorized`, reason `suspended`) or makes it active again. */
  setAccountStatus(id: string, status: "active" | "suspended"): void {
    this.accountCache.delete(id);
    this.deps.store.run("UPDATE accounts SET status = ? WHERE id = ?", status, id);
  }

  /** Moves an account between the free plan (a number of calls) and the paid plan. */
  setAccountPlan(id: string, plan: "free" | "paid"): void {
    this.accountCache.delete(id);
    this.deps.store.run("UPDATE accounts SET plan = ? WHERE id = ?", plan, id);
  }

  /** Sets the credits an account may spend per UTC day, or `null` for no limit. */
  setAccountDailyLimit(id: string, limit: number | null): void {
    this.accountCache.delete(id);
    this.deps.store.run("UPDATE accounts SET daily_limit = ? WHERE id = ?", limit, id);
  }

  /**
   * Sets how many calls the account may start per UTC day (D74), or `null` for no cap. A call over the cap answers
   * `503 temporarily_unavailable`, reason `daily_cap`, until the next UTC midnight. The count of today is kept, so
   * lowering the cap below it refuses the next call at once.
   */
  setAccountCallCap(id: string, cap: number | null): void {
    this.accountCache.delete(id);
    this.deps.store.run("UPDATE accounts SET call_cap = ? WHERE id = ?", cap, id);
  }

  /** Marks the key of a secret as exposed (it was sent in a URL). It is refused with `key_in_query` until replaced. */
  markExposed(secret: string): boolean {
    const changed =
      this.deps.store.run(
        "UPDATE keys SET exposed_at = ? WHERE hash = ? AND exposed_at IS NULL",
        isoSeconds(this.deps.now()),
        hashKey(secret),
      ) === 1;
    if (changed) this.keyCache.clear();
    return changed;
  }
}
