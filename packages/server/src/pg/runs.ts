/**
 * Runs that outlive an instance, on PostgreSQL (D108): each instance is an owner with a lease on the database's
 * clock, renewed by heartbeats; a run that answered 202 has a row naming its owner, readable by its handle from any
 * instance; a run ends exactly once (its row locked, its hold ended by a conditional update); and when an owner's
 * lease runs out, one instance ends its runs broken, releases its holds (nothing charged) and frees its
 * Idempotency-Keys — exactly once, whichever instances recover at the same moment.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { isoSeconds, type IdempotencySlot } from "@sdgw/engine";
import type { ConsoleResult } from "../systems/runs.ts";
import { settleCtes, settleHold, utcDay } from "./calls.ts";
import type { Postgres } from "./database.ts";
import { DB_NOW_MS, type DbClock } from "./clock.ts";
import { storable } from "./text.ts";

/** Options of {@link PgRuns}. */
export interface PgRunsOptions {
  db: Postgres;
  /** The gateway's clock (ms): the times its rows show. Leases run on the database's clock instead. */
  now: () => number;
  /** How long an owner stays live after its last renewal, in ms (renew every sixth of it). */
  leaseMs: number;
  /** How long a finished answer reads under its handle, in ms (then 410). */
  retentionMs: number;
  /** How long an answered Idempotency-Key replays, in ms. */
  idempotencyTtlMs: number;
  /** The database's clock, given the reading of each renewal (D110). */
  clock?: DbClock;
}

/** A run that answers 202: what its row keeps for reads of its handle on any instance. */
export interface PersistedRun {
  id: string;
  handle: string;
  keyId: string;
  accountId: string;
  workspaceId: string;
  operation: string;
  requestId: string;
  shape: string;
  quote: number;
  waves: number | null;
}

/** A run's row as a read of its handle sees it. */
export interface RunRow {
  id: string;
  handle: string;
  key_id: string;
  account_id: string;
  state: "running" | "finished" | "broken";
  request_id: string;
  shape: string;
  quote: number;
  charged: number;
  owner: string | null;
  waves: number | null;
  http_status: number | null;
  headers: Record<string, string> | null;
  answer: Buffer | null;
  /** ISO instant after which a finished answer reads 410. */
  expires_at: string | null;
}

/** An answer kept under a new handle (see `PgRuns.keep`): who may read it, and what it is. */
export interface KeptRow {
  handle: string;
  key: { id: string; account_id: string; workspace_id: string };
  requestId: string;
  operation: string;
  headers: Record<string, string>;
  answer: string;
}

/** What a run's end keeps: the answer sent (and replayed under its Idempotency-Key), and what its handle reads. */
export interface RunEnding {
  sent: { status: number; headers: Record<string, string>; body: Buffer };
  kept: { headers: Record<string, string>; answer: Buffer };
}

/** How a run's end went: ended here, with its charge; or another instance had ended it (nothing written here). */
export type FinishOutcome =
  | { kind: "finished"; charged: number; sent: RunEnding["sent"] }
  | { kind: "ended_elsewhere" };

/** A single 64-bit key for the advisory lock of recovery ("sdgw rec"). */
const RECOVER_LOCK = "7306926204466340707";

/** The owner of runs on this instance, their rows, and the recovery of gone owners' runs. */
export class PgRuns {
  /** This instance's owner id: its runs', claims' and holds' `owner`. */
  readonly owner: string;
  private readonly o: PgRunsOptions;

  constructor(options: PgRunsOptions) {
    this.o = options;
    this.owner = `own_${process.pid}_${randomBytes(6).toString("hex")}`;
  }

  /** Writes (or renews) this instance's owner row: live for `leaseMs` from now on the database's clock. */
  async register(): Promise<void> {
    await this.o.db.query(
      "INSERT INTO owners (id, host, pid, started_at, lease_until) VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp() + $4 * interval '1 millisecond') ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until",
      [this.owner, hostname(), process.pid, this.o.leaseMs],
    );
  }

