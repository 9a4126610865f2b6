/** Running the suite: options with defaults, one check at a time, the report and its text. */
import { createClient } from "@sdgw/client";
import { CHECKS } from "./checks/index.ts";
import { contractProblems } from "./contract.ts";
import { coverageOf, formatCoverage } from "./coverage.ts";
import { heldBack, Http, sent } from "./http.ts";
import {
  DEFAULT_SLOW_TOOL,
  KEY_FIELDS,
  RUN_CREDITS,
  type ConformanceKeys,
  type Check,
  type CheckContext,
  type CheckResult,
  type ConformanceOptions,
  type ConformanceReport,
  type ResolvedOptions,
  type SlowTool,
  type Verdict,
} from "./types.ts";

/** Fills in the defaults; throws a TypeError on options that cannot work. */
export function resolveOptions(options: ConformanceOptions): ResolvedOptions {
  if (!options.baseUrl) throw new TypeError("baseUrl is required");
  const base = new URL(options.baseUrl);
  if (base.searchParams.has("key"))
    throw new TypeError("refusing a key in the base URL: pass it as key (it is sent in a header)");
  if (options.keys !== undefined)
    throw new TypeError(
      "keys is called by runConformance (or the CLI's --keys-command) before the run: await it and pass the keys it gives as key, secondKey, …",
    );
  if (!options.key)
    throw new TypeError(
      "key is required (a key with read_data, of an account with credits), or keys (keys of the suite's own, D178)",
    );
  const slowTool: SlowTool | false = options.slowTool === undefined ? DEFAULT_SLOW_TOOL : options.slowTool;
  if (
    slowTool !== false &&
    (typeof slowTool !== "object" ||
      slowTool === null ||
      typeof slowTool.tool !== "string" ||
      !/^[a-z_]{1,64}$/.test(slowTool.tool) ||
      typeof slowTool.body !== "object" ||
      slowTool.body === null ||
      Array.isArray(slowTool.body))
  ) {
    throw new TypeError(
      "slowTool is { tool, body } (a tool name such as batch_stats and its JSON body as an object), or false",
    );
  }
  return {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    key: options.key,
    secondKey: options.secondKey,
    noscopeKey: options.noscopeKey,
    insufficientBalanceKey: options.insufficientBalanceKey,
    dailyLimitKey: options.dailyLimitKey,
    rateLimitBurst: options.rateLimitBurst,
    platform: options.platform ?? "x",
    fanoutPlatforms: options.fanoutPlatforms ?? ["x", "reddit"],
    slowSearch: options.slowSearch ?? { platform: "xiaohongshu", query: "slow conformance run" },
    slowTool,
    pollBudgetMs: options.pollBudgetMs ?? 90_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
    rateLimitRetries: options.rateLimitRetries ?? 4,
    fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    seed: options.seed ?? Math.floor(Math.random() * 2 ** 31),
    mcpPath: options.mcpPath === undefined ? "/mcp" : options.mcpPath,
  };
}

/**
 * Checks what a keys hook (`keys` option, `--keys-command`) gave: an object with `key` (a non-empty string without
 * spaces) and optionally `secondKey`, `noscopeKey`, `insufficientBalanceKey`, `dailyLimitKey` (the same, or null /
 * absent); throws a TypeError naming the field that is wrong, missing or unknown, with `source` in front.
 */
export function parseConformanceKeys(value: unknown, source = "keys"): ConformanceKeys {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new TypeError(
      `${source} must give a JSON object { "key": "…", "secondKey": "…", "noscopeKey": "…", ` +
        `"insufficientBalanceKey": "…", "dailyLimitKey": "…" } (key required), ` +
        `not ${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value}`,
    );
  const record = value as Record<string, unknown>;
  const unknown = Object.keys(record).filter((k) => !(KEY_FIELDS as readonly string[]).includes(k));
  if (unknown.length)
    throw new TypeError(
      `${source}: unknown field ${unknown.map((k) => JSON.stringify(k)).join(", ")}; the fields are ${KEY_FIELDS.join(", ")}`,
    );
  const out: ConformanceKeys = { key: "" };
  for (const field of KEY_FIELDS) {
    const v = record[field];
    if (v === undefined || v === null) {
      if (field === "key")
        throw new TypeError(`${source}: field "key" is missing (a key with read_data, of an account with credits)`);
      continue;
    }
    if (typeof v !== "string" || !/^[\x21-\x7e]{1,512}$/.test(v))
      throw new TypeError(
        `${source}: field "${field}" must be a key, a non-empty string of printable characters ` +
          `without spaces (got ${typeof v === "string" ? `a string of ${v.length} characters` : typeof v})`,
      );
    out[field] = v;
  }
  return out;
}

