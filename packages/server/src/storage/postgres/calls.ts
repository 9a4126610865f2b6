/**
 * The engine's storage port (`CallStore`) on PostgreSQL, for several instances on one database (D108), and the rest
 * of a charge's life there: settling or releasing a hold, granting credits, and the ledger's audit.
 *
 * - **Exactly once by constraints.** An Idempotency-Key is claimed by inserting its row under the primary key
 *   (key id, Idempotency-Key): of concurrent claims on any instances one inserts it, the others find it. A run's
 *   charge is one `ledger` row under a unique index per run, written in the transaction that ends its hold, and a
 *   hold ends by a conditional update of its row (only a hold still `held` ends).
 * - **Holds never overdraw.** A hold locks its account's row (`FOR UPDATE`) and decides by the engine's
 *   `holdRefusal` over the row as it is now, with every hold of every instance counted in `held`; the key's row is
 *   locked too when the key has a daily limit.
 * - **Answers are rows.** A completed claim keeps its answer's status, headers and bytes in its row, written in one
 *   statement: a replay on any instance gives the same bytes back.
 */
import {
  type AdmitRequest,
  type Admitted,
  type CallStore,
  type Claim,
  creditView,
  type CreditView,
  holdRefusal,
  type HoldRefusal,
  type IdempotencySlot,
  isoSeconds,
} from "@sdgw/engine";
import type { AccountRecord } from "../accounts.ts";
import { fingerprint } from "../idempotency.ts";
import type { HttpAnswer, RunContext } from "../../runs/types.ts";
import type { Postgres, Sql } from "./database.ts";
import { InFlight } from "./in-flight.ts";
import { KeyChanged } from "../key-changed.ts";

/** Options of {@link PgCalls}. */
export interface PgCallsOptions {
  db: Postgres;
  now: () => number;
  /** How long an answered Idempotency-Key replays, in ms (the seed: 24 h). */
  idempotencyTtlMs: number;
  /** A free account's allowance of calls. */
  freeCalls: number;
  /**
   * This instance's owner id (`PgRuns.owner`): its claims and holds carry it, so that when the instance is gone
   * another one releases them (`PgRuns.recover`).
   */
  owner: string;
  /**
   * The runs this instance admits or runs (D109): a run's id is added before its claim or hold is written, so that
   * a row of this owner whose run is not in it is known to be debris (`PgRuns.reconcile`).
   */
  inFlight?: InFlight;
}

/** An account as the hold reads it (its row as stored, but its name and creation). */
type AccountRow = Omit<AccountRecord, "name" | "created_at">;

/** A claim's row as read back. */
interface IdempotencyRow {
  fingerprint: string;
  state: "running" | "done";
  http_status: number | null;
  headers: Record<string, string> | null;
  answer: Buffer | null;
}

/** The UTC day (`YYYY-MM-DD`) of a time in ms. */
export const utcDay = (ms: number) => isoSeconds(ms).slice(0, 10);
/**
 * What a row spent on `day`. A row already on a later day (written by a call whose clock read a few ms later) counts
 * as today's: the days of a row only move forward, and a limit is never lifted early (D110).
 */
const today = (row: { spend_day: string; spend_today: number }, day: string) =>
  row.spend_day >= day ? row.spend_today : 0;

/** The server's charged calls on PostgreSQL: the engine's `CallStore`, and holds' settling and release. */
export class PgCalls implements CallStore<RunContext, HttpAnswer> {
  private readonly o: PgCallsOptions & { inFlight: InFlight };

  constructor(options: PgCallsOptions) {
    this.o = { ...options, inFlight: options.inFlight ?? new InFlight() };
  }

  /** The runs this instance admits or runs: the runner adds its runs to it; the reconciliation reads it (D109). */
  get inFlight(): InFlight {
    return this.o.inFlight;
  }

  async paused(): Promise<string | null> {
    const row = await this.o.db.one<{ value: string }>("SELECT value FROM meta WHERE name = 'paused'");
    return row ? (JSON.parse(row.value) as { message: string }).message : null;
  }

