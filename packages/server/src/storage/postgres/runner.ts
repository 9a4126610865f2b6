/**
 * Runs on PostgreSQL (D108): a charged call admitted by the engine's `chargeCall` over `PgCalls` runs here. Its
 * calls go to the providers in parallel, each within `providerTimeoutMs`; if they end within `waitMs` the caller
 * gets the finished answer, else the run's row is committed (`PgRuns.persist`) and the caller gets a 202 with a
 * handle that reads on any instance. Its end is one transaction (`PgRuns.finish`): the hold ended (charged once),
 * the answer kept under the handle and the Idempotency-Key. A provider that throws breaks the run: hold released,
 * the handle reads 500, the key is free. A heartbeat renews this instance's lease and recovers gone instances' runs.
 */
import { type RunListener, RunWatchers } from "../../runs/progress.ts";
import {
  type CallPlan,
  cellOf,
  type CreditView,
  type EndedCall,
  type IdempotencySlot,
  isoSeconds,
  type PlatformProvider,
  REFUSALS,
  type RunResult,
  toolCharge,
} from "@sdgw/engine";
import type { Step } from "@sdgw/types";
import { errorAnswer } from "@sdgw/validators";
import type { ServerConfig } from "../../config.ts";
import { newHandle } from "../../ids.ts";
import type { Limits } from "../../limits/limits.ts";
import type { Metrics } from "../../ops/metrics.ts";
import {
  callOne,
  dataFinished,
  type FinishedParts,
  finishedRead,
  JSON_TYPE,
  runningHttp,
  toolFinished,
} from "../../runs/answers.ts";
import type { HandleRead, HttpAnswer, RunContext, ToolRunRequest } from "../../runs/types.ts";
import type { PgCalls } from "./calls.ts";
import { isUnavailable } from "./database.ts";
import type { PgRuns, RunEnding } from "./runs.ts";

/**
 * D129: the balance a data answer is built with before its charge is written (a value no balance reaches: 2^53 − 1),
 * and how it reads in the answer's JSON, where the statement that writes the charge puts the balance after.
 */
const BALANCE_STAND_IN = Number.MAX_SAFE_INTEGER;
const BALANCE_KEY = '"balance":';
const BALANCE_MARK = `${BALANCE_KEY}${BALANCE_STAND_IN}`;

/** What the runner is made of. */
export interface PgRunnerDeps {
  calls: PgCalls;
  runs: PgRuns;
  limits: Pick<Limits, "endRun" | "recordFailure">;
  providers: Readonly<Record<string, PlatformProvider>>;
  config: Pick<ServerConfig, "waitMs" | "providerTimeoutMs" | "pollAfterSeconds" | "urls">;
  now: () => number;
  log: (message: string, error?: unknown) => void;
  /** D113: where the credits a run charged are counted (`sdgw_charged_credits_total`). */
  metrics?: Pick<Metrics, "charged">;
}

/** A run in flight on this instance. */
interface Live {
  id: string;
  ctx: RunContext;
  quote: number;
  handle: string | null;
  /** The commit of its row, once it answers 202: its end waits for it. */
  persisted: Promise<void> | null;
  /** Set once its end began: it no longer answers 202 from here. */
  ending: boolean;
  done: Promise<HttpAnswer>;
  /** A data run's calls ended so far (its 202 shows them as cells), or a tool run's steps. */
  view:
    | { kind: "data"; plan: CallPlan; ended: Array<EndedCall | undefined> }
    | { kind: "tool"; request: ToolRunRequest; steps: Step[] };
}

const WAITED = Symbol("waited");

/** Runs charged calls on PostgreSQL and reads their handles. */
export class PgRunner {
  private readonly deps: PgRunnerDeps;
  private readonly live = new Map<string, Live>();
  /** Progress of the runs with a handle, for `watch` (D141). */
  private readonly progress = new RunWatchers();
  private timer: NodeJS.Timeout | null = null;
  private reconciling: Promise<void> | null = null;

  constructor(deps: PgRunnerDeps) {
    this.deps = deps;
  }

  /** How far a run of this process with a handle is (D141): cells of a data call, waves of a tool run. */
  private moved(runId: string, ended = false): void {
    const live = this.live.get(runId);
    if (!live?.handle) return;
    const v = live.view;
    this.progress.update(
      live.handle,
      v.kind === "data"
        ? { done: v.ended.filter((e) => e !== undefined).length, total: v.plan.calls.length, ended, unit: "cells" }
        : {
            done: v.steps.filter((s) => s.status === "done" || s.status === "failed").length,
            total: v.request.plan.quote.waves_planned,
            ended,
            unit: "waves",
          },
    );
  }

