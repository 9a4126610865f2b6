/**
 * The credit ledger. A call holds its quote before it runs and, when the run ends, captures what it cost exactly
 * once (the `ledger_one_charge_per_run` index refuses a second charge row) and releases the rest; a failed or
 * broken run releases everything. Balance, durable holds and daily spend move in the same transaction as the ledger
 * rows, so `balance + Σ charges = Σ grants` holds after every transaction.
 *
 * Where a hold lives. A call that ends within its request (no 202) holds in memory only: if the process dies
 * before it answers, nothing was answered and nothing was charged, so there is nothing to recover; its capture is
 * one transaction with its stored answer and its idempotency record, committed with the others of the turn before
 * the answer is sent. A call that answers 202 outlives its request: its hold becomes durable (a `holds` row and the
 * account's `held`) in the transaction that stores its run, before the 202 is sent, and a restart releases it
 * (`Runs.recover`). Every check (balance, plan, daily limits) counts both kinds, so concurrent calls cannot
 * overspend: the checks and the hold are one synchronous step, and the account's numbers come from the cache that
 * every write of this process refreshes (`Accounts.remember`).
 */
import type { LimitsConfig } from "../../config.ts";
import type { Accounts } from "./accounts.ts";
import type { AccountRecord, KeyRecord } from "../accounts.ts";
import { isoSeconds, utcDay, type Store } from "./store.ts";
import { creditView, holdRefusal, type CreditView, type HoldRefusal } from "@sdgw/engine";

/** Why a hold was refused, with what the refusal answer needs (the engine's storage port). */
export type { HoldRefusal };

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
export type { CreditView };

/** Dependencies of the ledger. */
export interface LedgerDeps {
  store: Store;
  now: () => number;
  limits: LimitsConfig;
  /** The cached accounts and keys the checks read and the writes refresh. */
  accounts: Accounts;
}

/** A hold kept in memory: a run that has not answered 202. */
interface MemoryHold {
  accountId: string;
  keyId: string;
  keyHash: string;
  amount: number;
  calls: number;
  free: boolean;
  at: number;
}

/** Adds a charge to a key's spend of the day (parameters: day, charge, charge, day, key id). */
const KEY_SPEND =
  "UPDATE keys SET spend_today = CASE WHEN spend_day = :day THEN spend_today + :charge ELSE :charge END, spend_day = :day WHERE id = :id";

/** Credits the ledger charged today (UTC), from the `spend_day`/`spend_today` columns of a key or an account. */
const spentToday = (row: { spend_day: string; spend_today: number }, day: string) =>
  row.spend_day === day ? row.spend_today : 0;

/** Holds, captures, releases and the numbers shown in billing blocks. */
/** What settling a hold takes: the run, the charge asked and its calls, whether the key's spend counts, and when. */
interface SettleStep {
  runId: string;
  amount: number;
  calls: number;
  keyHasLimit: boolean;
  /** The operation or tool charged for, kept as the charge's `note` (the console lists it). */
  operation: string | null;
  day: string;
  at: string;
}

export class Ledger {
  private readonly deps: LedgerDeps;
  /** Holds of runs that have not answered 202, by run id. */
  private readonly memory = new Map<string, MemoryHold>();
  /** Their sums by account (credits and calls) and by key (credits). */
  private readonly memoryByAccount = new Map<string, { amount: number; calls: number }>();
  private readonly memoryByKey = new Map<string, number>();

  constructor(deps: LedgerDeps) {
    this.deps = deps;
  }

  /** Credits of durable holds (runs that answered 202) of a key or an account. */
  private heldBy(column: "key_id" | "account_id", id: string): number {
    // holds are never written by a deferred write
    return (
      this.deps.store.readNow<{ s: number | null }>(
        `SELECT SUM(amount) AS s FROM holds WHERE ${column} = ? AND state = 'held'`,
        id,
      )!.s ?? 0
    );
  }

  private inMemory(accountId: string): { amount: number; calls: number } {
    return this.memoryByAccount.get(accountId) ?? { amount: 0, calls: 0 };
  }

  /** Free calls left of a free account (null on a paid plan): the allowance less what was charged and what is held. */
  freeCallsLeft(account: AccountRecord): number | null {
    if (account.plan !== "free") return null;
    return Math.max(
      0,
      this.deps.limits.freeCalls - account.free_calls_used - account.free_calls_held - this.inMemory(account.id).calls,
    );
  }