  /** Answers are rows of the database: there is no answer log to fill (D67 applies to the embedded store). */
  full(): null {
    return null;
  }

  async claim(slot: IdempotencySlot, call: { operationId: string; params: unknown; runId: string }) {
    const { now } = this.o;
    const print = fingerprint(call.operationId, call.params);
    const at = new Date(now()).toISOString();
    const key = [slot.keyId, slot.idemKey];
    this.o.inFlight.admit(call.runId);
    try {
      const claim = await this.claimRow(key, print, call.runId, at);
      if (claim.kind === "claimed") this.o.inFlight.claimed(call.runId, slotKey(slot));
      else this.o.inFlight.refused(call.runId);
      return claim;
    } catch (e) {
      this.o.inFlight.refused(call.runId);
      throw e;
    }
  }

  /**
   * Inserts the claim's row, or reads the row of the call that has it (`inserted`: the insert was just tried, by
   * `admit`, and found the key taken: read at once).
   */
  private async claimRow(
    key: string[],
    print: string,
    runId: string,
    at: string,
    inserted = false,
  ): Promise<Claim<HttpAnswer>> {
    const { db } = this.o;
    const insert = () =>
      db.query(
        "INSERT INTO idempotency (key_id, idem_key, fingerprint, state, run_id, owner, created_at) " +
          "VALUES ($1, $2, $3, 'running', $4, $5, $6) ON CONFLICT DO NOTHING RETURNING 1",
        [...key, print, runId, this.o.owner, at],
      );
    // One round trip for a new key (the usual case); a key taken already is read.
    if (!inserted && (await insert()).length === 1) return { kind: "claimed" } as const;
    const row = await db.one<IdempotencyRow & { expired: boolean }>(
      "SELECT fingerprint, state, http_status, headers, answer, expires_at <= $3 AS expired FROM idempotency WHERE key_id = $1 AND idem_key = $2",
      [...key, at],
    );
    if (!row?.expired) return claimOf(row, print);
    // A record past its 24 h is forgotten: the key starts a new call (of claims racing for it, one inserts).
    await db.query("DELETE FROM idempotency WHERE key_id = $1 AND idem_key = $2 AND expires_at <= $3", [...key, at]);
    if ((await insert()).length === 1) return { kind: "claimed" } as const;
    return claimOf(
      await db.one<IdempotencyRow>(
        "SELECT fingerprint, state, http_status, headers, answer FROM idempotency WHERE key_id = $1 AND idem_key = $2",
        key,
      ),
      print,
    );
  }

  async release(slot: IdempotencySlot): Promise<void> {
    try {
      await this.deleteClaim(slot);
    } finally {
      this.o.inFlight.unclaimed(slotKey(slot)); // released, or left to the reconciliation if not answered
    }
  }

  async complete(slot: IdempotencySlot, answer: HttpAnswer): Promise<void> {
    const expires = new Date(this.o.now() + this.o.idempotencyTtlMs).toISOString();
    const body = typeof answer.body === "string" ? Buffer.from(answer.body) : answer.body;
    try {
      await this.o.db.query(
        "UPDATE idempotency SET state = 'done', http_status = $3, headers = $4, answer = $5, expires_at = $6 WHERE key_id = $1 AND idem_key = $2",
        [slot.keyId, slot.idemKey, answer.status, JSON.stringify(answer.headers), body, expires],
      );
    } finally {
      this.o.inFlight.unclaimed(slotKey(slot));
    }
  }

