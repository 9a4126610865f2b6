/**
 * Runs and handles. A run starts after its hold; its calls go to the providers in parallel, each bounded by
 * `providerTimeoutMs`. If every call ends within `waitMs` the caller gets the finished answer; otherwise a 202
 * with a handle (and the cells already ended) and the run goes on. When it ends it captures exactly once (or
 * releases everything), and its answer is kept `retentionMs` after the end for `GET /v1/results/{handle}`.
 * A provider that throws breaks the run on the server's side: nothing is charged and the handle reads 500.
 * Runs of a process that is gone (killed, or frozen past its lease: see owners.ts) are ended as broken by the next
 * process to open the database or by the periodic sweep of a live one (hold released, read gives 500), and their
 * Idempotency-Key is freed so that sending the call again runs it once and charges it once. Only those: several
 * processes may share the file, and a live process's runs are its own. A run that another process ended meanwhile
 * is found ended when its owner ends it, and its owner then writes and charges nothing (its caller reads 500).
 *
 * A run that ends within its request writes once: its capture and its idempotency record, in one transaction of
 * the turn (its hold lived in memory, see the ledger). A run that answers 202 writes its row and its durable hold
 * before the 202 is sent, then its capture and stored answer when it ends.
 */
import { errorAnswer, type ServiceUrls } from "@sdgw/validators";
import { REFUSALS, cellOf } from "@sdgw/engine";
import type { EndedCall, RefusalFields, RunningParts } from "@sdgw/engine";
import {
  callOne,
  dataFinished,
  failedStatus,
  finishedRead,
  JSON_TYPE,
  runningHttp,
  toolFinished,
} from "../../runs/answers.ts";
import type { ServerConfig } from "../../config.ts";
import { newHandle } from "../../ids.ts";
import type { CallPlan, PlannedCall, PlatformProvider, RunResult } from "@sdgw/engine";
import { toolCharge } from "@sdgw/engine";
import type { Step } from "@sdgw/types";
import type { KeyRecord } from "../accounts.ts";
import type { Idempotency } from "./idempotency.ts";
import type { HoldRefusal, Ledger } from "./ledger.ts";
import type { Limits } from "../../limits/limits.ts";
import type { Owners } from "./owners.ts";
import type { Metrics } from "../../ops/metrics.ts";
import { type RunListener, type RunProgress, RunWatchers } from "../../runs/progress.ts";
import { isoSeconds, type Store } from "./store.ts";
import type {
  ConsoleResult,
  HandleRead,
  HttpAnswer,
  KeptAnswer,
  RunContext,
  ToolRunRequest,
} from "../../runs/types.ts";

/** What every run in flight here has, whatever its kind. */
interface RunBase {
  id: string;
  ctx: RunContext;
  quote: number;
  handle: string | null;
  startedAt: number;
  result: HttpAnswer | null;
  done: Promise<HttpAnswer>;
  /** Set when its row was found ended by another process: it writes nothing more. */
  endedElsewhere?: boolean;
  /** Set once its Idempotency-Key claim was let go because of that (never twice: the key may be claimed anew). */
  claimFreed?: boolean;
  /** Set while the transaction that ended it is not committed yet: reads answer 202 (D75). */
  committing?: boolean;
  /** Set once its running slot of the workspace was given back (`end` may run again after a failed final turn). */
  slotFreed?: boolean;
  /** When its final turn first failed to commit (a full disk, D75), while it is tried again. */
  finalFailedAt?: number;
  /** Final turns tried and rolled back so far. */
  finalAttempts?: number;
}

/** The run of a data call: its planned calls and those ended so far (the 202 answer shows them as cells). */
interface DataRun extends RunBase {
  kind: "data";
  plan: CallPlan;
  ended: Array<EndedCall | undefined>;
}

/** A tool run: what it runs, and its steps as they stand (the 202 answer shows them). */
interface ToolRun extends RunBase {
  kind: "tool";
  request: ToolRunRequest;
  steps: Step[];
}

/** A run in flight in this process. */
type LiveRun = DataRun | ToolRun;

/** A run's normal end as its kind makes it, inside its final transaction (its hold settled by then). */
interface Ending {
  charged: number;
  /** The answer sent (and kept under the Idempotency-Key). */
  sent: HttpAnswer;
  /** What its row keeps for a read of its handle: the JSON answer and its headers. */
  kept: { headers: Record<string, string>; answer: string | Buffer };
  /** Whether it counts as a failure of the key (the free-failure limit). */
  failed: boolean;
}

