/**
 * Who is calling: the key carriers (D25), a key in the URL (always refused, and that key marked exposed), and the
 * key's state. Cheap and read-only, before anything that writes (unkey's order).
 */
import { errorAnswer, keyInQueryRefusal, keysInQuery, type ErrorAnswer } from "@sdgw/validators";
import { KEY_REFUSALS, REFUSALS, presentedKey } from "@sdgw/engine";
import { hashKey, rememberKeyHash } from "../ids.ts";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import type { AccountRecord, KeyRecord } from "../storage/accounts.ts";
import { SESSION_COOKIE, type UserRecord } from "../storage/sessions.ts";
import { csrfRefusal, originRefusal, sessionOf, sessionRequired } from "./console-session.ts";

/** An authenticated caller. */
export interface Caller {
  key: KeyRecord;
  account: AccountRecord;
  keyHash: string;
  /**
   * D186: set when the key and its account are what this process read before (`knownKeyAndAccount`), not read for
   * this request: the statement that admits the call checks the key's row again, and when it refuses this reads the
   * key again and throws the refusal authentication would have answered (or gives the caller as read now).
   */
  recheck?: () => Promise<Caller>;
  /**
   * Ids of other keys whose results this caller reads by handle (D105): for a console session, every console key its
   * user ever had, so a result stays readable under the sign-in after its key was revoked or exposed.
   */
  readsResultsOf?: ReadonlySet<string>;
}

/** The hash of the key a request carried in a header, if any (counts failures even before authentication). */
export function presentedKeyHash(headers: Record<string, string>): string | null {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers["authorization"] ?? "")?.[1];
  const secret = headers["x-api-key"] ?? bearer;
  return secret ? hashKey(secret) : null;
}

/** A key in a URL, refused: the 401 to send, and the marking of the key as exposed, to wait for before sending it. */
export interface KeyInUrl {
  /** `401 unauthorized`, reason `key_in_query`. */
  answer: ErrorAnswer<"unauthorized">;
  /**
   * Settles once every key sent is marked exposed and committed (on PostgreSQL, for every instance), or once marking
   * failed (logged). Never rejects. The 401 is sent after it, so that the key is refused everywhere by the time the
   * caller learns it leaked.
   */
  marked: Promise<void>;
}

/**
 * D25, D50: a key in the URL of any route (a name of `KEY_QUERY_NAMES`, in any case) is refused before anything
 * else, and each value sent that is a key is marked exposed. Null when the URL names no key. The caller sends the
 * answer once `marked` settled (D108): a marking that fails (the database does not answer) is logged and the 401 is
 * sent all the same — every instance then answers 503 anyway.
 */
export function keyInUrl(gw: Gateway, url: string, requestId: string): KeyInUrl | null {
  const q = url.indexOf("?");
  const values = q < 0 ? null : keysInQuery(url.slice(q + 1));
  if (!values) return null;
  const marked = Promise.all(
    values.filter((v) => v).map((v) => Promise.resolve().then(() => gw.accounts.markExposed(v))),
  ).then(
    () => undefined,
    (e: unknown) => gw.log("could not mark a key sent in a URL as exposed", e),
  );
  const answer = errorAnswer("unauthorized", requestId, keyInQueryRefusal(gw.config.urls.console), {
    urls: gw.config.urls,
    now: new Date(gw.now()),
  });
  return { answer, marked };
}

/**
 * Authenticates a request by its headers (lower-case names). `presentedHash` is `presentedKeyHash(headers)` when the
 * caller already computed it (one SHA-256 per request).
 */
export async function authenticate(
  gw: Gateway,
  headers: Record<string, string>,
  requestId: string,
  presentedHash?: string | null,
  known?: (found: { key: KeyRecord; account: AccountRecord }) => Caller | null,
): Promise<{ ok: true; caller: Caller } | { ok: false; answer: ErrorAnswer<"unauthorized"> }> {
  const presented = presentedKey(headers);
  if (!presented.ok) return unauthorized(gw, requestId, presented);
  const keyHash = presentedHash ?? hashKey(presented.key);
  // D186: `known` takes the key as this process last read it, if it let the key call then and still does by the
  // clock; the caller it gives is checked again by the statement that admits its call.
  const last = known && gw.accounts.knownKeyAndAccount?.(keyHash);
  const caller = last && !refusedKey(gw, last) ? known(last) : null;
  if (caller) return { ok: true, caller: { ...caller, keyHash } };
  const state = await keyState(gw, keyHash, requestId);
  if (state.ok) rememberKeyHash(presented.key, keyHash);
  return state;
}

/** The `401 unauthorized` of a key refused for `why`. */
function unauthorized(
  gw: Gateway,
  requestId: string,
  why: { reason: string; message: string; note: string },
): { ok: false; answer: ErrorAnswer<"unauthorized"> } {
  const opts = { urls: gw.config.urls, now: new Date(gw.now()) };
  return {
    ok: false,
    answer: errorAnswer("unauthorized", requestId, REFUSALS.unauthorized(why, gw.config.urls) as never, opts),
  };
}

