/**
 * Owners of runs: several processes may open one database file (the HTTP server, `sdgw-mcp`, the admin CLI), so a
 * run that answered 202 records which process runs it, and recovery ends only the runs of a process that is gone.
 *
 * Each gateway that serves has an owner row: a random id (with the pid, for people reading it), the machine it runs
 * on (`host`, see `hostIdentity`), its pid, and a lease (`lease_until`, wall-clock milliseconds) that the live
 * process renews every sixth of the lease (5 s of the default 30 s). An owner is gone when
 *
 * - its lease expired (it stopped renewing: killed, frozen, or its machine or container went away), or was ended by
 *   the process itself when it closed its store (`retire`: lease 0; its runs will never write again), or
 * - it ran on this same machine, in this same process-id namespace, and its pid no longer exists
 *   (`process.kill(pid, 0)` answers ESRCH): a process killed a moment ago is recovered at once, without waiting for
 *   its lease. A pid that exists proves nothing (it may have been reused): then only the lease decides.
 *
 * A run whose owner has no row, or no owner at all (written before owners existed), is a gone owner's.
 * Leases are compared with the wall clock of the process that reads them; every process sharing a WAL database runs
 * on the same machine (WAL needs shared memory), so they read the same clock.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";
import { isoSeconds, type Store } from "./store.ts";

/** An owner row as stored. */
export interface OwnerRecord {
  id: string;
  host: string;
  pid: number;
  started_at: string;
  /** Until when (wall clock, ms since the epoch) the owner is live without renewing; 0 once it retired. */
  lease_until: number;
}

/** Dependencies of the owners system. */
export interface OwnersDeps {
  store: Store;
  /** How long an owner stays live after its last renewal, in ms. */
  leaseMs: number;
  /** The wall clock of leases (default `Date.now`; not the gateway's clock, which tests move). */
  clock?: () => number;
  /** Where a failed renewal or sweep is reported. */
  log?: (message: string, error?: unknown) => void;
}

/**
 * Which machine and which process-id namespace this process runs in: on Linux the host name, the boot id and the
 * pid namespace (two containers on one machine differ), elsewhere the platform and the host name. Two owners with
 * the same identity see the same pids; an empty identity (Linux without /proc) never matches, so only leases decide.
 */
export function hostIdentity(): string {
  if (process.platform !== "linux") return `${process.platform}|${hostname()}`;
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const pidNamespace = readlinkSync("/proc/self/ns/pid");
    return `linux|${hostname()}|${boot}|${pidNamespace}`;
  } catch {
    return "";
  }
}

/** Whether a process of this pid exists on this machine (EPERM: it exists, owned by another user). */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

const HOST = hostIdentity();

