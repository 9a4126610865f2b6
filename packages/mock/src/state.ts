/** The mock's memory between requests: credits, runs, idempotency keys, schedules. Cleared by `reset()`. */
import type { AccountReading, CallPlan, EndedCall, RunResult, ToolPlan } from "@sdgw/engine";
import type { ErrorCode, OperationId, Schedule, Step } from "@sdgw/types";
import { FIXTURES, ROUTES } from "./generated/routes.ts";

/** @internal An outcome a scenario forces on every call of a run: `ok`, `empty`, or the code of its failure. */
export type Outcome = "ok" | "empty" | ErrorCode;

/** @internal A charging call as the engine planned it: a data call's calls, or a tool's plan and request. */
export type Charged =
  | { kind: "data"; plan: CallPlan; quote: number }
  | { kind: "tool"; plan: ToolPlan; body: Record<string, unknown>; quote: number; warnings: string[] };

/** @internal What a run produced: a data call's ended calls, or a tool's result and its steps after each wave. */
export type Done = { kind: "data"; ended: EndedCall[] } | { kind: "tool"; result: RunResult; waves: Step[][] };

/** @internal An answer before it becomes a Response: JSON, or the text of a csv or ndjson file. */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  json?: unknown;
  file?: { contentType: string; text: string };
}

/** Where a run started with a 202 stands. */
export type RunStatus = "running" | "finished" | "broken" | "expired";

/** A run started by a call that answered 202, as {@link MockState.runs} shows it. */
export interface RunInfo {
  /** The results handle of its 202 answer. */
  readonly handle: string;
  /** The operation that started it. */
  readonly operationId: OperationId;
  /** The key that started it; only this key reads it. */
  readonly key: string;
  /** Where it stands. */
  readonly status: RunStatus;
  /** Reads answered 202 so far. */
  readonly reads: number;
  /** What the call was quoted: the most it can cost. */
  readonly quoteCredits: number;
  /** What the run was charged when it finished (0 until then, and for failures). */
  readonly chargedCredits: number;
}

/** @internal A run: what {@link MockState.runs} shows, and what the mock needs to finish it. */
export interface Run extends Mutable<RunInfo> {
  /** The `request_id` of the call that started it: its running and finished reads keep it (D47). */
  requestId: string;
  call: Charged;
  /** What its calls answered (run when it started, again when a scenario forces another outcome). */
  done: Done;
  /** Finish at the next read, whatever `polls` says. */
  due: boolean;
  endedAt?: number;
  /** The finished answer as rendered when the run ended. */
  finished?: Record<string, unknown>;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** @internal A stored answer of a call sent with an Idempotency-Key. */
export interface IdempotencyRecord {
  /** The call's parameters, as stable JSON. */
  params: string;
  /** The run of a call that answered 202. */
  handle?: string;
  /** The answer of a call that answered at once. */
  answer?: Reply;
}

/** What the mock remembers; read it and steer it through `mock.state`. */
export interface MockState {
  /** Credits left now. */
  readonly balance: number;
  /** Sets the credits left (for example `0`, to see `insufficient_balance`). */
  setBalance(credits: number): void;
  /** Credits spent today (UTC). */
  readonly spentToday: number;
  /** Every run started with a 202, oldest first. */
  readonly runs: readonly RunInfo[];
  /** One run by handle. */
  run(handle: string): RunInfo | undefined;
  /** Makes a run's result expire: the next read answers `410 handle_expired` (as 24 hours after it ended). */
  expire(handle: string): void;
  /** Breaks a run that is still running: reading it answers `500 internal_error`, and nothing is charged. */
  breakRun(handle: string): void;
  /** Ends a run at its next read, however many 202 reads `polls` asks for. */
  finishRun(handle: string): void;
  /** Keys that were sent in a URL (`?key=`) and must be treated as exposed (D25). */
  readonly exposedKeys: readonly string[];
  /** The workspace's schedules (D11), as `GET /v1/schedules` lists them. */
  readonly schedules: readonly Schedule[];
}

/** @internal The mutable store behind {@link MockState}. */
export class Store implements MockState {
  balance = 0;
  spentToday = 0;
  spentDay = "";
  runMap = new Map<string, Run>();
  idempotency = new Map<string, IdempotencyRecord>();
  /** Credits held by calls that run, by run id (a 202 run's id is its handle); settling or breaking drops them. */
  holds = new Map<string, number>();
  exposed = new Set<string>();
  scheduleList: Schedule[] = [];
  /** Follower readings `account_watch` runs made, by platform and account, oldest first (as the server keeps them). */
  readings = new Map<string, AccountReading[]>();
  private readonly startingBalance: number;
  private readonly startingSchedules: readonly Schedule[];

