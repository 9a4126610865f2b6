/** Charging calls, from their plan to their answer: executed, settled once, or run in the background (202) and read. */
import { EVERY_MS, followerReadings, notSupportedEntry, type PlatformProvider, type RunningParts } from "@sdgw/engine";
import { finishedAnswer, scheduleParams, toolQuoteAnswer, TOOLS, tooManySchedules, type EndedCall } from "@sdgw/engine";
import { creditBilling, fromBase64url, isoSeconds, runningAnswer, toolAnswer, type ToolPlan } from "@sdgw/engine";
import { cellOf, DAY_MS, entryOf, MESSAGES, REFUSALS, seedText, toolCharge } from "@sdgw/engine";
import { chargeCall, chargeRefusalAnswer, type CallLimits, type CallStore, type ChargePorts } from "@sdgw/engine";
import type { IdempotencySlot, Price } from "@sdgw/engine";
import type { Schedule, Step } from "@sdgw/types";
import { resultFile } from "@sdgw/validators";
import { invalid, newHandle, refuse, reply, toolContext, view, type MockContext, type Req } from "./context.ts";
import { forcedOn, forcedOutcome, ownError } from "./scenarios.ts";
import type { Charged, Done, Outcome, Reply, Run } from "./state.ts";

/** A signal never aborted: the simulated platforms always answer. */
const SIGNAL = new AbortController().signal;

/** A data or tool call, from its plan to its answer, through the engine's `chargeCall` over the mock's memory. */
export async function charging(ctx: MockContext, req: Req, c: Charged): Promise<Reply> {
  const { store, urls, clock, retryAfter } = ctx;
  const { route, forced, skipped, requestId, params, headers, pathParams, apiKey } = req;
  const op = route.operationId;
  const confirmed = params["confirm"] !== false;
  const schedule = c.kind === "tool" && op === "accountWatch" && confirmed && params["schedule"] !== undefined;
  if (schedule && store.scheduleList.length >= 20) throw invalid(requestId, tooManySchedules(20));
  const idemKey = headers["idempotency-key"];
  const slot = idemKey === undefined ? undefined : `${apiKey}\n${idemKey}`;
  const quoteOnly = c.kind === "tool" && !confirmed;
  const maxCost = params["max_cost_credits"];
  const price: Price = quoteOnly ? "free" : { credits: c.quote, calls: 0, maxCost, tool: c.kind === "tool" };
  const runId = newHandle();
  const start = () => {
    if (!quoteOnly) return run(ctx, req, c, { runId, schedule, slot });
    if (forced) skipped.push(`${op} with confirm: false answers the quote only`);
    return reply(200, toolQuoteAnswer(requestId, c.plan as ToolPlan, view(ctx)));
  };
  const call = { caller: apiKey, keyId: apiKey, runId, operationId: op, idempotencyKey: idemKey, price, start };
  const out = await chargeCall(chargePorts(ctx), { ...call, params: { path: pathParams, params } });
  if (out.kind !== "refused") return out.answer;
  const a = chargeRefusalAnswer(out.refusal, { urls, now: clock(), inProgressRetrySeconds: retryAfter });
  throw refuse(ctx, a.code, requestId, a.extra);
}

const none = () => null;
/** The mock has no limits of its own (a scenario forces `rate_limited` when a test asks for it). */
const NO_LIMITS: CallLimits<string> = { failureBlock: none, keyCall: none, startRun: none, endRun: () => undefined };

/**
 * The engine's storage port over the mock's memory: one record per Idempotency-Key of an API key (claimed, then
 * the answer or the 202's run), and holds against the balance (D7: what runs hold is not available). A key whose
 * 202 run is still going answers 409 `polls` times; then its run ends and the finished answer replays.
 */