/** Dependencies of the runs system. */
export interface RunsDeps {
  store: Store;
  ledger: Ledger;
  idempotency: Idempotency;
  limits: Limits;
  /** This process's owner of runs (the `owner` of every run it stores) and the other owners' liveness. */
  owners: Owners;
  providers: Readonly<Record<string, PlatformProvider>>;
  config: ServerConfig;
  now: () => number;
  log: (message: string, error?: unknown) => void;
  /** D113: where the credits a run charged are counted, once its end is written (`sdgw_charged_credits_total`). */
  metrics?: Pick<Metrics, "charged">;
}

/** Holds still held whose run is not running (or has no row). */
const ORPHAN_HOLDS =
  "SELECT h.run_id FROM holds h LEFT JOIN runs r ON r.id = h.run_id WHERE h.state = 'held' AND (r.id IS NULL OR r.state != 'running')";
/** A written Idempotency-Key claim whose run no longer runs (see `Idempotency.releaseRunning`). */
const ORPHAN_CLAIM =
  "SELECT 1 FROM idempotency WHERE state = 'running' AND (run_id IS NULL OR run_id NOT IN (SELECT id FROM runs WHERE state = 'running')) LIMIT 1";
const WAITED = Symbol("waited");

/** A promise made before the work it stands for starts (a run's `done`, held by the run itself). */
function settleLater<T>(): { promise: Promise<T>; settle: (work: Promise<T>) => void } {
  let settle!: (work: Promise<T>) => void;
  const promise = new Promise<T>((resolve) => {
    settle = resolve;
  });
  return { promise, settle };
}

/** What a run's row says of it: its operation, the shape of its answer (a tool's: its media type), its waves. */
function described(live: LiveRun): { operation: string; shape: string; waves: number } {
  if (live.kind === "data") return { operation: live.plan.operation, shape: live.plan.shape, waves: 1 };
  const { plan, format } = live.request;
  return {
    operation: plan.tool,
    shape: format && format !== "json" ? `tool:${format}` : "tool",
    waves: plan.quote.waves_planned,
  };
}

/** Thrown inside a run's final transaction when its row is no longer running: another process ended it (owners.ts). */
class EndedElsewhere extends Error {
  constructor(runId: string, state: string | undefined) {
    super(`run ${runId} was ended by another process (${state ?? "no row"}) while it ran here`);
    this.name = "EndedElsewhere";
  }
}

/** The first wait before a rolled-back final turn is tried again (D75); doubled each time, at most 30 s. */
const FINAL_RETRY_FIRST_MS = 500;
const FINAL_RETRY_MAX_MS = 30_000;

export class Runs {
  private readonly live = new Map<string, LiveRun>();
  private readonly liveByHandle = new Map<string, LiveRun>();
  /** Progress of the runs with a handle, for `watch` (D141). */
  private readonly progress = new RunWatchers();
  /** Set by `close`: runs still in flight then end without touching the (closed) store. */
  private closed = false;

  private readonly deps: RunsDeps;

  constructor(deps: RunsDeps) {
    this.deps = deps;
  }

  private get urls(): ServiceUrls {
    return this.deps.config.urls;
  }

  /**
   * Starts a run: holds the quote (in memory, see the ledger), or says why not. The caller claimed the
   * Idempotency-Key before (in memory) and gives it back on a refusal. The run gets a row of its own only if it
   * answers 202.
   */
  begin(runId: string, ctx: RunContext, quote: number, calls: number): HoldRefusal | null {
    return this.deps.ledger.hold({ runId, account: ctx.account, key: ctx.key, amount: quote, calls });
  }

  /**
   * Runs the plan; answers when it ended or when `waitMs` passed (202), whichever comes first; 202 at once when
   * `ctx.respondNow` (D174).
   */
  async execute(runId: string, ctx: RunContext, plan: CallPlan, quote: number): Promise<HttpAnswer> {
    const done = settleLater<HttpAnswer>();
    const base = { id: runId, ctx, quote, handle: null, startedAt: this.deps.now(), result: null, done: done.promise };
    const live: DataRun = { kind: "data", ...base, plan, ended: new Array(plan.calls.length) };
    this.live.set(runId, live);
    const tasks = plan.calls.map((c, i) =>
      this.callOne(c, plan).then((e) => {
        live.ended[i] = e;
        this.moved(live);
      }),
    );
    // A finish that throws (its transaction rolled back: nothing charged) ends the run broken, as a provider that threw.
    done.settle(
      Promise.all(tasks)
        .then(() => this.finish(live, (now) => this.dataEnding(live, now)))
        .catch((error: unknown) => this.broken(live, error)),
    );
    return this.answerOf(live, this.deps.config.waitMs, ctx.respondNow === true);
  }

