/**
 * What this instance is working on (D109): the runs it admits (from the first write of their claim or hold) and
 * those it runs. A claim, hold or 202 row of this instance's owner whose run is in neither is debris — its
 * request or run failed while the database did not answer, or the answer of a statement that did commit was lost —
 * and `PgRuns.reconcile` ends it, uncharged, once the database answers again.
 */

/**
 * The longest the admission of a call can take on PostgreSQL (its claim and hold: a few statements, each bounded by
 * the pool's 5 s to connect and 11 s to answer). An admission that neither ran nor was refused within it (a path
 * that failed between the two) no longer keeps its rows from the reconciliation.
 */
export const ADMISSION_MS = 120_000;

/** Run ids this instance admits or runs. */
export class InFlight {
  /** Runs being admitted: when their admission began (`performance.now()`) and the claim they made, if any. */
  private readonly admitting = new Map<string, { since: number; claim?: string }>();
  /** The run of each claim being admitted. */
  private readonly claims = new Map<string, string>();
  private readonly running = new Set<string>();
  private readonly admissionMs: number;

  /**
   * @param admissionMs - the longest an admission can take (its few statements, each bounded by the pool's
   * timeouts): an admission older than this that never became a run (a path that neither ran nor refused it) no
   * longer protects its rows.
   */
  constructor(admissionMs = ADMISSION_MS) {
    this.admissionMs = admissionMs;
  }

  /** A run's admission writes next (its claim or hold): from now its rows are not debris. */
  admit(runId: string): void {
    if (!this.running.has(runId) && !this.admitting.has(runId)) this.admitting.set(runId, { since: performance.now() });
  }

  /** The admission of `runId` claimed the Idempotency-Key `claim` (its key id and key, joined). */
  claimed(runId: string, claim: string): void {
    const a = this.admitting.get(runId);
    if (!a) return;
    a.claim = claim;
    this.claims.set(claim, runId);
  }

  /** The claim `claim` was released or completed during its admission: that admission ended without a run. */
  unclaimed(claim: string): void {
    const runId = this.claims.get(claim);
    if (runId !== undefined) this.refused(runId);
  }

  /** The admission ended without a run (refused, or a write failed): its rows, if any committed, are debris now. */
  refused(runId: string): void {
    const a = this.admitting.get(runId);
    if (a?.claim !== undefined) this.claims.delete(a.claim);
    this.admitting.delete(runId);
  }

  /** The run started on this instance. */
  started(runId: string): void {
    this.refused(runId);
    this.running.add(runId);
  }

  /** The run ended here (its end written, or failed to be): whatever of it is still open is debris. */
  ended(runId: string): void {
    this.running.delete(runId);
    this.refused(runId);
  }

  /** Whether this instance still works on `runId`. */
  has(runId: string): boolean {
    if (this.running.has(runId)) return true;
    const a = this.admitting.get(runId);
    if (a === undefined) return false;
    if (performance.now() - a.since <= this.admissionMs) return true;
    this.refused(runId);
    return false;
  }

  /** Runs in flight (admitted or running) on this instance. */
  get size(): number {
    return this.running.size + this.admitting.size;
  }
}
