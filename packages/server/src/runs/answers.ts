/**
 * The parts of a run that do not depend on where it is kept: calling one provider within its timeout, the finished
 * answer of a data run or a tool run, a 202, a finished answer read back under its handle in the format asked. The
 * embedded store's `Runs` and the PostgreSQL runner both build their answers with these.
 */
import {
  creditBilling,
  entryOf,
  finishedAnswer,
  notSupportedEntry,
  runningAnswer,
  toolAnswer,
  type CallPlan,
  type CreditView,
  type EndedCall,
  type PlannedCall,
  type PlatformProvider,
  type RunResult,
  type RunningParts,
} from "@sdgw/engine";
import { resultFile, type ServiceUrls } from "@sdgw/validators";
import { serializeAnswer } from "../serialize.ts";
import type { HttpAnswer, ToolRunRequest } from "./types.ts";

/** The media type of every JSON answer. */
export const JSON_TYPE = "application/json; charset=utf-8";

/** Whether a finished answer's status counts as a failure of the key (the free-failure limit). */
export const failedStatus = (status: string): boolean =>
  status === "error" || status === "not_supported" || status === "timeout";

/** A finished answer: the answer sent (and kept under its Idempotency-Key), what its handle reads, and its failure. */
export interface FinishedParts {
  sent: HttpAnswer;
  /** What a run's row keeps for a read of its handle: the JSON answer and its headers. */
  kept: { headers: Record<string, string>; answer: string | Buffer };
  /** Whether it counts as a failure of the key (the free-failure limit). */
  failed: boolean;
}

/** Calls one planned call's provider, bounded by `timeoutMs` (then `timeout`, nothing charged); a gap answers at once. */
export async function callOne(
  call: PlannedCall,
  plan: CallPlan,
  o: { providers: Readonly<Record<string, PlatformProvider>>; timeoutMs: number; urls: ServiceUrls },
): Promise<EndedCall> {
  if (call.unsupported) return notSupportedEntry(call, call.unsupported, o.urls);
  const provider = o.providers[call.platform]!;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error("provider timeout"));
  }, o.timeoutMs);
  try {
    const outcome = await Promise.race([
      provider.call({
        platform: call.platform,
        operation: call.operation,
        params: call.params,
        signal: controller.signal,
        deadline: Date.now() + o.timeoutMs,
      }),
      new Promise<never>((_, reject) =>
        controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }),
      ),
    ]);
    return entryOf(call, outcome, plan.errorScope, o.urls);
  } catch (error) {
    if (!timedOut) throw error;
    const seconds = Math.round(o.timeoutMs / 1000);
    const message = `${call.platform} did not answer within ${seconds} s; it is unknown whether it ran. Nothing was charged.`;
    return entryOf(call, { status: "timeout", message }, plan.errorScope, o.urls);
  } finally {
    clearTimeout(timer);
  }
}

/** The finished answer of a data run: its cells, what it charged and the balance after. */
export function dataFinished(
  plan: CallPlan,
  ended: EndedCall[],
  o: { requestId: string; fetchedAt: string; charged: number; balance: number },
): FinishedParts {
  const { body, status } = finishedAnswer(plan, ended, o.requestId, o.fetchedAt, o.charged, o.balance);
  const headers: Record<string, string> = { "content-type": JSON_TYPE };
  if (status === "timeout") headers["x-should-retry"] = "false";
  const text = serializeAnswer(body);
  return { sent: { status: 200, headers, body: text }, kept: { headers, answer: text }, failed: failedStatus(status) };
}

/** The finished answer of a tool run, in its format (`batch_stats`' csv or ndjson), with its charge and credits. */
export function toolFinished(
  request: ToolRunRequest,
  result: RunResult,
  o: { requestId: string; fetchedAt: string; charged: number; view: CreditView },
): FinishedParts {
  const body = toolAnswer({
    requestId: o.requestId,
    fetchedAt: o.fetchedAt,
    plan: request.plan,
    result,
    charged: o.charged,
    view: o.view,
    warnings: request.warnings ?? [],
  });
  const headers: Record<string, string> = { "content-type": JSON_TYPE };
  if (result.status === "timeout") headers["x-should-retry"] = "false";
  const json = JSON.stringify(body);
  return {
    sent: fileAnswer(body, json, headers, request.format ?? "json"),
    kept: { headers, answer: json },
    failed: failedStatus(result.status),
  };
}

/** A 202 answer: the engine's body, `Retry-After` the configured seconds. */
export function runningHttp(parts: Omit<RunningParts, "retryAfterSeconds">, pollAfterSeconds: number): HttpAnswer {
  return {
    status: 202,
    headers: { "content-type": JSON_TYPE, "retry-after": String(pollAfterSeconds) },
    body: JSON.stringify(runningAnswer({ ...parts, retryAfterSeconds: pollAfterSeconds })),
  };
}

/**
 * A finished answer kept under a handle, read now: in the format asked (else the run's own: a tool's `tool:csv`
 * shape), its billing as the account stands now (D7). `view(withKey)` gives the credits (with the reading key's
 * daily limit, or the account's alone).
 */
export function finishedRead(
  row: { answer: string; headers: Record<string, string>; shape: string },
  asked: "json" | "csv" | "ndjson" | undefined,
  view: (withKey: boolean) => CreditView,
): HttpAnswer {
  const answer = JSON.parse(row.answer) as Record<string, unknown>;
  const format = asked ?? ((row.shape.startsWith("tool:") ? row.shape.slice(5) : "json") as "json" | "csv" | "ndjson");
  const billing = answer["billing"] as { balance?: number; cost_credits?: number } | undefined;
  if (billing && typeof billing.balance === "number") billing.balance = view(false).balance;
  if (billing && typeof billing.cost_credits === "number")
    answer["billing"] = creditBilling(view(true), billing.cost_credits);
  return fileAnswer(answer, JSON.stringify(answer), row.headers, format);
}

/** A finished answer in the media type asked for (D31): csv or ndjson rows of the items, else the JSON text. */
export function fileAnswer(
  body: Record<string, unknown>,
  json: string,
  headers: Record<string, string>,
  format: "json" | "csv" | "ndjson",
): HttpAnswer {
  const file = resultFile(body, format);
  return file
    ? { status: 200, headers: { ...headers, "content-type": file.contentType }, body: file.text }
    : { status: 200, headers, body: json };
}