  /**
   * Runs a tool: holds were taken by `begin`. A quote of mode `inline` answers the finished tool answer when the
   * run ends within `waitMs` (else 202, as a data call); a quote of mode `background` (or `background: true`, or
   * `ctx.respondNow`, D174) answers 202 with a handle at once, and the 202 shows the steps as the waves end. At the
   * end the run captures `creditsFor(calls_charged)` (never more than the quote) exactly once, or releases the hold.
   */
  async executeTool(runId: string, ctx: RunContext, request: ToolRunRequest): Promise<HttpAnswer> {
    const { plan } = request;
    const done = settleLater<HttpAnswer>();
    const quote = plan.quote.quote_credits;
    const base = { id: runId, ctx, quote, handle: null, startedAt: this.deps.now(), result: null, done: done.promise };
    const live: ToolRun = { kind: "tool", ...base, request, steps: plan.quote.plan.map((s) => ({ ...s })) };
    this.live.set(runId, live);
    let started: Promise<RunResult>;
    try {
      started = request.run((steps) => {
        live.steps = steps;
        this.moved(live);
      });
    } catch (error) {
      started = Promise.reject(error);
    }
    done.settle(
      started
        .then((result) => this.finish(live, (now) => this.toolEnding(live, result, now)))
        .catch((error: unknown) => {
          const answer = this.broken(live, error);
          if (request.onEnd && !this.closed && !live.endedElsewhere)
            this.deps.store.tx(() =>
              request.onEnd!({ handle: live.handle, status: "error", charged: 0, result: null }),
            );
          return answer;
        }),
    );
    const background = request.background === true || plan.quote.mode === "background";
    const now = background || ctx.respondNow === true;
    return this.answerOf(live, now ? 0 : this.deps.config.waitMs, now);
  }

  /** The finished answer when the run ends within `waitMs`; else its row and durable hold, and the 202. */
  private async answerOf(live: LiveRun, waitMs: number, now = false): Promise<HttpAnswer> {
    if (now) return this.goOn(live);
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<typeof WAITED>((resolve) => {
      timer = setTimeout(resolve, waitMs, WAITED);
    });
    const first = await Promise.race([live.done, waited]);
    clearTimeout(timer);
    if (first !== WAITED) return first;
    if (live.result) return live.result;
    return this.goOn(live);
  }

  /** The run outlives its request: its row and durable hold (committed before the 202), and the 202. */
  private goOn(live: LiveRun): HttpAnswer {
    const { ctx, id: runId, quote } = live;
    const { operation, shape, waves } = described(live);
    const handle = newHandle();
    // The run outlives its request: its row (with its owner, whose lease this renews) and its durable hold, in one
    // transaction committed before the 202.
    const { owners } = this.deps;
    this.deps.ledger.persist(runId, () => {
      owners.register();
      this.deps.store.run(
        "INSERT INTO runs (id, handle, key_id, account_id, workspace_id, operation, request_id, shape, state, quote, " +
          "started_at, owner, waves) VALUES (:id, :handle, :keyId, :accountId, :workspaceId, :operation, :requestId, :shape, " +
          "'running', :quote, :startedAt, :owner, :waves)",
        {
          id: runId,
          handle,
          keyId: ctx.key.id,
          accountId: ctx.account.id,
          workspaceId: ctx.key.workspace_id,
          operation,
          shape,
          requestId: ctx.requestId,
          quote,
          startedAt: isoSeconds(live.startedAt),
          owner: owners.id,
          waves,
        },
      );
      if (ctx.idemKey) this.deps.idempotency.persist(ctx.key.id, ctx.idemKey, runId);
    });
    live.handle = handle;
    this.liveByHandle.set(handle, live);
    if (live.kind === "tool") live.request.onHandle?.(handle);
    this.moved(live);
    return this.runningAnswer(live, ctx.requestId);
  }

  private callOne(call: PlannedCall, plan: CallPlan): Promise<EndedCall> {
    const { providers, config } = this.deps;
    return callOne(call, plan, { providers, timeoutMs: config.providerTimeoutMs, urls: this.urls });
  }

