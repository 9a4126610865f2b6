/**
 * The credit ledger. A call holds its quote before it runs and, when the run ends, captures what it cost exactly
 * once (the `ledger_one_charge_per_run` index refuses a second charge row) and releases the rest; a failed or
 * broken run releases everything. Balance, holds and daily spend move in the same transaction as the ledger rows,
 * so `balance + Σ charges = Σ grants` holds after every statement.
 */
import type { LimitsConfig } from "../config.ts";
import type { AccountRecord, KeyRecord } from "./accounts.ts";
import { isoSeconds, utcDay, type Store } from "./store.ts";

/** Why a hold was refused, with what the refusal answer needs. */
export type HoldRefusal =
  | { code: "plan_limit"; freeCallsLeft: number }
  | { code: "daily_limit_reached"; reason: "key" | "account"; limit: number; spent: number }
  | { code: "insufficient_balance"; balance: number; available: number };

/** A request for a hold. */
export interface HoldRequest {
  runId: string;
  account: AccountRecord;
  key: KeyRecord;
  amount: number;
  /** Calls this run makes (each value of a list is a call of its own); counted against a free plan's allowance. */
  calls: number;
}

/** Credits as the credit billing shape (D7) shows them. */
export interface CreditView {
  balance: number;
  todaySpend: number;
  dailyLimit: number | null;
  dailyRemaining: number | null;
  /** What runs of this scope hold now (part of `todaySpend`). */
  held: number;
}

/** Dependencies of the ledger. */
export interface LedgerDeps {
  store: Store;
  now: () => number;
  limits: LimitsConfig;
}

/** Credits the ledger charged today (UTC), from the `spend_day`/`spend_today` columns of a key or an account. */
const spentToday = (row: { spend_day: string; spend_today: number }, day: string) => (row.spend_day === day ? row.spend_today : 0);

/** Holds, captures, releases and the numbers shown in billing blocks. */
export class Ledger {
  private readonly deps: LedgerDeps;

  constructor(deps: LedgerDeps) {
    this.deps = deps;
  }

  private heldBy(column: "key_id" | "account_id", id: string): number {
    return this.deps.store.get<{ s: number | null }>(`SELECT SUM(amount) AS s FROM holds WHERE ${column} = ? AND state = 'held'`, id)!.s ?? 0;
  }

  /** Free calls left of a free account (null on a paid plan). */
  freeCallsLeft(account: AccountRecord): number | null {
    if (account.plan !== "free") return null;
    return Math.max(0, this.deps.limits.freeCalls - account.free_calls_used - account.free_calls_held);
  }

  /**
   * Holds `amount` credits for a run, after the plan, the daily limits (key, then account) and the balance allow
   * it; all checked and written in one transaction, so concurrent calls can never overdraw. Two writes: the hold
   * and the account's `held`.
   */
  hold(req: HoldRequest): HoldRefusal | null {
    const { store } = this.deps;
    const now = this.deps.now();
    const day = utcDay(now);
    return store.tx(() => {
      if (req.key.daily_limit !== null) {
        const key = store.get<KeyRecord>("SELECT * FROM keys WHERE id = ?", req.key.id)!;
        const account = store.get<AccountRecord>("SELECT * FROM accounts WHERE id = ?", req.account.id)!;
        if (account.plan === "free" && this.freeCallsLeft(account)! < req.calls) return { code: "plan_limit", freeCallsLeft: this.freeCallsLeft(account)! };
        const spent = spentToday(key, day) + this.heldBy("key_id", key.id);
        if (key.daily_limit !== null && spent + req.amount > key.daily_limit) return { code: "daily_limit_reached", reason: "key", limit: key.daily_limit, spent };
      }
      // One conditional update takes the hold when the plan, the account's daily limit and the balance allow it;
      // when it changes nothing, the account is read to say which of them refused.
      const taken = store
        .sql(
          "UPDATE accounts SET held = held + ?, free_calls_held = free_calls_held + CASE WHEN plan = 'free' THEN ? ELSE 0 END WHERE id = ? AND status = 'active' AND balance - held >= ? AND (plan != 'free' OR free_calls_used + free_calls_held + ? <= ?) AND (daily_limit IS NULL OR (CASE WHEN spend_day = ? THEN spend_today ELSE 0 END) + held + ? <= daily_limit) RETURNING plan",
        )
        .get(req.amount, req.calls, req.account.id, req.amount, req.calls, this.deps.limits.freeCalls, day, req.amount) as { plan: string } | undefined;
      if (!taken) {
        const account = store.get<AccountRecord>("SELECT * FROM accounts WHERE id = ?", req.account.id)!;
        const left = this.freeCallsLeft(account);
        if (left !== null && left < req.calls) return { code: "plan_limit", freeCallsLeft: left };
        if (account.daily_limit !== null) {
          const spent = spentToday(account, day) + account.held;
          if (spent + req.amount > account.daily_limit) return { code: "daily_limit_reached", reason: "account", limit: account.daily_limit, spent };
        }
        return { code: "insufficient_balance", balance: account.balance, available: account.balance - account.held };
      }
      store.run(
        "INSERT INTO holds (run_id, account_id, key_id, amount, calls, free_plan, day, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'held', ?)",
        req.runId,
        req.account.id,
        req.key.id,
        req.amount,
        req.calls,
        taken.plan === "free" ? 1 : 0,
        day,
        isoSeconds(now),
      );
      return null;
    });
  }

