/**
 * The HTTP layer on Fastify 5: every route of spec/openapi.yaml. Each data call goes through the same steps, in
 * this order (ARCHITECTURE.md, "One call through the reference server"): parse and validate (the generated
 * validators) → authenticate → key state and permission → idempotency claim → rate limit and concurrency →
 * quote and `max_cost_credits` → credit hold → run. A request refused at any step before the hold never touches
 * the ledger; a claim taken before a refusal is given back.
 */
import { readFileSync } from "node:fs";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Platform, Schedule, ToolName } from "@sdgw/types";
import { TOOL_NAMES } from "@sdgw/types";
import {
  OPERATIONS,
  answerHeaders,
  bodyTextProblem,
  errorAnswer,
  invalidBody,
  invalidParamsAnswer,
  nextUtcMidnight,
  normalizeHeaders,
  parseQuery,
  queryTextProblem,
  requestValidators,
  type ErrorAnswer,
  type HttpErrorCode,
  type InvalidParams,
} from "@sdgw/validators";
import { parse as parseYaml } from "yaml";
import { creditBilling } from "@sdgw/engine";
import { isRouteOperation } from "@sdgw/engine";
import type { Gateway } from "../gateway.ts";
import { newRequestId, newRunId } from "../ids.ts";
import { planExtra, planPlatforms, planTargets, quoteOf, type PlanRefusal, type PlanResult } from "@sdgw/engine";
import { fingerprint, type Claim } from "../systems/idempotency.ts";
import type { HoldRefusal } from "../systems/ledger.ts";
import type { LimitRefusal } from "../systems/limits.ts";
import type { HttpAnswer, RunContext } from "../systems/runs.ts";
import type { HttpConfig } from "../config.ts";
import { SCHEDULES_PER_WORKSPACE } from "../systems/schedules.ts";
import { toolQuoteAnswer } from "@sdgw/engine";
import { planTool, startToolRun } from "../tool-runs.ts";
import type { ToolPlan, ToolRefusal } from "@sdgw/engine";
import { mcpRoutes } from "../mcp/http.ts";
import { consoleSessionRoutes } from "./console-session.ts";
import { authenticate, canReadData, keyInUrl, presentedKeyHash, sessionCaller, type Caller } from "./auth.ts";
import { consoleApiRoutes } from "./console-api.ts";
import { consoleStaticRoutes } from "./console-static.ts";
import { docsRoutes, withCatalogueLink } from "./docs-routes.ts";

type OperationId = keyof typeof OPERATIONS;
type Validation = { ok: true; value: unknown } | { ok: false; answer(requestId: string): unknown };

const JSON_TYPE = "application/json; charset=utf-8";
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
/** A request body whose bytes are not UTF-8. */
const NOT_UTF8 = Symbol("not UTF-8");

/** Every route of the contract, as `METHOD /path` (the `fix.allowed` of an unknown path). */
export const ROUTE_LIST: string[] = Object.values(OPERATIONS).map((o) => `${o.method.toUpperCase()} ${o.path}`);

/** Raised inside a handler to answer a refusal at once. */
class Refusal {
  readonly answer: HttpAnswer;
  constructor(answer: HttpAnswer) {
    this.answer = answer;
  }
}

function fromError(a: { status: number; headers: Record<string, string>; body: unknown }): HttpAnswer {
  const headers: Record<string, string> = { "content-type": JSON_TYPE };
  for (const [k, v] of Object.entries(a.headers)) headers[k.toLowerCase()] = v;
  return { status: a.status, headers, body: JSON.stringify(a.body) };
}

/**
 * The answer to a request that never became one (D57): headers over the limit, a request that did not arrive in
 * time, or bytes that are not HTTP. Always `400 invalid_params`, naming what to fix.
 */
function clientErrorAnswer(error: NodeJS.ErrnoException, bounds: HttpConfig, requestId: string): HttpAnswer {
  const why: InvalidParams =
    error.code === "HPE_HEADER_OVERFLOW"
      ? { param: "headers", message: `The request line and headers are over ${bounds.maxHeaderBytes} bytes.`, note: "Send less: a cursor of up to 20,000 characters fits in the URL; long lists go in a POST body." }
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT" || error.code === "ERR_HTTP_HEADERS_TIMEOUT"
        ? { param: "body", message: `The request did not arrive whole within ${Math.round(bounds.requestTimeoutMs / 1000)} s.`, note: "Send the body at once; its Content-Length must be its size." }
        : { param: "request", message: "The request is not valid HTTP/1.1 (its request line or a header could not be read).", note: "Percent-encode the URL; header values are visible ASCII." };
  return { status: 400, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(invalidParamsAnswer(why, requestId)) };
}

/** Writes an answer straight to a socket (no request object exists) and closes the connection. */
function refuseOnSocket(socket: Duplex, a: HttpAnswer): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = typeof a.body === "string" ? a.body : String(a.body);
  const headers = { ...a.headers, ...answerHeaders("/", a.headers["content-type"]), "content-length": String(Buffer.byteLength(body)), connection: "close" };
  const reason = a.status === 429 ? "Too Many Requests" : "Bad Request";
  socket.end(`HTTP/1.1 ${a.status} ${reason}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join("\r\n")}\r\n\r\n${body}`);
}

function send(reply: FastifyReply, a: HttpAnswer): FastifyReply {
  return reply.code(a.status).headers(a.headers).send(a.body);
}

function rawQuery(req: FastifyRequest): string {
  const i = req.url.indexOf("?");
  return i < 0 ? "" : req.url.slice(i + 1);
}