  /**
   * Renews the lease. False when this owner's row is gone: another instance found the lease run out and recovered
   * its runs (they will write nothing more; the caller lets them go and registers again).
   */
  async renew(): Promise<boolean> {
    const sentAt = performance.now();
    const rows = await this.o.db.query<{ ms: number }>(
      `UPDATE owners SET lease_until = clock_timestamp() + $2 * interval '1 millisecond' WHERE id = $1 RETURNING ${DB_NOW_MS} AS ms`,
      [this.owner, this.o.leaseMs],
    );
    if (rows[0]) this.o.clock?.reading({ dbMs: rows[0].ms, sentAt, receivedAt: performance.now() });
    return rows.length === 1;
  }

  /** Ends the lease now (closing): the runs still in flight here are recovered by the next instance that looks. */
  async retire(): Promise<void> {
    await this.o.db.query("UPDATE owners SET lease_until = clock_timestamp() - interval '1 second' WHERE id = $1", [
      this.owner,
    ]);
  }

  /** Whether an owner's lease still runs. */
  async isLive(owner: string): Promise<boolean> {
    const row = await this.o.db.one("SELECT 1 FROM owners WHERE id = $1 AND lease_until > clock_timestamp()", [owner]);
    return row !== undefined;
  }

  /** The row of a run that answers 202, owned by this instance, committed before the 202 is sent. */
  async persist(run: PersistedRun): Promise<void> {
    await this.o.db.query(
      "INSERT INTO runs (id, handle, key_id, account_id, workspace_id, operation, request_id, shape, state, quote, waves, owner, started_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9, $10, $11, $12)",
      [
        run.id,
        run.handle,
        run.keyId,
        run.accountId,
        run.workspaceId,
        run.operation,
        run.requestId,
        run.shape,
        run.quote,
        run.waves,
        this.owner,
        new Date(this.o.now()).toISOString(),
      ],
    );
  }

  /**
   * Ends a run normally, in one transaction: its row (if it answered 202) locked and still running, its hold ended
   * by this call (charging `amount` for `calls` calls), then `build` makes the answer from the charge and balance,
   * the row keeps it and the Idempotency-Key's claim (if any, and still this run's) completes with it. When another
   * instance ended the run first (its owner's lease had run out), nothing is written and `ended_elsewhere` says so.
   */
  finish(
    runId: string,
    o: {
      amount: number;
      calls: number;
      /** The operation or tool charged for, kept as the charge's `note` (the console lists it). */
      operation?: string;
      /** Whether the run has a row (it answered 202): false skips looking for one. */
      persisted?: boolean;
      slot?: IdempotencySlot;
      build: (settled: { charged: number; balance: number }) => RunEnding;
    },
  ): Promise<FinishOutcome> {
    const ms = this.o.now();
    return this.o.db
      .tx(async (sql): Promise<FinishOutcome> => {
        const row =
          o.persisted === false
            ? undefined
            : await sql.one<{ state: string }>("SELECT state FROM runs WHERE id = $1 FOR UPDATE", [runId]);
        if (row && row.state !== "running") return { kind: "ended_elsewhere" };
        const settled = await settleHold(sql, {
          runId,
          amount: o.amount,
          calls: o.calls,
          ms,
          operation: o.operation ?? null,
        });
        // A hold already ended means a recovery ended this run (a run without a row): its end would be free data.
        if (!settled.ended) throw new EndedElsewhere(runId);
        const { sent, kept } = o.build(settled);
        const at = new Date(ms).toISOString();
        if (row)
          await sql.query(
            "UPDATE runs SET state = 'finished', charged = $2, http_status = $3, headers = $4, answer = $5, ended_at = $6, expires_at = $7 WHERE id = $1",
            [
              runId,
              settled.charged,
              sent.status,
              JSON.stringify(kept.headers),
              kept.answer,
              at,
              iso(ms + this.o.retentionMs),
            ],
          );
        if (o.slot)
          await sql.query(
            "UPDATE idempotency SET state = 'done', http_status = $4, headers = $5, answer = $6, expires_at = $7 WHERE key_id = $1 AND idem_key = $2 AND run_id = $3",
            [
              o.slot.keyId,
              o.slot.idemKey,
              runId,
              sent.status,
              JSON.stringify(sent.headers),
              sent.body,
              iso(ms + this.o.idempotencyTtlMs),
            ],
          );
        return { kind: "finished", charged: settled.charged, sent };
      })
      .catch((e: unknown): FinishOutcome => {
        if (e instanceof EndedElsewhere) return { kind: "ended_elsewhere" };
        throw e;
      });
  }