/**
 * The warning said before a run's first request (D180): the credits it spends of the main key's account, the
 * deliberate refusals that can hold a key back for 5 minutes (`free_failure_limit`, D45) — `secondKey` when given,
 * else the main key — and how to spare one's own keys (keys of the suite's own: `keys`, `--keys-command`).
 * `ownKeys`: the keys came from such a hook (the text then says so).
 */
export function runWarning(options: Pick<ResolvedOptions, "secondKey" | "slowTool">, ownKeys = false): string {
  const credits = RUN_CREDITS + (options.slowTool ? 11 : 0);
  const held = options.secondKey ? "<second-key>" : "<key>";
  const spend =
    `this run spends about ${RUN_CREDITS} credits of the account of <key> (up ` +
    `to ${credits} when the server answers the slow search within the request and the tool fallback runs)`;
  const lock =
    `sends about 35 deliberate refusals, which can make a server hold ${held} back for 5 ` +
    `minutes (429 free_failure_limit, ` +
    `D45)${options.secondKey ? "" : " — with --second-key they go to that key instead"}`;
  if (ownKeys)
    return (
      `warning: ${spend}, and ${lock}; these keys came from the keys hook (--keys-command, ` +
      `D178): keys of the suite's own, none of yours is spent or locked.`
    );
  return (
    `warning: ${spend}, and ${lock}. To keep your own keys untouched, give the suite keys of ` +
    `its own: --keys-command "sdgw-admin conformance-keys" (a new funded account and every key, D178; ` +
    `option keys in code).`
  );
}

/** One run of the suite against one server: a context shared by the checks, and a runner of one check. */
export interface Session {
  readonly options: ResolvedOptions;
  /** The warning of {@link runWarning} for these options: what the run does to the keys. */
  readonly warning: string;
  /** Runs one check: its verdict, turned into a failure when any answer it got breaks the contract. */
  run(check: Check): Promise<CheckResult>;
  /** The report of the results so far. */
  report(results: readonly CheckResult[], ms: number): ConformanceReport;
}

/** Starts a run: the recording wire, the SDK over it, the shared scenarios. */
export function createSession(input: ConformanceOptions, ownKeys = false): Session {
  const options = resolveOptions(input);
  const warning = runWarning(options, ownKeys);
  const http = new Http({
    baseUrl: options.baseUrl,
    key: options.key,
    fetch: options.fetch,
    requestTimeoutMs: options.requestTimeoutMs,
    rateLimitRetries: options.rateLimitRetries,
    secrets: {
      key: options.key,
      "second-key": options.secondKey,
      "noscope-key": options.noscopeKey,
      "insufficient-balance-key": options.insufficientBalanceKey,
      "daily-limit-key": options.dailyLimitKey,
    },
  });
  const clientFor = (apiKey: string) =>
    createClient({
      baseUrl: options.baseUrl,
      apiKey,
      fetch: http.fetch,
      maxRetries: options.rateLimitRetries,
      retryBaseMs: 250,
      maxRetryDelayMs: 5000,
      maxWaitMs: options.pollBudgetMs,
    });
  const client = clientFor(options.key);
  const scenarios = new Map<string, Promise<unknown>>();
  const ctx: CheckContext = {
    options,
    http,
    client,
    clientFor,
    shared<T>(name: string, setup: () => Promise<T>): Promise<T> {
      if (!scenarios.has(name)) scenarios.set(name, setup());
      return scenarios.get(name) as Promise<T>;
    },
  };

  return {
    options,
    warning,
    async run(check) {
      const start = Date.now();
      const from = http.exchanges.length;
      let verdict: Verdict;
      const skip = check.notApplicable?.(options);
      if (skip !== undefined)
        return { id: check.id, title: check.title, outcome: "not_applicable", message: skip, ms: 0, requests: 0 };
      try {
        verdict = await check.run(ctx);
      } catch (e) {
        verdict = { outcome: "failed", message: `the check could not finish: ${(e as Error).message}` };
      }
      const mine = http.exchanges.slice(from);
      // A key held back after failed calls (D45) says nothing of the rule under test: not applicable, and why.
      const held = mine.map(heldBack).find((m) => m !== undefined);
      if (held && verdict.outcome !== "passed") verdict = { outcome: "not_applicable", message: held };
      const problems = [
        ...new Set(mine.flatMap((x) => contractProblems(x).map((p) => `${sent(x)} → HTTP ${x.status}: ${p}`))),
      ];
      if (problems.length) {
        const shown =
          problems.slice(0, 3).join(" | ") + (problems.length > 3 ? ` | and ${problems.length - 3} more` : "");
        verdict =
          verdict.outcome === "failed"
            ? { outcome: "failed", message: `${verdict.message} | also: ${shown}` }
            : { outcome: "failed", message: `answers that break the contract: ${shown}` };
      }
      return {
        id: check.id,
        title: check.title,
        outcome: verdict.outcome,
        message: http.redact(verdict.message),
        ms: Date.now() - start,
        requests: mine.length,
      };
    },
    report(results, ms) {
      return {
        baseUrl: options.baseUrl,
        results: [...results],
        passed: results.filter((r) => r.outcome === "passed").length,
        failed: results.filter((r) => r.outcome === "failed").length,
        notApplicable: results.filter((r) => r.outcome === "not_applicable").length,
        ms,
        seed: options.seed,
        coverage: coverageOf(http.exchanges, http.runs, results),
        warning,
      };
    },
  };
}

