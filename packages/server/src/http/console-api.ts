/**
 * The console's own account routes (D88), under `/console/api/`, authenticated by the session cookie (D82) and,
 * when they change something, the session's CSRF token (D84); not in spec/openapi.yaml, like the session routes.
 *
 *   GET    /console/api/keys            the account's keys (never a secret)
 *   POST   /console/api/keys            `{name, daily_limit?, read_data?}` → the key and its secret, shown once
 *   POST   /console/api/keys/{id}       `{daily_limit?, read_data?}` → the key changed
 *   DELETE /console/api/keys/{id}       revokes the key
 *   GET    /console/api/results         the calls of the user's console key(s), newest first, with their handles
 *   GET    /console/api/spend           credits charged per UTC day over the last 30 days
 *
 * Refusals use the contract's error structure: 401 without a reason (no session), 403 (cross-site `Origin`, a
 * missing or wrong CSRF token), 400 `invalid_params` (a bad body), 404 `not_found` (a key of another account).
 */
import { errorAnswer, invalidParamsAnswer, normalizeHeaders, type InvalidParams } from "@sdgw/validators";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import { newRequestId } from "../ids.ts";
import type { KeyRecord } from "../storage/accounts.ts";
import type { ConsoleSession } from "../storage/sessions.ts";
import { csrfRefusal, jsonObjectOf, originRefusal, sessionOf, sessionRequired } from "./console-session.ts";
import { consoleKeyName } from "./auth.ts";
import { withRequestId } from "../ops/log.ts";

const JSON_TYPE = "application/json; charset=utf-8";

interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string | string[]>;
}

const ok = (body: unknown): Answer => ({ status: 200, body });
const invalid = (why: InvalidParams, requestId: string): Answer => ({
  status: 400,
  body: invalidParamsAnswer(why, requestId),
});

/** A key as the console lists it: never its hash or secret. */
function keyView(k: KeyRecord) {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    permissions: JSON.parse(k.permissions) as string[],
    status: k.status,
    daily_limit: k.daily_limit,
    created_at: k.created_at,
    expires_at: k.expires_at,
    revoked_at: k.revoked_at,
    exposed: k.exposed_at !== null,
  };
}

/** Parses a JSON object body with only the allowed members; else why not. */
function objectBody(req: FastifyRequest, allowed: string[], requestId: string): Record<string, unknown> | Answer {
  const json = jsonObjectOf(req);
  if (!json.ok) return invalid(json.why, requestId);
  for (const k of Object.keys(json.body))
    if (!allowed.includes(k))
      return invalid(
        { param: k.slice(0, 100) || "body", message: `\`${k.slice(0, 100)}\` is not a parameter here.`, allowed },
        requestId,
      );
  return json.body;
}

/** `daily_limit` (a whole number of credits, or null for none) and `read_data` (a boolean), as given. */
function keySettings(
  body: Record<string, unknown>,
  requestId: string,
): { dailyLimit?: number | null; readData?: boolean } | Answer {
  const out: { dailyLimit?: number | null; readData?: boolean } = {};
  if ("daily_limit" in body) {
    const v = body["daily_limit"];
    if (v !== null && !(Number.isSafeInteger(v) && (v as number) >= 0))
      return invalid(
        {
          param: "daily_limit",
          message: "`daily_limit` must be a whole number of credits, 0 or more, or null for no limit.",
        },
        requestId,
      );
    out.dailyLimit = v as number | null;
  }
  if ("read_data" in body) {
    if (typeof body["read_data"] !== "boolean")
      return invalid({ param: "read_data", message: "`read_data` must be true or false." }, requestId);
    out.readData = body["read_data"];
  }
  return out;
}

/** What a console route's handler is given: the gateway, the request, the signed-in session and the request id. */
interface ConsoleCall {
  gw: Gateway;
  req: FastifyRequest;
  s: ConsoleSession;
  requestId: string;
}

/** A key of the session's account by id, or undefined (unknown, or another account's). */
async function keyOfAccount({ gw, s }: ConsoleCall, id: string): Promise<KeyRecord | undefined> {
  const k = await gw.accounts.key(id);
  return k && k.account_id === s.user.account_id ? k : undefined;
}

/** `404 not_found` of a key the account does not have. */
function noSuchKey({ gw, requestId }: ConsoleCall, id: string): Answer {
  const fix = { param: "id", note: "GET /console/api/keys lists the account's keys." };
  const refusal = { reason: "no_such_route", message: `The account has no key ${id.slice(0, 64)}.`, fix };
  return errorAnswer("not_found", requestId, refusal as never, { urls: gw.config.urls, now: new Date(gw.now()) });
}

/** `GET /console/api/keys`. */
async function listKeys({ gw, s, requestId }: ConsoleCall): Promise<Answer> {
  return ok({ request_id: requestId, keys: (await gw.accounts.keys(s.user.account_id)).map(keyView) });
}

/** `POST /console/api/keys`: `{name, daily_limit?, read_data?}` → the key and its secret, shown once. */
async function createKey(c: ConsoleCall): Promise<Answer> {
  const { gw, req, s, requestId } = c;
  const body = objectBody(req, ["name", "daily_limit", "read_data"], requestId);
  if ("status" in body && "body" in body && typeof body.status === "number") return body as Answer;
  const b = body as Record<string, unknown>;
  const name = b["name"];
  if (typeof name !== "string" || name.trim().length === 0 || name.length > 100)
    return invalid({ param: "name", message: "`name` must be text of 1 to 100 characters." }, requestId);
  if (name.startsWith("console:")) {
    const message = "Names starting with `console:` are kept for the console's own keys.";
    return invalid({ param: "name", message }, requestId);
  }
  const settings = keySettings(b, requestId);
  if ("status" in settings) return settings;
  const created = await gw.accounts.createKey({
    accountId: s.user.account_id,
    name: name.trim(),
    permissions: settings.readData === false ? [] : ["read_data"],
    dailyLimit: settings.dailyLimit ?? null,
  });
  return ok({ request_id: requestId, key: keyView((await gw.accounts.key(created.id))!), secret: created.secret });
}