  /**
   * D129: ends a run that has no row (it answered without a 202) in one statement, outside a transaction — the
   * least the end can cost: one round trip and one commit, the account's row locked only while that statement
   * commits (a transaction of three statements held it across three round trips and the process's turns between
   * them, which on a hot account set the pace of every call). Its hold ends charging `charged` (the statement
   * writes nothing unless that is what the hold's own rule gives), its charge and figures move as in
   * {@link settleHold}, and the Idempotency-Key's claim (if any, and still this run's) completes with the answer
   * `before` + the balance after + `after`: the answer was built with the balance left out, and PostgreSQL puts in
   * the one it wrote. Null when it wrote nothing (the hold had ended, or would charge otherwise): the caller ends the
   * run the usual way, which tells which.
   */
  async finishAtOnce(
    runId: string,
    o: {
      charged: number;
      calls: number;
      /** The operation charged for, kept as the charge's `note` (the console lists it). */
      operation: string;
      slot?: IdempotencySlot;
      sent: { status: number; headers: Record<string, string>; before: Buffer; after: Buffer };
    },
  ): Promise<{ charged: number; balance: number } | null> {
    const ms = this.o.now();
    const row = await this.o.db.one<{ charged: number; balance: number }>(
      `WITH ${settleCtes(" AND LEAST($2, amount) = $2")},
         i AS (
           UPDATE idempotency SET state = 'done', http_status = $9, headers = $10,
             answer = $11::bytea || convert_to(a.balance::text, 'UTF8') || $12::bytea, expires_at = $13
           FROM a WHERE key_id = $7 AND idem_key = $8 AND run_id = $1 RETURNING 1)
       SELECT h.captured AS charged, a.balance, (SELECT count(*) FROM i) AS answered FROM h, a`,
      [
        runId,
        Math.max(0, o.charged),
        new Date(ms).toISOString(),
        utcDay(ms),
        o.calls,
        o.operation,
        o.slot?.keyId ?? null,
        o.slot?.idemKey ?? null,
        o.sent.status,
        JSON.stringify(o.sent.headers),
        o.sent.before,
        o.sent.after,
        iso(ms + this.o.idempotencyTtlMs),
      ],
    );
    return row ? { charged: row.charged, balance: row.balance } : null;
  }

  /**
   * Ends a run broken on the server's side, in one transaction: its hold released (nothing charged), its row (if
   * any) broken (its handle reads 500), its Idempotency-Key's claim (if still this run's) freed.
   */
  async breakRun(runId: string, slot?: IdempotencySlot): Promise<void> {
    const ms = this.o.now();
    await this.o.db.tx(async (sql) => {
      await settleHold(sql, { runId, amount: 0, calls: 0, ms }).catch(() => undefined); // a run that held nothing
      await sql.query(
        "UPDATE runs SET state = 'broken', http_status = 500, ended_at = $2, expires_at = $3 WHERE id = $1 AND state = 'running'",
        [runId, iso(ms), iso(ms + this.o.retentionMs)],
      );
      if (slot)
        await sql.query(
          "DELETE FROM idempotency WHERE key_id = $1 AND idem_key = $2 AND run_id = $3 AND state = 'running'",
          [slot.keyId, slot.idemKey, runId],
        );
    });
  }

  /** The run of a handle, as stored now, or undefined. */
  async read(handle: string): Promise<RunRow | undefined> {
    if (!storable(handle)) return undefined;
    const row = await this.o.db.one<Omit<RunRow, "expires_at"> & { expires_at: Date | null }>(
      "SELECT id, handle, key_id, account_id, state, request_id, shape, quote, charged, owner, waves, http_status, headers, answer, expires_at FROM runs WHERE handle = $1",
      [handle],
    );
    return row && { ...row, expires_at: row.expires_at && iso(row.expires_at.getTime()) };
  }