  /**
   * D128: the pause, the Idempotency-Key's claim and the usual hold in one statement, so one committed transaction
   * admits a charged call (its end is the other). The claim's row is inserted unless calls are paused, and the hold
   * is taken only if the claim was (or no key was sent) and the account is the usual one (paid, active, no cap or
   * daily limits, credits available): the engine's rules then come down to the credits, checked by the update under
   * the row's lock. Anything else — a key taken already or past its 24 h, an account with limits, a refusal — goes on
   * as the steps do (`claim`, the full `hold` transaction), and a hold refused gives the claim back.
   */
  async admit(r: AdmitRequest<RunContext>): Promise<Admitted<HttpAnswer>> {
    // D186: a key taken as last read is checked by the admitting statement below; a free quote has none, so the
    // key is read first (by the HTTP layer, on this error).
    if (!r.hold && r.caller.keyUnchecked) throw new KeyChanged(r.caller.key.id);
    if (!r.hold) {
      // A free quote: its claim only (it holds nothing, and a pause does not apply to it).
      if (!r.slot) return { kind: "admitted" };
      const claim = await this.claim(r.slot, r.call);
      return claim.kind === "claimed" ? { kind: "admitted" } : { kind: "claim", claim };
    }
    const { runId } = r.call;
    const { inFlight } = this.o;
    inFlight.admit(runId);
    try {
      const out = await this.admitRow(r.caller, r.slot, r.call, r.hold);
      if (out.kind === "admitted" && r.slot) inFlight.claimed(runId, slotKey(r.slot));
      if (out.kind !== "admitted") inFlight.refused(runId);
      return out;
    } catch (e) {
      // Committed or not, no run will end what it wrote: the reconciliation does (D109).
      inFlight.refused(runId);
      throw e;
    }
  }

  private async admitRow(
    ctx: RunContext,
    slot: IdempotencySlot | null,
    call: { operationId: string; params: unknown; runId: string },
    hold: { credits: number; calls: number },
  ): Promise<Admitted<HttpAnswer>> {
    const ms = this.o.now();
    const at = new Date(ms).toISOString();
    const run = { runId: call.runId, ...hold };
    // $1–$8: the hold and this instance; $9–$10: the claim, when a key was sent.
    const params: unknown[] = [
      ctx.account.id,
      ctx.key.id,
      hold.credits,
      call.runId,
      hold.calls,
      utcDay(ms),
      at,
      this.o.owner,
    ];
    const print = slot ? fingerprint(call.operationId, call.params) : null;
    if (slot) params.push(slot.idemKey, print);
    // D186: a key taken as last read is checked here, in the snapshot that claims and holds: the key active, not
    // exposed nor expired, allowed `read_data`, its account active (authentication's checks); else nothing is written.
    const checked = ctx.keyUnchecked === true;
    if (checked) params.push(at);
    const go = checked ? `NOT EXISTS (SELECT 1 FROM p) AND EXISTS (SELECT 1 FROM v)` : `NOT EXISTS (SELECT 1 FROM p)`;
    const row = await this.o.db.one<{ paused: string | null; claimed: boolean; held: boolean; key_ok: boolean }>(
      `WITH p AS (SELECT value FROM meta WHERE name = 'paused'),
       ${
         checked
           ? `v AS (
         SELECT 1 FROM keys k JOIN accounts o ON o.id = k.account_id
           WHERE k.id = $2 AND k.status = 'active' AND k.exposed_at IS NULL
             AND (k.expires_at IS NULL OR k.expires_at > $${params.length}::timestamptz)
             AND k.permissions::jsonb ? 'read_data' AND o.status = 'active'),`
           : ""
       }
       ${
         slot
           ? `c AS (
         INSERT INTO idempotency (key_id, idem_key, fingerprint, state, run_id, owner, created_at)
           SELECT $2, $9, $10, 'running', $4, $8, $7 WHERE ${go}
           ON CONFLICT DO NOTHING RETURNING 1),`
           : ""
       }
       a AS (
         UPDATE accounts SET held = held + $3 WHERE id = $1 AND ${go}
           ${slot ? "AND EXISTS (SELECT 1 FROM c)" : ""} AND status = 'active' AND plan = 'paid' AND call_cap IS NULL
           AND daily_limit IS NULL AND balance - held >= $3
           AND EXISTS (SELECT 1 FROM keys WHERE id = $2 AND daily_limit IS NULL) RETURNING id),
       h AS (
         INSERT INTO holds (run_id, account_id, key_id, amount, calls, free_plan, day, state, owner, created_at)
           SELECT $4, a.id, $2, $3, $5, false, $6, 'held', $8, $7
           FROM a RETURNING 1)
       SELECT (SELECT value FROM p) AS paused, ${slot ? "EXISTS (SELECT 1 FROM c)" : "true"} AS claimed,
         EXISTS (SELECT 1 FROM h) AS held, ${checked ? "EXISTS (SELECT 1 FROM v)" : "true"} AS key_ok`,
      params,
    );
    // Authentication's refusals come before the pause's (D50): the HTTP layer reads the key and answers them.
    if (row && !row.key_ok) throw new KeyChanged(ctx.key.id);
    if (row?.paused) return { kind: "paused", message: (JSON.parse(row.paused) as { message: string }).message };
    if (row?.held) return { kind: "admitted" };
    // The statement tried the usual hold if it claimed the key (or none was sent): then only the full one is left.
    let usualTried = true;
    if (slot && !row?.claimed) {
      // The key was taken (or its record is past its 24 h): what a claim finds, and the hold if it claims it now.
      const claim = await this.claimRow([slot.keyId, slot.idemKey], print!, call.runId, at, true);
      if (claim.kind !== "claimed") return { kind: "claim", claim };
      usualTried = false;
    }
    const refusal = await this.holdRow(ctx, run, usualTried);
    if (!refusal) return { kind: "admitted" };
    if (slot) await this.deleteClaim(slot);
    return { kind: "hold", refusal };
  }