  /**
   * Holds `amount` credits for a run, in memory, after the account's call cap (D74), the plan, the daily limits
   * (key, then account) and the balance allow it. Checks and hold are one synchronous step over the account as this
   * process last wrote it plus every hold in flight, so concurrent calls can never overdraw. Writes nothing, except
   * the count of calls started today on an account with a cap (a deferred write of the turn): a run that answers
   * 202 makes its hold durable with `persist`.
   */
  hold(req: HoldRequest): HoldRefusal | null {
    const { accounts, limits } = this.deps;
    const day = utcDay(this.deps.now());
    const account = accounts.cachedAccount(req.account.id);
    if (!account) throw new Error(`no account ${req.account.id}`);
    const startedToday = account.call_cap === null ? 0 : account.calls_day === day ? account.calls_today : 0;
    const mem = this.inMemory(account.id);
    const key = accounts.cachedKey(req.key.hash) ?? req.key;
    const refusal = holdRefusal(
      {
        plan: account.plan,
        status: account.status,
        balance: account.balance,
        held: account.held + mem.amount,
        spentToday: spentToday(account, day),
        dailyLimit: account.daily_limit,
        freeCallsLeft: this.freeCallsLeft(account),
        freeCalls: limits.freeCalls,
        callCap: account.call_cap,
        startedToday,
        keyDailyLimit: key.daily_limit,
        keySpent: () => spentToday(key, day) + this.heldBy("key_id", key.id) + (this.memoryByKey.get(key.id) ?? 0),
      },
      { credits: req.amount, calls: req.calls },
    );
    if (refusal) return refusal;
    if (account.call_cap !== null) this.countStart(account, day, startedToday, req.calls);
    const free = account.plan === "free";
    this.memory.set(req.runId, {
      accountId: account.id,
      keyId: key.id,
      keyHash: key.hash,
      amount: req.amount,
      calls: req.calls,
      free,
      at: this.deps.now(),
    });
    this.memoryByAccount.set(account.id, {
      amount: mem.amount + req.amount,
      calls: mem.calls + (free ? req.calls : 0),
    });
    this.memoryByKey.set(key.id, (this.memoryByKey.get(key.id) ?? 0) + req.amount);
    return null;
  }

  /**
   * Counts the calls of a run started today on an account with a call cap (D74): a deferred write of the turn and
   * the cache, in the synchronous step of the hold, so concurrent calls never start more than the cap.
   */
  private countStart(account: AccountRecord, day: string, startedToday: number, calls: number): void {
    const { store, accounts } = this.deps;
    // Relative to the row, not the cache: another process on the same database counts into the same row.
    store.tx(() =>
      store.write(
        "UPDATE accounts SET calls_today = CASE WHEN calls_day = ? THEN calls_today + ? ELSE ? END, calls_day = ? WHERE id = ?",
        day,
        calls,
        calls,
        day,
        account.id,
      ),
    );
    accounts.remember({ ...account, calls_day: day, calls_today: startedToday + calls });
  }

  /** Drops a hold from memory (it was captured, released, or made durable). */
  private drop(runId: string, h: MemoryHold): void {
    this.memory.delete(runId);
    const a = this.inMemory(h.accountId);
    const amount = a.amount - h.amount;
    const calls = a.calls - (h.free ? h.calls : 0);
    if (amount === 0 && calls === 0) this.memoryByAccount.delete(h.accountId);
    else this.memoryByAccount.set(h.accountId, { amount, calls });
    const k = (this.memoryByKey.get(h.keyId) ?? 0) - h.amount;
    if (k === 0) this.memoryByKey.delete(h.keyId);
    else this.memoryByKey.set(h.keyId, k);
  }

  /**
   * Makes the hold of a run durable, because the run answers 202 and outlives its request: the `holds` row and the
   * account's `held`, with `alongside` (the run's own row), in one transaction of the turn, committed before the 202
   * is sent. The hold leaves memory only once that transaction is written, so it is counted once all along.
   */
  persist(runId: string, alongside: () => void = () => undefined): void {
    const h = this.memory.get(runId);
    if (!h) throw new Error(`run ${runId} holds nothing in memory`);
    const { store } = this.deps;
    const row = store.tx(() => {
      alongside();
      store.run(
        "INSERT INTO holds (run_id, account_id, key_id, amount, calls, free_plan, day, state, created_at) " +
          "VALUES (:runId, :accountId, :keyId, :amount, :calls, :freePlan, :day, 'held', :createdAt)",
        {
          runId,
          accountId: h.accountId,
          keyId: h.keyId,
          amount: h.amount,
          calls: h.calls,
          freePlan: h.free ? 1 : 0,
          day: utcDay(h.at),
          createdAt: isoSeconds(h.at),
        },
      );
      const held =
        "UPDATE accounts SET held = held + ?, free_calls_held = free_calls_held + ? WHERE id = ? RETURNING *";
      return store.returning<AccountRecord>(held, h.amount, h.free ? h.calls : 0, h.accountId);
    });
    this.drop(runId, h);
    this.deps.accounts.remember(row);
  }

