/**
 * The console's sign-in session routes (D82–D85), the console's own like `/mcp`: not in spec/openapi.yaml, answering
 * the contract's error structure all the same.
 *
 *   POST   /console/session   `{email, password}` → 200 the user, the CSRF token, `Set-Cookie: sdgw_session=…`
 *   GET    /console/session   → 200 the session's user and CSRF token; else 401 `unauthorized` without a reason
 *   DELETE /console/session   (`X-CSRF-Token`) → 200, the session ended and the cookie cleared
 *
 * Order of refusals (as D50): a key in the URL (the app's onRequest hook, before anything), a cross-site `Origin`
 * (403, D84), the body (400 `invalid_params`), sign-in throttling (429), then the password or the session (401),
 * then the CSRF token of a state-changing request (403, D84).
 */
import {
  bodyDepthProblem,
  bodyTextProblem,
  errorAnswer,
  invalidBody,
  invalidParamsAnswer,
  normalizeHeaders,
  type ErrorAnswer,
  type InvalidParams,
} from "@sdgw/validators";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import { newRequestId } from "../ids.ts";
import {
  PASSWORD_MAX,
  SESSION_COOKIE,
  isEmail,
  normalizeEmail,
  sameSecret,
  sessionTokensOf,
  type ConsoleSession,
} from "../storage/sessions.ts";
import { withRequestId } from "../ops/log.ts";

const JSON_TYPE = "application/json; charset=utf-8";

/** An answer of a console route: status, headers, JSON body. */
interface ConsoleAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: unknown;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/**
 * D28: the 401 of a console route without a valid session: `unauthorized` without `reason`, the message saying a
 * valid session is required, `fix.action_url` the sign-in page.
 */
export function sessionRequired(gw: Gateway, requestId: string): ErrorAnswer<"unauthorized"> {
  const a = errorAnswer(
    "unauthorized",
    requestId,
    {
      message: "A valid session is required: sign in to the console.",
      fix: {
        action_url: gw.config.urls.signIn,
        note: "Sign in again; a session ends after a time unused, after its lifetime, or at sign-out.",
      },
    },
    { urls: gw.config.urls, now: new Date(gw.now()) },
  );
  delete (a.body as { reason?: string }).reason;
  return a;
}

/**
 * D84: a request under `/console/` with an `Origin` header that is not this server's own (the request's `Host`, over
 * http or https) is refused: 403 with the `invalid_params` structure naming `Origin`, as `/mcp` does (D63). Null
 * when the request has no `Origin` (a same-origin GET, a non-browser client) or its own.
 */
export function originRefusal(
  headers: Readonly<Record<string, string | undefined>>,
  requestId: string,
): ConsoleAnswer | null {
  const origin = headers["origin"];
  if (origin === undefined) return null;
  const host = headers["host"];
  let same = false;
  try {
    const o = new URL(origin);
    same =
      (o.protocol === "http:" || o.protocol === "https:") &&
      host !== undefined &&
      o.origin === origin.replace(/\/$/, "").toLowerCase() &&
      o.host === new URL(`${o.protocol}//${host}`).host;
  } catch {
    same = false;
  }
  if (same) return null;
  return refusal403(
    {
      param: "Origin",
      message: `Requests from the origin ${origin.slice(0, 200)} are not allowed at the console (cross-site).`,
      note: "The console's requests come from the console's own origin.",
    },
    requestId,
  );
}

/**
 * D84: a state-changing console request authenticated by its cookie must send the session's CSRF token in
 * `X-CSRF-Token` (the synchronizer token given at sign-in and by `GET /console/session`); else 403 with the
 * `invalid_params` structure naming `X-CSRF-Token`. Null when it matches.
 */