  /** Deletes a claim still running (the call was refused before it ran). */
  private async deleteClaim(slot: IdempotencySlot): Promise<void> {
    await this.o.db.query("DELETE FROM idempotency WHERE key_id = $1 AND idem_key = $2 AND state = 'running'", [
      slot.keyId,
      slot.idemKey,
    ]);
  }

  /**
   * Holds `credits` for the run: the account's row locked, the engine's rules over it, then the hold's row and the
   * account's `held` (and its calls started today, under a cap) in the same transaction.
   */
  async hold(ctx: RunContext, run: { runId: string; credits: number; calls: number }): Promise<HoldRefusal | null> {
    if (ctx.keyUnchecked) throw new KeyChanged(ctx.key.id); // D186: only `admit` checks a key taken as last read
    this.o.inFlight.admit(run.runId);
    let refusal: HoldRefusal | null;
    try {
      refusal = await this.holdRow(ctx, run);
    } catch (e) {
      // Committed or not, no run will end it: the reconciliation releases it if it was.
      this.o.inFlight.refused(run.runId);
      throw e;
    }
    if (refusal) this.o.inFlight.refused(run.runId);
    return refusal;
  }

  private async holdRow(
    ctx: RunContext,
    run: { runId: string; credits: number; calls: number },
    usualTried = false,
  ): Promise<HoldRefusal | null> {
    const { db, now, freeCalls } = this.o;
    const ms = now();
    const day = utcDay(ms);
    // The usual case in one statement: a paid, active account without a cap or daily limit, a key without a daily
    // limit, credits available. The only rule then is the credits (holdRefusal's last), checked under the row's lock
    // by the update itself; the hold's row is written in the same statement. Anything else takes the full step.
    const fast = usualTried
      ? []
      : await db.query(
          `WITH a AS (
         UPDATE accounts SET held = held + $3 WHERE id = $1 AND status = 'active' AND plan = 'paid' AND call_cap IS NULL
           AND daily_limit IS NULL AND balance - held >= $3
           AND EXISTS (SELECT 1 FROM keys WHERE id = $2 AND daily_limit IS NULL) RETURNING id)
       INSERT INTO holds (run_id, account_id, key_id, amount, calls, free_plan, day, state, owner, created_at)
         SELECT $4, a.id, $2, $3, $5, false, $6, 'held', $7, $8 FROM a RETURNING 1`,
          [
            ctx.account.id,
            ctx.key.id,
            run.credits,
            run.runId,
            run.calls,
            day,
            this.o.owner,
            new Date(ms).toISOString(),
          ],
        );
    if (fast.length === 1) return null;
    return db.tx(async (sql) => {
      const account = await sql.one<AccountRow>("SELECT * FROM accounts WHERE id = $1 FOR UPDATE", [ctx.account.id]);
      if (!account) throw new Error(`no account ${ctx.account.id}`);
      const key = await sql.one<{ daily_limit: number | null; spend_day: string; spend_today: number }>(
        "SELECT daily_limit, spend_day, spend_today FROM keys WHERE id = $1 FOR UPDATE",
        [ctx.key.id],
      );
      const keyHeld = key?.daily_limit == null ? 0 : await heldBy(sql, ctx.key.id);
      const free = account.plan === "free";
      const startedToday = account.call_cap === null ? 0 : account.calls_day >= day ? account.calls_today : 0;
      const refusal = holdRefusal(
        {
          plan: account.plan,
          status: account.status,
          balance: account.balance,
          held: account.held,
          spentToday: today(account, day),
          dailyLimit: account.daily_limit,
          freeCallsLeft: free ? Math.max(0, freeCalls - account.free_calls_used - account.free_calls_held) : null,
          freeCalls,
          callCap: account.call_cap,
          startedToday,
          keyDailyLimit: key?.daily_limit ?? null,
          keySpent: () => (key ? today(key, day) : 0) + keyHeld,
        },
        run,
      );
      if (refusal) return refusal;
      await sql.query(
        "INSERT INTO holds (run_id, account_id, key_id, amount, calls, free_plan, day, state, " +
          "owner, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'held', $8, $9)",
        [
          run.runId,
          account.id,
          ctx.key.id,
          run.credits,
          run.calls,
          free,
          day,
          this.o.owner,
          new Date(ms).toISOString(),
        ],
      );
      const started = account.call_cap === null ? account.calls_today : startedToday + run.calls;
      await sql.query(
        "UPDATE accounts SET held = held + $2, free_calls_held = free_calls_held + $3, calls_day = $4, calls_today = $5 WHERE id = $1",
        [
          account.id,
          run.credits,
          free ? run.calls : 0,
          account.call_cap === null || account.calls_day > day ? account.calls_day : day,
          started,
        ],
      );
      return null;
    });
  }