  /**
   * Ends a hold: charges `amount` (at most what was held) for `calls` calls and releases the rest. Exactly once:
   * a hold that already ended is left alone and the answer is what it charged then (0 for a hold that lived in
   * memory). The charge counts toward today's spend (UTC) of the account, and of the key when it has a daily limit
   * (`keyHasLimit`; a key that gets a limit later starts from the ledger, see `Accounts.setKeyDailyLimit`). Returns
   * the charge and the balance after. A hold in memory that charges nothing writes nothing. `operation` (the
   * operation or tool) is kept as the charge's `note`, so the console names a call that answered at once.
   */
  settle(
    runId: string,
    amount: number,
    calls: number,
    keyHasLimit = true,
    operation: string | null = null,
  ): { charged: number; balance: number } {
    const now = this.deps.now();
    const when = { day: utcDay(now), at: isoSeconds(now) };
    const mem = this.memory.get(runId);
    if (mem) return this.settleInMemory({ runId, hold: mem, amount, calls, keyHasLimit, operation, ...when });
    return this.settleStored({ runId, amount, calls, keyHasLimit, operation, ...when });
  }

  /** `settle` of a hold kept in memory (blind writes, deferred to the end of the turn). */
  private settleInMemory(o: SettleStep & { hold: MemoryHold }): { charged: number; balance: number } {
    const { store, accounts } = this.deps;
    const { runId, hold: mem, amount, calls, keyHasLimit, operation, day, at } = o;
    const charge = Math.min(Math.max(0, amount), mem.amount);
    this.drop(runId, mem);
    if (charge === 0) return { charged: 0, balance: accounts.cachedAccount(mem.accountId)!.balance };
    const chargedCalls = Math.min(calls, mem.calls);
    // Blind writes, deferred to the end of the turn (see the store); the caches move here by the same rules.
    return store.tx(() => {
      const before = accounts.cachedAccount(mem.accountId)!;
      store.write(
        "INSERT INTO ledger (account_id, kind, amount, key_id, run_id, note, day, created_at) VALUES (?, 'charge', ?, ?, ?, ?, ?, ?)",
        mem.accountId,
        charge,
        mem.keyId,
        runId,
        operation,
        day,
        at,
      );
      if (keyHasLimit) {
        store.write(KEY_SPEND, { day, charge, id: mem.keyId });
        accounts.updateCachedKey(mem.keyHash, (k) => ({
          ...k,
          spend_today: spentToday(k, day) + charge,
          spend_day: day,
        }));
      }
      const freeCalls = mem.free ? chargedCalls : 0;
      store.write(
        "UPDATE accounts SET balance = balance - :charge, free_calls_used = free_calls_used + :freeCalls, spend_today = " +
          "CASE WHEN spend_day = :day THEN spend_today + :charge ELSE :charge END, spend_day = :day WHERE id = :id",
        { charge, freeCalls, day, id: mem.accountId },
      );
      if (before.balance < charge) throw new Error(`account ${mem.accountId} would go below zero`); // the CHECK of the table, here and now
      const account: AccountRecord = {
        ...before,
        balance: before.balance - charge,
        free_calls_used: before.free_calls_used + freeCalls,
        spend_today: spentToday(before, day) + charge,
        spend_day: day,
      };
      accounts.remember(account);
      return { charged: charge, balance: account.balance };
    });
  }

  /** `settle` of a hold in the table: the conditional update ends it exactly once. */
  private settleStored(o: SettleStep): { charged: number; balance: number } {
    const { store, accounts } = this.deps;
    const { runId, amount, calls, keyHasLimit, operation, day, at } = o;
    const rows = store.tx(() => {
      // The conditional update is the "exactly once": only a hold still `held` ends, and it says what it was.
      const hold = store
        .sql(
          "UPDATE holds SET captured = MIN(?, amount), state = CASE WHEN MIN(?, amount) > 0 THEN " +
            "'captured' ELSE 'released' END, ended_at = ? WHERE run_id = ? AND state = 'held' RETURNING " +
            "account_id, key_id, amount, calls, free_plan, captured",
        )
        .get(Math.max(0, amount), Math.max(0, amount), at, runId) as
        | { account_id: string; key_id: string; amount: number; calls: number; free_plan: number; captured: number }
        | undefined;
      if (!hold) return null;
      const charge = hold.captured;
      const chargedCalls = charge > 0 ? Math.min(calls, hold.calls) : 0;
      let key: KeyRecord | undefined;
      if (charge > 0) {
        store.run(
          "INSERT INTO ledger (account_id, kind, amount, key_id, run_id, note, day, created_at) VALUES (?, 'charge', ?, ?, ?, ?, ?, ?)",
          hold.account_id,
          charge,
          hold.key_id,
          runId,
          operation,
          day,
          at,
        );
        if (keyHasLimit) key = this.chargeKey(hold.key_id, charge, day);
      }
      const account = store.returning<AccountRecord>(
        "UPDATE accounts SET balance = balance - :charge, held = held - :held, free_calls_held = free_calls_held - :freeHeld, " +
          "free_calls_used = free_calls_used + :freeUsed, spend_today = " +
          "CASE WHEN spend_day = :day THEN spend_today + :charge ELSE :charge END, spend_day = :day WHERE id = :id RETURNING *",
        {
          charge,
          held: hold.amount,
          freeHeld: hold.free_plan ? hold.calls : 0,
          freeUsed: hold.free_plan ? chargedCalls : 0,
          day,
          id: hold.account_id,
        },
      );
      return { charge, key, account };
    });
    if (!rows) {
      const ended = store.get<{ captured: number; account_id: string }>(
        "SELECT captured, account_id FROM holds WHERE run_id = ?",
        runId,
      );
      return {
        charged: ended?.captured ?? 0,
        balance: ended ? (accounts.cachedAccount(ended.account_id)?.balance ?? 0) : 0,
      };
    }
    accounts.remember(rows.account);
    if (rows.key) accounts.rememberKey(rows.key);
    return { charged: rows.charge, balance: rows.account.balance };
  }