  /** The operation whose run made `handle`, when that run is the key's; null otherwise. */
  async operationOf(handle: string, keyId: string): Promise<string | null> {
    if (!storable(handle, keyId)) return null;
    const row = await this.o.db.one<{ operation: string }>(
      "SELECT operation FROM runs WHERE handle = $1 AND key_id = $2",
      [handle, keyId],
    );
    return row?.operation ?? null;
  }

  /** The handle of the run that a call under the key's Idempotency-Key started; null when none. */
  async handleOfIdempotencyKey(keyId: string, idemKey: string): Promise<string | null> {
    if (!storable(keyId, idemKey)) return null;
    const row = await this.o.db.one<{ handle: string | null }>(
      "SELECT r.handle FROM idempotency i JOIN runs r ON r.id = i.run_id WHERE i.key_id = $1 AND i.idem_key = $2",
      [keyId, idemKey],
    );
    return row?.handle ?? null;
  }

  /**
   * Keeps a finished answer sent without a handle under a new handle, readable by `key` for `retentionMs` (the MCP
   * server's answers over its size bound, so that `more` reads on). Nothing is charged: the call that made it was.
   */
  async keep(o: KeptRow): Promise<string> {
    const ms = this.o.now();
    await this.o.db.query(
      "INSERT INTO runs (id, handle, key_id, account_id, workspace_id, operation, request_id, shape, state, quote, charged, http_status, headers, answer, started_at, ended_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'kept', 'finished', 0, 0, 200, $8, $9, $10, $10, $11)",
      [
        `kept_${o.handle}`,
        o.handle,
        o.key.id,
        o.key.account_id,
        o.key.workspace_id,
        o.operation,
        o.requestId,
        JSON.stringify(o.headers),
        Buffer.from(o.answer),
        iso(ms),
        iso(ms + this.o.retentionMs),
      ],
    );
    return o.handle;
  }

  /**
   * The console's list of an account's calls under its keys named `keyName` (the newest 200): runs that outlived
   * their request or kept their answer have a row and a handle; a call answered at once has only its charge.
   */
  async consoleResults(accountId: string, keyName: string): Promise<ConsoleResult[]> {
    type Times = Record<"started_at" | "ended_at" | "expires_at", Date | null>;
    const rows = await this.o.db.query<Omit<ConsoleResult, keyof Times> & Times>(
      `SELECT r.id AS run_id, r.handle, r.operation, r.state, r.quote, r.charged, r.started_at, r.ended_at, r.expires_at FROM runs r JOIN keys k ON k.id = r.key_id WHERE r.account_id = $1 AND k.name = $2
       UNION ALL
       SELECT l.run_id, NULL, l.note, 'finished', l.amount, l.amount, l.created_at, l.created_at, NULL FROM ledger l JOIN keys k ON k.id = l.key_id
         WHERE l.account_id = $1 AND k.name = $2 AND l.kind = 'charge' AND l.run_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM runs r2 WHERE r2.id = l.run_id)
       ORDER BY started_at DESC, run_id DESC LIMIT 200`,
      [accountId, keyName],
    );
    const at = (d: Date | null) => (d === null ? null : isoSeconds(d.getTime()));
    return rows.map((r) => ({
      ...r,
      started_at: at(r.started_at)!,
      ended_at: at(r.ended_at),
      expires_at: at(r.expires_at),
    }));
  }

  /** Forgets answers kept past their time (their handles then read 410) and answered keys past their 24 h. */
  async sweep(): Promise<void> {
    const at = iso(this.o.now());
    await this.o.db.query(
      "UPDATE runs SET answer = NULL WHERE state <> 'running' AND answer IS NOT NULL AND expires_at <= $1",
      [at],
    );
    await this.o.db.query("DELETE FROM idempotency WHERE state = 'done' AND expires_at <= $1", [at]);
  }