  /**
   * Ends a hold: charges `amount` (at most what was held) for `calls` calls and releases the rest. Exactly once:
   * a hold that already ended is left alone and the answer is what it charged then. The charge counts toward
   * today's spend (UTC) of the account, and of the key when it has a daily limit (`keyHasLimit`; a key that gets a
   * limit later starts from the ledger, see `Accounts.setKeyDailyLimit`). Returns the charge and the balance after.
   */
  settle(runId: string, amount: number, calls: number, keyHasLimit = true): { charged: number; balance: number | null } {
    const { store } = this.deps;
    const now = this.deps.now();
    const day = utcDay(now);
    const at = isoSeconds(now);
    return store.tx(() => {
      // The conditional update is the "exactly once": only a hold still `held` ends, and it says what it was.
      const hold = store.sql(
        "UPDATE holds SET captured = MIN(?, amount), state = CASE WHEN MIN(?, amount) > 0 THEN 'captured' ELSE 'released' END, ended_at = ? WHERE run_id = ? AND state = 'held' RETURNING account_id, key_id, amount, calls, free_plan, captured",
      ).get(Math.max(0, amount), Math.max(0, amount), at, runId) as { account_id: string; key_id: string; amount: number; calls: number; free_plan: number; captured: number } | undefined;
      if (!hold) return { charged: store.get<{ captured: number }>("SELECT captured FROM holds WHERE run_id = ?", runId)?.captured ?? 0, balance: null };
      const charge = hold.captured;
      const chargedCalls = charge > 0 ? Math.min(calls, hold.calls) : 0;
      if (charge > 0) {
        store.run("INSERT INTO ledger (account_id, kind, amount, key_id, run_id, day, created_at) VALUES (?, 'charge', ?, ?, ?, ?, ?)", hold.account_id, charge, hold.key_id, runId, day, at);
        if (keyHasLimit) store.run("UPDATE keys SET spend_today = CASE WHEN spend_day = ? THEN spend_today + ? ELSE ? END, spend_day = ? WHERE id = ?", day, charge, charge, day, hold.key_id);
      }
      const after = store.sql(
        "UPDATE accounts SET balance = balance - ?, held = held - ?, free_calls_held = free_calls_held - ?, free_calls_used = free_calls_used + ?, spend_today = CASE WHEN spend_day = ? THEN spend_today + ? ELSE ? END, spend_day = ? WHERE id = ? RETURNING balance",
      ).get(charge, hold.amount, hold.free_plan ? hold.calls : 0, hold.free_plan ? chargedCalls : 0, day, charge, charge, day, hold.account_id) as { balance: number };
      return { charged: charge, balance: after.balance };
    });
  }

  /** Today's charges of a key from the ledger (used when a key gets a daily limit: its spend column starts right). */
  keySpentToday(keyId: string): number {
    const day = utcDay(this.deps.now());
    return this.deps.store.get<{ s: number | null }>("SELECT SUM(amount) AS s FROM ledger WHERE key_id = ? AND kind = 'charge' AND day = ?", keyId, day)!.s ?? 0;
  }

  /** Releases a hold without a charge (failure, timeout, not_supported, broken run). */
  release(runId: string): void {
    this.settle(runId, 0, 0, false);
  }

  /** The credit numbers of a key's billing block: the key's daily limit when it has one, else the account's. */
  view(accountId: string, key: KeyRecord | null): CreditView {
    const day = utcDay(this.deps.now());
    const account = this.deps.store.get<AccountRecord>("SELECT * FROM accounts WHERE id = ?", accountId)!;
    const fresh = key ? this.deps.store.get<KeyRecord>("SELECT * FROM keys WHERE id = ?", key.id) : undefined;
    const useKey = fresh !== undefined && fresh.daily_limit !== null;
    const limit = useKey ? fresh.daily_limit : account.daily_limit;
    const held = useKey ? this.heldBy("key_id", fresh.id) : account.held;
    const today = (useKey ? spentToday(fresh, day) : spentToday(account, day)) + held;
    return { balance: account.balance, todaySpend: today, held, dailyLimit: limit, dailyRemaining: limit === null ? null : Math.max(0, limit - today) };
  }

  /** Sums that must always agree: `balance + charges = grants` for every account. */
  audit(accountId: string): { balance: number; grants: number; charges: number; held: number; holdsHeld: number } {
    const { store } = this.deps;
    const a = store.get<{ balance: number; held: number }>("SELECT balance, held FROM accounts WHERE id = ?", accountId)!;
    const grants = store.get<{ s: number | null }>("SELECT SUM(amount) AS s FROM ledger WHERE account_id = ? AND kind = 'grant'", accountId)!.s ?? 0;
    const charges = store.get<{ s: number | null }>("SELECT SUM(amount) AS s FROM ledger WHERE account_id = ? AND kind = 'charge'", accountId)!.s ?? 0;
    const holdsHeld = store.get<{ s: number | null }>("SELECT SUM(amount) AS s FROM holds WHERE account_id = ? AND state = 'held'", accountId)!.s ?? 0;
    return { balance: a.balance, grants, charges, held: a.held, holdsHeld };
  }
}