  /**
   * Listens to the progress of a run of this instance that answered 202 (D141); see `Runs.watch`. Null when this
   * instance runs nothing under `handle` (another instance may: its readers poll).
   */
  watch(handle: string, listener: RunListener): (() => void) | null {
    return this.progress.watch(handle, listener);
  }

  /**
   * Runs a data plan whose quote is held; answers when it ended or when `waitMs` passed (202), or 202 at once when
   * `ctx.respondNow` (D174).
   */
  execute(runId: string, ctx: RunContext, plan: CallPlan, quote: number): Promise<HttpAnswer> {
    const { providers, config } = this.deps;
    const ended: Array<EndedCall | undefined> = new Array(plan.calls.length);
    const o = { providers, timeoutMs: config.providerTimeoutMs, urls: config.urls };
    const work = Promise.all(
      plan.calls.map((c, i) =>
        callOne(c, plan, o).then((e) => {
          ended[i] = e;
          this.moved(runId);
        }),
      ),
    );
    return this.run(
      { id: runId, ctx, quote, view: { kind: "data", plan, ended } },
      async (live) => {
        await work;
        const all = ended as EndedCall[];
        const cost = all.reduce((s, e) => s + e.cost, 0);
        const calls = all.filter((e) => e.cost > 0).length;
        return this.finish(live, cost, calls, (charged, balance, fetchedAt) =>
          dataFinished(plan, all, { requestId: ctx.requestId, fetchedAt, charged, balance }),
        );
      },
      ctx.respondNow ? "now" : config.waitMs,
    );
  }

  /**
   * Runs a tool whose quote is held: inline within `waitMs`, or 202 at once when its quote is `background` (or
   * `request.background`, or `ctx.respondNow`, D174); at its end it charges `toolCharge` (at most the quote) once.
   */
  executeTool(runId: string, ctx: RunContext, request: ToolRunRequest): Promise<HttpAnswer> {
    const { plan } = request;
    const quote = plan.quote.quote_credits;
    const view = { kind: "tool" as const, request, steps: plan.quote.plan.map((s) => ({ ...s })) };
    let started: Promise<RunResult>;
    try {
      started = request.run((steps) => {
        view.steps = steps;
        this.moved(runId);
      });
    } catch (error) {
      started = Promise.reject(error);
    }
    const background = request.background === true || plan.quote.mode === "background";
    return this.run(
      { id: runId, ctx, quote, view },
      async (live) => {
        const result = await started;
        // Its end comes after its handle's writes (a schedule's `started` before its `ended`), and no handle after it.
        if (live.persisted) await live.persisted;
        live.ending = true;
        const due = toolCharge(result, quote);
        const failed = result.status === "error" || result.status === "not_supported" || result.status === "timeout";
        await request.onEnd?.({ handle: live.handle, status: result.status, charged: due, result });
        return this.finish(live, due, failed ? 0 : result.calls_charged, (charged, _balance, fetchedAt, view) =>
          toolFinished(request, result, { requestId: ctx.requestId, fetchedAt, charged, view }),
        );
      },
      background || ctx.respondNow ? "now" : this.deps.config.waitMs,
    );
  }

  /** Starts a run, and answers its end or (after `waitMs`) a 202 with a handle committed first. */
  private async run(
    start: Pick<Live, "id" | "ctx" | "quote" | "view">,
    work: (live: Live) => Promise<HttpAnswer>,
    waitMs: number | "now",
  ): Promise<HttpAnswer> {
    let resolveDone!: (a: Promise<HttpAnswer>) => void;
    const done = new Promise<HttpAnswer>((r) => {
      resolveDone = r;
    });
    const live: Live = { ...start, handle: null, persisted: null, ending: false, done };
    this.live.set(live.id, live);
    this.deps.calls.inFlight.started(live.id);
    resolveDone(
      work(live)
        .catch((error: unknown) => this.broken(live, error))
        .finally(() => {
          // Its end is committed (or it broke): a read of its handle answers that now (D141).
          this.moved(live.id, true);
          this.live.delete(live.id);
          this.deps.calls.inFlight.ended(live.id);
          this.deps.limits.endRun(live.ctx.key.workspace_id);
        }),
    );
    // A run that failed because the database did not answer rejects `done` (its caller, if still waiting, answers
    // 503); once its 202 was sent nobody waits for it.
    done.catch(() => undefined);
    // A background run answers 202 at once: its row and handle are written before its work can end.
    if (waitMs === "now") return this.goOn(live);
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<typeof WAITED>((r) => {
      timer = setTimeout(r, waitMs, WAITED);
    });
    const first = await Promise.race([done, waited]);
    clearTimeout(timer);
    if (first !== WAITED || live.ending) return first === WAITED ? done : first;
    return this.goOn(live);
  }