function chargePorts(ctx: MockContext): ChargePorts<string, Reply> {
  const { store } = ctx;
  const at = (s: IdempotencySlot) => `${s.keyId}\n${s.idemKey}`;
  const claim: CallStore<string, Reply>["claim"] = (slot, call) => {
    const print = seedText({ op: call.operationId, params: call.params });
    const record = store.idempotency.get(at(slot));
    if (record && record.params !== print) return { kind: "conflict" };
    if (record?.answer) return { kind: "replay", answer: replayed(structuredClone(record.answer)) };
    const run = record?.handle === undefined ? undefined : store.runMap.get(record.handle);
    if (run?.status === "running" && run.reads < ctx.polls && !run.due) run.reads += 1;
    else if (run?.status === "running") finish(ctx, run);
    if (run?.status === "finished") {
      return { kind: "replay", answer: replayed(fileReply(structuredClone(run.finished!), formatOf(run.call))) };
    }
    // A claim not answered yet, or a run going on: 409. A broken or expired run: the key starts a new call.
    if (record && (!run || run.status === "running")) return { kind: "in_progress" };
    store.idempotency.set(at(slot), { params: print });
    return { kind: "claimed" };
  };
  const calls: CallStore<string, Reply> = {
    paused: none,
    full: none,
    claim,
    release: (slot) => void store.idempotency.delete(at(slot)),
    complete(slot, answer) {
      const record = store.idempotency.get(at(slot));
      if (record) record.answer = structuredClone(answer);
    },
    hold(_key, { runId, credits }) {
      const available = store.balance - store.held();
      if (credits > available) return { code: "insufficient_balance", balance: store.balance, available };
      store.holds.set(runId, credits);
      return null;
    },
  };
  return { store: calls, limits: NO_LIMITS };
}

/**
 * A call admitted and its quote held: executed (a forced outcome replaces its platforms' answers), then answered
 * at once and settled, or (D51, `slow`, a forced `running`) kept as a run whose handle the 202 gives. A run that
 * throws gives back its hold and its Idempotency-Key.
 */
async function run(ctx: MockContext, req: Req, c: Charged, o: { runId: string; schedule: boolean; slot?: string }) {
  const { store } = ctx;
  const { route, forced, requestId, params, headers, apiKey } = req;
  const op = route.operationId;
  try {
    const outcome = forcedOn(req, op, c);
    if (forced?.kind === "running") forced.take();
    // D52: the call that creates a schedule is its first run, and its answer says so.
    if (o.schedule && c.kind === "tool") c.warnings.unshift(MESSAGES.scheduleCreated(addSchedule(ctx, c.plan)));
    // A call none of whose calls can run (D41) has nothing to wait for: it answers at once.
    // A tool quoted `background` (over 10 calls, D51) answers 202 at once; any call may pass the wait (`slow`).
    // A task-augmented MCP call always does (D174), as the server's run answers 202 as soon as it started.
    const runs = c.kind === "tool" || c.plan.calls.some((x) => !x.unsupported);
    const background =
      req.respondNow === true ||
      forced?.kind === "running" ||
      (c.kind === "tool" && c.plan.quote.mode === "background") ||
      (runs && ctx.isSlow({ operationId: op, params, headers }));
    const done = await execute(ctx, c, outcome);
    const record = o.slot === undefined ? undefined : store.idempotency.get(o.slot);
    if (background) {
      const fresh = { reads: 0, status: "running" as const, due: false, quoteCredits: c.quote, chargedCredits: 0 };
      const run: Run = { handle: o.runId, requestId, operationId: op, key: apiKey, call: c, done, ...fresh };
      store.runMap.set(run.handle, run);
      if (record) record.handle = run.handle;
      return running(ctx, run);
    }
    const answer = fileReply(settle(ctx, c, done, { requestId, runId: o.runId }).body, formatOf(c));
    if (record) record.answer = structuredClone(answer);
    return answer;
  } catch (e) {
    store.holds.delete(o.runId);
    if (o.slot !== undefined) store.idempotency.delete(o.slot);
    throw e;
  }
}

/** Adds the schedule of a confirmed `account_watch` with `schedule` (D11, D52); its next run is one period from now. */
function addSchedule({ store, clock }: MockContext, plan: ToolPlan): Schedule {
  const every = String(plan.applied_params["schedule.every"]) as Schedule["every"];
  const id = `sch_${newHandle().slice(2, 10)}`;
  const params = scheduleParams(plan.applied_params) as Schedule["params"];
  const times = { created_at: isoSeconds(clock()), next_run_at: isoSeconds(clock() + EVERY_MS[every]) };
  const schedule: Schedule = { id, tool: "account_watch", params, every, status: "active", ...times, last_run: null };
  store.scheduleList.push(schedule);
  return schedule;
}