/** This process's owner row, its lease, and which other owners are gone. */
export class Owners {
  /** This gateway's owner id, written into the `owner` column of the runs it starts. */
  readonly id: string;
  /** This process's machine identity (see `hostIdentity`). */
  readonly host = HOST;
  /** The lease, in ms. */
  readonly leaseMs: number;
  private readonly deps: OwnersDeps;
  private readonly clock: () => number;
  private registered = false;
  /** The answer-log segment this process appends to (kept in its row). */
  private segment: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** What each heartbeat does after renewing (the gateway's recovery), if anything. */
  private onTick: ((renewed: boolean) => void) | null = null;

  constructor(deps: OwnersDeps) {
    this.deps = deps;
    this.leaseMs = deps.leaseMs;
    this.clock = deps.clock ?? Date.now;
    this.id = `own_${process.pid}_${randomBytes(6).toString("hex")}`;
  }

  /**
   * Writes this owner's row with a fresh lease (inside the caller's transaction, or the turn's). Called when the
   * gateway opens, and again with every run that answers 202, in the transaction that stores the run: a run is
   * never committed without a live owner row.
   */
  register(): void {
    const now = this.clock();
    this.deps.store.run(
      "INSERT INTO owners (id, host, pid, started_at, lease_until, answer_segment) VALUES (?, ?, ?, " +
        "?, ?, ?) ON CONFLICT(id) DO UPDATE SET lease_until = excluded.lease_until",
      this.id,
      this.host,
      process.pid,
      isoSeconds(now),
      now + this.leaseMs,
      this.segment,
    );
    this.registered = true;
    // A gateway that does not recover (recover: false) but runs a call that answers 202 still renews its lease.
    if (!this.timer && this.deps.store.path !== ":memory:") this.start();
  }

  /**
   * Renews the lease (a heartbeat). A row that is gone (another process found the lease expired, ended this
   * process's runs and removed it) is written again: runs started from now on are protected again; those already
   * ended are found ended by their own end (`Runs`), which then charges nothing. Returns false when it had to.
   */
  renew(): boolean {
    if (!this.registered) return true;
    const changed = this.deps.store.tx(() =>
      this.deps.store.run("UPDATE owners SET lease_until = ? WHERE id = ?", this.clock() + this.leaseMs, this.id),
    );
    if (changed > 0) return true;
    this.deps.store.tx(() => this.register());
    return false;
  }

  /**
   * Ends this owner's lease now (its store is closing and its runs will not write again): another process, or the
   * next start, may end them at once.
   */
  retire(): void {
    this.stop();
    if (!this.registered || !this.deps.store.db.isOpen) return;
    this.registered = false;
    this.deps.store.tx(() => this.deps.store.run("UPDATE owners SET lease_until = 0 WHERE id = ?", this.id));
  }

  /** Whether an owner row says its process is gone (see the top of this file); this gateway is never gone. */
  isGone(row: Pick<OwnerRecord, "id" | "host" | "pid" | "lease_until">, now = this.clock()): boolean {
    if (row.id === this.id) return false;
    if (row.lease_until <= now) return true;
    return this.host !== "" && row.host === this.host && row.pid !== process.pid && !pidExists(row.pid);
  }

  /** The owners that are live now, by id (this gateway included), and the rows of those that are gone. */
  census(): { live: Set<string>; gone: string[] } {
    const now = this.clock();
    const live = new Set<string>([this.id]);
    const gone: string[] = [];
    for (const row of this.deps.store.all<OwnerRecord>("SELECT id, host, pid, lease_until FROM owners")) {
      if (this.isGone(row, now)) gone.push(row.id);
      else live.add(row.id);
    }
    return { live, gone };
  }

  /** Whether the owner of this id is live now (false for no owner, or an owner with no row). */
  isLive(id: string | null): boolean {
    if (id === null) return false;
    if (id === this.id) return true;
    const row = this.deps.store.get<OwnerRecord>("SELECT id, host, pid, lease_until FROM owners WHERE id = ?", id);
    return row !== undefined && !this.isGone(row);
  }

  /**
   * Records the answer-log segment this process appends to (in the transaction of the first records that point
   * there), so that another process's sweep keeps it while this lease holds (see answer-log.ts).
   */
  useSegment(file: number): void {
    this.segment = file;
    if (this.registered) this.deps.store.write("UPDATE owners SET answer_segment = ? WHERE id = ?", file, this.id);
  }

  /** Removes the rows of gone owners (once their runs were ended). */
  forget(ids: readonly string[]): void {
    for (const id of ids) if (id !== this.id) this.deps.store.run("DELETE FROM owners WHERE id = ?", id);
  }

  /**
   * Renews the lease every sixth of it and calls `onTick` (the last one given) after each renewal, with false when
   * the row had been removed meanwhile (the gateway then lets go of its runs that were ended elsewhere, and recovers
   * the runs of gone owners). Started by the first `register` on a database file. The timer does not keep the
   * process alive, and stops by itself once the store is closed.
   */
  start(onTick?: (renewed: boolean) => void): void {
    if (onTick) this.onTick = onTick;
    if (this.timer) return;
    const every = Math.max(50, Math.floor(this.leaseMs / 6));
    this.timer = setInterval(() => {
      if (!this.deps.store.db.isOpen) return this.stop();
      try {
        const renewed = this.renew();
        if (!renewed)
          this.deps.log?.(
            `lease of ${this.id} had expired and its row was gone; written again (runs ended meanwhile by another process stay ended, uncharged)`,
          );
        this.onTick?.(renewed);
      } catch (e) {
        this.deps.log?.("owner heartbeat failed", e);
      }
    }, every);
    this.timer.unref();
  }

  /** Stops renewing (the lease then runs out by itself unless `retire` ends it). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