  /**
   * Ends what gone owners left (an owner is gone when its lease ran out on the database's clock): their running runs
   * broken, their holds released (nothing charged), their Idempotency-Key claims freed, their owner rows removed.
   * One instance at a time (an advisory lock; another that finds it taken skips this round), and every change is
   * conditional, so each run is ended once even if its owner comes back to finish it (its `finish` then finds it
   * ended). Returns the ids of the runs it ended.
   */
  recover(): Promise<string[]> {
    const ms = this.o.now();
    return this.o.db.tx(async (sql) => {
      const locked = await sql.one<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock($1) AS ok", [RECOVER_LOCK]);
      if (!locked?.ok) return [];
      const live = "SELECT id FROM owners WHERE lease_until > clock_timestamp()";
      const ended = await sql.query<{ id: string }>(
        `UPDATE runs SET state = 'broken', http_status = 500, ended_at = $1, expires_at = $2 WHERE state = 'running' AND (owner IS NULL OR owner NOT IN (${live})) RETURNING id`,
        [iso(ms), iso(ms + this.o.retentionMs)],
      );
      const holds = await sql.query<{ run_id: string }>(
        `SELECT run_id FROM holds WHERE state = 'held' AND owner NOT IN (${live}) ORDER BY run_id FOR UPDATE`,
      );
      for (const h of holds) await settleHold(sql, { runId: h.run_id, amount: 0, calls: 0, ms });
      await sql.query(`DELETE FROM idempotency WHERE state = 'running' AND owner NOT IN (${live})`);
      await sql.query("DELETE FROM owners WHERE lease_until <= clock_timestamp()");
      return ended.map((r) => r.id);
    });
  }

  /**
   * Ends this instance's own debris (D109): its claims still running, holds still held and 202 runs still running
   * whose run `working` says it no longer works on — left by requests and runs whose writes failed while the
   * database did not answer, or whose committed write's answer was lost. The runs are ended broken (their handles
   * read 500), the holds released (nothing charged), the claims freed (the same Idempotency-Key runs the call
   * again), each by a conditional update, so a run that did end meanwhile is left as it ended. The rows are read
   * first and `working` asked after: a run's id is known to `working` before its first row is written, so a row
   * read whose run is not in it is no longer anyone's. Returns the run ids it ended something of.
   */
  async reconcile(working: (runId: string) => boolean): Promise<string[]> {
    const rows = await this.o.db.query<{ run_id: string }>(
      `SELECT run_id FROM holds WHERE owner = $1 AND state = 'held'
       UNION SELECT run_id FROM idempotency WHERE owner = $1 AND state = 'running' AND run_id IS NOT NULL
       UNION SELECT id FROM runs WHERE owner = $1 AND state = 'running'`,
      [this.owner],
    );
    const debris = rows.map((r) => r.run_id).filter((id) => !working(id));
    if (debris.length === 0) return [];
    const ms = this.o.now();
    return this.o.db.tx(async (sql) => {
      const ended = new Set<string>();
      const holds = await sql.query<{ run_id: string }>(
        "SELECT run_id FROM holds WHERE run_id = ANY($1) AND owner = $2 AND state = 'held' ORDER BY run_id FOR UPDATE",
        [debris, this.owner],
      );
      for (const h of holds) {
        await settleHold(sql, { runId: h.run_id, amount: 0, calls: 0, ms });
        ended.add(h.run_id);
      }
      const runs = await sql.query<{ id: string }>(
        "UPDATE runs SET state = 'broken', http_status = 500, ended_at = $3, expires_at = $4 WHERE id = ANY($1) AND owner = $2 AND state = 'running' RETURNING id",
        [debris, this.owner, iso(ms), iso(ms + this.o.retentionMs)],
      );
      const claims = await sql.query<{ run_id: string }>(
        "DELETE FROM idempotency WHERE run_id = ANY($1) AND owner = $2 AND state = 'running' RETURNING run_id",
        [debris, this.owner],
      );
      for (const r of [...runs.map((x) => x.id), ...claims.map((x) => x.run_id)]) ended.add(r);
      return [...ended];
    });
  }
}

/** Thrown inside `finish`'s transaction to roll it back when another instance ended the run. */
class EndedElsewhere extends Error {
  constructor(runId: string) {
    super(`run ${runId} was ended by another instance`);
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