  /**
   * Ends a run normally, in one transaction: `ending` settles its hold (capture once) and makes its answer, kind by
   * kind (`dataEnding`, `toolEnding`); then its row keeps the answer, its idempotency record completes, and a
   * failure counts against the key.
   */
  private finish(live: LiveRun, ending: (now: number) => Ending): HttpAnswer {
    if (this.closed) return this.internalError(live.ctx.requestId, live.handle);
    const { store, idempotency, limits, config } = this.deps;
    const now = this.deps.now();
    const answer = store.tx(() => {
      this.stillRunning(live);
      const { charged, sent, kept, failed } = ending(now);
      if (live.handle) {
        store.run(
          "UPDATE runs SET state = 'finished', charged = :charged, http_status = 200, headers = :headers, " +
            "answer = CAST(:answer AS TEXT), ended_at = :endedAt, expires_at = :expiresAt WHERE id = :id AND state = 'running'",
          {
            charged,
            headers: JSON.stringify(kept.headers),
            answer: kept.answer,
            endedAt: isoSeconds(now),
            expiresAt: isoSeconds(now + config.retentionMs),
            id: live.id,
          },
        );
      }
      if (live.ctx.idemKey) idempotency.complete({ keyId: live.ctx.key.id, idemKey: live.ctx.idemKey, answer: sent });
      if (failed) limits.recordFailure(live.ctx.keyHash);
      const { metrics } = this.deps;
      if (metrics && charged > 0) store.whenWritten((ok) => ok && metrics.charged(charged));
      return sent;
    });
    this.end(live, answer);
    this.untilWritten(live, () => this.finish(live, ending));
    return answer;
  }

  /** The end of a data run: capture what its calls cost, and the finished answer of its cells. */
  private dataEnding(live: DataRun, now: number): Ending {
    const ended = live.ended as EndedCall[];
    const cost = ended.reduce((s, e) => s + e.cost, 0);
    const chargedCalls = ended.filter((e) => e.cost > 0).length;
    const { charged, balance } = this.deps.ledger.settle(
      live.id,
      cost,
      chargedCalls,
      live.ctx.key.daily_limit !== null,
      live.plan.operation,
    );
    const fetchedAt = isoSeconds(now);
    return {
      charged,
      ...dataFinished(live.plan, ended, { requestId: live.ctx.requestId, fetchedAt, charged, balance }),
    };
  }

  /** The end of a tool run: capture `creditsFor(calls_charged)` (at most the quote), and the tool answer. */
  private toolEnding(live: ToolRun, result: RunResult, now: number): Ending {
    const { ledger } = this.deps;
    const { request } = live;
    const failed = failedStatus(result.status);
    const due = toolCharge(result, live.quote);
    // The caller's own writes first (a schedule's last run, follower readings), then the capture and the answer.
    request.onEnd?.({ handle: live.handle, status: result.status, charged: due, result });
    const { charged } = ledger.settle(
      live.id,
      due,
      failed ? 0 : result.calls_charged,
      live.ctx.key.daily_limit !== null,
      request.plan.tool,
    );
    const view = ledger.view(live.ctx.account.id, live.ctx.key);
    const fetchedAt = isoSeconds(now);
    return { charged, ...toolFinished(request, result, { requestId: live.ctx.requestId, fetchedAt, charged, view }) };
  }

  /**
   * A run that answered 202 promised its result under its handle (D75). When its final turn is rolled back at
   * commit (a full disk, `ENOSPC`, in the answer log or the database; the ledger and the row are then as before),
   * the run goes back to running here (its handle reads 202) and its final turn is tried again — after 0.5 s,
   * doubling to 30 s — for as long as `finalRetryMs`; then it ends broken (hold released, nothing charged, its key
   * free, the handle reads 500). A run without a handle answered within its request: the request answers 500.
   */
  private untilWritten(live: LiveRun, again: () => void, ending = false): void {
    if (!live.handle) return;
    this.deps.store.whenWritten((ok) => {
      if (!ok) this.tryFinalAgain(live, again, ending);
    });
  }