/** Why a key found by its hash (or not found) is refused, in D25's order; null when it may call. */
function refusedKey(
  gw: Gateway,
  found: { key: KeyRecord; account: AccountRecord } | null | undefined,
): (typeof KEY_REFUSALS)[keyof typeof KEY_REFUSALS] | null {
  if (!found) return KEY_REFUSALS.unknown;
  const { key, account } = found;
  if (key.status === "revoked") return KEY_REFUSALS.revoked;
  if (key.exposed_at) return KEY_REFUSALS.exposed;
  if (key.expires_at && Date.parse(key.expires_at) <= gw.now()) return KEY_REFUSALS.expired;
  if (key.status === "suspended") return KEY_REFUSALS.keySuspended;
  if (account.status === "suspended") return KEY_REFUSALS.accountSuspended;
  return null;
}

/** The state checks of a key found by its hash (D25's order): unknown, revoked, exposed, expired, suspended. */
async function keyState(
  gw: Gateway,
  keyHash: string,
  requestId: string,
): Promise<{ ok: true; caller: Caller } | { ok: false; answer: ErrorAnswer<"unauthorized"> }> {
  const found = await gw.accounts.keyAndAccount(keyHash);
  const why = refusedKey(gw, found);
  if (why || !found) return unauthorized(gw, requestId, why ?? KEY_REFUSALS.unknown);
  return { ok: true, caller: { key: found.key, account: found.account, keyHash } };
}

/** Whether a key may read data (D26: `read_data` is the only permission). */
export function canReadData(key: KeyRecord): boolean {
  let can = READS_DATA.get(key);
  if (can === undefined) {
    can = (JSON.parse(key.permissions) as string[]).includes("read_data");
    READS_DATA.set(key, can);
  }
  return can;
}
// Key records are cached (Accounts) and replaced, never changed, when a key changes: the answer holds per record.
const READS_DATA = new WeakMap<KeyRecord, boolean>();

/** The name of a console user's key: the key the Playground's calls run under (D87). */
export function consoleKeyName(email: string): string {
  return `console:${email}`;
}

/**
 * The console key of a user: its account's key named `console:<email>` that is not revoked nor exposed, made
 * (with `read_data`, no daily limit) on first need. Its secret is never shown: the key is used only by the session.
 */
export async function consoleKeyOf(gw: Gateway, user: UserRecord): Promise<KeyRecord> {
  const name = consoleKeyName(user.email);
  const mine = (keys: KeyRecord[]) =>
    keys.find(
      (k) =>
        k.name === name &&
        k.status !== "revoked" &&
        !k.exposed_at &&
        (!k.expires_at || Date.parse(k.expires_at) > gw.now()),
    );
  const found = mine(await gw.accounts.keys(user.account_id));
  if (found) return found;
  const created = await gw.accounts.createKey({ accountId: user.account_id, name, permissions: ["read_data"] });
  return (await gw.accounts.key(created.id))!;
}

/** A refusal of a cookie-authenticated request, as status, headers and JSON body. */
export interface SessionRefusal {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * D87: cookie authentication of the API routes, for the console's Playground. Null when the request sends a key
 * (`X-API-Key` or `Authorization`: a key always wins) or no `sdgw_session` cookie: the key path decides. Otherwise
 * the session must be valid (else the 401 without a reason, D85), an `Origin` must be the server's own (D84), and a
 * state-changing request (every charging call, and every method but GET) must carry the session's CSRF token in
 * `X-CSRF-Token`; the caller is then the user's console key, with the key's usual state checks.
 */
export async function sessionCaller(
  gw: Gateway,
  headers: Record<string, string>,
  requestId: string,
  stateChanging: boolean,
): Promise<{ ok: true; caller: Caller } | { ok: false; answer: SessionRefusal } | null> {
  if (headers["x-api-key"] !== undefined || headers["authorization"] !== undefined) return null;
  const cookie = headers["cookie"];
  if (cookie === undefined || !cookie.includes(`${SESSION_COOKIE}=`)) return null;
  const asAnswer = (a: {
    status: number;
    headers: Record<string, string | string[]>;
    body: unknown;
  }): { ok: false; answer: SessionRefusal } => ({
    ok: false,
    answer: {
      status: a.status,
      headers: Object.fromEntries(Object.entries(a.headers).map(([k, v]) => [k.toLowerCase(), String(v)])),
      body: a.body,
    },
  });
  const origin = originRefusal(headers, requestId);
  if (origin) return asAnswer(origin);
  const session = await sessionOf(gw, headers);
  if (!session) return asAnswer(sessionRequired(gw, requestId));
  if (stateChanging) {
    const csrf = csrfRefusal(session, headers, requestId);
    if (csrf) return asAnswer(csrf);
  }
  const key = await consoleKeyOf(gw, session.user);
  const state = (await keyState(gw, key.hash, requestId)) as
    | { ok: true; caller: Caller }
    | { ok: false; answer: SessionRefusal };
  if (!state.ok) return state;
  const name = consoleKeyName(session.user.email);
  const keys = await gw.accounts.keys(session.user.account_id);
  const readsResultsOf = new Set(keys.filter((k) => k.name === name).map((k) => k.id));
  return { ok: true, caller: { ...state.caller, readsResultsOf } };
}