  /**
   * Ends a run's hold: charges `amount` (at most what was held) for `calls` calls and releases the rest, exactly
   * once: a hold that already ended is left alone, and the answer is what it charged then. Returns the charge and
   * the balance after.
   */
  settle(runId: string, amount: number, calls: number): Promise<{ charged: number; balance: number }> {
    const ms = this.o.now();
    return this.o.db.tx(async (sql) => {
      const { charged, balance } = await settleHold(sql, { runId, amount, calls, ms });
      return { charged, balance };
    });
  }

  /** Ends a run's hold with nothing charged (the run broke, or was refused after the hold). */
  async releaseHold(runId: string): Promise<void> {
    await this.settle(runId, 0, 0);
  }

  /** Pauses every charged call from now on, on every instance (D60): the next admission of each reads it. */
  async pause(message: string): Promise<{ message: string; since: string }> {
    const pause = { message, since: isoSeconds(this.o.now()) };
    await this.o.db.query(
      "INSERT INTO meta (name, value) VALUES ('paused', $1) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      [JSON.stringify(pause)],
    );
    return pause;
  }

  /** Ends the pause; answers whether there was one. */
  async unpause(): Promise<boolean> {
    return (await this.o.db.query("DELETE FROM meta WHERE name = 'paused' RETURNING 1")).length === 1;
  }