/** Options of {@link runConformance} beyond the server's. */
export interface RunOptions {
  /** The checks to run (default {@link CHECKS}). */
  checks?: readonly Check[];
  /** Only the checks with these ids (or id prefixes ending in `.`, e.g. `auth.`). */
  only?: readonly string[];
  /** Called after each check, e.g. to print progress. */
  onResult?: (result: CheckResult) => void;
  /**
   * Called once before the first request with the run's warning ({@link runWarning}, D180: the credits it spends
   * and the key its deliberate refusals may hold back for 5 minutes); the report keeps it as `warning`. The CLI
   * prints it on standard error.
   */
  onStart?: (warning: string) => void;
}

/** Selects checks by id or by `area.` prefix. */
export function selectChecks(checks: readonly Check[], only?: readonly string[]): Check[] {
  if (!only?.length) return [...checks];
  const unknown = only.filter((o) => !checks.some((c) => c.id === o || (o.endsWith(".") && c.id.startsWith(o))));
  if (unknown.length)
    throw new TypeError(`no check ${unknown.join(", ")}; the checks are ${checks.map((c) => c.id).join(", ")}`);
  return checks.filter((c) => only.some((o) => c.id === o || (o.endsWith(".") && c.id.startsWith(o))));
}

/**
 * Runs the suite against a server, one check after another, and answers the report. Never throws for what the
 * server does (a failing server gives failed checks); throws a TypeError for options that cannot work.
 *
 * @example
 * ```ts
 * const report = await runConformance({ baseUrl: "http://127.0.0.1:8787", key: process.env.SDGW_KEY! });
 * console.log(formatReport(report));
 * ```
 */
export async function runConformance(options: ConformanceOptions, run: RunOptions = {}): Promise<ConformanceReport> {
  const checks = selectChecks(run.checks ?? CHECKS, run.only);
  let input = options;
  if (options.keys !== undefined) {
    if (typeof options.keys !== "function") throw new TypeError("keys must be a function answering the keys (D178)");
    const given = KEY_FIELDS.filter((f) => options[f] !== undefined);
    if (given.length)
      throw new TypeError(
        `keys gives every key of the run: leave out ${given.join(", ")}, or leave out keys (D179: the two are not mixed)`,
      );
    const { keys, ...rest } = options;
    input = { ...rest, ...parseConformanceKeys(await keys(), "keys()") };
  }
  const session = createSession(input, options.keys !== undefined);
  run.onStart?.(session.warning);
  const start = Date.now();
  const results: CheckResult[] = [];
  for (const check of checks) {
    const result = await session.run(check);
    results.push(result);
    run.onResult?.(result);
  }
  return session.report(results, Date.now() - start);
}

const LABEL = { passed: "PASS", failed: "FAIL", not_applicable: "N/A " } as const;

/** One line of the text report: `PASS  id  title — message`. */
export function formatResult(r: CheckResult): string {
  return `${LABEL[r.outcome]}  ${r.id}  ${r.title}${r.message ? ` — ${r.message}` : ""}`;
}

/** The summary line: `N passed, N failed, N not applicable`. */
export function formatSummary(report: Pick<ConformanceReport, "passed" | "failed" | "notApplicable">): string {
  return `${report.passed} passed, ${report.failed} failed, ${report.notApplicable} not applicable`;
}

/** The summary line with where and how long: `N passed, N failed, N not applicable (URL, 4.2 s)`. */
export function formatSummaryLine(report: ConformanceReport): string {
  return `${formatSummary(report)} (${report.baseUrl}, ${(report.ms / 1000).toFixed(1)} s, seed ${report.seed})`;
}

/** The text report: one line per check, the summary line, then the coverage summary ({@link formatCoverage}). */
export function formatReport(report: ConformanceReport): string {
  return [...report.results.map(formatResult), "", formatSummaryLine(report), "", formatCoverage(report.coverage)].join(
    "\n",
  );
}