  /** Credits an account was charged per UTC day (`YYYY-MM-DD`), from `fromDay` on; days without charges left out. */
  dailyCharges(accountId: string, fromDay: string): Array<{ day: string; credits: number }> {
    return this.deps.store.all<{ day: string; credits: number }>(
      "SELECT day, SUM(amount) AS credits FROM ledger WHERE account_id = ? AND kind = 'charge' AND day >= ? GROUP BY day",
      accountId,
      fromDay,
    );
  }

  /** Adds a charge to today's spend of a key; returns the key as written. */
  private chargeKey(keyId: string, charge: number, day: string): KeyRecord {
    return this.deps.store.returning<KeyRecord>(`${KEY_SPEND} RETURNING *`, { day, charge, id: keyId });
  }

  /** Today's charges of a key from the ledger (used when a key gets a daily limit: its spend column starts right). */
  keySpentToday(keyId: string): number {
    const day = utcDay(this.deps.now());
    return (
      this.deps.store.get<{ s: number | null }>(
        "SELECT SUM(amount) AS s FROM ledger WHERE key_id = ? AND kind = 'charge' AND day = ?",
        keyId,
        day,
      )!.s ?? 0
    );
  }

  /** Releases a hold without a charge (failure, timeout, not_supported, broken run). */
  release(runId: string): void {
    this.settle(runId, 0, 0, false);
  }

  /** The credit numbers of a key's billing block: the key's daily limit when it has one, else the account's; holds in flight count as spent. */
  view(accountId: string, key: KeyRecord | null): CreditView {
    const day = utcDay(this.deps.now());
    const account = this.deps.accounts.cachedAccount(accountId)!;
    const fresh = key ? this.deps.accounts.cachedKey(key.hash) : undefined;
    const held = account.held + this.inMemory(accountId).amount;
    const ofAccount = {
      balance: account.balance,
      held,
      spentToday: spentToday(account, day),
      dailyLimit: account.daily_limit,
    };
    if (!fresh) return creditView(ofAccount, null);
    const keyHeld = () => this.heldBy("key_id", fresh.id) + (this.memoryByKey.get(fresh.id) ?? 0);
    return creditView(ofAccount, { dailyLimit: fresh.daily_limit, spentToday: spentToday(fresh, day), held: keyHeld });
  }

  /**
   * Sums that must always agree: `balance + charges = grants` for every account, and the account's `held` equal
   * to its durable holds. `inMemory` is what runs in flight hold in memory (0 once every run has ended).
   */
  audit(accountId: string): {
    balance: number;
    grants: number;
    charges: number;
    held: number;
    holdsHeld: number;
    inMemory: number;
  } {
    const { store } = this.deps;
    const a = store.get<{ balance: number; held: number }>(
      "SELECT balance, held FROM accounts WHERE id = ?",
      accountId,
    )!;
    const grants =
      store.get<{ s: number | null }>(
        "SELECT SUM(amount) AS s FROM ledger WHERE account_id = ? AND kind = 'grant'",
        accountId,
      )!.s ?? 0;
    const charges =
      store.get<{ s: number | null }>(
        "SELECT SUM(amount) AS s FROM ledger WHERE account_id = ? AND kind = 'charge'",
        accountId,
      )!.s ?? 0;
    const holdsHeld =
      store.get<{ s: number | null }>(
        "SELECT SUM(amount) AS s FROM holds WHERE account_id = ? AND state = 'held'",
        accountId,
      )!.s ?? 0;
    return { balance: a.balance, grants, charges, held: a.held, holdsHeld, inMemory: this.inMemory(accountId).amount };
  }
}
