/** The mock's context, built once by `createMock` and passed to every part, and the helpers they share (fresh ids too). */
import type { CreditView, ToolContext } from "@sdgw/engine";
import { invalidParamsAnswer, keyInQueryRefusal, type HttpErrorCode, type InvalidParams } from "@sdgw/validators";
import { errorAnswer, keysInQuery } from "@sdgw/validators";
import type { createContext } from "./mock.ts";
import type { MockRoute } from "./generated/route-types.ts";
import type { Forced } from "./scenarios.ts";
import type { Reply } from "./state.ts";

/** A mock's context: its options resolved, its state, simulated platforms and scenarios on (see `createContext`). */
export type MockContext = ReturnType<typeof createContext>;

/** A request's parameters: the query of `GET /v1/search`, the JSON body of the others. */
export type Params = Record<string, unknown>;

/** A request past its checks: its route, id, parameters, headers and key, and the scenario forced on it. */
export interface Req {
  route: MockRoute;
  requestId: string;
  params: Params;
  headers: Record<string, string>;
  pathParams: Record<string, string>;
  apiKey: string;
  forced: Forced | undefined;
  /** Why a forced scenario was not applied (the `x-sdgw-scenario-skipped` header). */
  skipped: string[];
  /**
   * A charging call runs in the background (202 with a handle), as a `slow` one does: set by the mock's `/mcp` for a
   * task-augmented `tools/call` (D174), never by an HTTP request.
   */
  respondNow?: boolean;
}

/** A refusal thrown on the way: its answer. */
export class Refusal {
  readonly reply: Reply;
  constructor(reply: Reply) {
    this.reply = reply;
  }
}

export const reply = (status: number, json: unknown, headers: Reply["headers"] = {}) => ({ status, headers, json });

export function refuse<C extends HttpErrorCode>(ctx: MockContext, code: C, requestId: string, extra = {}): Refusal {
  const a = errorAnswer(code, requestId, extra as never, { urls: ctx.urls, now: new Date(ctx.clock()) });
  return new Refusal(reply(a.status, a.body, a.headers));
}

export const invalid = (requestId: string, why: InvalidParams) =>
  new Refusal(reply(400, invalidParamsAnswer(why, requestId)));

/**
 * D25: a key in the URL (any of `KEY_QUERY_NAMES`, any case) is refused first, on every route and unknown path,
 * whatever headers came (a forced scenario's header included); each value is remembered as exposed.
 */
export function keyInUrl(ctx: MockContext, url: URL, requestId: string): Reply | null {
  const values = keysInQuery(url.search);
  if (!values) return null;
  for (const v of values) if (v) ctx.store.exposed.add(v);
  return refuse(ctx, "unauthorized", requestId, keyInQueryRefusal(ctx.urls.console)).reply;
}

/** The credits as answers show them (D7): runs going on hold their quote, part of today's spend; no daily limit. */
export function view({ store }: MockContext): CreditView {
  const held = store.held();
  const todaySpend = store.spentToday + held;
  return { balance: store.balance, todaySpend, dailyLimit: null, dailyRemaining: null, held };
}

/** What a tool plans and runs with: these providers, a paid account, the mock's clock and follower history. */
export const toolContext = ({ clock, urls, store }: MockContext, providers: ToolContext["providers"]): ToolContext => ({
  providers,
  accountPlan: "paid",
  now: clock(),
  urls,
  followerHistory: (platform, accountId) => store.history(platform, accountId),
});

/** Fresh ids, browser-safe (Web Crypto only). */
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"; // Crockford base32, as in the fixtures' request ids
const HANDLE_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

function randomString(length: number, alphabet: string): string {
  const bytes = new Uint8Array(length);
  globalThis.crypto.getRandomValues(bytes);
  let out = "";
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

/** A fresh `request_id`, shaped like the fixtures' (`req_` and 26 base32 characters). */
export function newRequestId(): string {
  return `req_${randomString(26, ALPHABET)}`;
}

/** A fresh results handle (`h_` and 12 letters or digits). */
export function newHandle(): string {
  return `h_${randomString(12, HANDLE_ALPHABET)}`;
}