  /** `schedules`: the workspace's schedules at the start and after `clear()` (default: the fixture's). */
  constructor(startingBalance: number, schedules?: readonly Schedule[]) {
    const fixture = FIXTURES[ROUTES.listSchedules.defaultFixture ?? ""] as { schedules?: Schedule[] } | undefined;
    this.startingSchedules = structuredClone(schedules ?? fixture?.schedules ?? []);
    this.startingBalance = startingBalance;
    this.clear();
  }

  /** Forgets everything: credits back to the start, no runs or keys; the starting schedules. */
  clear(): void {
    this.balance = this.startingBalance;
    this.spentToday = 0;
    this.runMap.clear();
    this.idempotency.clear();
    this.holds.clear();
    this.exposed.clear();
    this.readings.clear();
    this.scheduleList = structuredClone([...this.startingSchedules]);
  }

  /** Credits that running calls hold: not available to new calls, part of today's spend (D7). */
  held(): number {
    let held = 0;
    for (const credits of this.holds.values()) held += credits;
    return held;
  }

  /** Takes `credits` from the balance and adds them to today's spend (which restarts each UTC day). */
  charge(credits: number, now: number): void {
    const day = new Date(now).toISOString().slice(0, 10);
    if (day !== this.spentDay) [this.spentDay, this.spentToday] = [day, 0];
    this.balance -= credits;
    this.spentToday += credits;
  }

  /** Keeps the readings of a run (one per account and moment: a later one of the same moment replaces it). */
  record(readings: readonly AccountReading[]): void {
    for (const r of readings) {
      const key = `${r.platform}\n${r.accountId}`;
      const kept = (this.readings.get(key) ?? []).filter((x) => x.t !== r.t);
      this.readings.set(key, [...kept, r].sort((a, b) => a.t - b.t).slice(-400));
    }
  }

  /** The earlier readings of an account (the last 400, oldest first). */
  history(platform: string, accountId: string): AccountReading[] {
    return this.readings.get(`${platform}\n${accountId}`) ?? [];
  }

  setBalance(credits: number): void {
    if (!(Number.isInteger(credits) && credits >= 0))
      throw new TypeError(`@sdgw/mock: a balance is a whole number of credits, 0 or more (got ${credits})`);
    this.balance = credits;
  }

  get runs(): readonly RunInfo[] {
    return [...this.runMap.values()].map(info);
  }

  run(handle: string): RunInfo | undefined {
    const r = this.runMap.get(handle);
    return r && info(r);
  }

  /** The run of `handle`; with `unlessRunning`, one still running (else that follows the error's words). */
  private must(handle: string, unlessRunning?: string): Run {
    const r = this.runMap.get(handle);
    if (!r) throw new TypeError(`@sdgw/mock: no run ${handle}`);
    if (unlessRunning && r.status !== "running")
      throw new TypeError(`@sdgw/mock: run ${handle} is ${r.status}${unlessRunning}`);
    return r;
  }

  expire(handle: string): void {
    this.must(handle).status = "expired";
    this.holds.delete(handle);
  }

  breakRun(handle: string): void {
    this.must(handle, "; only a running run can break").status = "broken";
    this.holds.delete(handle);
  }

  finishRun(handle: string): void {
    this.must(handle, ", not running").due = true;
  }

  get exposedKeys(): readonly string[] {
    return [...this.exposed];
  }

  get schedules(): readonly Schedule[] {
    return structuredClone(this.scheduleList);
  }
}

/** A run as {@link MockState.runs} shows it: without what the mock keeps to finish it. */
function info({ requestId, call, done, due, endedAt, finished, ...shown }: Run): RunInfo {
  return shown;
}