  /**
   * The credit numbers of a key's billing block (the engine's `creditView`): the key's daily limit when it has
   * one, else the account's; what every instance's calls hold counts as spent today.
   */
  async view(accountId: string, keyId: string | null): Promise<CreditView> {
    const day = utcDay(this.o.now());
    const row = await this.o.db.one<AccountRow & { k_limit: number | null; k_day: string; k_today: number }>(
      "SELECT a.*, k.daily_limit AS k_limit, k.spend_day AS k_day, k.spend_today AS k_today FROM accounts a LEFT JOIN keys k ON k.id = $2 WHERE a.id = $1",
      [accountId, keyId],
    );
    if (!row) throw new Error(`no account ${accountId}`);
    const account = { balance: row.balance, held: row.held, spentToday: today(row, day), dailyLimit: row.daily_limit };
    if (keyId === null || row.k_limit === null) return creditView(account, null);
    const keyHeld = await heldBy(this.o.db, keyId);
    const key = { dailyLimit: row.k_limit, spentToday: today({ spend_day: row.k_day, spend_today: row.k_today }, day) };
    return creditView(account, { ...key, held: () => keyHeld });
  }

  /** Credits an account was charged per UTC day (`YYYY-MM-DD`), from `fromDay` on; days without charges left out. */
  dailyCharges(accountId: string, fromDay: string): Promise<Array<{ day: string; credits: number }>> {
    return this.o.db.query(
      "SELECT day, SUM(amount) AS credits FROM ledger WHERE account_id = $1 AND kind = 'charge' AND day >= $2 GROUP BY day ORDER BY day",
      [accountId, fromDay],
    );
  }

  /** Adds `credits` to an account's balance, with the ledger's `grant` row, in one transaction. */
  grant(accountId: string, credits: number, note = "grant"): Promise<number> {
    const ms = this.o.now();
    return this.o.db.tx(async (sql) => {
      await sql.query(
        "INSERT INTO ledger (account_id, kind, amount, note, day, created_at) VALUES ($1, 'grant', $2, $3, $4, $5)",
        [accountId, credits, note, utcDay(ms), new Date(ms).toISOString()],
      );
      const row = await sql.one<{ balance: number }>(
        "UPDATE accounts SET balance = balance + $2 WHERE id = $1 RETURNING balance",
        [accountId, credits],
      );
      if (!row) throw new Error(`no account ${accountId}`);
      return row.balance;
    });
  }

  /**
   * The ledger's identity for an account, read in one snapshot: `balance = grants − charges` and
   * `held = Σ holds still held`.
   */
  audit(
    accountId: string,
  ): Promise<{ balance: number; grants: number; charges: number; held: number; holdsHeld: number }> {
    return this.o.db.tx(async (sql) => {
      await sql.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
      const row = await sql.one<{ balance: number; held: number; grants: number; charges: number; holds_held: number }>(
        `SELECT a.balance, a.held,
           (SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE account_id = a.id AND kind = 'grant') AS grants,
           (SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE account_id = a.id AND kind = 'charge') AS charges,
           (SELECT COALESCE(SUM(amount), 0) FROM holds WHERE account_id = a.id AND state = 'held') AS holds_held
         FROM accounts a WHERE a.id = $1`,
        [accountId],
      );
      if (!row) throw new Error(`no account ${accountId}`);
      return {
        balance: row.balance,
        held: row.held,
        grants: row.grants,
        charges: row.charges,
        holdsHeld: row.holds_held,
      };
    });
  }
}

/**
 * The common table expressions that end a hold (`h`), write its charge (`l`), move the key's (`k`) and the account's
 * (`a`, returning the balance after) figures, over the parameters $1 run id, $2 amount to charge, $3 when, $4 its
 * UTC day, $5 calls, $6 the operation or tool charged for (the charge's `note`, which the console lists);
 * `condition` narrows the hold (e.g. ` AND LEAST($2, amount) = $2`). The statement that uses them selects from `h`
 * and `a`.
 */