/** `GET /v1/results/{handle}`: 202 `polls` times, then the finished answer (charged once), then the same for free. */
export async function result(ctx: MockContext, req: Req, format: unknown): Promise<Reply> {
  const { forced, requestId } = req;
  const handle = req.pathParams["handle"] ?? "";
  const run = ctx.store.runMap.get(handle);
  if (!run || run.key !== req.apiKey) throw refuse(ctx, "not_found", requestId, REFUSALS.noSuchHandle());
  if (run.status === "finished" && ctx.clock() - run.endedAt! >= DAY_MS) run.status = "expired";
  if (run.status === "expired") throw refuse(ctx, "handle_expired", requestId, REFUSALS.handleExpired());
  if (run.status === "broken") throw refuse(ctx, "internal_error", requestId, REFUSALS.runBroken(handle));
  if (run.status === "running") {
    const outcome = forcedOn(req, run.operationId, run.call);
    if (outcome) {
      run.done = await execute(ctx, run.call, outcome);
      run.due = true;
    }
    if (forced?.kind === "running") forced.take();
    else if (run.reads < ctx.polls && !run.due) run.reads += 1;
    else finish(ctx, run);
    if (run.status === "running") return running(ctx, run);
  } else if (forced) req.skipped.push(`${handle} has already finished`);
  return fileReply(asRead(ctx, run), format ?? formatOf(run.call));
}

/**
 * Runs a planned call: a data call's calls at once, a tool through `TOOLS[tool].run` (its steps after each wave).
 * A forced outcome replaces every provider call's; the codes no platform answers fail as upstream_error, then
 * get their own error object.
 */
export async function execute(ctx: MockContext, c: Charged, forced: Outcome | undefined): Promise<Done> {
  const { urls, retryAfter } = ctx;
  const failure = (o: Outcome, platform: string, params: object = {}) => forcedOutcome(o, platform, params, retryAfter);
  let providers = ctx.simulator.providers;
  let own: ((platform: string) => ReturnType<typeof ownError>) | undefined;
  if (forced && forced !== "ok") {
    const call: PlatformProvider["call"] = async (r) =>
      failure(forced, r.platform, r.params) ?? failure("upstream_error", r.platform)!;
    const wrapped = Object.entries(providers).map(([k, p]) => [k, { ...p, call }]);
    providers = Object.fromEntries(wrapped) as typeof providers;
    if (!failure(forced, "")) own = (platform) => ownError(forced, platform, urls);
  }
  if (c.kind === "tool") {
    const waves: Step[][] = [];
    const result = await TOOLS[c.plan.tool].run(c.body as never, toolContext(ctx, providers), (s) => waves.push(s));
    if (own && result.status === "error") result.error = own(c.plan.tool);
    return { kind: "tool", result, waves };
  }
  const ended = await Promise.all(
    c.plan.calls.map(async (call): Promise<EndedCall> => {
      if (call.unsupported) return notSupportedEntry(call, call.unsupported, urls);
      const { platform, operation, params } = call;
      const outcome = await providers[platform].call({ platform, operation, params, signal: SIGNAL });
      const ended = entryOf(call, outcome, c.plan.errorScope, urls);
      if (own) ended.entry.error = own(platform);
      return ended;
    }),
  );
  return { kind: "data", ended };
}

/** The same run when the balance no longer covers it: every call `insufficient_balance`, nothing charged. */
function unpaid(ctx: MockContext, done: Done): Done {
  const failed = (platform: string) => ({
    status: "error" as const,
    items: [],
    error: ownError("insufficient_balance", platform, ctx.urls),
  });
  if (done.kind === "tool") return { ...done, result: { ...done.result, ...failed("") } };
  const ended = done.ended.map((e) => ({ call: e.call, entry: { ...e.entry, ...failed(e.call.platform) }, cost: 0 }));
  return { kind: "data", ended };
}

/** `options.pages`: that page answers `has_more: false` (a simulator's cursor holds the offset of the next). */
function capPages(ctx: MockContext, e: EndedCall): EndedCall {
  const cursor = e.entry.page?.has_more ? e.entry.page.cursor : undefined;
  const size = Number(e.call.params["limit"] ?? e.call.params["count"] ?? 20);
  const offset = cursor ? (JSON.parse(fromBase64url(cursor) ?? "{}") as { o?: number }).o : undefined;
  if (offset === undefined || Math.round(offset / size) < ctx.pages) return e;
  return { ...e, entry: { ...e.entry, page: { has_more: false } } };
}