export function csrfRefusal(
  session: ConsoleSession,
  headers: Readonly<Record<string, string | undefined>>,
  requestId: string,
): ConsoleAnswer | null {
  const sent = headers["x-csrf-token"];
  if (sent !== undefined && sameSecret(sent, session.session.csrf_token)) return null;
  return refusal403(
    {
      param: "X-CSRF-Token",
      message:
        sent === undefined
          ? "`X-CSRF-Token` is missing: a console request that changes something sends the session's CSRF token."
          : "`X-CSRF-Token` is not this session's CSRF token.",
      note: "Send the csrf_token of POST or GET /console/session in the X-CSRF-Token header.",
    },
    requestId,
  );
}

function refusal403(why: InvalidParams, requestId: string): ConsoleAnswer {
  return { status: 403, headers: { "content-type": JSON_TYPE }, body: invalidParamsAnswer(why, requestId) };
}

function invalid(why: InvalidParams, requestId: string): ConsoleAnswer {
  return { status: 400, headers: { "content-type": JSON_TYPE }, body: invalidParamsAnswer(why, requestId) };
}

function fromError(a: { status: number; headers: Record<string, string>; body: unknown }): ConsoleAnswer {
  return { status: a.status, headers: { "content-type": JSON_TYPE, ...a.headers }, body: a.body };
}

/** The `Set-Cookie` of a session: HttpOnly, SameSite=Strict, Path=/, its lifetime, and Secure over TLS (D82). */
export function sessionCookie(token: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}${secure ? "; Secure" : ""}`;
}

/** The body of `POST /console/session`, or why not. */

/**
 * The body of a console request as one JSON object (`Content-Type: application/json`, text only, D56, nested at most
 * `MAX_BODY_DEPTH` levels, D112), or the `invalid_params` reason why it is not. Shared by the sign-in and the account routes (console-api.ts).
 */
export function jsonObjectOf(
  req: FastifyRequest,
): { ok: true; body: Record<string, unknown> } | { ok: false; why: InvalidParams } {
  const type = String(req.headers["content-type"] ?? "")
    .split(";")[0]!
    .trim()
    .toLowerCase();
  if (type !== "application/json" || typeof req.body !== "string") return { ok: false, why: invalidBody() };
  // D112: nested too deep for what reads it next (bodyTextProblem recurses), refused before it is parsed.
  const tooDeep = bodyDepthProblem(req.body);
  if (tooDeep) return { ok: false, why: tooDeep };
  let parsed: unknown;
  try {
    parsed = JSON.parse(req.body);
  } catch {
    return { ok: false, why: invalidBody() };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { ok: false, why: invalidBody() };
  const notText = bodyTextProblem(parsed);
  return notText ? { ok: false, why: notText } : { ok: true, body: parsed as Record<string, unknown> };
}

function signInBody(req: FastifyRequest, requestId: string): { email: string; password: string } | ConsoleAnswer {
  if (typeof req.body === "symbol")
    return invalid(
      { param: "body", message: "The body is not UTF-8 text.", note: "Send one JSON object encoded as UTF-8." },
      requestId,
    );
  const json = jsonObjectOf(req);
  if (!json.ok) return invalid(json.why, requestId);
  const body = json.body;
  const allowed = ["email", "password"];
  for (const k of Object.keys(body))
    if (!allowed.includes(k))
      return invalid(
        {
          param: k.slice(0, 100) || "body",
          message: `\`${k.slice(0, 100)}\` is not a parameter of a sign-in.`,
          allowed,
        },
        requestId,
      );
  const email = body["email"];
  if (typeof email !== "string" || !isEmail(normalizeEmail(email))) {
    return invalid(
      {
        param: "email",
        message:
          email === undefined
            ? "`email` is missing."
            : "`email` must be an email address (a string, at most 254 characters).",
        note: "Send the email and password of a console user.",
      },
      requestId,
    );
  }
  const password = body["password"];
  if (typeof password !== "string" || password.length === 0 || Buffer.byteLength(password) > PASSWORD_MAX) {
    return invalid(
      {
        param: "password",
        message:
          password === undefined
            ? "`password` is missing."
            : `\`password\` must be a string of 1 to ${PASSWORD_MAX} bytes.`,
        note: "Send the email and password of a console user.",
      },
      requestId,
    );
  }
  return { email, password };
}

