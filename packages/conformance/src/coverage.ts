/**
 * How much of the contract a run reached, from what it saw on the wire: the operations it exercised (of the
 * spec's), the HTTP statuses each answered, the error codes its answers carried (of the seed's 19), and the
 * background runs it started and followed to their end.
 */
import { ERROR_CODES, type ErrorCode } from "@sdgw/types";
import { OPERATIONS } from "@sdgw/validators";
import type { Exchange, OperationKey, TrackedRun } from "./http.ts";
import type { CheckResult } from "./types.ts";

/** The contract a run reached. Part of every `ConformanceReport` (and of `--json`). */
export interface Coverage {
  /** Requests the run sent (every exchange on the wire, the SDK's and the settling reads included). */
  requests: number;
  operations: {
    /** Operations of the spec (`spec/openapi.yaml`, by `operationId`). */
    total: number;
    /** Operations the run sent at least one request to. */
    exercised: number;
    /** The HTTP statuses each exercised operation answered, ascending, in the spec's order of operations. */
    statuses: Partial<Record<OperationKey, number[]>>;
    /** The HTTP statuses of requests that matched no route of the contract (unknown paths). */
    noRoute: number[];
    /** The operations no request reached, in the spec's order. */
    notExercised: OperationKey[];
    /** The error codes each exercised operation's answers carried (operations × error codes), in the seed's order. */
    errorCodes: Partial<Record<OperationKey, ErrorCode[]>>;
  };
  errorCodes: {
    /** The seed's error codes (19). */
    total: number;
    /** The codes some answer carried: an error answer's `code`, or an `error.code` inside an HTTP 200 answer. */
    reached: ErrorCode[];
    /** The codes no answer carried, in the seed's order. */
    notReached: ErrorCode[];
  };
  runs: {
    /** Background runs the run started (answers 202 with a handle). */
    started: number;
    /** Those a read with the starting key saw end (200, 404, 410 or 500). */
    ended: number;
  };
  /** The checks that could not run (not applicable), each with why: what a green run did not look at. */
  notRun: { id: string; reason: string }[];
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const KNOWN = new Set<string>(ERROR_CODES);

/** Answers that describe the contract rather than answer a call (their examples name every code): never counted. */
const DOCUMENTS = new Set<string>(["getOpenApiDocument", "listCapabilities", "findOperation"]);

/**
 * The error codes an answer carries: its own `code` (an error answer), and every `error.code` inside it (an
 * envelope's, fanout entries', targets'). The documents of the contract (`GET /openapi.json`, the capabilities,
 * `POST /v1/find`) carry none, whatever their examples say.
 */
export function errorCodesOf(x: Exchange): ErrorCode[] {
  const found = new Set<string>();
  const body = x.json;
  if (isObject(body) && typeof body["code"] === "string" && (x.status >= 400 || "fix" in body)) found.add(body["code"]);
  if (x.op !== null && DOCUMENTS.has(x.op) && x.status === 200)
    return [...found].filter((c): c is ErrorCode => KNOWN.has(c));
  const walk = (v: unknown, depth: number): void => {
    if (depth > 6) return;
    if (Array.isArray(v)) for (const e of v) walk(e, depth + 1);
    else if (isObject(v)) {
      for (const [k, child] of Object.entries(v)) {
        if (k === "items") continue; // data, never an error
        if (k === "error" && isObject(child) && typeof child["code"] === "string") found.add(child["code"]);
        walk(child, depth + 1);
      }
    }
  };
  walk(body, 0);
  return [...found].filter((c): c is ErrorCode => KNOWN.has(c));
}

/** The coverage of a run's exchanges and tracked runs. */
export function coverageOf(
  exchanges: readonly Exchange[],
  runs: readonly TrackedRun[],
  results: readonly CheckResult[] = [],
): Coverage {
  const all = Object.keys(OPERATIONS) as OperationKey[];
  const byOp = new Map<OperationKey, Set<number>>();
  const codesByOp = new Map<OperationKey, Set<string>>();
  const noRoute = new Set<number>();
  const codes = new Set<string>();
  for (const x of exchanges) {
    if (x.op) byOp.set(x.op, (byOp.get(x.op) ?? new Set()).add(x.status));
    else noRoute.add(x.status);
    for (const c of errorCodesOf(x)) {
      codes.add(c);
      if (x.op) codesByOp.set(x.op, (codesByOp.get(x.op) ?? new Set()).add(c));
    }
  }
  const errorCodesByOp: Partial<Record<OperationKey, ErrorCode[]>> = {};
  for (const op of all) {
    const c = codesByOp.get(op);
    if (c) errorCodesByOp[op] = ERROR_CODES.filter((e) => c.has(e));
  }
  const statuses: Partial<Record<OperationKey, number[]>> = {};
  for (const op of all) {
    const s = byOp.get(op);
    if (s) statuses[op] = [...s].sort((a, b) => a - b);
  }
  return {
    requests: exchanges.length,
    operations: {
      total: all.length,
      exercised: Object.keys(statuses).length,
      statuses,
      noRoute: [...noRoute].sort((a, b) => a - b),
      notExercised: all.filter((op) => !byOp.has(op)),
      errorCodes: errorCodesByOp,
    },
    errorCodes: {
      total: ERROR_CODES.length,
      reached: ERROR_CODES.filter((c) => codes.has(c)),
      notReached: ERROR_CODES.filter((c) => !codes.has(c)),
    },
    runs: { started: runs.length, ended: runs.filter((r) => r.ended).length },
    notRun: results.filter((r) => r.outcome === "not_applicable").map((r) => ({ id: r.id, reason: r.message })),
  };
}

const route = (op: OperationKey) => `${OPERATIONS[op].method.toUpperCase()} ${OPERATIONS[op].path}`;

/**
 * The coverage as text: a headline, one line per exercised operation with its statuses, then what was not reached.
 *
 * ```
 * Coverage: 17 of 22 operations exercised, 14 of 19 error codes reached, 9 background runs started (9 ended), 141 requests
 *   GET /v1/search (search): 200 202 400 401 402 403 409 422 429
 *   …
 *   operations not exercised: DELETE /v1/schedules/{schedule_id} (deleteSchedule), …
 *   error codes reached: invalid_params, not_supported, …
 *   error codes not reached: plan_limit, handle_expired, …
 * ```
 */
export function formatCoverage(c: Coverage): string {
  const lines = [
    `Coverage: ${c.operations.exercised} of ${c.operations.total} operations ` +
      `exercised, ${c.errorCodes.reached.length} of ${c.errorCodes.total} error codes ` +
      `reached, ${c.runs.started} background run${c.runs.started === 1 ? "" : "s"} started ` +
      `(${c.runs.ended} ended), ${c.requests} requests`,
    ...Object.entries(c.operations.statuses).map(([op, s]) => {
      const codes = c.operations.errorCodes?.[op as OperationKey];
      return `  ${route(op as OperationKey)} (${op}): ${s!.join(" ")}${codes?.length ? ` — ${codes.join(", ")}` : ""}`;
    }),
    ...(c.operations.noRoute.length ? [`  no route of the contract: ${c.operations.noRoute.join(" ")}`] : []),
    `  operations not exercised: ${c.operations.notExercised.length ? c.operations.notExercised.map((op) => `${route(op)} (${op})`).join(", ") : "none"}`,
    `  error codes reached: ${c.errorCodes.reached.join(", ") || "none"}`,
    `  error codes not reached: ${c.errorCodes.notReached.join(", ") || "none"}`,
    ...(c.notRun?.length
      ? [`  checks that could not run: ${c.notRun.map((n) => `${n.id} (${n.reason.slice(0, 160)})`).join("; ")}`]
      : ["  checks that could not run: none"]),
  ];
  return lines.join("\n");
}