  /** Puts a run whose final turn failed back in flight here and tries it again later (see `untilWritten`). */
  private tryFinalAgain(live: LiveRun, again: () => void, ending: boolean): void {
    if (this.closed || live.endedElsewhere) return;
    const now = this.deps.now();
    live.finalFailedAt ??= now;
    live.finalAttempts = (live.finalAttempts ?? 0) + 1;
    live.result = null;
    this.live.set(live.id, live);
    this.liveByHandle.set(live.handle!, live);
    const giveUp = ending || now - live.finalFailedAt >= this.deps.config.finalRetryMs;
    this.deps.log(
      `run ${live.id}: its final write failed (attempt ${live.finalAttempts}); ${giveUp ? "ending it broken, uncharged" : "trying again"}`,
    );
    const timer = setTimeout(
      () => {
        if (this.closed || live.endedElsewhere) return;
        try {
          if (giveUp)
            this.broken(
              live,
              new Error(`the final write of run ${live.id} failed for ${this.deps.config.finalRetryMs} ms`),
            );
          else again();
        } catch (error) {
          // thrown before its commit (the database itself refused the write): the same schedule, until it ends
          this.deps.log(`run ${live.id}: its final write failed at once`, error);
          this.tryFinalAgain(live, again, giveUp);
        }
      },
      Math.min(FINAL_RETRY_MAX_MS, FINAL_RETRY_FIRST_MS * 2 ** (live.finalAttempts - 1)),
    );
    timer.unref();
  }

  /** Ends a run broken on the server's side: release the hold, free the Idempotency-Key, answer 500. */
  private broken(live: LiveRun, error: unknown): HttpAnswer {
    if (this.closed) return this.internalError(live.ctx.requestId, live.handle);
    if (error instanceof EndedElsewhere || live.endedElsewhere) return this.lost(live);
    const { store, ledger, idempotency, config } = this.deps;
    this.deps.log(`run ${live.id} broke`, error);
    const now = this.deps.now();
    store.tx(() => {
      ledger.release(live.id);
      if (live.handle)
        store.run(
          "UPDATE runs SET state = 'broken', http_status = 500, ended_at = ?, expires_at = ? WHERE id = ? AND state = 'running'",
          isoSeconds(now),
          isoSeconds(now + config.retentionMs),
          live.id,
        );
      if (live.ctx.idemKey) {
        if (live.handle) idempotency.releaseRun(live.ctx.key.id, live.ctx.idemKey, live.id);
        else idempotency.release(live.ctx.key.id, live.ctx.idemKey);
      }
    });
    const answer = this.internalError(live.ctx.requestId, live.handle);
    this.end(live, answer);
    this.untilWritten(live, () => undefined, true);
    return answer;
  }

  /**
   * Inside a run's final transaction (the write lock held, so no other process can end it meanwhile): throws
   * `EndedElsewhere` when its row is no longer running, which rolls back whatever the transaction wrote. A run that
   * never answered 202 has no row and nobody else can end it.
   */
  private stillRunning(live: LiveRun): void {
    if (!live.handle) return;
    const row = this.deps.store.get<{ state: string }>("SELECT state FROM runs WHERE id = ?", live.id);
    if (row?.state !== "running") {
      live.endedElsewhere = true;
      throw new EndedElsewhere(live.id, row?.state);
    }
  }

  /**
   * The end of a run that another process ended (it found this process's lease expired, see owners.ts): that
   * process released the hold, charged nothing, marked the run broken and freed its Idempotency-Key; this one
   * writes nothing, lets go of the key's claim in its memory, and answers what a read of the handle answers (500).
   */
  private lost(live: LiveRun): HttpAnswer {
    this.letGo(live);
    const answer = this.internalError(live.ctx.requestId, live.handle);
    this.end(live, answer);
    return answer;
  }

  /**
   * A run of this process found ended by another one: from now on it writes nothing, and its Idempotency-Key claim
   * is let go at once (the other process freed the key in the database; the same call may run again), even though
   * its calls may still be under way here.
   */
  private letGo(live: LiveRun): void {
    if (!live.endedElsewhere || !live.claimFreed)
      this.deps.log(
        `run ${live.id} was ended by another process while it ran here (this process's lease had expired); nothing charged`,
      );
    live.endedElsewhere = true;
    if (live.claimFreed) return;
    live.claimFreed = true;
    if (live.ctx.idemKey) this.deps.idempotency.release(live.ctx.key.id, live.ctx.idemKey);
  }

  /**
   * Finds the runs of this process that another process ended (after this process's lease had lapsed, see
   * owners.ts) and lets them go (`letGo`). The gateway calls it when a heartbeat found its owner row gone.
   * Returns how many it found.
   */
  reconcile(): number {
    let n = 0;
    for (const live of this.liveByHandle.values()) {
      if (live.endedElsewhere) continue;
      const row = this.deps.store.get<{ state: string }>("SELECT state FROM runs WHERE id = ?", live.id);
      if (row?.state === "running") continue;
      this.letGo(live);
      n++;
    }
    return n;
  }

