/**
 * The run domain that both stores serve alike: an answer ready to send, a call's context, a handle's read, a kept
 * answer, a tool run's request and a console result. The embedded store's `Runs` (`storage/sqlite/runs.ts`) and
 * PostgreSQL's `PgRunner` (`storage/postgres/runner.ts`) take and give these; `runs/answers.ts` builds them.
 */
import type { Step } from "@sdgw/types";
import type { Awaitable, RunResult, ToolPlan } from "@sdgw/engine";
import type { KeyRecord, AccountRecord } from "../storage/accounts.ts";

/** An answer ready to send: status, headers, and the body as text or as its UTF-8 bytes (a finished answer). */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

/** Who started a run and under which Idempotency-Key. */
export interface RunContext {
  requestId: string;
  key: KeyRecord;
  account: AccountRecord;
  /** SHA-256 of the key as sent (counts failures for the free-failure limit). */
  keyHash: string;
  idemKey?: string;
  /**
   * D186: `key` and `account` are what this process read before, not read for this call: the store must check the
   * key's row where it admits the call, and throw `KeyChanged` when the row no longer lets the key call.
   */
  keyUnchecked?: boolean;
  /**
   * Answer 202 with a handle as soon as the run started (its row written first), not after `waitMs`, as a background
   * tool run does (D174: a task-augmented MCP call).
   */
  respondNow?: boolean;
}

/** Reads a run's answer under its handle (see `Runs.read`). */
export interface HandleRead {
  handle: string;
  /** The key that reads. */
  key: KeyRecord;
  /** The media type asked for (default: the run's own, json for a data call). */
  format?: "json" | "csv" | "ndjson" | undefined;
  requestId: string;
  /** Other keys whose handles `key` may read too (a console session's console keys, D105). */
  alsoOf?: ReadonlySet<string> | undefined;
}

/** A finished answer kept under a new handle (see `Runs.keep`). */
export interface KeptAnswer {
  /** The handle to keep it under (default: a new one). */
  handle?: string;
  /** The key that may read it. */
  key: KeyRecord;
  requestId: string;
  operation: string;
  headers: Record<string, string>;
  answer: string;
}

/** A tool run to execute (see `Runs.executeTool`). */
export interface ToolRunRequest {
  plan: ToolPlan;
  /** Runs the tool's waves and analysis; `onStep` gets the steps after each wave. */
  run(onStep: (steps: Step[]) => void): Promise<RunResult>;
  /** Warnings the answer carries before the run's own (for example, a schedule created with this call). */
  warnings?: string[];
  /** The media type of the finished answer (`batch_stats`' `format`), also the default of a handle read. */
  format?: "json" | "csv" | "ndjson";
  /** Answer 202 with a handle at once, whatever the quote's mode (scheduled runs). */
  background?: boolean;
  /**
   * Called when the run gets its handle (before the 202 is answered). The embedded store calls it inside the
   * transaction of the run's row and ignores a promise; PostgreSQL's runner awaits it.
   */
  onHandle?(handle: string): Awaitable<void>;
  /**
   * Called with the run's status and charge (scheduled runs): inside the run's final transaction on the embedded
   * store; before it, awaited, on PostgreSQL.
   */
  onEnd?(end: { handle: string | null; status: string; charged: number; result: RunResult | null }): Awaitable<void>;
}

/** Starts, finishes, reads and recovers runs. */

/** A row of the console's list of calls (`Runs.consoleResults`). */
export interface ConsoleResult {
  run_id: string;
  handle: string | null;
  operation: string | null;
  state: string;
  quote: number;
  charged: number;
  started_at: string;
  ended_at: string | null;
  expires_at: string | null;
}
