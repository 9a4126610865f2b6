/**
 * The steps every route of the contract takes before its own work, in D50's order (a key in the URL was refused
 * already, in the `onRequest` hook): the headers normalized and the key presented hashed (its failures count), then
 * the query, headers, path and body through the operation's generated validators, then (a data call) its plan, then
 * authentication, key state and permission. Each step refuses by throwing a `Refusal`.
 */
import type { FastifyRequest } from "fastify";
import { admitRequest, normalizeHeaders, type OPERATIONS } from "@sdgw/validators";
import { REFUSALS, type CallPlan, type PlanResult } from "@sdgw/engine";
import { JSON_TYPE, Refusal, fromError } from "./answer.ts";
import { authenticate, canReadData, presentedKeyHash, sessionCaller, type Caller } from "./auth.ts";
import type { RouteDeps } from "./routes/deps.ts";

export type OperationId = keyof typeof OPERATIONS;

/** A request body whose bytes are not UTF-8 (the content parser's value for it). */
export const NOT_UTF8 = Symbol("not UTF-8");

/** What a route checks of a request: its operation, its path parameters, whether it has a body. */
export interface AdmitStep {
  operationId: OperationId;
  path?: Record<string, string>;
  body?: boolean;
  /** False: a refusal here counts no failure of the key presented (the free routes). */
  countsFailures?: boolean;
}

/** A request its validators accepted. `keyHash`: the key presented, when its failures count. */
export interface Admitted {
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  keyHash: string | null;
}

/** A data call admitted: validated, planned, and its caller allowed to read data. */
export interface AdmittedCall extends Admitted {
  plan: CallPlan;
  caller: Caller;
}

function rawQuery(req: FastifyRequest): string {
  const i = req.url.indexOf("?");
  return i < 0 ? "" : req.url.slice(i + 1);
}

/** Normalizes the headers, hashes the key presented, and validates query, headers, path and body (in this order). */
export function admit(deps: RouteDeps, req: FastifyRequest, requestId: string, step: AdmitStep): Admitted {
  const headers = normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
  const keyHash = step.countsFailures === false ? null : presentedKeyHash(headers);
  // The content parser gives the body's text, NOT_UTF8, or nothing (no body: not one JSON object).
  const text = req.body === NOT_UTF8 ? null : typeof req.body === "string" ? req.body : "";
  const body = step.body ? { contentType: headers["content-type"], text } : undefined;
  const r = admitRequest(step.operationId, {
    rawQuery: rawQuery(req),
    headers,
    ...(step.path ? { path: step.path } : {}),
    ...(body ? { body } : {}),
  });
  if (!r.ok) throw new Refusal(deps.errors.invalid(r.invalid, requestId, keyHash));
  return { query: r.query, body: r.body, headers, keyHash };
}

/** A data call: `admit`, then its plan (a refusal needs no account, D50), then its caller with `read_data`. */
export async function admitCall(
  deps: RouteDeps,
  req: FastifyRequest,
  requestId: string,
  step: AdmitStep & { plan(v: Admitted): PlanResult },
): Promise<AdmittedCall> {
  const admitted = admit(deps, req, requestId, step);
  const planned = step.plan(admitted);
  if (!planned.ok) throw new Refusal(deps.errors.plan(planned.refusal, requestId, admitted.keyHash));
  const caller = await callerOf(deps, admitted.headers, requestId, {
    needsReadData: true,
    presentedHash: admitted.keyHash,
    deferrable: true,
  });
  return { ...admitted, plan: planned.plan, caller };
}

/**
 * How `callerOf` authenticates: `presentedHash` as `admit` computed it (undefined: computed on a failure);
 * `stateChanging` (a console session must then carry its CSRF token, D87) defaults to `needsReadData`.
 */
export interface CallerCheck {
  needsReadData: boolean;
  presentedHash?: string | null;
  stateChanging?: boolean;
  /**
   * D186: a key this process read before and found able to call (and to read data) is taken as read then, without
   * a read now; the caller's `recheck` reads it again. Only for a data call, whose admitting statement checks the key.
   */
  deferrable?: boolean;
}

/** Authenticates; refuses what the key's state or permission does not allow. */
export async function callerOf(
  deps: RouteDeps,
  headers: Record<string, string>,
  requestId: string,
  check: CallerCheck,
): Promise<Caller> {
  const { gw, errors } = deps;
  const { needsReadData, presentedHash } = check;
  // D87: no key and a session cookie: the console user's key (a refusal here counts no key failure).
  const bySession = presentedHash
    ? null
    : await sessionCaller(gw, headers, requestId, check.stateChanging ?? needsReadData);
  if (bySession && !bySession.ok) {
    const a = bySession.answer;
    throw new Refusal({
      status: a.status,
      headers: { ...a.headers, "content-type": JSON_TYPE },
      body: JSON.stringify(a.body),
    });
  }
  // D186: the key as last read, for a data call; its admission checks it again, and `recheck` is callerOf read now.
  const known =
    check.deferrable && presentedHash
      ? (found: Pick<Caller, "key" | "account">): Caller | null =>
          needsReadData && !canReadData(found.key)
            ? null
            : {
                ...found,
                keyHash: presentedHash,
                recheck: () => callerOf(deps, headers, requestId, { ...check, deferrable: false }),
              }
      : undefined;
  const a = bySession ?? (await authenticate(gw, headers, requestId, presentedHash, known));
  if (!a.ok) {
    const hash = presentedHash === undefined ? presentedKeyHash(headers) : presentedHash;
    if (hash) gw.limits.recordFailure(hash);
    throw new Refusal(fromError(a.answer));
  }
  if (needsReadData && !canReadData(a.caller.key)) {
    const refusal = REFUSALS.keyScopeDenied(gw.config.urls);
    throw new Refusal(errors.fail("key_scope_denied", requestId, refusal, a.caller.keyHash));
  }
  return a.caller;
}

/** Authenticated free routes: any key state that authenticates, no permission needed (D26), the key's rate. */
export async function freeCaller(deps: RouteDeps, req: FastifyRequest, requestId: string): Promise<Caller> {
  const headers = normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
  const caller = await callerOf(deps, headers, requestId, {
    needsReadData: false,
    stateChanging: req.method !== "GET",
  });
  const r = await deps.gw.limits.keyCall(caller.key.id);
  if (r) throw new Refusal(deps.errors.limit(r, requestId));
  return caller;
}

/**
 * Routes without a key: the rate of the network address. `servedUncounted`: when the limits cannot be checked
 * (D107: kept in Redis, which does not answer), serve anyway instead of the 503 (`/openapi.json`, a static document
 * whose contract has no 503).
 */
export async function addressRate(
  deps: RouteDeps,
  req: FastifyRequest,
  requestId: string,
  servedUncounted = false,
): Promise<void> {
  const r = await deps.gw.limits.addressCall(req.ip);
  if (r && !(servedUncounted && r.code === "limits_unavailable")) throw new Refusal(deps.errors.limit(r, requestId));
}