  private end(live: LiveRun, answer: HttpAnswer): void {
    live.result = answer;
    if (live.handle && !this.closed) {
      // A run with a handle stays here, read as running, until its end is committed: a read never shows an end
      // that a failed commit then takes back (D75).
      live.committing = true;
      this.deps.store.whenWritten((ok) => {
        live.committing = false;
        if (!ok || live.result !== answer) return;
        this.live.delete(live.id);
        this.liveByHandle.delete(live.handle!);
        this.moved(live, true);
      });
    } else {
      this.live.delete(live.id);
      if (live.handle) {
        this.liveByHandle.delete(live.handle);
        this.moved(live, true);
      }
    }
    if (live.slotFreed) return;
    live.slotFreed = true;
    this.deps.limits.endRun(live.ctx.key.workspace_id);
  }

  private internalError(requestId: string, handle: string | null): HttpAnswer {
    return this.errorJson("internal_error", requestId, REFUSALS.runBroken(handle ?? undefined));
  }

  /** An error answer as JSON bytes. */
  private errorJson(
    code: "internal_error" | "not_found" | "handle_expired",
    requestId: string,
    fields: RefusalFields,
  ): HttpAnswer {
    const a = errorAnswer(code, requestId, fields as never, { urls: this.urls, now: new Date(this.deps.now()) });
    return { status: a.status, headers: { ...a.headers, "content-type": JSON_TYPE }, body: JSON.stringify(a.body) };
  }

  /** How far a run is (D141): cells ended of cells planned (a data call), waves ended of waves planned (a tool). */
  private progressOf(live: LiveRun, ended: boolean): RunProgress {
    if (live.kind === "data")
      return {
        done: live.ended.filter((e) => e !== undefined).length,
        total: live.plan.calls.length,
        ended,
        unit: "cells",
      };
    return {
      done: live.steps.filter((s) => s.status === "done" || s.status === "failed").length,
      total: described(live).waves,
      ended,
      unit: "waves",
    };
  }

  /** Tells the listeners of a run with a handle how far it is (D141); `ended` once its end is committed. */
  private moved(live: LiveRun, ended = false): void {
    if (live.handle) this.progress.update(live.handle, this.progressOf(live, ended));
  }

  /**
   * Listens to the progress of a run of this process that answered 202 (D141): `listener` gets it at once, on every
   * cell or wave that ends, and last with `ended: true` once its end is committed (a read of `handle` then answers
   * the finished result). Null when no run of this process is in flight under `handle`.
   */
  watch(handle: string, listener: RunListener): (() => void) | null {
    return this.progress.watch(handle, listener);
  }

  /** The 202 answer of a run that goes on. */
  private runningAnswer(live: LiveRun, requestId: string): HttpAnswer {
    const wavesDone =
      live.kind === "tool" ? live.steps.filter((s) => s.status === "done" || s.status === "failed").length : 0;
    const cells =
      live.kind === "data" && live.plan.shape !== "single"
        ? live.ended.filter((e): e is EndedCall => e !== undefined).map((e) => cellOf(live.plan, e))
        : undefined;
    return this.running({
      requestId,
      handle: live.handle!,
      view: this.deps.ledger.view(live.ctx.account.id, live.ctx.key),
      quote: live.quote,
      waves: { planned: described(live).waves, done: wavesDone },
      ...(live.kind === "tool" ? { steps: live.steps } : {}),
      ...(cells ? { cells } : {}),
    });
  }

  /** A 202 answer: the engine's body, `Retry-After` the configured seconds. */
  private running(parts: Omit<RunningParts, "retryAfterSeconds">): HttpAnswer {
    return runningHttp(parts, this.deps.config.pollAfterSeconds);
  }

  /**
   * The 202 of a run that another live process runs: what its row says (the quote, the waves planned), the account
   * as it stands; the cells or steps ended so far are in that process's memory and are not shown.
   */
  private runningElsewhere(
    row: { account_id: string; request_id: string; quote: number; waves: number | null },
    handle: string,
    key: KeyRecord,
  ): HttpAnswer {
    return this.running({
      requestId: row.request_id,
      handle,
      view: this.deps.ledger.view(row.account_id, key),
      quote: row.quote,
      waves: { planned: row.waves ?? 1, done: 0 },
    });
  }