/** The JSON of a session for its user: who, the CSRF token, when it ends. */
function sessionBody(
  requestId: string,
  s: {
    user: { id: string; email: string; account_id: string };
    csrf: string;
    expiresAt: number;
    idleExpiresAt: number;
  },
) {
  return {
    request_id: requestId,
    user: { id: s.user.id, email: s.user.email, account_id: s.user.account_id },
    csrf_token: s.csrf,
    expires_at: iso(s.expiresAt),
    idle_expires_at: iso(s.idleExpiresAt),
  };
}

/** What a session route's handler is given: the gateway, the request, its headers (lower-case) and request id. */
interface SessionCall {
  gw: Gateway;
  req: FastifyRequest;
  headers: Record<string, string>;
  requestId: string;
}

const secure = (req: FastifyRequest) => req.protocol === "https";
const errorOpts = (gw: Gateway) => ({ urls: gw.config.urls, now: new Date(gw.now()) });

/** `POST /console/session`: signs in (`{email, password}`), setting the session cookie; or why not. */
async function signIn({ gw, req, requestId }: SessionCall): Promise<ConsoleAnswer> {
  const body = signInBody(req, requestId);
  if ("status" in body) return body;
  const result = await sessionsOf(gw).signIn(body.email, body.password, req.ip);
  if (!result.ok) return signInRefusal(gw, result, requestId);
  const { token, session, user } = result.created;
  const lifetime = session.expires_at - session.created_at;
  return {
    status: 200,
    headers: { "content-type": JSON_TYPE, "set-cookie": sessionCookie(token, lifetime / 1000, secure(req)) },
    body: sessionBody(requestId, {
      user,
      csrf: session.csrf_token,
      expiresAt: session.expires_at,
      idleExpiresAt: Math.min(session.expires_at, session.last_seen_at + gw.config.sessions.idleMs),
    }),
  };
}

/** A refused sign-in: throttled (429 by email or address), a disabled user, or a wrong email or password (401). */
function signInRefusal(
  gw: Gateway,
  result: Exclude<Awaited<ReturnType<ReturnType<typeof sessionsOf>["signIn"]>>, { ok: true }>,
  requestId: string,
): ConsoleAnswer {
  const { sessions, urls } = gw.config;
  const minutes = Math.round(sessions.failureWindowMs / 60_000);
  if (result.refusal === "throttled") {
    const retry = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
    const message =
      result.by === "email"
        ? `Too many failed sign-ins for this email (${sessions.failuresPerEmail} within ${minutes} minutes); sign-in is refused until Retry-After seconds pass.`
        : `Too many failed sign-ins from this network address (${sessions.failuresPerAddress} ` +
          `within ${minutes} minutes); sign-in is refused until Retry-After seconds pass.`;
    const fix = { note: "Wait Retry-After seconds, then sign in with the right password." };
    const refusal = { reason: "address", message, retry_after: retry, fix };
    return fromError(errorAnswer("rate_limited", requestId, refusal as never, errorOpts(gw)));
  }
  if (result.refusal === "disabled") {
    const fix = { action_url: urls.signIn, note: "Write to support@sdgw.dev to have it enabled." };
    const refusal = { reason: "suspended", message: "This console user is disabled.", fix };
    return fromError(errorAnswer("unauthorized", requestId, refusal as never, errorOpts(gw)));
  }
  const note = `Check both and sign in again; after ${sessions.failuresPerEmail} failures sign-in waits up to ${minutes} minutes.`;
  const refusal = {
    reason: "invalid",
    message: "The email or the password is wrong.",
    fix: { action_url: urls.signIn, note },
  };
  return fromError(errorAnswer("unauthorized", requestId, refusal as never, errorOpts(gw)));
}

