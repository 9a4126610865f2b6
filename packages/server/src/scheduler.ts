/**
 * The scheduler (D11, D52): runs each schedule when it falls due, as a call of the key that created it and under
 * the same rules: the key must still authenticate and hold `read_data`, the workspace's concurrency counts, the
 * quote is held (balance, daily limits of key and account, the free allowance) and `creditsFor(calls_charged)` is
 * captured once when the run ends. A refused run pauses the schedule (`next_run_at` stays): the next tick tries
 * again, and the schedule resumes by itself when the cause clears. Every scheduled run has a handle
 * (`last_run.handle`), readable by that key for 24 hours.
 */
import type { Schedule } from "@sdgw/types";
import type { GatewayPorts as Gateway } from "./storage/port.ts";
import { newRequestId, newRunId } from "./ids.ts";
import { canReadData } from "./http/auth.ts";
import type { ScheduleRecord } from "./storage/schedules.ts";
import { planTool, startToolRun } from "./runs/tool-runs.ts";

/** Why a due schedule did not run now. */
export type SkipReason =
  | "key_unusable"
  | "plan_limit"
  | "refused"
  | "insufficient_balance"
  | "daily_limit_reached"
  | "daily_cap"
  | "workspace_concurrency"
  | "limits_unavailable";

/** What one tick did. */
export interface TickReport {
  /** Schedules whose run started. */
  started: string[];
  /**
   * Schedules that did not run, and why (paused unless the reason is `workspace_concurrency` or `limits_unavailable`,
   * the limits kept in Redis that did not answer, D107).
   */
  skipped: Array<{ id: string; reason: SkipReason }>;
}

/** Runs due schedules; `tick` once, or `start` a timer that ticks every `everyMs`. */
export class Scheduler {
  private readonly gw: Gateway;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<TickReport> | null = null;

  constructor(gw: Gateway) {
    this.gw = gw;
  }

  /** Ticks every `everyMs` until `stop` (the timer does not keep the process alive). */
  start(everyMs: number): void {
    if (this.timer) return;
    this.timer = setInterval(
      () => void this.tick().catch((e: unknown) => this.gw.log("scheduler tick failed", e)),
      everyMs,
    );
    this.timer.unref();
  }

  /** Stops ticking; resolves when a tick in progress has started its runs. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking?.catch(() => undefined);
  }

  /** Starts the run of every schedule due now (one tick at a time). */
  tick(): Promise<TickReport> {
    this.ticking ??= this.runDue().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  private async runDue(): Promise<TickReport> {
    const report: TickReport = { started: [], skipped: [] };
    // On PostgreSQL `due` claims them: each due schedule is this instance's alone (D108).
    for (const row of await this.gw.schedules.due()) {
      const skipped = await this.runOne(row);
      if (skipped) report.skipped.push({ id: row.id, reason: skipped });
      else report.started.push(row.id);
    }
    return report;
  }

  private async runOne(row: ScheduleRecord): Promise<SkipReason | null> {
    const { gw } = this;
    const { schedules } = gw;
    const key = await gw.accounts.key(row.key_id);
    const account = await gw.accounts.account(row.account_id);
    const now = gw.now();
    const keyUsable =
      key &&
      account &&
      key.status === "active" &&
      !key.exposed_at &&
      (!key.expires_at || Date.parse(key.expires_at) > now) &&
      account.status === "active" &&
      canReadData(key);
    if (!keyUsable || !key || !account) {
      await schedules.pause(row.id, "key_unusable");
      return "key_unusable";
    }
    if (account.plan === "free") {
      await schedules.pause(row.id, "plan_limit");
      return "plan_limit";
    }
    const body = JSON.parse(row.body) as Record<string, unknown>;
    const planned = planTool(gw, "account_watch", body, account.plan);
    if (!planned.ok) {
      await schedules.pause(row.id, planned.refusal.code);
      return "refused";
    }
    const limited = await gw.limits.startRun(key.workspace_id);
    // D107: limits kept in Redis that does not answer: not run now, not paused (the next tick tries again)
    if (limited) {
      await schedules.release?.(row.id); // due again at the next tick, on whichever instance
      return limited.code === "limits_unavailable" ? "limits_unavailable" : "workspace_concurrency";
    }
    const runId = newRunId(now);
    const ctx = { requestId: newRequestId(now), key, account, keyHash: key.hash };
    const { quote_credits: credits, calls_planned: calls } = planned.plan.quote;
    const refused = await gw.calls.store.hold(ctx, { runId, credits, calls });
    if (refused) {
      gw.limits.endRun(key.workspace_id);
      // the account's daily call cap (D74) is a daily limit like the others (D52): paused, tried again each tick
      const reason = refused.code === "temporarily_unavailable" ? refused.reason : refused.code;
      await schedules.pause(row.id, reason);
      return reason;
    }
    await startToolRun(gw, {
      runId,
      ctx,
      body,
      plan: planned.plan,
      background: true,
      warnings: [`Scheduled run of schedule ${row.id} (every ${row.every}).`],
      onHandle: (handle) =>
        schedules.started({ id: row.id, runId, handle, every: row.every, nextRunAt: row.next_run_at }),
      onEnd: (end) =>
        schedules.ended(row.id, runId, end.status as NonNullable<Schedule["last_run"]>["status"], end.charged),
    });
    return null;
  }
}