  /**
   * `GET /v1/results/{handle}`: 202 while running, the finished answer (json, csv or ndjson), 410, 500 or 404. A handle
   * is read by the key that started its call, or by a key of `alsoOf` (a console session's other console keys, D105).
   */
  read({ handle, key, format: asked, requestId, alsoOf }: HandleRead): HttpAnswer {
    const row = this.deps.store.get<{
      id: string;
      key_id: string;
      account_id: string;
      state: string;
      headers: string | null;
      answer: string | null;
      expires_at: string | null;
      request_id: string;
      shape: string;
      quote: number;
      owner: string | null;
      waves: number | null;
    }>(
      "SELECT id, key_id, account_id, state, headers, answer, expires_at, request_id, shape, quote, owner, waves FROM runs WHERE handle = ?",
      handle,
    );
    const now = new Date(this.deps.now());
    if (!row || (row.key_id !== key.id && !alsoOf?.has(row.key_id))) {
      return this.errorJson("not_found", requestId, REFUSALS.noSuchHandle());
    }
    const mine = this.liveByHandle.get(handle);
    if (mine?.committing) return this.runningAnswer(mine, row.request_id); // its end is not committed yet
    if (mine && row.state !== "running") this.letGo(mine); // ended by another process while it runs here
    if (row.state === "running") {
      const live = this.liveByHandle.get(handle);
      if (live) return this.runningAnswer(live, row.request_id);
      // Another live process runs it (the same database, see owners.ts): 202 from its row. Otherwise its owner is
      // gone (or is this process, which let go of it): it is broken, and the next recovery marks it so.
      if (row.owner !== null && row.owner !== this.deps.owners.id && this.deps.owners.isLive(row.owner))
        return this.runningElsewhere(row, handle, key);
      return this.internalError(requestId, handle);
    }
    if (row.state === "broken") return this.internalError(requestId, handle);
    if (row.state === "finished" && row.expires_at && Date.parse(row.expires_at) > now.getTime() && row.answer) {
      const headers = JSON.parse(row.headers ?? "{}") as Record<string, string>;
      const view = (withKey: boolean) => this.deps.ledger.view(row.account_id, withKey ? key : null);
      return finishedRead({ answer: row.answer, headers, shape: row.shape }, asked, view);
    }
    return this.errorJson("handle_expired", requestId, REFUSALS.handleExpired());
  }

  /** The operation whose run made `handle`, when that run is the key's; null otherwise. */
  operationOf(handle: string, keyId: string): string | null {
    const sql = "SELECT operation FROM runs WHERE handle = ? AND key_id = ?";
    return this.deps.store.get<{ operation: string }>(sql, handle, keyId)?.operation ?? null;
  }

  /** The handle of the run that a call under the key's Idempotency-Key `idemKey` started; null when none. */
  handleOfIdempotencyKey(keyId: string, idemKey: string): string | null {
    const sql =
      "SELECT r.handle AS handle FROM idempotency i JOIN runs r ON r.id = i.run_id WHERE i.key_id = ? AND i.idem_key = ?";
    return this.deps.store.get<{ handle: string | null }>(sql, keyId, idemKey)?.handle ?? null;
  }

  /**
   * The console's list of an account's calls under its keys named `keyName` (the newest 200): runs that outlived
   * their request or kept their answer have a row and a handle; a call answered at once has only its charge.
   */
  consoleResults(accountId: string, keyName: string): ConsoleResult[] {
    return this.deps.store.all<ConsoleResult>(
      `SELECT r.id AS run_id, r.handle, r.operation, r.state, r.quote, r.charged, r.started_at, ` +
        `r.ended_at, r.expires_at FROM runs r JOIN keys k ON k.id = r.key_id WHERE r.account_id = ` +
        `:accountId AND k.name = :keyName
       UNION ALL
       SELECT l.run_id, NULL, l.note, 'finished', l.amount, l.amount, l.created_at, l.created_at, NULL FROM ledger l JOIN keys k ON k.id = l.key_id
         WHERE l.account_id = :accountId AND k.name = :keyName AND l.kind = 'charge' AND l.run_id ` +
        `IS NOT NULL AND NOT EXISTS (SELECT 1 FROM runs r2 WHERE r2.id = l.run_id)
       ORDER BY started_at DESC, run_id DESC LIMIT 200`,
      { accountId, keyName },
    );
  }