/** Reads the spec as JSON once: the copy beside the build (`dist/openapi.yaml`) or the repository's spec. */
function loadOpenApi(): string {
  for (const candidate of [new URL("./openapi.yaml", import.meta.url), new URL("../../../../spec/openapi.yaml", import.meta.url), new URL("../../../spec/openapi.yaml", import.meta.url)]) {
    try {
      return JSON.stringify(parseYaml(readFileSync(candidate, "utf8")));
    } catch {
      // next candidate
    }
  }
  throw new Error("spec/openapi.yaml not found");
}

/** Builds the Fastify app over a gateway. Not listening yet: call `app.listen` or use `app.inject`. */
export function buildApp(gw: Gateway): FastifyInstance {
  // Path parameters are checked by the validators (a handle is up to 128 characters), not cut by the router.
  // Router errors (a path that is not valid percent-encoding) answer the contract's invalid_params, not Fastify's body.
  const bounds = gw.config.http;
  const app = Fastify({
    logger: false,
    bodyLimit: gw.config.bodyLimit,
    // D57: a request must arrive within its time and size; what does not is answered in the contract's words.
    // Node checks its request timeouts every connectionsCheckingInterval (30 s by default): checked at a third of
    // the timeout, a stalled request is closed within 4/3 of it.
    http: { maxHeaderSize: bounds.maxHeaderBytes, requireHostHeader: false, connectionsCheckingInterval: Math.max(100, Math.min(5000, Math.floor(bounds.requestTimeoutMs / 3))) },
    requestTimeout: bounds.requestTimeoutMs,
    keepAliveTimeout: bounds.keepAliveTimeoutMs,
    clientErrorHandler: (error, socket) => refuseOnSocket(socket, clientErrorAnswer(error as NodeJS.ErrnoException, bounds, newRequestId(gw.now()))),
    return503OnClosing: false,
    routerOptions: { maxParamLength: 4096 },
    frameworkErrors: (_error, req, reply) => {
      // Answered before the router ran, so before the hooks: D25's key check and D53's headers are made here.
      const requestId = newRequestId(gw.now());
      const exposed = keyInUrl(gw, req.url, requestId);
      const a = exposed ? fromError(exposed) : { status: 400, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(invalidParamsAnswer({ param: "path", message: "The path is not a valid URL path." }, requestId)) };
      void gw.store.durable().then(() => (reply as unknown as FastifyReply).code(a.status).headers({ ...a.headers, ...answerHeaders(req.url, JSON_TYPE) }).send(a.body));
    },
  });
  const opts = () => ({ urls: gw.config.urls, now: new Date(gw.now()) });
  let openApiJson: string | null = null;

  app.server.headersTimeout = bounds.headersTimeoutMs;
  // D57: connections per network address. One over the cap is answered 429 at once and closed.
  const open = new Map<string, number>();
  app.server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "";
    const count = (open.get(address) ?? 0) + 1;
    open.set(address, count);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
    if (count > bounds.connectionsPerAddress) {
      const a = errorAnswer("rate_limited", newRequestId(gw.now()), { reason: "address", message: `This address holds ${bounds.connectionsPerAddress} open connections, the most one address may; close some or reuse them (keep-alive).`, retry_after: 1 } as never, opts());
      refuseOnSocket(socket, fromError(a));
    }
  });

  // Before any route: D25, D50 — a key in the URL of any route (the contract's, /mcp, an unknown path) is refused
  // before anything else is looked at, the body not even read; then an HTTP/1.1 request must name its host (RFC
  // 9112 3.2; Node's own refusal would be a bare 400). The usual request (no query key, a Host) passes at once.
  app.addHook("onRequest", (req, reply, done) => {
    const exposed = req.url.includes("?") ? keyInUrl(gw, req.url, newRequestId(gw.now())) : null;
    if (exposed) {
      void gw.store.durable().then(() => send(reply, fromError(exposed)));
      return;
    }
    if (req.raw.httpVersion === "1.1" && req.headers.host === undefined) {
      send(reply, { status: 400, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(invalidParamsAnswer({ param: "Host", message: "`Host` is missing: an HTTP/1.1 request names the host it is sent to." }, newRequestId(gw.now()))) });
      return;
    }
    done();
  });

  // Every answer, whichever path made it (routes, refusals, MCP), carries D53's headers; with `docsLinks`, an
  // error's `fix.note` ends with its entry in the error catalogue (D92: this is the one place that adds it).
  app.addHook("onSend", (req, reply, payload, done) => {
    reply.headers(answerHeaders(req.url, reply.getHeader("content-type") as string | undefined));
    done(null, gw.config.docsLinks && reply.statusCode >= 400 ? withCatalogueLink(payload, req.protocol, req.host) : payload);
  });

  // Bodies arrive as text; JSON is parsed in the handler so that every bad body is the seed's invalid_params.
  // Bytes that are not UTF-8 are not replaced by U+FFFD and charged as such: the body becomes NOT_UTF8 and is
  // refused as invalid_params.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => {
    try {
      done(null, UTF8.decode(body as Buffer));
    } catch {
      done(null, NOT_UTF8);
    }
  });

  /** An error answer; a 4xx other than 409 and 429 also counts as a failed call of the key that was sent. */
  const fail = (code: HttpErrorCode, requestId: string, extra: Record<string, unknown>, keyHash: string | null): HttpAnswer => {
    const a = errorAnswer(code, requestId, extra as never, opts());
    if (keyHash && a.status >= 400 && a.status < 500 && a.status !== 409 && a.status !== 429) gw.limits.recordFailure(keyHash);
    return fromError(a);
  };
  const invalid = (invalidParams: InvalidParams, requestId: string, keyHash: string | null): HttpAnswer => {
    if (keyHash) gw.limits.recordFailure(keyHash);
    return { status: 400, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(invalidParamsAnswer(invalidParams, requestId)) };
  };
  const validationFailure = (v: Validation, requestId: string, keyHash: string | null): HttpAnswer => {
    if (keyHash) gw.limits.recordFailure(keyHash);
    return { status: 400, headers: { "content-type": JSON_TYPE }, body: JSON.stringify((v as { answer(r: string): unknown }).answer(requestId)) };
  };

  /** Query, headers, path and body of an operation through its generated validators. */
  function validate(req: FastifyRequest, operationId: OperationId, requestId: string, parts: { query?: boolean; path?: Record<string, string>; body?: boolean; headers?: Record<string, string> }, keyHash: string | null): { query: Record<string, unknown>; body: Record<string, unknown>; headers: Record<string, string> } {
    const v = requestValidators[operationId] as Record<string, (value: unknown) => Validation>;
    const headers = parts.headers ?? normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
    let query: Record<string, unknown> = {};
    if (parts.query !== false) {
      const raw = rawQuery(req);
      const notText = queryTextProblem(raw);
      if (notText) throw new Refusal(invalid(notText, requestId, keyHash));
      query = parseQuery(OPERATIONS[operationId], raw);
      const q = v["query"]!(query);
      if (!q.ok) throw new Refusal(validationFailure(q, requestId, keyHash));
    }
    const h = v["headers"]!(headers);
    if (!h.ok) throw new Refusal(validationFailure(h, requestId, keyHash));
    if (parts.path) {
      const p = v["path"]!(parts.path);
      if (!p.ok) throw new Refusal(validationFailure(p, requestId, keyHash));
    }
    let body: Record<string, unknown> = {};
    if (parts.body) {
      const type = String(req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      let parsed: unknown;
      if (req.body === NOT_UTF8) throw new Refusal(invalid({ param: "body", message: "The body is not UTF-8 text.", note: "Send one JSON object encoded as UTF-8." }, requestId, keyHash));
      try {
        if (type !== "application/json" || typeof req.body !== "string") throw new Error("not JSON");
        parsed = JSON.parse(req.body);
      } catch {
        throw new Refusal(invalid(invalidBody(), requestId, keyHash));
      }
      const notText = bodyTextProblem(parsed);
      if (notText) throw new Refusal(invalid(notText, requestId, keyHash));
      const b = v["body"]!(parsed);
      if (!b.ok) throw new Refusal(validationFailure(b, requestId, keyHash));
      body = parsed as Record<string, unknown>;
    }
    return { query, body, headers };
  }

  function refusePlan(r: PlanRefusal, requestId: string, keyHash: string | null): HttpAnswer {
    if (r.code === "invalid_params") return invalid(r.invalid, requestId, keyHash);
    return fail("not_supported", requestId, { reason: "no_such_capability", message: r.message, fix: { allowed: r.allowed, note: r.note, example_call: { method: "GET", path: "/v1/capabilities" } } }, keyHash);
  }

  function limitAnswer(r: LimitRefusal, requestId: string): HttpAnswer {
    if (r.code === "free_failure_limit") {
      const retryAt = new Date(r.retryAt).toISOString().replace(/\.\d{3}Z$/, "Z");
      return fail("free_failure_limit", requestId, { message: "Too many failed calls in a short time; new calls wait until retry_at.", retry_at: retryAt, fix: { note: "Check the parameters of the failing calls; GET /v1/capabilities lists what each op takes." } }, null);
    }
    const messages = {
      key_qps: `Too many calls per second for this key (at most ${gw.config.limits.keyQps}).`,
      workspace_concurrency: `Too many calls running at once in this workspace (at most ${gw.config.limits.workspaceConcurrency}).`,
      address: `Too many requests from this network address (at most ${gw.config.limits.addressPerMinute} a minute on routes without a key).`,
    } as const;
    return fail("rate_limited", requestId, { reason: r.reason, message: messages[r.reason], retry_after: r.retryAfter, fix: { note: r.reason === "address" ? "Wait Retry-After seconds, or send a key." : "Wait Retry-After seconds." } }, null);
  }

  function holdAnswer(r: HoldRefusal, quote: number, requestId: string, keyHash: string): HttpAnswer {
    switch (r.code) {
      case "temporarily_unavailable": {
        // D74: the account's cap on calls started per UTC day. Retryable at resets_at (Retry-After); nothing held.
        const resets = nextUtcMidnight(new Date(gw.now()));
        return fail(
          "temporarily_unavailable",
          requestId,
          { reason: "daily_cap", message: `This account has started ${r.started} of its ${r.cap} calls of today (its daily cap) and this request makes more; calls are accepted again at ${resets}. Nothing ran and nothing was charged.`, resets_at: resets, fix: { action_url: gw.config.urls.status, note: "Send the same call again after resets_at, with the same Idempotency-Key; support can raise the account's cap." } },
          null,
        );
      }
      case "plan_limit":
        return fail("plan_limit", requestId, { reason: "free_calls_used", message: `This free account has used its ${gw.config.limits.freeCalls} calls${r.freeCallsLeft > 0 ? ` (${r.freeCallsLeft} left, this request makes more)` : ""}.`, fix: { action_url: gw.config.urls.billing, note: "Buy credits to lift the limit." } }, keyHash);
      case "daily_limit_reached":
        return fail(
          "daily_limit_reached",
          requestId,
          {
            reason: r.reason,
            message: `This ${r.reason === "key" ? "key" : "account"} has spent ${r.spent} of its daily limit of ${r.limit} credits and this call would cost ${quote}; it restarts at ${nextUtcMidnight(new Date(gw.now()))}.`,
            resets_at: nextUtcMidnight(new Date(gw.now())),
            fix: { action_url: gw.config.urls.console, note: `The ${r.reason === "key" ? "account owner can raise or switch off the key's" : "owner can raise or switch off the account's"} daily limit.` },
          },
          keyHash,
        );
      case "insufficient_balance":
        return fail("insufficient_balance", requestId, { message: `This call costs ${quote} credits and ${r.available} are available; nothing ran.`, quote_credits: quote, fix: { action_url: gw.config.urls.billing, note: "Buy credits and send the same request again." } }, keyHash);
    }
  }

  /** Authenticates; refuses what the key's state or permission does not allow. */
  function callerOf(headers: Record<string, string>, requestId: string, needsReadData: boolean, presentedHash?: string | null, stateChanging: boolean = needsReadData): Caller {
    // D87: no key and a session cookie: the console user's key (a refusal here counts no key failure).
    const bySession = presentedHash ? null : sessionCaller(gw, headers, requestId, stateChanging);
    if (bySession && !bySession.ok) throw new Refusal({ status: bySession.answer.status, headers: { ...bySession.answer.headers, "content-type": JSON_TYPE }, body: JSON.stringify(bySession.answer.body) });
    const a = bySession ?? authenticate(gw, headers, requestId, presentedHash);
    if (!a.ok) {
      const hash = presentedHash === undefined ? presentedKeyHash(headers) : presentedHash;
      if (hash) gw.limits.recordFailure(hash);
      throw new Refusal(fromError(a.answer));
    }
    if (needsReadData && !canReadData(a.caller.key)) {
      throw new Refusal(fail("key_scope_denied", requestId, { message: "This key lacks the permission read_data.", fix: { allowed: ["read_data"], action_url: gw.config.urls.console, note: "Give the key read_data in the console; it holds from the next call." } }, a.caller.keyHash));
    }
    return a.caller;
  }

  /** The answer of an Idempotency-Key already taken: the first answer again, 409 while it runs, 422 with other parameters. */
  function claimTaken(claim: Exclude<Claim, { kind: "claimed" }>, requestId: string, keyHash: string): HttpAnswer {
    if (claim.kind === "replay") return { status: claim.status, headers: { ...claim.headers, "idempotent-replayed": "true" }, body: claim.body };
    if (claim.kind === "lost") {
      return fromError(errorAnswer("internal_error", requestId, { message: "The first answer under this Idempotency-Key was charged but its stored copy is lost (a system crash); nothing is charged for this request. Use a new key to call again." }, opts()));
    }
    if (claim.kind === "in_progress") {
      const s = gw.config.inProgressRetrySeconds;
      return fail("idempotency_in_progress", requestId, { message: "The call under this Idempotency-Key still runs.", retry_after: s, fix: { note: "Ask again after Retry-After seconds; the first answer comes back with no new charge." } }, null);
    }
    return fail("idempotency_conflict", requestId, { message: "This Idempotency-Key was used with other parameters.", fix: { param: "Idempotency-Key", note: "Use a new key for a new call; the same key replays only the same call." } }, keyHash);
  }

  /** What a call costs: its quote and calls (held, then captured by the run), or `free` (a tool quote: nothing runs). */
  type Price = { credits: number; calls: number; maxCost: unknown; maxCostNote?: string } | "free";

  /**
   * The shared steps of every charging route, from the idempotency claim to the answer. The key is claimed first,
   * in memory (a replay, a 409 or a 422 answers at once), and given back when a limit, `max_cost_credits` or the
   * hold refuses the call, or anything throws before it runs: a refused call leaves no claim behind. A `free`
   * answer (a tool quote) takes the key's rate but no running slot and no hold, and completes its claim at once.
   */
  async function charging(caller: Caller, requestId: string, operationId: OperationId, params: unknown, idemKey: string | undefined, price: Price, start: (runId: string, ctx: RunContext) => Promise<HttpAnswer> | HttpAnswer): Promise<HttpAnswer> {
    const keyId = caller.key.id;
    const runId = newRunId(gw.now());
    const paused = (message: string) =>
      fail("temporarily_unavailable", requestId, { reason: "paused", message: `${message} Nothing ran and nothing was charged.`, fix: { action_url: gw.config.urls.status, note: "Send the same call again later, with the same Idempotency-Key; the status page says when calls resume." } }, null);
    // D60: while the service is paused a charged call starts nothing (a quote, which runs nothing, still answers).
    const pause = price === "free" ? null : gw.service.paused();
    if (pause) return paused(`Calls are paused: ${pause.message}`);
    if (idemKey !== undefined) {
      const claim = gw.idempotency.claim(keyId, idemKey, fingerprint(operationId, params), runId);
      if (claim.kind !== "claimed") return claimTaken(claim, requestId, caller.keyHash);
    }
    let owned = false;
    try {
      // D67: a new keyed call starts nothing while the answer log cannot keep its answer (quota reached, disk
      // full); its replays, 409 and 422 (above) still answer. The claim is given back below.
      const full = price === "free" || idemKey === undefined ? null : gw.idempotency.full();
      if (full) return paused(`New calls with an Idempotency-Key are paused: ${full.message}`);
      const limited = (await gw.limits.failureBlock(caller.keyHash)) ?? (await gw.limits.keyCall(keyId)) ?? (price === "free" ? null : gw.limits.startRun(caller.key.workspace_id));
      if (limited) return limitAnswer(limited, requestId);
      const ctx: RunContext = { requestId, key: caller.key, account: caller.account, keyHash: caller.keyHash, ...(idemKey !== undefined ? { idemKey } : {}) };
      if (price === "free") {
        const answer = await start(runId, ctx);
        if (idemKey !== undefined) gw.store.tx(() => gw.idempotency.complete(keyId, idemKey, answer.status, answer.headers, answer.body));
        owned = true;
        return answer;
      }
      const { credits, maxCost } = price;
      if (typeof maxCost === "number" && credits > maxCost) {
        gw.limits.endRun(caller.key.workspace_id);
        return fail("max_cost_exceeded", requestId, { message: `This call's quote is ${credits} credits, over max_cost_credits ${maxCost}; nothing ran.${price.maxCostNote ?? ""}`, quote_credits: credits, fix: { param: "max_cost_credits", note: "Send a value at least the quote, or leave it out." } }, caller.keyHash);
      }
      const refused = gw.runs.begin(runId, ctx, credits, price.calls);
      if (refused) {
        gw.limits.endRun(caller.key.workspace_id);
        return holdAnswer(refused, credits, requestId, caller.keyHash);
      }
      owned = true;
      return await start(runId, ctx);
    } finally {
      // From the start of the run on, the run owns the claim: it completes it with the answer or gives it back if it breaks.
      if (!owned && idemKey !== undefined) gw.idempotency.release(keyId, idemKey);
    }
  }

  /** A data call: its plan's refusal, or its quote charged through `charging` and its calls run. */
  function runCall(caller: Caller, requestId: string, operationId: OperationId, params: unknown, idemKey: string | undefined, plan: PlanResult, maxCost: unknown): Promise<HttpAnswer> | HttpAnswer {
    if (!plan.ok) return refusePlan(plan.refusal, requestId, caller.keyHash);
    const quote = quoteOf(plan.plan);
    return charging(caller, requestId, operationId, params, idemKey, { credits: quote.credits, calls: quote.calls, maxCost }, (runId, ctx) => gw.runs.execute(runId, ctx, plan.plan, quote.credits));
  }

  /** A handler that turns a `Refusal` into its answer and any other throw into a 500 that echoes nothing. */
  function handler(fn: (req: FastifyRequest, requestId: string) => Promise<HttpAnswer> | HttpAnswer) {
    return async (req: FastifyRequest, reply: FastifyReply) => {
      const requestId = newRequestId(gw.now());
      try {
        const answer = await fn(req, requestId);
        await gw.store.durable();
        return send(reply, answer);
      } catch (e) {
        if (e instanceof Refusal) {
          await gw.store.durable();
          return send(reply, e.answer);
        }
        gw.log(`request ${requestId} failed`, e);
        return send(reply, fromError(errorAnswer("internal_error", requestId, {}, opts())));
      }
    };
  }

  // ------------------------------------------------------------------------------------------ data routes

  app.get(
    "/v1/search",
    handler(async (req, requestId) => {
      const headersRaw = normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
      const hash = presentedKeyHash(headersRaw);
      const { query, headers } = validate(req, "search", requestId, { headers: headersRaw }, hash);
      const plan = planPlatforms(gw.catalog, "search", query, "search");
      if (!plan.ok) return refusePlan(plan.refusal, requestId, hash);
      const caller = callerOf(headers, requestId, true, hash);
      return runCall(caller, requestId, "search", query, headers["idempotency-key"], plan, query["max_cost_credits"]);
    }),
  );

  const postRoutes: Array<{ path: string; operationId: OperationId; plan: (body: Record<string, unknown>) => PlanResult }> = [
    { path: "/v1/search", operationId: "searchPost", plan: (b) => planPlatforms(gw.catalog, "search", b, "data") },
    { path: "/v1/trending", operationId: "trending", plan: (b) => planPlatforms(gw.catalog, "trending", b, "data") },
    { path: "/v1/detail", operationId: "detail", plan: (b) => planTargets(gw.catalog, "detail", b["platform"] as Platform, b) },
    { path: "/v1/comments", operationId: "comments", plan: (b) => planTargets(gw.catalog, "comments", b["platform"] as Platform, b) },
    { path: "/v1/user_profile", operationId: "userProfile", plan: (b) => planTargets(gw.catalog, "user_profile", b["platform"] as Platform, b) },
    { path: "/v1/user_posts", operationId: "userPosts", plan: (b) => planTargets(gw.catalog, "user_posts", b["platform"] as Platform, b) },
  ];
  for (const r of postRoutes) {
    app.post(
      r.path,
      handler(async (req, requestId) => {
        const headersRaw = normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
        const hash = presentedKeyHash(headersRaw);
        const { body, headers } = validate(req, r.operationId, requestId, { body: true, headers: headersRaw }, hash);
        const plan = r.plan(body);
        if (!plan.ok) return refusePlan(plan.refusal, requestId, hash);
        const caller = callerOf(headers, requestId, true, hash);
        return runCall(caller, requestId, r.operationId, body, headers["idempotency-key"], plan, body["max_cost_credits"]);
      }),
    );
  }

  app.post<{ Params: { op: string } }>(
    "/v1/call/:op",
    handler(async (req, requestId) => {
      const op = (req.params as { op: string }).op;
      const headersRaw = normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
      const hash = presentedKeyHash(headersRaw);
      const { body, headers } = validate(req, "callOperation", requestId, { body: true, path: { op }, headers: headersRaw }, hash);
      const [platform, name] = [op.slice(0, op.indexOf(".")), op.slice(op.indexOf(".") + 1)] as [Platform, string];
      const found = gw.catalog.lookup(op);
      let plan: PlanResult;
      if (!found) {
        const allowed = gw.catalog.platformsOffering(name);
        plan = {
          ok: false,
          refusal: {
            code: "not_supported",
            message: allowed.length ? `The catalog has no op ${op}: ${platform} does not offer ${name}; ${allowed.join(", ")} ${allowed.length === 1 ? "does" : "do"}. Nothing ran and nothing was charged.` : `The catalog has no op ${op}. Nothing ran and nothing was charged.`,
            allowed,
            note: allowed.length ? `${allowed.map((p) => `${p}.${name}`).join(", ")} ${allowed.length > 1 ? "are" : "is"} in the catalog; GET /v1/capabilities lists every op.` : "GET /v1/capabilities lists every op.",
          },
        };
      } else if (isRouteOperation(name)) {
        plan = planTyped(op, platform, name, body, requestId);
      } else {
        plan = planExtra(found.provider, found.spec, op, body);
      }
      if (!plan.ok) return refusePlan(plan.refusal, requestId, hash);
      const caller = callerOf(headers, requestId, true, hash);
      return runCall(caller, requestId, "callOperation", { op, body }, headers["idempotency-key"], plan, body["max_cost_credits"]);
    }),
  );

  /** A typed op called by name: its route's parameters (no `platform`: the op names it), its route's validator. */
  function planTyped(op: string, platform: Platform, name: "search" | "trending" | "detail" | "comments" | "user_profile" | "user_posts", body: Record<string, unknown>, requestId: string): PlanResult {
    const routeOp = ({ search: "searchPost", trending: "trending", detail: "detail", comments: "comments", user_profile: "userProfile", user_posts: "userPosts" } as const)[name];
    const allowed = Object.keys(OPERATIONS[routeOp].body?.params ?? {}).filter((p) => p !== "platform" && p !== "platforms");
    for (const k of Object.keys(body)) if (!allowed.includes(k)) return { ok: false, refusal: { code: "invalid_params", invalid: { param: k, message: `\`${k}\` is not a parameter of this call.`, allowed } } };
    const full = { ...body, platform };
    const v = (requestValidators[routeOp] as { body: (value: unknown) => { ok: boolean; invalid?: InvalidParams } }).body(full);
    if (!v.ok) return { ok: false, refusal: { code: "invalid_params", invalid: v.invalid! } };
    void requestId;
    if (name === "search" || name === "trending") return planPlatforms(gw.catalog, name, full, "data", { op });
    return planTargets(gw.catalog, name, platform, full, { op });
  }

  // ------------------------------------------------------------------------------------------ tools

  const toolOps: Record<ToolName, OperationId> = { brand_buzz: "brandBuzz", comment_insights: "commentInsights", account_watch: "accountWatch", find_creators: "findCreators", creator_card: "creatorCard", batch_stats: "batchStats", viral_finder: "viralFinder" };

  /** The fix note of a tool's `not_supported` refusal (D73 names `confirm` or `scale` for scale=large). */
  const notSupportedNote = (r: Extract<ToolRefusal, { code: "not_supported" }>) =>
    r.reason !== "not_available_yet"
      ? "GET /v1/capabilities lists the platforms of each operation."
      : r.param === "confirm"
        ? "Send confirm: false to see the plan and price of scale=large, or scale small or standard to run now."
        : "Send scale small or standard to run now, or confirm: false to see the plan and price of scale=large.";

  /** A tool's refusal (D24) as its HTTP answer; never charged. */
  function refuseTool(r: ToolRefusal, requestId: string, keyHash: string | null): HttpAnswer {
    switch (r.code) {
      case "invalid_params":
        return invalid({ param: r.param, message: r.message, ...(r.allowed ? { allowed: r.allowed } : {}) }, requestId, keyHash);
      case "plan_limit":
        return fail("plan_limit", requestId, { reason: r.reason, message: `${r.message} Nothing ran and nothing was charged.`, fix: { param: r.param, action_url: gw.config.urls.billing, note: "Buy credits to open it, or send a smaller scale." } }, keyHash);
      case "not_supported":
        return fail(
          "not_supported",
          requestId,
          { reason: r.reason, message: `${r.message} Nothing ran and nothing was charged.`, fix: { param: r.param, ...(r.allowed ? { allowed: r.allowed } : {}), note: notSupportedNote(r), example_call: { method: "GET", path: "/v1/capabilities" } } },
          keyHash,
        );
    }
  }

  /** A refusal that needs no account to decide (the request itself is wrong), decided before authentication (D50). */
  const beforeAuth = (r: ToolRefusal) => r.code === "invalid_params" || (r.code === "not_supported" && r.reason === "no_such_capability");

  app.post<{ Params: { tool: string } }>(
    "/v1/tools/:tool",
    handler(async (req, requestId) => {
      const name = (req.params as { tool: string }).tool;
      const operationId = (toolOps as Record<string, OperationId>)[name];
      if (!operationId || !Object.hasOwn(toolOps, name)) {
        return fail("not_found", requestId, { reason: "no_such_tool", message: `There is no tool ${name.slice(0, 100)}.`, fix: { param: "tool", allowed: [...TOOL_NAMES], example_call: { method: "GET", path: "/v1/capabilities" } } }, null);
      }
      const tool = name as ToolName;
      const headersRaw = normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
      const hash = presentedKeyHash(headersRaw);
      const { body, headers } = validate(req, operationId, requestId, { body: true, headers: headersRaw }, hash);
      const early = planTool(gw, tool, body, "paid");
      if (!early.ok && beforeAuth(early.refusal)) return refuseTool(early.refusal, requestId, hash);
      const caller = callerOf(headers, requestId, true, hash);
      const planned = planTool(gw, tool, body, caller.account.plan);
      if (!planned.ok) return refuseTool(planned.refusal, requestId, caller.keyHash);
      const confirmed = body["confirm"] !== false;
      if (tool === "batch_stats" && confirmed && caller.account.plan === "free") {
        return fail("plan_limit", requestId, { reason: "batches_need_purchase", message: "Batches open after the first purchase (D58). Nothing ran and nothing was charged.", fix: { param: "targets", action_url: gw.config.urls.billing, note: "Buy credits to open batches; confirm: false shows the plan and price now." } }, caller.keyHash);
      }
      const schedule = tool === "account_watch" && confirmed ? (body["schedule"] as { every: Schedule["every"] } | undefined) : undefined;
      if (schedule) {
        if (caller.account.plan === "free") {
          return fail("plan_limit", requestId, { reason: "schedules_need_purchase", message: "Schedules open after the first purchase; this call without `schedule` runs now. Nothing ran and nothing was charged.", fix: { param: "schedule", action_url: gw.config.urls.billing, note: "Buy credits to open schedules." } }, caller.keyHash);
        }
        if (gw.schedules.count(caller.key.workspace_id) >= SCHEDULES_PER_WORKSPACE) {
          return invalid({ param: "schedule", message: `A workspace has at most ${SCHEDULES_PER_WORKSPACE} schedules.`, note: "DELETE /v1/schedules/{schedule_id} removes one; GET /v1/schedules lists them." }, requestId, caller.keyHash);
        }
      }
      return runTool(caller, requestId, operationId, body, headers["idempotency-key"], planned.plan, confirmed, schedule);
    }),
  );

  /**
   * A tool call after its plan, through `charging`: `confirm: false` answers the quote, free; a confirmed call holds
   * the quote and runs; a schedule asked for is created once the hold is taken (the call is its first run).
   */
  function runTool(caller: Caller, requestId: string, operationId: OperationId, body: Record<string, unknown>, idemKey: string | undefined, plan: ToolPlan, confirmed: boolean, schedule: { every: Schedule["every"] } | undefined): Promise<HttpAnswer> {
    if (!confirmed) {
      return charging(caller, requestId, operationId, body, idemKey, "free", () => ({ status: 200, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(toolQuoteAnswer(requestId, plan, gw.ledger.view(caller.account.id, caller.key))) }));
    }
    const price = { credits: plan.quote.quote_credits, calls: plan.quote.calls_planned, maxCost: body["max_cost_credits"], maxCostNote: " Send confirm: false to see the plan." };
    return charging(caller, requestId, operationId, body, idemKey, price, (runId, ctx) => {
      const warnings: string[] = [];
      if (schedule) {
        const rest = Object.fromEntries(Object.entries(body).filter(([k]) => k !== "schedule" && k !== "confirm" && k !== "max_cost_credits"));
        const params = Object.fromEntries(Object.entries(plan.applied_params).filter(([k]) => k !== "schedule.every" && k !== "confirm" && k !== "max_cost_credits"));
        const created = gw.schedules.create({ workspaceId: caller.key.workspace_id, accountId: caller.account.id, keyId: caller.key.id, body: rest, params: params as never, every: schedule.every });
        warnings.push(`Schedule ${created.id} created: this account_watch call runs again every ${created.every} under this key, charged like this call (next at ${created.next_run_at}); GET /v1/schedules lists it, DELETE /v1/schedules/${created.id} stops it.`);
      }
      return startToolRun(gw, runId, ctx, body, plan, { warnings });
    });
  }

  // ------------------------------------------------------------------------------------------ discovery (no key)

  async function address(req: FastifyRequest, requestId: string): Promise<void> {
    const r = await gw.limits.addressCall(req.ip);
    if (r) throw new Refusal(limitAnswer(r, requestId));
  }

  app.get(
    "/v1/capabilities",
    handler(async (req, requestId) => {
      await address(req, requestId);
      return { status: 200, headers: { "content-type": JSON_TYPE }, body: JSON.stringify({ request_id: requestId, schema_version: "v1", operations: gw.catalog.operations, tools: gw.catalog.tools }) };
    }),
  );

  app.post(
    "/v1/find",
    handler(async (req, requestId) => {
      const { body } = validate(req, "findOperation", requestId, { body: true }, null);
      await address(req, requestId);
      const matches = gw.finder.find(String(body["query"]), { ...(typeof body["platform"] === "string" ? { platform: body["platform"] as Platform } : {}), limit: typeof body["limit"] === "number" ? body["limit"] : 20 });
      return { status: 200, headers: { "content-type": JSON_TYPE }, body: JSON.stringify({ request_id: requestId, schema_version: "v1", query: body["query"], matches }) };
    }),
  );

  app.get(
    "/openapi.json",
    handler(async (req, requestId) => {
      await address(req, requestId);
      openApiJson ??= loadOpenApi();
      return { status: 200, headers: { "content-type": JSON_TYPE }, body: openApiJson };
    }),
  );

  // ------------------------------------------------------------------------------------------ account and results

  /** Authenticated free routes: any key state that authenticates, no permission needed (D26), the key's rate. */
  async function freeCaller(req: FastifyRequest, requestId: string): Promise<Caller> {
    const headers = normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
    const caller = callerOf(headers, requestId, false, undefined, req.method !== "GET");
    const r = await gw.limits.keyCall(caller.key.id);
    if (r) throw new Refusal(limitAnswer(r, requestId));
    return caller;
  }

  app.get(
    "/v1/account",
    handler(async (req, requestId) => {
      validate(req, "getAccount", requestId, {}, null);
      const { key, account } = await freeCaller(req, requestId);
      const ws = gw.accounts.workspace(key.workspace_id)!;
      const view = gw.ledger.view(account.id, key);
      const body = {
        request_id: requestId,
        schema_version: "v1",
        account: { id: account.id, name: account.name, plan: account.plan, status: account.status, free_calls_left: gw.ledger.freeCallsLeft(account) },
        workspace: { id: ws.id, name: ws.name, schedules_count: gw.schedules.count(ws.id), schedules_limit: SCHEDULES_PER_WORKSPACE },
        key: { id: key.id, prefix: key.prefix, name: key.name, permissions: JSON.parse(key.permissions) as string[], status: key.status === "suspended" ? "suspended" : "active", daily_limit_credits: key.daily_limit, created_at: key.created_at, expires_at: key.expires_at },
        billing: creditBilling(view, 0),
      };
      return { status: 200, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(body) };
    }),
  );

  app.get(
    "/v1/schedules",
    handler(async (req, requestId) => {
      validate(req, "listSchedules", requestId, {}, null);
      const { key } = await freeCaller(req, requestId);
      return { status: 200, headers: { "content-type": JSON_TYPE }, body: JSON.stringify({ request_id: requestId, schema_version: "v1", schedules: gw.schedules.list(key.workspace_id), limit: SCHEDULES_PER_WORKSPACE }) };
    }),
  );

  app.delete<{ Params: { schedule_id: string } }>(
    "/v1/schedules/:schedule_id",
    handler(async (req, requestId) => {
      const id = (req.params as { schedule_id: string }).schedule_id;
      validate(req, "deleteSchedule", requestId, { path: { schedule_id: id } }, null);
      const { key } = await freeCaller(req, requestId);
      if (gw.schedules.remove(key.workspace_id, id)) return { status: 200, headers: { "content-type": JSON_TYPE }, body: JSON.stringify({ request_id: requestId, schema_version: "v1", deleted: true, schedule_id: id }) };
      return fail("not_found", requestId, { reason: "no_such_schedule", message: `The workspace has no schedule ${id.slice(0, 128)}.`, fix: { param: "schedule_id", example_call: { method: "GET", path: "/v1/schedules" } } }, null);
    }),
  );

  app.get<{ Params: { handle: string } }>(
    "/v1/results/:handle",
    handler(async (req, requestId) => {
      const handle = (req.params as { handle: string }).handle;
      const hash = presentedKeyHash(normalizeHeaders(req.headers as Record<string, string | string[] | undefined>));
      const { query } = validate(req, "getResult", requestId, { path: { handle } }, hash);
      const caller = await freeCaller(req, requestId);
      return gw.runs.read(handle, caller.key, query["format"] as "json" | "csv" | "ndjson" | undefined, requestId, caller.readsResultsOf);
    }),
  );

  // ------------------------------------------------------------------------------------------ MCP (Streamable HTTP)

  void app.register(mcpRoutes, { gateway: gw, target: app });
  consoleSessionRoutes(app, gw); // the console's sign-in sessions (D82–D85), not in the contract like /mcp
  docsRoutes(app, gw); // /docs: the HTTP reference built by `pnpm run docs` (docs-routes.ts)
  consoleApiRoutes(app, gw); // the console's own account routes under /console/api/ (D88)
  consoleStaticRoutes(app); // the console's built pages at /console/ (D86): static files only

  // ------------------------------------------------------------------------------------------ anything else

  app.setNotFoundHandler((req, reply) => {
    const requestId = newRequestId(gw.now());
    const a = errorAnswer(
      "not_found",
      requestId,
      { reason: "no_such_route", message: `There is no route ${req.method} ${req.url.split("?")[0]!.slice(0, 200)}.`, fix: { allowed: ROUTE_LIST, example_call: { method: "GET", path: "/v1/capabilities" } } },
      opts(),
    );
    return send(reply, fromError(a));
  });

  app.setErrorHandler((error: { statusCode?: number; code?: string }, _req, reply) => {
    const requestId = newRequestId(gw.now());
    if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      return send(reply, { status: 400, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(invalidParamsAnswer({ param: "body", message: "The body is too large; send fewer targets.", note: `At most ${gw.config.bodyLimit} bytes.` }, requestId)) });
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return send(reply, { status: 400, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(invalidParamsAnswer(invalidBody(), requestId)) });
    }
    gw.log(`request ${requestId} failed`, error);
    return send(reply, fromError(errorAnswer("internal_error", requestId, {}, opts())));
  });

  return app;
}