/**
 * Charges a run once (a balance that no longer covers it fails it, `insufficient_balance`) and answers it: each
 * `ok` or `empty` call's price, a tool's `toolCharge`.
 */
function settle(ctx: MockContext, c: Charged, done: Done, { requestId, runId }: { requestId: string; runId: string }) {
  const { store, clock } = ctx;
  store.holds.delete(runId);
  let charged = done.kind === "data" ? done.ended.reduce((s, e) => s + e.cost, 0) : toolCharge(done.result, c.quote);
  if (charged > store.balance) [done, charged] = [unpaid(ctx, done), 0];
  store.charge(charged, clock());
  const fetchedAt = isoSeconds(clock());
  if (c.kind === "data" && done.kind === "data") {
    const ended = done.ended.map((e) => capPages(ctx, e));
    const { body } = finishedAnswer(c.plan, ended, requestId, fetchedAt, charged, store.balance);
    return { body, charged };
  }
  const { plan, warnings } = c as Extract<Charged, { kind: "tool" }>;
  const result = (done as Extract<Done, { kind: "tool" }>).result;
  if (plan.tool === "account_watch") store.record(followerReadings(result));
  const body = toolAnswer({ requestId, fetchedAt, plan, result, charged, view: view(ctx), warnings });
  return { body: body as never, charged };
}

/** `batch_stats`' `format`: the media type of its answer, and the default of a read of its handle (D31). */
const formatOf = (c: Charged) => (c.kind === "tool" && c.plan.tool === "batch_stats" ? c.body["format"] : undefined);

/** A finished answer in the media type asked for (D31): csv or ndjson rows of its items, else its JSON. */
function fileReply(body: Record<string, unknown>, format: unknown): Reply {
  const headers: Record<string, string> = body["status"] === "timeout" ? { "X-Should-Retry": "false" } : {};
  const file = resultFile(body, format);
  return file ? { status: 200, headers, file } : reply(200, body, headers);
}

const replayed = (r: Reply): Reply => ({ ...r, headers: { ...r.headers, "Idempotent-Replayed": "true" } });

/** Ends a run: charged once, its answer under the original call's `request_id` (D47). */
function finish(ctx: MockContext, run: Run): void {
  const { body, charged } = settle(ctx, run.call, run.done, { requestId: run.requestId, runId: run.handle });
  Object.assign(run, { chargedCredits: charged, finished: body, status: "finished", endedAt: ctx.clock() });
}

/** A finished result as read now: the same answer, its balance as of the read (D7). */
function asRead(ctx: MockContext, run: Run): Record<string, unknown> {
  const body = structuredClone(run.finished!);
  const billing = body["billing"] as Record<string, unknown>;
  if ("balance" in billing) billing["balance"] = ctx.store.balance;
  else body["billing"] = creditBilling(view(ctx), Number(billing["cost_credits"]));
  return body;
}

/**
 * The 202 answer of a run still going, the call's own and every read of it, under the call's `request_id` (D47):
 * after `reads` of `polls + 1`, that share of a fanout's or targets' cells ended (D5), of a tool's waves done (D6).
 */
function running(ctx: MockContext, run: Run): Reply {
  const { call: c, done } = run;
  const share = (n: number) => Math.floor((n * run.reads) / (ctx.polls + 1));
  const parts = { requestId: run.requestId, handle: run.handle, retryAfterSeconds: ctx.retryAfter, view: view(ctx) };
  let shown: Pick<RunningParts, "waves" | "steps" | "cells"> = { waves: { planned: 1, done: 0 } };
  if (c.kind === "tool" && done.kind === "tool") {
    const planned = c.plan.quote.waves_planned;
    const ended = Math.min(planned - 1, share(planned));
    const steps = (ended > 0 && done.waves[ended - 1]) || c.plan.quote.plan;
    const wavesDone = steps.filter((s) => s.status === "done" || s.status === "failed").length;
    shown = { steps, waves: { planned, done: wavesDone } };
  } else if (c.kind === "data" && done.kind === "data" && c.plan.shape !== "single") {
    shown.cells = done.ended.slice(0, share(done.ended.length)).map((e) => cellOf(c.plan, e));
  }
  const body = runningAnswer({ ...parts, ...shown, quote: c.quote });
  return reply(202, body, { "Retry-After": String(ctx.retryAfter) });
}