/** `GET /console/session`: the signed-in user, the CSRF token and when the session ends. */
async function currentSession({ gw, headers, requestId }: SessionCall): Promise<ConsoleAnswer> {
  const s = await sessionOf(gw, headers);
  if (!s) return fromError(sessionRequired(gw, requestId));
  return {
    status: 200,
    headers: { "content-type": JSON_TYPE },
    body: sessionBody(requestId, {
      user: s.user,
      csrf: s.session.csrf_token,
      expiresAt: s.session.expires_at,
      idleExpiresAt: s.idleExpiresAt,
    }),
  };
}

/** `DELETE /console/session`: signs out (CSRF token required), clearing the cookie. */
async function signOut({ gw, req, headers, requestId }: SessionCall): Promise<ConsoleAnswer> {
  const s = await sessionOf(gw, headers);
  if (!s) return fromError(sessionRequired(gw, requestId));
  const csrf = csrfRefusal(s, headers, requestId);
  if (csrf) return csrf;
  await gw.sessions.end(s.session.id);
  return {
    status: 200,
    headers: { "content-type": JSON_TYPE, "set-cookie": sessionCookie("", 0, secure(req)) },
    body: { request_id: requestId, signed_out: true },
  };
}

/**
 * Registers `POST`, `GET` and `DELETE /console/session` on the app (called once by `buildApp`). The app's own hooks
 * apply: a key in the URL is refused first (D25), and every answer carries D53's headers.
 */
export function consoleSessionRoutes(app: FastifyInstance, gw: Gateway): void {
  const routes = [
    ["POST", signIn],
    ["GET", currentSession],
    ["DELETE", signOut],
  ] as const;
  for (const [method, handle] of routes)
    app.route({ method, url: "/console/session", handler: (req, reply) => answerSession(gw, req, reply, handle) });
}

/** One session request: refused when cross-site (D84), else handled; a throw is a 500. */
async function answerSession(
  gw: Gateway,
  req: FastifyRequest,
  reply: FastifyReply,
  handle: (c: SessionCall) => Promise<ConsoleAnswer> | ConsoleAnswer,
) {
  const requestId = newRequestId(gw.now());
  let a: ConsoleAnswer;
  try {
    const headers = normalizeHeaders(req.headers as Record<string, string | string[] | undefined>);
    a = originRefusal(headers, requestId) ?? (await handle({ gw, req, headers, requestId }));
    await gw.durable();
  } catch (e) {
    withRequestId(requestId, () => gw.log(`request ${requestId} failed`, e));
    a = fromError(errorAnswer("internal_error", requestId, {}, errorOpts(gw)));
  }
  return reply.code(a.status).headers(a.headers).send(JSON.stringify(a.body));
}

/** The sessions system of a gateway. */
export function sessionsOf<G extends Pick<Gateway, "sessions">>(gw: G): G["sessions"] {
  return gw.sessions;
}

/**
 * Authenticates a request by its session cookie: the session and its user, or null (no cookie, a cookie that is
 * not a session token, or a session unknown, signed out, expired or of a disabled user). `headers` are the request's
 * headers with lower-case names (`cookie` is read). State-changing routes must also check the CSRF token
 * (`csrfRefusal` in http/console-session.ts).
 *
 * @example
 * const s = sessionOf(gw, normalizeHeaders(req.headers));
 * if (!s) return sessionRequired(gw, requestId);
 */
export async function sessionOf(
  gw: Pick<Gateway, "sessions">,
  headers: Readonly<Record<string, string | undefined>>,
): Promise<ConsoleSession | null> {
  const tokens = sessionTokensOf(headers["cookie"]);
  if (tokens.length === 0) return null;
  for (const token of tokens) {
    const found = await gw.sessions.lookup(token);
    if (found) return found;
  }
  return null;
}
