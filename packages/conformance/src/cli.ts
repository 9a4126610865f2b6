#!/usr/bin/env node
/**
 * `sdgw-conformance`: runs the suite against a server and prints one line per check and a summary; exits 1 when a
 * check fails, 2 when the options are wrong.
 *
 *   sdgw-conformance --base-url URL --key KEY [--second-key K] [--noscope-key K] [--json] [--junit FILE] [--json-report FILE] …
 *   sdgw-conformance --base-url URL --keys-command "sdgw-admin conformance-keys --db data/sdgw.sqlite" …
 *
 * Before the first request it prints a warning on standard error: the credits the run spends and the key its
 * deliberate refusals may hold back (D180).
 */
import { exec } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { CHECKS } from "./checks/index.ts";
import { formatCoverage } from "./coverage.ts";
import { toJUnit } from "./junit.ts";
import { formatResult, formatSummaryLine, parseConformanceKeys, runConformance } from "./run.ts";
import type { ConformanceKeys, ConformanceOptions } from "./types.ts";

const USAGE = `usage: sdgw-conformance --base-url URL --key KEY [options]
       sdgw-conformance --base-url URL --keys-command CMD [options]

Runs the Social Data Gateway conformance suite against a server.

  --base-url URL                   the server (env SDGW_BASE_URL)
  --key KEY                        a key with read_data, of an account with credits (env SDGW_KEY)
  --second-key KEY                 another key of the same account: handle isolation, two keys in two carriers
  --noscope-key KEY                a key without read_data: 403 key_scope_denied
  --insufficient-balance-key KEY   a key of an account with fewer credits than one call: 402 insufficient_balance
  --daily-limit-key KEY            a key whose daily limit leaves less than one call: 429 daily_limit_reached
  --keys-command CMD               keys of the suite's own instead of the key options: a shell command run
                                   before anything is sent, printing {"key":…,"secondKey":…,"noscopeKey":…,
                                   "insufficientBalanceKey":…,"dailyLimitKey":…} (key required), e.g.
                                   "sdgw-admin conformance-keys --db data/sdgw.sqlite" on the reference server;
                                   not with --key or the other key options
  --rate-limit-burst N             send N calls at once to provoke 429 rate_limited
  --platform P                     platform of single-platform calls (default x)
  --fanout A,B                     two platforms for the fanout check (default x,reddit)
  --slow-query QUERY               query string of a GET /v1/search that answers 202
                                   (default platform=xiaohongshu&query=slow+conformance+run)
  --slow-tool TOOL                 when the slow search answers 200: a tool run whose plan has more
                                   than 10 calls, 202 by D51 (default batch_stats; none: no fallback)
  --slow-tool-body JSON            its body (default {"targets":[11 reddit posts]}); quoted first
                                   with confirm: false (free), run only when the quote says background
  --poll-budget SECONDS            how long to follow each background run from its 202 (default 90)
  --timeout SECONDS                time limit of one request (default 60)
  --seed N                         the seed of the generated requests (printed in the summary; the same
                                   seed replays the same requests)
  --mcp-path PATH                  the server's MCP endpoint checked by mcp.flow (default /mcp; none: not checked)
  --only ID[,ID…]                  only these checks (an id, or a prefix ending in '.', e.g. auth.)
  --list                           list the checks and exit
  --json                           print the report as JSON instead of text
  --json-report FILE               also write the report as JSON to FILE
  --junit FILE                     also write the report as JUnit XML to FILE
  -h, --help                       this help

The run spends about 65 credits of the key's account, and its deliberate refusals can make a server hold
--second-key (else --key) back for 5 minutes (free_failure_limit): it says so on standard error before
its first request. --keys-command spares your own keys.

Every background run the suite starts is followed to its end before a balance is compared. The run ends
with a coverage summary: operations exercised, statuses and error codes per operation, error codes reached,
and the checks that could not run and why (all of it in --json-report too).

Exit status: 0 when no check failed, 1 when one did, 2 for wrong options (or a report file that cannot be written).`;