  /** The run outlives its request: its row committed (its hold and claim already are), then the 202. */
  private async goOn(live: Live): Promise<HttpAnswer> {
    const handle = newHandle();
    live.handle = handle;
    const { ctx } = live;
    const described =
      live.view.kind === "data"
        ? { operation: live.view.plan.operation, shape: live.view.plan.shape, waves: 1 }
        : {
            operation: live.view.request.plan.tool,
            shape:
              live.view.request.format && live.view.request.format !== "json"
                ? `tool:${live.view.request.format}`
                : "tool",
            waves: live.view.request.plan.quote.waves_planned,
          };
    const row = {
      id: live.id,
      handle,
      keyId: ctx.key.id,
      accountId: ctx.account.id,
      workspaceId: ctx.key.workspace_id,
      requestId: ctx.requestId,
      quote: live.quote,
      ...described,
    };
    const request = live.view.kind === "tool" ? live.view.request : null;
    // Its row, then what the caller records of its handle (a schedule's last run), before anything of its end.
    live.persisted = this.deps.runs.persist(row).then(() => request?.onHandle?.(handle));
    await live.persisted;
    this.moved(live.id);
    return this.runningAnswer(live, described.waves);
  }

  /** The 202 of a run of this instance: the cells or steps ended so far, the credits as they stand. */
  private async runningAnswer(live: Live, waves: number): Promise<HttpAnswer> {
    const view = await this.deps.calls.view(live.ctx.account.id, live.ctx.key.id);
    const v = live.view;
    const cells =
      v.kind === "data" && v.plan.shape !== "single"
        ? v.ended.filter((e): e is EndedCall => e !== undefined).map((e) => cellOf(v.plan, e))
        : undefined;
    const wavesDone =
      v.kind === "tool" ? v.steps.filter((s) => s.status === "done" || s.status === "failed").length : 0;
    return runningHttp(
      {
        requestId: live.ctx.requestId,
        handle: live.handle!,
        view,
        quote: live.quote,
        waves: { planned: waves, done: wavesDone },
        ...(v.kind === "tool" ? { steps: v.steps } : {}),
        ...(cells ? { cells } : {}),
      },
      this.deps.config.pollAfterSeconds,
    );
  }

  /** Ends a run in one transaction (after its row is committed, if it answered 202); 500 if another instance ended it. */
  private async finish(
    live: Live,
    amount: number,
    calls: number,
    answer: (charged: number, balance: number, fetchedAt: string, view: CreditView) => FinishedParts,
  ): Promise<HttpAnswer> {
    live.ending = true;
    if (live.persisted) await live.persisted;
    const { ctx } = live;
    const fetchedAt = isoSeconds(this.deps.now());
    // A tool's answer shows the credits after its charge (below, from these and the charge); a data answer only the
    // balance, which the charge's own statement gives.
    const view = live.view.kind === "tool" ? await this.deps.calls.view(ctx.account.id, ctx.key.id) : null;
    let parts: FinishedParts | undefined;
    const slot = ctx.idemKey === undefined ? undefined : { keyId: ctx.key.id, idemKey: ctx.idemKey };
    if (live.view.kind === "data" && live.persisted === null) {
      const once = await this.finishAtOnce(live, amount, calls, slot, fetchedAt, answer);
      if (once) return once;
    }
    const out = await this.deps.runs.finish(live.id, {
      amount,
      calls,
      operation: live.view.kind === "data" ? live.view.plan.operation : live.view.request.plan.tool,
      persisted: live.persisted !== null,
      ...(slot ? { slot } : {}),
      build: ({ charged, balance }): RunEnding => {
        // The credits after this end: its hold gone, its charge spent (read just before, as no other call moved them).
        const before = view ?? {
          balance,
          held: live.quote,
          todaySpend: live.quote,
          dailyLimit: null,
          dailyRemaining: null,
        };
        const todaySpend = before.todaySpend - live.quote + charged;
        const dailyRemaining = before.dailyLimit === null ? null : Math.max(0, before.dailyLimit - todaySpend);
        const after = { ...before, balance, held: before.held - live.quote, todaySpend, dailyRemaining };
        parts = answer(charged, balance, fetchedAt, after);
        const bytes = (b: string | Buffer) => (typeof b === "string" ? Buffer.from(b) : b);
        return {
          sent: { status: parts.sent.status, headers: parts.sent.headers, body: bytes(parts.sent.body) },
          kept: { headers: parts.kept.headers, answer: bytes(parts.kept.answer) },
        };
      },
    });
    if (out.kind === "ended_elsewhere") return this.internalError(live);
    this.deps.metrics?.charged(out.charged);
    if (parts!.failed) this.deps.limits.recordFailure(ctx.keyHash);
    return parts!.sent;
  }