export function settleCtes(condition: string): string {
  return `h AS (
       UPDATE holds SET captured = LEAST($2, amount),
         state = CASE WHEN LEAST($2, amount) > 0 THEN 'captured' ELSE 'released' END, ended_at = $3
       WHERE run_id = $1 AND state = 'held'${condition}
       RETURNING account_id, key_id, amount, calls, free_plan, captured),
     l AS (
       INSERT INTO ledger (account_id, kind, amount, key_id, run_id, note, day, created_at)
       SELECT account_id, 'charge', captured, key_id, $1, $6::text, $4, $3 FROM h WHERE captured > 0),
     k AS (
       UPDATE keys SET spend_today = CASE WHEN spend_day >= $4 THEN spend_today + h.captured ELSE h.captured END,
         spend_day = GREATEST(spend_day, $4)
       FROM h WHERE keys.id = h.key_id AND h.captured > 0),
     a AS (
       UPDATE accounts SET balance = balance - h.captured, held = held - h.amount,
         free_calls_held = free_calls_held - CASE WHEN h.free_plan THEN h.calls ELSE 0 END,
         free_calls_used = free_calls_used + CASE WHEN h.free_plan AND h.captured > 0 THEN LEAST($5, h.calls) ELSE 0 END,
         spend_today = CASE WHEN spend_day >= $4 THEN spend_today + h.captured ELSE h.captured END,
         spend_day = GREATEST(spend_day, $4)
       FROM h WHERE accounts.id = h.account_id
       RETURNING accounts.balance)`;
}

/**
 * Ends a run's hold inside the transaction `sql`: charges `amount` (at most what was held) for `calls` calls and
 * releases the rest, exactly once (the conditional update of the hold's row); a hold already ended is left alone
 * and the answer is what it charged then. Returns the charge, the account's balance after, and whether this call
 * ended the hold (false: it had ended before, by a settle or a recovery).
 */
export async function settleHold(
  sql: Sql,
  o: { runId: string; amount: number; calls: number; ms: number; operation?: string | null },
): Promise<{ charged: number; balance: number; ended: boolean }> {
  const [day, at] = [utcDay(o.ms), new Date(o.ms).toISOString()];
  // One statement (its own atomic step even outside a transaction): the hold ends by its conditional update, and its
  // charge (one ledger row under the unique index per run), the key's and the account's figures move with it.
  const ended = await sql.one<{ charged: number; balance: number }>(
    `WITH ${settleCtes("")} SELECT h.captured AS charged, a.balance FROM h, a`,
    [o.runId, Math.max(0, o.amount), at, day, o.calls, o.operation ?? null],
  );
  if (ended) return { ...ended, ended: true };
  const row = await sql.one<{ captured: number; balance: number }>(
    "SELECT h.captured, a.balance FROM holds h JOIN accounts a ON a.id = h.account_id WHERE h.run_id = $1",
    [o.runId],
  );
  if (!row) throw new Error(`run ${o.runId} holds nothing`);
  return { charged: row.captured, balance: row.balance, ended: false };
}

const slotKey = (slot: IdempotencySlot) => `${slot.keyId}\u0000${slot.idemKey}`;

/** Credits the key's calls in flight hold, on every instance. */
async function heldBy(sql: Sql | Postgres, keyId: string): Promise<number> {
  const row = await sql.one<{ s: number }>(
    "SELECT COALESCE(SUM(amount), 0) AS s FROM holds WHERE key_id = $1 AND state = 'held'",
    [keyId],
  );
  return row?.s ?? 0;
}

/** What a claim found in a row another call inserted (or, if it vanished since, that the key is free to try again). */
function claimOf(row: IdempotencyRow | undefined, print: string): Claim<HttpAnswer> {
  // Released between our insert and our read: the other call was refused; this one reports 409 and may retry.
  if (!row) return { kind: "in_progress" };
  if (row.fingerprint !== print) return { kind: "conflict" };
  if (row.state === "running") return { kind: "in_progress" };
  const headers = { ...(row.headers ?? {}), "idempotent-replayed": "true" };
  return { kind: "replay", answer: { status: row.http_status ?? 200, headers, body: row.answer ?? Buffer.alloc(0) } };
}