/** The options given, or an error naming the wrong one. */
function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      "base-url": { type: "string" },
      key: { type: "string" },
      "second-key": { type: "string" },
      "noscope-key": { type: "string" },
      "insufficient-balance-key": { type: "string" },
      "daily-limit-key": { type: "string" },
      "keys-command": { type: "string" },
      "rate-limit-burst": { type: "string" },
      platform: { type: "string" },
      fanout: { type: "string" },
      "slow-query": { type: "string" },
      "slow-tool": { type: "string" },
      "slow-tool-body": { type: "string" },
      "poll-budget": { type: "string" },
      timeout: { type: "string" },
      seed: { type: "string" },
      "mcp-path": { type: "string" },
      only: { type: "string" },
      list: { type: "boolean" },
      json: { type: "boolean" },
      "json-report": { type: "string" },
      junit: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  }).values;
}

function main(argv: string[]): Promise<number> | number {
  let values: ReturnType<typeof parseOptions>;
  try {
    values = parseOptions(argv);
  } catch (e) {
    console.error(`sdgw-conformance: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.list) {
    for (const c of CHECKS) console.log(`${c.id}  ${c.title}`);
    return 0;
  }
  const baseUrl = values["base-url"] ?? process.env["SDGW_BASE_URL"];
  const keysCommand = values["keys-command"];
  if (keysCommand !== undefined) {
    // D179: the hook gives every key; a key option beside it is refused (SDGW_KEY in the environment is ignored).
    const mixed = ["key", "second-key", "noscope-key", "insufficient-balance-key", "daily-limit-key"].filter(
      (o) => values[o as "key"] !== undefined,
    );
    if (mixed.length) {
      console.error(
        `sdgw-conformance: --keys-command gives every key of the run: leave out ${mixed.map((o) => `--${o}`).join(", ")}, or leave out --keys-command`,
      );
      return 2;
    }
    if (!keysCommand.trim()) {
      console.error("sdgw-conformance: --keys-command needs a command");
      return 2;
    }
  }
  const key = keysCommand !== undefined ? "(from --keys-command)" : (values.key ?? process.env["SDGW_KEY"]);
  if (!baseUrl || !key) {
    console.error(`sdgw-conformance: --base-url and --key (or --keys-command) are required\n\n${USAGE}`);
    return 2;
  }
  const number = (name: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new TypeError(`--${name} must be a whole number`);
    return Number(v);
  };
  let options: ConformanceOptions;
  try {
    options = { baseUrl, key };
    if (values["second-key"]) options.secondKey = values["second-key"];
    if (values["noscope-key"]) options.noscopeKey = values["noscope-key"];
    if (values["insufficient-balance-key"]) options.insufficientBalanceKey = values["insufficient-balance-key"];
    if (values["daily-limit-key"]) options.dailyLimitKey = values["daily-limit-key"];
    const burst = number("rate-limit-burst", values["rate-limit-burst"]);
    if (burst !== undefined) options.rateLimitBurst = burst;
    if (values.platform) options.platform = values.platform;
    if (values.fanout) {
      const [a, b, ...rest] = values.fanout.split(",");
      if (!a || !b || rest.length) throw new TypeError("--fanout takes two platforms, A,B");
      options.fanoutPlatforms = [a, b];
    }
    if (values["slow-query"]) options.slowSearch = Object.fromEntries(new URLSearchParams(values["slow-query"]));
    if (values["slow-tool"] === "none") {
      if (values["slow-tool-body"] !== undefined)
        throw new TypeError("--slow-tool-body goes with a tool, not --slow-tool none");
      options.slowTool = false;
    } else if (values["slow-tool"] !== undefined || values["slow-tool-body"] !== undefined) {
      if (values["slow-tool"] !== undefined && values["slow-tool-body"] === undefined)
        throw new TypeError("--slow-tool needs --slow-tool-body (the tool's JSON body)");
      let body: unknown;
      try {
        body = JSON.parse(values["slow-tool-body"]!);
      } catch (e) {
        throw new TypeError(`--slow-tool-body is not JSON: ${(e as Error).message}`);
      }
      if (typeof body !== "object" || body === null || Array.isArray(body))
        throw new TypeError("--slow-tool-body must be a JSON object");
      options.slowTool = { tool: values["slow-tool"] ?? "batch_stats", body: body as Record<string, unknown> };
    }
    const budget = number("poll-budget", values["poll-budget"]);
    if (budget !== undefined) options.pollBudgetMs = budget * 1000;
    const seed = number("seed", values.seed);
    if (seed !== undefined) options.seed = seed;
    if (values["mcp-path"] !== undefined) {
      if (values["mcp-path"] !== "none" && !values["mcp-path"].startsWith("/"))
        throw new TypeError("--mcp-path is a path starting with /, or none");
      options.mcpPath = values["mcp-path"] === "none" ? false : values["mcp-path"];
    }
    const timeout = number("timeout", values.timeout);
    if (timeout !== undefined) options.requestTimeoutMs = timeout * 1000;
    new URL(baseUrl);
  } catch (e) {
    console.error(`sdgw-conformance: ${(e as Error).message}`);
    return 2;
  }
  const only = values.only?.split(",").filter(Boolean);
  const json = values.json === true;
  const files = { junit: values.junit, jsonReport: values["json-report"] };
  for (const [name, file] of Object.entries(files))
    if (file === "") {
      console.error(`sdgw-conformance: --${name === "jsonReport" ? "json-report" : "junit"} needs a file name`);
      return 2;
    }
  if (keysCommand !== undefined) {
    delete options.key;
    options.keys = () => keysFrom(keysCommand);
  }
  return runConformance(options, {
    ...(only ? { only } : {}),
    onStart: (warning) => console.error(`sdgw-conformance: ${warning}`),
    ...(json ? {} : { onResult: (r) => console.log(formatResult(r)) }),
  }).then(
    (report) => {
      if (json) console.log(JSON.stringify(report, null, 2));
      else console.log(`\n${formatSummaryLine(report)}\n\n${formatCoverage(report.coverage)}`);
      try {
        if (files.jsonReport) write(files.jsonReport, `${JSON.stringify(report, null, 2)}\n`);
        if (files.junit) write(files.junit, toJUnit(report));
      } catch (e) {
        console.error(`sdgw-conformance: could not write the report: ${(e as Error).message}`);
        return 2;
      }
      return report.failed ? 1 : 0;
    },
    (e: unknown) => {
      console.error(`sdgw-conformance: ${(e as Error).message}`);
      return 2;
    },
  );
}

/**
 * Runs the `--keys-command` in a shell and reads the keys it prints as JSON (D178): a command that fails, prints
 * no JSON or a field that is wrong gives an error naming it, and nothing is run.
 */
function keysFrom(command: string): Promise<ConformanceKeys> {
  return new Promise((resolve, reject) => {
    exec(command, { timeout: 120_000, maxBuffer: 1 << 20, windowsHide: true }, (error, stdout, stderr) => {
      if (error) {
        const why = error.killed ? "took more than 120 s" : `exited with status ${String(error.code ?? "?")}`;
        reject(new TypeError(`--keys-command ${why}: ${(stderr || error.message).trim().slice(0, 500)}`));
        return;
      }
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        // Not the parser's message: it quotes the output, which may hold keys.
        reject(
          new TypeError(
            `--keys-command printed no JSON (${stdout.length} characters on standard output, not ` +
              `shown: they may hold keys); it must print {"key":…,"secondKey":…,…}`,
          ),
        );
        return;
      }
      try {
        resolve(parseConformanceKeys(json, "--keys-command"));
      } catch (e) {
        reject(e as Error);
      }
    });
  });
}

/** Writes a report file, making its folder if needed. */
function write(file: string, text: string): void {
  const path = resolve(file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

void Promise.resolve(main(process.argv.slice(2))).then((code) => {
  process.exitCode = code;
});