/** `POST /console/api/keys/{id}`: `{daily_limit?, read_data?}` → the key changed. */
async function changeKey(c: ConsoleCall): Promise<Answer> {
  const { gw, req, requestId } = c;
  const id = (req.params as { id: string }).id;
  const body = objectBody(req, ["daily_limit", "read_data"], requestId);
  if ("status" in body && "body" in body && typeof body.status === "number") return body as Answer;
  if (!(await keyOfAccount(c, id))) return noSuchKey(c, id);
  const settings = keySettings(body as Record<string, unknown>, requestId);
  if ("status" in settings) return settings;
  if (settings.dailyLimit !== undefined) await gw.accounts.setKeyDailyLimit(id, settings.dailyLimit);
  if (settings.readData !== undefined) await gw.accounts.setKeyPermissions(id, settings.readData ? ["read_data"] : []);
  return ok({ request_id: requestId, key: keyView((await gw.accounts.key(id))!) });
}

/** `DELETE /console/api/keys/{id}`: revokes the key. */
async function revokeKey(c: ConsoleCall): Promise<Answer> {
  const id = (c.req.params as { id: string }).id;
  if (!(await keyOfAccount(c, id))) return noSuchKey(c, id);
  await c.gw.accounts.revokeKey(id);
  return ok({ request_id: c.requestId, key: keyView((await c.gw.accounts.key(id))!), revoked: true });
}

/** `GET /console/api/results`: the calls of the user's console key(s), newest first, with their handles. */
async function listResults({ gw, s, requestId }: ConsoleCall): Promise<Answer> {
  const rows = await gw.runs.consoleResults(s.user.account_id, consoleKeyName(s.user.email));
  const results = rows.map((r) => ({
    run_id: r.run_id,
    handle: r.handle,
    operation: r.operation,
    state: r.state,
    quote_credits: r.quote,
    charged_credits: r.charged,
    started_at: r.started_at,
    ended_at: r.ended_at,
    expires_at: r.expires_at,
  }));
  return ok({ request_id: requestId, results });
}

/** `GET /console/api/spend`: credits charged per UTC day over the last 30 days (0 on days without charges). */
async function spendByDay({ gw, s, requestId }: ConsoleCall): Promise<Answer> {
  const today = new Date(gw.now());
  const days = Array.from({ length: 30 }, (_, i) =>
    new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - (29 - i)))
      .toISOString()
      .slice(0, 10),
  );
  const charges = await gw.ledger.dailyCharges(s.user.account_id, days[0]!);
  const by = new Map(charges.map((r) => [r.day, r.credits]));
  return ok({ request_id: requestId, days: days.map((day) => ({ day, credits: by.get(day) ?? 0 })) });
}

/** The routes by method and path, whether they change something (CSRF token required, D84), and their handlers. */
const CONSOLE_ROUTES: ReadonlyArray<
  readonly ["GET" | "POST" | "DELETE", string, boolean, (c: ConsoleCall) => Answer | Promise<Answer>]
> = [
  ["GET", "/console/api/keys", false, listKeys],
  ["POST", "/console/api/keys", true, createKey],
  ["POST", "/console/api/keys/:id", true, changeKey],
  ["DELETE", "/console/api/keys/:id", true, revokeKey],
  ["GET", "/console/api/results", false, listResults],
  ["GET", "/console/api/spend", false, spendByDay],
];

/**
 * Registers the routes above (called once by `buildApp`): each checks the request's `Origin` (D84), its session
 * (D82) and, when it changes something, its CSRF token, then answers in the contract's error structure.
 */
export function consoleApiRoutes(app: FastifyInstance, gw: Gateway): void {
  for (const [method, url, stateChanging, handle] of CONSOLE_ROUTES)
    app.route({ method, url, handler: (req, reply) => answer(gw, req, reply, stateChanging, handle) });
}

/** One console request: refused (cross-site, no session, no CSRF token) or handled; a throw is a 500. */
async function answer(
  gw: Gateway,
  req: FastifyRequest,
  reply: FastifyReply,
  stateChanging: boolean,
  handle: (c: ConsoleCall) => Answer | Promise<Answer>,
) {
  const requestId = newRequestId(gw.now());
  let a: Answer;
  try {
    const headers = normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
    const refused = originRefusal(headers, requestId);
    const s = refused ? null : await sessionOf(gw, headers);
    if (refused) a = refused;
    else if (!s) a = sessionRequired(gw, requestId);
    else a = (stateChanging ? csrfRefusal(s, headers, requestId) : null) ?? (await handle({ gw, req, s, requestId }));
    await gw.durable();
  } catch (e) {
    withRequestId(requestId, () => gw.log(`request ${requestId} failed`, e));
    a = errorAnswer("internal_error", requestId, {}, { urls: gw.config.urls, now: new Date(gw.now()) });
  }
  const headers: Record<string, string> = { "content-type": JSON_TYPE };
  for (const [k, v] of Object.entries(a.headers ?? {}))
    if (k.toLowerCase() !== "content-type") headers[k.toLowerCase()] = String(v);
  return reply.code(a.status).headers(headers).send(JSON.stringify(a.body));
}
