/** The shapes of the suite: options, checks, their verdicts and the report. */
import type { Coverage } from "./coverage.ts";
import type { Http } from "./http.ts";
import type { Client } from "@sdgw/client";

/** What the suite is told about the server under test. Only `baseUrl` and `key` are required. */
export interface ConformanceOptions {
  /** The server's base address, e.g. `http://127.0.0.1:8787` (no key in it). */
  baseUrl: string;
  /**
   * A key with `read_data`, of an account with credits. Sent in headers only, never in a URL. Required unless
   * {@link ConformanceOptions.keys} gives it.
   */
  key?: string;
  /**
   * Keys of the suite's own, from the operator's tooling (D178): called once by `runConformance` before anything is
   * sent, it answers every key the suite can use ({@link ConformanceKeys}; `key` required), e.g. made by the
   * reference server's `sdgw-admin conformance-keys` on a new account, so that the run spends and locks none of
   * the caller's own keys. Not with `key` or any other key option (D179: refused, naming them). `defineConformanceSuite`
   * takes keys only: await the function at the top of the test file and pass its keys.
   */
  keys?: () => Promise<ConformanceKeys> | ConformanceKeys;
  /**
   * A second key of the same account (with `read_data`). Enables the checks that a result handle is read only by
   * the key that started the call, and that two different valid keys in `X-API-Key` and `Bearer` are refused (D25).
   */
  secondKey?: string | undefined;
  /** A key without the `read_data` permission. Enables `403 key_scope_denied` and D26 (it still reads the account). */
  noscopeKey?: string | undefined;
  /** A key whose account has fewer credits than one call costs. Enables `402 insufficient_balance`. */
  insufficientBalanceKey?: string | undefined;
  /** A key whose daily limit (its own or its account's) leaves less than one call. Enables `429 daily_limit_reached`. */
  dailyLimitKey?: string | undefined;
  /**
   * How many calls of `GET /v1/account` to send at once to provoke `429 rate_limited` (the server's per-key rate must
   * be below it). Off by default: the seed gives no number. The check runs last, so its refusals delay nothing else.
   */
  rateLimitBurst?: number;
  /** The platform of single-platform calls. Default `x`. */
  platform?: string;
  /** Two platforms for the fanout check (`platforms=a,b`). Default `["x", "reddit"]`. */
  fanoutPlatforms?: readonly [string, string];
  /**
   * Query parameters of a `GET /v1/search` that this server answers with 202 (a run that cannot finish inside the
   * request). Default `{ platform: "xiaohongshu", query: "slow conformance run" }` (the mock runs any call whose
   * parameters contain the word `slow` in the background). When it answers 200, the suite falls back to
   * {@link ConformanceOptions.slowTool}; without any 202 the run and result checks are not applicable.
   */
  slowSearch?: Readonly<Record<string, string>>;
  /**
   * The fallback when the slow search answers 200 (a server that answers every call within the request, like the
   * reference server's defaults): a tool call whose plan has more than 10 provider calls, which D51 makes a
   * background run (202 with a handle at once). The suite first quotes it with `confirm: false` (free) and runs it
   * only when the quote says `mode: background`; it costs the quote (1 credit per planned call that answers).
   * Default {@link DEFAULT_SLOW_TOOL}: `batch_stats` of 11 reddit posts (11 calls, 11 credits). `false`: no fallback.
   */
  slowTool?: SlowTool | false;
  /**
   * How long the suite follows each background run from its 202 (the 202 run, and those settled before a balance is
   * compared), polling no sooner than `Retry-After`. Default 90 000 ms.
   */
  pollBudgetMs?: number;
  /** How long one request may take (a call may wait up to the seed's 40 s before answering 202). Default 60 000 ms. */
  requestTimeoutMs?: number;
  /** Retries of an answer `429 rate_limited` (after its `Retry-After`, at most 5 s) on checks not about rate limits. Default 4. */
  rateLimitRetries?: number;
  /** A fetch to use instead of `globalThis.fetch`. */
  fetch?: typeof fetch;
  /**
   * The seed of the generated requests (valid words and counts, and which parameter each invalid request breaks;
   * D170). Default: drawn at random; the report prints it (`ConformanceReport.seed`), and the same seed replays the
   * same requests.
   */
  seed?: number;
  /** The path of the server's MCP endpoint (JSON-RPC over POST), checked by `mcp.flow`. Default `/mcp`; `false`: not checked. */
  mcpPath?: string | false;
}

/**
 * Every key the suite can use, as {@link ConformanceOptions.keys} answers it and as `sdgw-conformance
 * --keys-command` reads it (the command prints this object as JSON: `key` required, the others optional strings;
 * any other field is refused, naming it). `sdgw-admin conformance-keys` of @sdgw/server prints all five.
 */