  /**
   * Keeps a finished answer that was sent without a handle under a new handle, readable by `key` like any result
   * for `retentionMs` (the MCP server does this for an answer over its size bound, so that `more` can read on).
   * Nothing is charged: the call that made the answer was.
   */
  keep({ key, requestId, operation, headers, answer, handle = newHandle() }: KeptAnswer): string {
    const now = this.deps.now();
    this.deps.store.tx(() =>
      this.deps.store.run(
        "INSERT INTO runs (id, handle, key_id, account_id, workspace_id, operation, request_id, shape, state, quote, charged, " +
          "http_status, headers, answer, started_at, ended_at, expires_at) VALUES (:id, :handle, :keyId, :accountId, " +
          ":workspaceId, :operation, :requestId, 'kept', 'finished', 0, 0, 200, :headers, :answer, :startedAt, :endedAt, :expiresAt)",
        {
          id: `kept_${handle}`,
          handle,
          keyId: key.id,
          accountId: key.account_id,
          workspaceId: key.workspace_id,
          operation,
          requestId,
          headers: JSON.stringify(headers),
          answer,
          startedAt: isoSeconds(now),
          endedAt: isoSeconds(now),
          expiresAt: isoSeconds(now + this.deps.config.retentionMs),
        },
      ),
    );
    return handle;
  }

  /**
   * Ends the runs of processes that are gone (see owners.ts: lease expired or retired, or a pid of this machine
   * that no longer exists; a run with no owner was written before owners existed): each is marked broken (its
   * handle reads 500), its hold released (nothing charged) and its Idempotency-Key freed. Runs of live owners,
   * this process's included, are left alone. Holds left without a running run are released too, and the rows of
   * gone owners removed. Called when a gateway opens and then with every heartbeat; each run is ended exactly once
   * whoever else recovers at the same time (every change is conditional, inside one write transaction). Returns the
   * ids of the runs it ended; `alongside` gets them inside that transaction when there are any (the gateway marks
   * the schedules whose last run they were).
   */
  recover(alongside?: (ended: string[]) => void): string[] {
    const { store, ledger, idempotency, owners, config } = this.deps;
    if (!this.somethingToRecover()) return [];
    const now = this.deps.now();
    return store.tx(() => {
      const { live, gone } = owners.census();
      const ended: string[] = [];
      for (const run of store.all<{ id: string; owner: string | null }>(
        "SELECT id, owner FROM runs WHERE state = 'running'",
      )) {
        if (run.owner !== null && live.has(run.owner)) continue;
        ledger.release(run.id);
        const changed = store.run(
          "UPDATE runs SET state = 'broken', http_status = 500, ended_at = ?, expires_at = ? WHERE id = ? AND state = 'running'",
          isoSeconds(now),
          isoSeconds(now + config.retentionMs),
          run.id,
        );
        if (changed > 0) ended.push(run.id);
      }
      // A durable hold is written with its run's row; one without a running run is left from an older version.
      for (const h of store.all<{ run_id: string }>(ORPHAN_HOLDS)) ledger.release(h.run_id);
      idempotency.releaseRunning();
      owners.forget(gone);
      if (ended.length > 0) alongside?.(ended);
      return ended;
    });
  }

  /** A read (no write lock): whether `recover` has anything to do, the common answer of a heartbeat being no. */
  private somethingToRecover(): boolean {
    const { store, owners } = this.deps;
    const { live, gone } = owners.census();
    if (gone.length > 0) return true;
    if (
      store
        .all<{ owner: string | null }>("SELECT owner FROM runs WHERE state = 'running'")
        .some((r) => r.owner === null || !live.has(r.owner))
    )
      return true;
    return store.get(`${ORPHAN_HOLDS} LIMIT 1`) !== undefined || store.get(ORPHAN_CLAIM) !== undefined;
  }

  /** Forgets answers kept past their time (the handle then reads 410) and old idempotency records. */
  sweep(): void {
    const now = isoSeconds(this.deps.now());
    this.deps.store.run(
      "UPDATE runs SET answer = NULL WHERE state != 'running' AND answer IS NOT NULL AND expires_at <= ?",
      now,
    );
    this.deps.idempotency.sweep();
  }

  /** Resolves when every run in flight has ended and its end is committed (or rolled back). */
  async drain(): Promise<void> {
    await Promise.all([...this.live.values()].map((l) => l.done.catch(() => undefined)));
    await this.deps.store.durable().catch(() => undefined);
  }

  /**
   * Stops writing: runs that end after this leave the store alone. The owner's lease ends now (`Owners.retire`), so
   * the runs still in flight are recovered as broken at once by the next process that opens the file (or by the
   * periodic sweep of another one already running).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.deps.owners.retire();
    } catch (e) {
      this.deps.log("could not end the lease of this process's runs (they are recovered when it expires)", e);
    }
  }

  /** Runs in flight now. */
  get inFlight(): number {
    return this.live.size;
  }
}