  /**
   * D129: the end of a data run that answered without a 202, in one statement ({@link PgRuns.finishAtOnce}). Its
   * answer is built before the charge, with a stand-in for the balance after, cut there in two; the statement writes
   * the kept answer with the balance it wrote, and the same bytes are sent. Null (nothing written) when the answer
   * cannot be cut once at the stand-in or the hold would not end as expected: the usual end then runs.
   */
  private async finishAtOnce(
    live: Live,
    amount: number,
    calls: number,
    slot: IdempotencySlot | undefined,
    fetchedAt: string,
    answer: (charged: number, balance: number, fetchedAt: string, view: CreditView) => FinishedParts,
  ): Promise<HttpAnswer | null> {
    const charged = Math.min(Math.max(0, amount), live.quote);
    const view = { balance: BALANCE_STAND_IN, held: 0, todaySpend: 0, dailyLimit: null, dailyRemaining: null };
    const parts = answer(charged, BALANCE_STAND_IN, fetchedAt, view);
    const text = typeof parts.sent.body === "string" ? parts.sent.body : parts.sent.body.toString("utf8");
    const at = text.indexOf(BALANCE_MARK);
    if (at < 0 || text.indexOf(BALANCE_MARK, at + 1) >= 0) return null;
    const before = Buffer.from(text.slice(0, at + BALANCE_KEY.length));
    const after = Buffer.from(text.slice(at + BALANCE_MARK.length));
    const out = await this.deps.runs.finishAtOnce(live.id, {
      charged,
      calls,
      operation: live.view.kind === "data" ? live.view.plan.operation : live.view.request.plan.tool,
      ...(slot ? { slot } : {}),
      sent: { status: parts.sent.status, headers: parts.sent.headers, before, after },
    });
    if (!out) return null;
    this.deps.metrics?.charged(out.charged);
    if (parts.failed) this.deps.limits.recordFailure(live.ctx.keyHash);
    return { ...parts.sent, body: Buffer.concat([before, Buffer.from(String(out.balance)), after]) };
  }

  /**
   * Ends a run broken on the server's side: hold released, nothing charged, its key free; 500. A run that broke
   * because the database did not answer rethrows that error, so a caller still waiting gets 503
   * `temporarily_unavailable` (D108); what could not be ended now is ended by the reconciliation (D109).
   */
  private async broken(live: Live, error: unknown): Promise<HttpAnswer> {
    const offline = isUnavailable(error);
    this.deps.log(`run ${live.id} ${offline ? "could not end: the database did not answer" : "broke"}`, error);
    if (live.persisted) await live.persisted.catch(() => undefined);
    const { ctx } = live;
    const slot = ctx.idemKey === undefined ? undefined : { keyId: ctx.key.id, idemKey: ctx.idemKey };
    await this.deps.runs
      .breakRun(live.id, slot)
      .catch((e: unknown) =>
        this.deps.log(
          `run ${live.id}: could not end it now; ended once the database answers`,
          isUnavailable(e) ? undefined : e,
        ),
      );
    if (offline) throw error;
    return this.internalError(live);
  }

  private internalError(live: Live): HttpAnswer {
    return this.errorJson("internal_error", live.ctx.requestId, REFUSALS.runBroken(live.handle ?? undefined));
  }

  private errorJson(
    code: "internal_error" | "not_found" | "handle_expired",
    requestId: string,
    fields: object,
  ): HttpAnswer {
    const { urls } = this.deps.config;
    const a = errorAnswer(code, requestId, fields as never, { urls, now: new Date(this.deps.now()) });
    return { status: a.status, headers: { ...a.headers, "content-type": JSON_TYPE }, body: JSON.stringify(a.body) };
  }