export interface ConformanceKeys {
  /** A key with `read_data` of an account with credits (the suite spends about {@link RUN_CREDITS} of them). */
  key: string;
  /** Another key of the same account: handle isolation, two keys in two carriers, and the deliberate refusals. */
  secondKey?: string | undefined;
  /** A key without `read_data`. */
  noscopeKey?: string | undefined;
  /** A key of an account with fewer credits than one call (e.g. 0). */
  insufficientBalanceKey?: string | undefined;
  /** A key whose daily limit leaves less than one call (e.g. a limit of 0). */
  dailyLimitKey?: string | undefined;
}

/** The names of {@link ConformanceKeys}' fields, in order. */
export const KEY_FIELDS = ["key", "secondKey", "noscopeKey", "insufficientBalanceKey", "dailyLimitKey"] as const;

/**
 * About how many credits a run spends of the main key's account (measured on the reference server with every key:
 * see the README); the tool fallback of the 202 run adds its quote (11 by default) on a server that answers the slow
 * search within the request.
 */
export const RUN_CREDITS = 65;

/** A tool call that runs in the background: `POST /v1/tools/{tool}` with `body` (without `confirm`). */
export interface SlowTool {
  /** One of the seven tools, e.g. `batch_stats`. */
  tool: string;
  /** Its JSON body; the suite adds `confirm: false` for the quote and sends it as is to run it. */
  body: Readonly<Record<string, unknown>>;
}

/** The default {@link ConformanceOptions.slowTool}: `batch_stats` of 11 reddit posts, 11 planned calls, so a background run (D51). */
export const DEFAULT_SLOW_TOOL: SlowTool = Object.freeze({
  tool: "batch_stats",
  body: Object.freeze({
    targets: Object.freeze(Array.from({ length: 11 }, (_, i) => `reddit:t3_conf${String(i).padStart(3, "0")}`)),
  }),
});

/** The three verdicts of a check. */
export type Outcome = "passed" | "failed" | "not_applicable";

/** What one check concluded: `failed` and `not_applicable` always say why; `passed` may say what it saw. */
export interface Verdict {
  outcome: Outcome;
  message: string;
}

/** One executable rule of the contract. */
export interface Check {
  /** Stable id, `area.name` (e.g. `params.count-21`). */
  id: string;
  /** One line: what the check expects. */
  title: string;
  /**
   * Why the check cannot apply with these options (e.g. it needs a second key), known before anything is sent;
   * `undefined` when it can run.
   */
  notApplicable?(options: ResolvedOptions): string | undefined;
  /** Runs the check against the server; sends a bounded number of requests. */
  run(ctx: CheckContext): Promise<Verdict>;
}

/** What a check is given: the options, the wire, the SDK over the same wire, and scenarios shared between checks. */
export interface CheckContext {
  /** The options with their defaults filled in. */
  readonly options: ResolvedOptions;
  /** Raw HTTP to the server; every answer is recorded and checked against the contract. */
  readonly http: Http;
  /** `@sdgw/client` over the same recorded wire, with the main key. */
  readonly client: Client;
  /** `@sdgw/client` over the same recorded wire, with another key. */
  clientFor(key: string): Client;
  /**
   * Runs `setup` once per suite run and gives every check the same result: e.g. the one 202 run that the run,
   * result and idempotency checks all look at.
   */
  shared<T>(name: string, setup: () => Promise<T>): Promise<T>;
}

/** The options with every default filled in. */
export type ResolvedOptions = Required<
  Omit<
    ConformanceOptions,
    | "secondKey"
    | "noscopeKey"
    | "insufficientBalanceKey"
    | "dailyLimitKey"
    | "rateLimitBurst"
    | "fetch"
    | "slowTool"
    | "mcpPath"
    | "key"
    | "keys"
  >
> & { key: string; slowTool: SlowTool | false; mcpPath: string | false } & Pick<
    ConformanceOptions,
    "secondKey" | "noscopeKey" | "insufficientBalanceKey" | "dailyLimitKey" | "rateLimitBurst"
  > & { fetch: typeof fetch };

/** The result of one check in a report. */
export interface CheckResult extends Verdict {
  id: string;
  title: string;
  /** Wall time of the check. */
  ms: number;
  /** Requests the check sent (shared scenarios count where they first ran). */
  requests: number;
}

/** A whole run of the suite. */
export interface ConformanceReport {
  baseUrl: string;
  results: CheckResult[];
  passed: number;
  failed: number;
  notApplicable: number;
  /** Wall time of the run. */
  ms: number;
  /** The seed of the generated requests: pass it as `seed` (CLI `--seed`) to replay them (D170). */
  seed: number;
  /** What of the contract the run reached: operations and their statuses, error codes, background runs. */
  coverage: Coverage;
  /**
   * What the run did to the keys it was given, as said before its first request (D180; `RunOptions.onStart`
   * got the same text): the credits it spends of the main key's account, and the key its deliberate refusals may
   * have held back for 5 minutes (`free_failure_limit`, D45).
   */
  warning: string;
}