  /**
   * `GET /v1/results/{handle}` on any instance: 202 while running (with this instance's view of its own runs, the
   * row's for another live instance's), the finished answer in the format asked, 410 after `retentionMs`, 500 for a
   * broken run or one whose instance is gone, 404 for a handle of another key.
   */
  async read({ handle, key, format, requestId, alsoOf }: HandleRead): Promise<HttpAnswer> {
    const row = await this.deps.runs.read(handle);
    if (!row || (row.key_id !== key.id && !alsoOf?.has(row.key_id)))
      return this.errorJson("not_found", requestId, REFUSALS.noSuchHandle());
    if (row.state === "running") {
      const mine = [...this.live.values()].find((l) => l.handle === handle);
      if (mine) return this.runningAnswer(mine, row.waves ?? 1); // running, or its end is being committed
      // Of this instance, but no longer running here: it ended since the read, or its end could not be written
      // (the reconciliation ends it broken, D109).
      if (row.owner === this.deps.runs.owner) {
        const now = await this.deps.runs.read(handle);
        if (now && now.state !== "running") return this.read({ handle, key, format, requestId, alsoOf });
        void this.reconcile();
        return this.errorJson("internal_error", requestId, REFUSALS.runBroken(handle));
      }
      if (row.owner !== null && (await this.deps.runs.isLive(row.owner))) {
        const view = await this.deps.calls.view(row.account_id, key.id);
        const parts = {
          requestId: row.request_id,
          handle,
          view,
          quote: row.quote,
          waves: { planned: row.waves ?? 1, done: 0 },
        };
        return runningHttp(parts, this.deps.config.pollAfterSeconds);
      }
      return this.errorJson("internal_error", requestId, REFUSALS.runBroken(handle));
    }
    if (row.state === "broken") return this.errorJson("internal_error", requestId, REFUSALS.runBroken(handle));
    if (row.answer && row.expires_at && Date.parse(row.expires_at) > this.deps.now()) {
      const withKey = await this.deps.calls.view(row.account_id, key.id);
      const ofAccount = await this.deps.calls.view(row.account_id, null);
      const kept = { answer: row.answer.toString("utf8"), headers: row.headers ?? {}, shape: row.shape };
      return finishedRead(kept, format, (k) => (k ? withKey : ofAccount));
    }
    return this.errorJson("handle_expired", requestId, REFUSALS.handleExpired());
  }

  /**
   * Starts the heartbeat: registers this instance's lease, then every sixth of it renews the lease and recovers
   * what gone instances left. A lease found taken (this instance was frozen past it) registers again: its runs in
   * flight were ended elsewhere and will find so when they end.
   */
  async start(leaseMs: number): Promise<void> {
    await this.deps.runs.register();
    await this.deps.runs.recover();
    this.timer = setInterval(
      () => {
        void this.beat();
      },
      Math.max(50, Math.floor(leaseMs / 6)),
    );
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    try {
      if (!(await this.deps.runs.renew())) await this.deps.runs.register();
      const ended = await this.deps.runs.recover();
      if (ended.length)
        this.deps.log(
          `recovered ${ended.length} run(s) of an instance that is gone: broken, holds released, nothing charged`,
        );
    } catch (e) {
      this.deps.log("heartbeat: could not renew the lease or recover", isUnavailable(e) ? undefined : e);
      return;
    }
    await this.reconcile();
  }

  /**
   * Ends this instance's debris now (D109): claims, holds and 202 runs of runs it no longer works on. Called at
   * every heartbeat and as soon as the database answers again after a fault; one at a time.
   */
  reconcile(): Promise<void> {
    this.reconciling ??= this.deps.runs
      .reconcile((runId) => this.deps.calls.inFlight.has(runId))
      .then((ended) => {
        if (ended.length)
          this.deps.log(
            `ended ${ended.length} call(s) left open while the database did not answer: holds released, claims freed, runs broken, nothing charged`,
          );
      })
      .catch((e: unknown) =>
        this.deps.log(
          "could not end calls left open (tried again at the next heartbeat)",
          isUnavailable(e) ? undefined : e,
        ),
      )
      .finally(() => {
        this.reconciling = null;
      });
    return this.reconciling;
  }

  /** Forgets answers kept past their time (their handles then read 410) and Idempotency-Keys past theirs. */
  sweep(): Promise<void> {
    return this.deps.runs.sweep();
  }

  /** Waits for the runs in flight here to end. */
  async drain(): Promise<void> {
    await Promise.all([...this.live.values()].map((l) => l.done.catch(() => undefined)));
  }

  /** Stops the heartbeat and ends the lease: runs still in flight here are recovered by another instance. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.deps.runs.retire();
  }

  /** Runs in flight on this instance. */
  get inFlight(): number {
    return this.live.size;
  }
}
