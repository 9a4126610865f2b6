/**
 * One call that answers 202, followed through its whole life (seed States and transitions; GET /v1/results): the
 * same call again while it runs (409), reads while running, polling no sooner than Retry-After, the finished read
 * in json, csv and ndjson (D31), a replay after the end (D40), another key's read (404), a bad format (400).
 */
import { toCsv, toNdjson, validateHandleAnswer } from "@sdgw/validators";
import { schemaProblems } from "../contract.ts";
import { exchangeLine, got, heldBack, retryAfterMs, sent, sleep, type Exchange, type RequestSpec } from "../http.ts";
import type { Check, CheckContext, SlowTool, Verdict } from "../types.ts";
import {
  balanceOf,
  bodyOf,
  expectRefusal,
  fail,
  firstDifference,
  isObject,
  na,
  pass,
  refusal,
  sameJson,
  without,
} from "./util.ts";

/** Everything the suite saw of its one 202 run. */
export interface SlowRun {
  /** Why the run checks cannot apply (no 202, or the run never ended within the budget). */
  notApplicable?: string;
  /** Why the scenario itself failed (a broken 202 answer, an unreadable balance). */
  failure?: string;
  /** A rule the call broke on the way to its 202 (D51: a background quote answered 200); fails `runs.202-answer`. */
  violation?: string;
  /** Which call ran in the background: the slow search, or the tool of the fallback (`slowTool`). */
  kind: "search" | "tool";
  /** The slow search's parameters. */
  params: Readonly<Record<string, string>>;
  /** The tool of the fallback, when `kind` is `tool`. */
  tool?: string;
  /** The calls the tool's quote planned, when `kind` is `tool`. */
  callsPlanned?: number;
  /** The slow search when it answered 200 and the fallback ran instead. */
  search?: Exchange;
  /** The fallback's quote (`confirm: false`). */
  quote?: Exchange;
  first?: Exchange;
  handle?: string;
  /** The same call under the same key, sent at once (409 while running). */
  second?: Exchange;
  /** The first read, with `format=csv`, sent at once (202 whatever the format while running). */
  runningRead?: Exchange;
  /** Every read while polling: the wait the server asked for and the wait the suite kept. */
  polls: Array<{ x: Exchange; askedMs: number; waitedMs: number }>;
  /** The first read that was not 202 (JSON). */
  finished?: Exchange;
  /** A second JSON read of the finished result. */
  again?: Exchange;
  csv?: Exchange;
  ndjson?: Exchange;
  /** The same call under the same key after the end. */
  replay?: Exchange;
  /** A read with the second key. */
  otherKey?: Exchange;
  /** A read with `format=xlsx`. */
  xlsx?: Exchange;
  balanceBefore?: number;
  balanceAfter?: number;
}

const RUN_RULE = "seed States and transitions";

/** The call of the run, without its Idempotency-Key. */
type Call = Pick<RequestSpec, "method" | "path" | "query" | "body">;

/** A balance read's verdict as the scenario's field: a failure, or why the run checks cannot apply. */
const notRead = (v: Verdict): Pick<SlowRun, "failure" | "notApplicable"> =>
  v.outcome === "failed" ? { failure: v.message } : { notApplicable: v.message };

/**
 * The fallback when the slow search answered 200: the tool of `slowTool`, quoted first (`confirm: false`, free)
 * and run only when the quote says `mode: background` (D51: more than 10 planned calls answers 202 at once).
 * Answers the started call, or the scenario's end (why not, and the rule broken if the server broke one).
 */
async function startTool(
  ctx: CheckContext,
  run: SlowRun,
  search: Exchange,
): Promise<{ call: Call; first: Exchange; idem: string } | { end: SlowRun }> {
  const slow = ctx.options.slowTool as SlowTool;
  const path = `/v1/tools/${encodeURIComponent(slow.tool)}`;
  const why = `${exchangeLine(search, 100)}: the slow search answered HTTP 200, not 202 (this server answered it within the request)`;
  run.search = search;
  run.kind = "tool";
  run.tool = slow.tool;
  const quote = await ctx.http.send({ method: "POST", path, body: { ...slow.body, confirm: false } });
  run.quote = quote;
  const q = bodyOf(quote)["quote"];
  if (quote.status !== 200 || !isObject(q)) {
    return {
      end: {
        ...run,
        notApplicable:
          heldBack(quote) ??
          `${why}; the fallback's quote ${exchangeLine(quote, 160)} is not a tool quote (D51: ` +
            `confirm: false answers the plan and price, free), so no background run either`,
      },
    };
  }
  run.callsPlanned = Number(q["calls_planned"]);
  if (q["mode"] !== "background") {
    return {
      end: {
        ...run,
        notApplicable:
          `${why}; the fallback ${slow.tool} was quoted mode ${String(q["mode"])} ` +
          `with ${String(q["calls_planned"])} planned call(s), and only a plan of more than 10 provider ` +
          `calls is a background run that answers 202 (D51): give --slow-tool-body a bigger plan`,
      },
    };
  }
  // The search was charged: the run's balance is read again, after it.
  const before = await balanceOf(ctx);
  if (!before.ok) return { end: { ...run, ...notRead(before.verdict) } };
  run.balanceBefore = before.balance;
  const call: Call = { method: "POST", path, body: slow.body };
  const idem = ctx.http.newIdempotencyKey("run");
  const first = await ctx.http.send({ ...call, idempotencyKey: idem });
  if (first.status === 200) {
    const violation =
      `${exchangeLine(first, 160)}; its quote said mode background ` +
      `with ${run.callsPlanned} planned calls, but the confirmed call answered HTTP 200 in the request ` +
      `(D51: a plan of more than 10 calls is a background run, HTTP 202 with a handle at once; seed ` +
      `States and transitions: a tool call whose quote says background → running, 202)`;
    return {
      end: {
        ...run,
        first,
        violation,
        notApplicable:
          `${why}; the fallback ${slow.tool} (quoted background, ${run.callsPlanned} ` +
          `calls) answered HTTP 200 too, not 202 (D51): no run to follow`,
      },
    };
  }
  if (first.status !== 202) {
    return {
      end: {
        ...run,
        notApplicable:
          heldBack(first) ??
          `${why}; the fallback ${exchangeLine(first, 160)} answered HTTP ${first.status}, not 202, so no run to follow`,
      },
    };
  }
  return { call, first, idem };
}

/** How long after the 202 an exchange was sent, in ms. */
const sentAfter = (x: Exchange, first: Exchange) => Math.max(0, x.at - x.ms - first.at);

/** Why a run that ended before the suite could see it running leaves a check with nothing to look at. */
function endedTooSoon(run: SlowRun, x: Exchange, what: string): string {
  const after = sentAfter(x, run.first!);
  const why =
    run.kind === "tool"
      ? `the fallback ${run.tool} run (${run.callsPlanned} planned calls) ended within that time, ` +
        `as this server's platforms answer at once (the reference server without SDGW_LATENCY_MS), so it ` +
        `cannot be seen running; a server whose platform calls take time (e.g. the reference server ` +
        `started with SDGW_WAIT_MS=50 SDGW_LATENCY_MS=1000) shows it`
      : "nothing was left running to look at";
  return `the run had already ended when ${what}, ${after} ms after its 202 (${got(x, 100)}): ${why}`;
}

/** Runs the 202 scenario once per suite run (shared by every check of this file). */
export function slowRun(ctx: CheckContext): Promise<SlowRun> {
  return ctx.shared("slow-run", async () => {
    const params = ctx.options.slowSearch;
    const run: SlowRun = { kind: "search", params, polls: [] };
    const before = await balanceOf(ctx);
    if (!before.ok) return { ...run, ...notRead(before.verdict) };
    run.balanceBefore = before.balance;
    let idem = ctx.http.newIdempotencyKey("run");
    let spec: Call = { path: "/v1/search", query: params };
    let first: Exchange;
    try {
      first = await ctx.http.send({ ...spec, idempotencyKey: idem });
    } catch (e) {
      return { ...run, notApplicable: `the server never answered 202 within the budget: ${(e as Error).message}` };
    }
    if (first.status === 200 && ctx.options.slowTool) {
      let tool: Awaited<ReturnType<typeof startTool>>;
      try {
        tool = await startTool(ctx, run, first);
      } catch (e) {
        return {
          ...run,
          notApplicable: `the slow search answered HTTP 200, and the fallback ${run.tool ?? "tool"} got no answer: ${(e as Error).message}`,
        };
      }
      if ("end" in tool) return tool.end;
      ({ call: spec, first, idem } = tool);
    }
    const call = () => ctx.http.send({ ...spec, idempotencyKey: idem });
    const started = first.at;
    run.first = first;
    if (first.status !== 202) {
      const fallback = ctx.options.slowTool ? "" : " (the tool fallback is off)";
      run.notApplicable =
        heldBack(first) ??
        `${exchangeLine(first, 120)}: the call answered HTTP ${first.status}, not 202, so no run to ` +
          `follow (give slowSearch / --slow-query parameters that this server answers with 202${fallback})`;
      return run;
    }
    const handle = bodyOf(first)["handle"];
    if (typeof handle !== "string" || !/^[A-Za-z0-9_-]{1,128}$/.test(handle))
      return {
        ...run,
        failure: `${exchangeLine(first)}: a 202 without a usable handle (seed: the 202 answer carries handle)`,
      };
    run.handle = handle;
    const read = (format?: string, key?: string) =>
      ctx.http.send({
        path: `/v1/results/${encodeURIComponent(handle)}`,
        ...(format ? { query: { format } } : {}),
        ...(key ? { key } : {}),
      });

    run.second = await call();
    run.runningRead = await read("csv");
    let last = run.runningRead;
    if (last.status !== 202) last = await read();
    const budget = ctx.options.pollBudgetMs;
    for (let polls = 0; last.status === 202; polls++) {
      const asked = retryAfterMs(last);
      if (Date.now() + asked - started > budget || polls >= 60) {
        run.notApplicable =
          `the run ${handle} had not ended ` +
          `after ${Math.round((Date.now() - started) / 1000)} s of polling (budget ${budget / 1000} s; ` +
          `last ${got(last, 120)})`;
        break;
      }
      await sleep(asked);
      const sentAt = Date.now();
      const x = await read();
      run.polls.push({ x, askedMs: asked, waitedMs: sentAt - last.at });
      last = x;
    }
    if (last.status !== 202) {
      run.finished = last;
      if (last.status === 200) {
        run.again = await read("json");
        run.csv = await read("csv");
        run.ndjson = await read("ndjson");
      }
      run.replay = await call();
    }
    if (ctx.options.secondKey) run.otherKey = await read(undefined, ctx.options.secondKey);
    run.xlsx = await read("xlsx");
    const after = await balanceOf(ctx);
    if (after.ok) run.balanceAfter = after.balance;
    return run;
  });
}

/** What a finished answer was charged: `billing.cost` of an envelope, `billing.cost_credits` of a tool answer. */
function costOf(body: Record<string, unknown>): number {
  const billing = isObject(body["billing"]) ? body["billing"] : {};
  return Number(billing["cost"] ?? billing["cost_credits"]);
}

/** The billing fields that are the account's state as of the read, not the run's (seed: the balance is as of the read). */
const AS_OF_READ = [
  "billing.balance",
  "billing.balance_credits",
  "billing.today_spend_credits",
  "billing.daily_remaining_credits",
  "billing.display",
];

/** Either what a check goes on with, or the verdict that ends it early. */
type Or<T> = { verdict: Verdict; value?: undefined } | { verdict?: undefined; value: T };

/** The run, or the verdict that ends a check early (scenario failed, no 202, run not ended when `needsEnd`). */
async function withRun(ctx: CheckContext, needsEnd: boolean): Promise<Or<SlowRun>> {
  const run = await slowRun(ctx);
  if (run.failure) return { verdict: fail(run.failure) };
  if (!run.first || !run.handle) return { verdict: na(run.notApplicable ?? "no 202 answer") };
  if (needsEnd && !run.finished) return { verdict: na(run.notApplicable ?? "the run did not end") };
  return { value: run };
}

/** The run and its finished read as JSON, or the verdict when there is none or it is not a 200 answer. */
async function withFinished(ctx: CheckContext): Promise<Or<{ run: SlowRun; body: Record<string, unknown> }>> {
  const r = await withRun(ctx, true);
  if (r.verdict) return r;
  const run = r.value;
  const f = run.finished!;
  if (f.status === 500 && bodyOf(f)["code"] === "internal_error")
    return {
      verdict: na(
        `the run broke on the server's side (${got(f, 160)}); nothing to compare (seed: a broken run reads 500 internal_error)`,
      ),
    };
  if (f.status !== 200 || !isObject(f.json))
    return {
      verdict: fail(
        `the finished read ${exchangeLine(f)}; expected HTTP 200 with the original call's answer (${RUN_RULE}: finished → the original answer and status)`,
      ),
    };
  return { value: { run, body: f.json } };
}

/** An RFC 4180 parse of a CSV text into rows of cells. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell !== "" || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** The first line where two texts differ (for messages). */
function lineDiff(want: string, gotText: string): string {
  const a = want.split("\n");
  const b = gotText.split("\n");
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i])
      return `line ${i + 1}: expected ${JSON.stringify((a[i] ?? "(none)").slice(0, 120))}, got ${JSON.stringify((b[i] ?? "(none)").slice(0, 120))}`;
  }
  return "the texts differ";
}

export const runChecks: Check[] = [
  {
    id: "runs.202-answer",
    title: "a call that cannot finish in time answers 202 with a handle, Retry-After and charge 0",
    async run(ctx) {
      const violation = (await slowRun(ctx)).violation;
      if (violation) return fail(violation);
      const r = await withRun(ctx, false);
      if (r.verdict) return r.verdict;
      const run = r.value;
      const first = run.first!;
      const body = bodyOf(first);
      const v = validateHandleAnswer(body);
      if (!v.ok) return fail(`${exchangeLine(first)}; not the handle answer (${RUN_RULE}: HTTP 202 with a handle)`);
      const billing = body["billing"] as Record<string, unknown>;
      if (billing["cost_credits"] !== 0)
        return fail(
          `${exchangeLine(first)}; billing.cost_credits ${String(billing["cost_credits"])} ` +
            `(${RUN_RULE}: charge 0; seed Billing: nothing is charged before a run ends)`,
        );
      return pass(
        `${
          run.kind === "tool"
            ? `${sent(first)} (the slow search answered 200; the ${run.tool} ` +
              `fallback, ${run.callsPlanned} planned calls, D51): `
            : ""
        }handle ${run.handle}, Retry-After ${first.headers.get("retry-after")}`,
      );
    },
  },
  {
    id: "idempotency.in-progress",
    title: "the same key and parameters while the run goes on → 409 idempotency_in_progress with Retry-After",
    async run(ctx) {
      const r = await withRun(ctx, false);
      if (r.verdict) return r.verdict;
      const run = r.value;
      const second = run.second!;
      if (second.status === 200 && second.headers.get("idempotent-replayed") === "true")
        return na(endedTooSoon(run, second, "the same call was sent again"));
      return (
        refusal(second, {
          status: 409,
          code: "idempotency_in_progress",
          rule: "seed Idempotency: same key and parameters while the run is going → HTTP 409 idempotency_in_progress",
        }) ?? pass(`HTTP 409, Retry-After ${second.headers.get("retry-after")}`)
      );
    },
  },
  {
    id: "runs.running-read",
    title: "reading a running result answers 202 with the handle body, whatever the format",
    async run(ctx) {
      const r = await withRun(ctx, false);
      if (r.verdict) return r.verdict;
      const run = r.value;
      const read = run.runningRead!;
      if (read.status !== 202) return na(endedTooSoon(run, read, "its handle was first read"));
      const body = bodyOf(read);
      if (body["handle"] !== run.handle || body["status"] !== "running")
        return fail(
          `${exchangeLine(read)}; expected the handle answer of ${run.handle} with status running ` +
            `(GET /v1/results: running → HTTP 202 with the handle body, whatever the format)`,
        );
      return pass("HTTP 202 handle answer for format=csv");
    },
  },
  {
    id: "runs.lifecycle",
    title:
      "polled no sooner than Retry-After, the run ends; the finished read is the original call's answer under HTTP 200",
    async run(ctx) {
      // A run followed for the whole poll budget without an end fails here (D172); the checks that need its end
      // are not applicable.
      const started = await slowRun(ctx);
      if (
        started.first &&
        started.handle &&
        !started.finished &&
        /had not ended after/.test(started.notApplicable ?? "")
      )
        return fail(
          `${started.notApplicable}: a 202 run must end (${RUN_RULE}: running → finished, or ` +
            `timeout); D172: within the poll budget the suite is given (raise --poll-budget for a server ` +
            `whose runs take longer)`,
        );
      const r = await withRun(ctx, true);
      if (r.verdict) return r.verdict;
      const run = r.value;
      for (const p of run.polls.slice(0, -1)) {
        if (p.x.status !== 202 || bodyOf(p.x)["handle"] !== run.handle)
          return fail(
            `a read before the end ${exchangeLine(p.x)}; expected HTTP 202 with the same handle (${RUN_RULE}: running → running, same body)`,
          );
      }
      const f = await withFinished(ctx);
      if (f.verdict) return f.verdict;
      const { body } = f.value;
      // D31: a finished read is checked against the answer schema of the call that made it.
      const op = run.first!.op ?? "search";
      const own = schemaProblems(op, 200, body);
      if (own.length)
        return fail(
          `the finished read ${exchangeLine(run.finished!, 160)} is not a valid answer ` +
            `of ${sent(run.first!).split(" [")[0]}: ${own.join("; ")} (${RUN_RULE}: finished → what the ` +
            `original call would have answered; D31)`,
        );
      if (run.kind === "tool") {
        if (body["tool"] !== run.tool)
          return fail(
            `the finished read ${exchangeLine(run.finished!, 160)} is not the ${run.tool} answer ` +
              `the call asked for (tool ${JSON.stringify(body["tool"] ?? null)}; ${RUN_RULE}: finished → exactly ` +
              `what the original call would have answered)`,
          );
      } else {
        const params = run.params;
        if (params["platforms"] !== undefined) {
          if (!isObject(body["fanout"]))
            return fail(
              `the finished read ${exchangeLine(run.finished!, 160)} is not the fanout answer the ` +
                `call asked for (${RUN_RULE}: finished → the original answer; D17)`,
            );
        } else if ("fanout" in body || body["platform"] !== params["platform"]) {
          return fail(
            `the finished read ${exchangeLine(run.finished!, 160)} is not the ${params["platform"]} ` +
              `envelope the call asked for (${RUN_RULE}: finished → exactly what the original call would have answered)`,
          );
        }
        const applied = isObject(body["applied_params"]) ? body["applied_params"]["query"] : undefined;
        if (params["query"] !== undefined && applied !== undefined && applied !== params["query"])
          return fail(
            `the finished read's applied_params.query ${JSON.stringify(applied)} is not the call's ${JSON.stringify(params["query"])} (${RUN_RULE})`,
          );
      }
      const waits = run.polls.map((p) => `${Math.round(p.waitedMs / 100) / 10}s≥${p.askedMs / 1000}s`).join(", ");
      return pass(
        `${run.kind === "tool" ? `${run.tool} run: ` : ""}${run.polls.length} poll(s) after ` +
          `Retry-After (${waits || "none needed"}); finished status ${String(body["status"])}`,
      );
    },
  },
  {
    id: "runs.charged-once",
    title: "the run is charged once, its billing.cost, when it ends; reads and the replay are free",
    async run(ctx) {
      const r = await withFinished(ctx);
      if (r.verdict) return r.verdict;
      const { run, body } = r.value;
      if (run.balanceBefore === undefined || run.balanceAfter === undefined)
        return fail("could not read the balance before and after the run (D10)");
      const cost = costOf(body);
      const moved = run.balanceBefore - run.balanceAfter;
      if (moved !== cost) {
        return fail(
          `the balance moved by ${moved} (${run.balanceBefore} → ${run.balanceAfter}) over the run, ` +
            `its reads and its replay, but the finished ` +
            `answer's ${run.kind === "tool" ? "billing.cost_credits" : "billing.cost"} is ${cost} ` +
            `(${RUN_RULE}: charge applied once; seed Billing: reading a stored result is free; D7)`,
        );
      }
      return pass(
        `${run.kind === "tool" ? `${run.tool} run: ` : ""}charged ${cost} once (${run.balanceBefore} → ${run.balanceAfter})`,
      );
    },
  },
  {
    id: "results.request-id",
    title: "every running (202) and finished read keeps the request_id of the call that started the run (D47)",
    async run(ctx) {
      const r = await withRun(ctx, false);
      if (r.verdict) return r.verdict;
      const run = r.value;
      const id = bodyOf(run.first!)["request_id"];
      const reads = [run.runningRead, ...run.polls.map((p) => p.x), run.again].filter(
        (x): x is Exchange => x !== undefined && (x.status === 200 || x.status === 202) && isObject(x.json),
      );
      for (const x of reads) {
        if (bodyOf(x)["request_id"] !== id) {
          return fail(
            `${exchangeLine(x, 160)}; ` +
              `request_id ${JSON.stringify(bodyOf(x)["request_id"] ?? null)}, expected the ` +
              `call's ${JSON.stringify(id)} (D47: a running or finished read keeps the original call's ` +
              `request_id: one call, one id to quote)`,
          );
        }
      }
      const running = reads.filter((x) => x.status === 202).length;
      const finished = reads.length - running;
      if (!finished)
        return pass(
          `${running} running read(s) kept ${String(id)}; the run did not end within the budget, so no finished read was compared`,
        );
      return pass(`${running} running and ${finished} finished read(s) kept ${String(id)}`);
    },
  },
  {
    id: "results.json",
    title: "a finished result reads again the same (free, repeatable; balance as of the read)",
    async run(ctx) {
      const r = await withFinished(ctx);
      if (r.verdict) return r.verdict;
      const { run, body } = r.value;
      const again = run.again!;
      if (again.status !== 200)
        return fail(
          `the second read ${exchangeLine(again)}; expected HTTP 200 (${RUN_RULE}: finished → finished, repeatable)`,
        );
      const a = without(body, AS_OF_READ);
      const b = without(again.json, AS_OF_READ);
      if (!sameJson(a, b))
        return fail(
          `two reads of ${run.handle} differ at ${firstDifference(a, b)} (${RUN_RULE}: returns the original answer and status; repeatable)`,
        );
      return pass("two reads identical but for the balance as of the read");
    },
  },
  {
    id: "results.csv",
    title: "format=csv is text/csv and exactly the D31 rendering of the JSON read (toCsv), formula cells neutralised",
    async run(ctx) {
      const r = await withFinished(ctx);
      if (r.verdict) return r.verdict;
      const { run, body } = r.value;
      const csv = run.csv!;
      if (csv.status !== 200 || !/^text\/csv\b/i.test(csv.headers.get("content-type") ?? ""))
        return fail(
          `${exchangeLine(csv, 160)} ` +
            `(content-type ${JSON.stringify(csv.headers.get("content-type"))}); expected HTTP 200 text/csv ` +
            `(GET /v1/results: format csv)`,
        );
      for (const [r, row] of parseCsv(csv.text).entries()) {
        for (const [c, cell] of row.entries()) {
          if (/^[=+\-@]/.test(cell))
            return fail(
              `csv row ${r + 1} column ${c + 1} is ${JSON.stringify(cell.slice(0, 60))}: a cell ` +
                `that starts with =, +, - or @ must get an apostrophe in front (seed File formats 4)`,
            );
        }
      }
      const want = toCsv(body);
      if (csv.text !== want)
        return fail(
          `the csv is not the rendering of the JSON read: ${lineDiff(want, csv.text)} (seed File ` +
            `formats 1–4: a column for every field, nested a.b, lists in one cell; D31: RFC 4180 quoting, ` +
            `header order as first met, lists as JSON)`,
        );
      return pass(`${csv.text.split("\n").length - 2} row(s), byte-identical to toCsv`);
    },
  },
  {
    id: "results.ndjson",
    title: "format=ndjson is application/x-ndjson, one JSON object per row, exactly toNdjson of the JSON read",
    async run(ctx) {
      const r = await withFinished(ctx);
      if (r.verdict) return r.verdict;
      const { run, body } = r.value;
      const nd = run.ndjson!;
      if (nd.status !== 200 || !/^application\/x-ndjson\b/i.test(nd.headers.get("content-type") ?? ""))
        return fail(
          `${exchangeLine(nd, 160)} ` +
            `(content-type ${JSON.stringify(nd.headers.get("content-type"))}); expected HTTP 200 ` +
            `application/x-ndjson (GET /v1/results: format ndjson)`,
        );
      const want = toNdjson(body);
      if (nd.text !== want)
        return fail(
          `the ndjson is not the rendering of the JSON read: ${lineDiff(want, nd.text)} (seed File ` +
            `formats 5: one JSON object per line; D31: rows are the items in order)`,
        );
      return pass(`${nd.text.split("\n").filter(Boolean).length} line(s), byte-identical to toNdjson`);
    },
  },
  {
    id: "idempotency.replay-after-run",
    title:
      "the same key and parameters after the run ended → 200, the finished answer, Idempotent-Replayed: true (D40)",
    async run(ctx) {
      const r = await withFinished(ctx);
      if (r.verdict) return r.verdict;
      const { run, body } = r.value;
      const replay = run.replay!;
      if (replay.status !== 200)
        return fail(
          `${exchangeLine(replay)}; expected HTTP 200 with the finished answer (seed Idempotency: ` +
            `after the run has ended the first result is returned again; D40)`,
        );
      if (replay.headers.get("idempotent-replayed") !== "true")
        return fail(`${exchangeLine(replay, 120)} came without Idempotent-Replayed: true (D35)`);
      const keep = (v: unknown) =>
        isObject(v)
          ? { status: v["status"], tool: v["tool"], items: v["items"], fanout: v["fanout"], cost: costOf(v) }
          : v;
      if (!sameJson(keep(body), keep(replay.json)))
        return fail(
          `the replay differs from the finished read ` +
            `at ${firstDifference(keep(body), keep(replay.json))} (seed Idempotency: the first result is ` +
            `returned again; D35: unchanged)`,
        );
      return pass("HTTP 200, same status, items and cost, Idempotent-Replayed: true");
    },
  },
  {
    id: "results.other-key",
    title: "a handle read with another key of the account → 404 not_found",
    notApplicable: (o) => (o.secondKey ? undefined : "no second key given (--second-key)"),
    async run(ctx) {
      const r = await withRun(ctx, false);
      if (r.verdict) return r.verdict;
      const run = r.value;
      return (
        refusal(run.otherKey!, {
          status: 404,
          code: "not_found",
          rule: "seed Authentication 6: a results handle is read only by the key that started the call; another key gets 404 not_found",
        }) ?? pass("HTTP 404 not_found")
      );
    },
  },
  {
    id: "results.format-invalid",
    title: "format=xlsx → 400 invalid_params naming format",
    async run(ctx) {
      const run = await slowRun(ctx);
      const rule =
        "seed GET /v1/results: format is json, csv or ndjson; any other value gives invalid_params (case 12)";
      if (run.xlsx)
        return (
          refusal(run.xlsx, { status: 400, code: "invalid_params", param: ["format"], rule }) ??
          pass(`HTTP 400 naming format (handle of the 202 run)`)
        );
      const x = await ctx.http.send({
        path: `/v1/results/conformance-${crypto.randomUUID()}`,
        query: { format: "xlsx" },
      });
      if (x.status === 404)
        return na(
          `no handle of this key to read (${run.notApplicable ?? "no 202"}), and the server checks the handle before the format (${got(x, 80)})`,
        );
      return (
        refusal(x, { status: 400, code: "invalid_params", param: ["format"], rule }) ??
        pass("HTTP 400 naming format (unknown handle)")
      );
    },
  },
  {
    id: "results.unknown-handle",
    title: "an unknown handle → 404 not_found with fix.param handle",
    run: (ctx) =>
      expectRefusal(
        ctx,
        { path: `/v1/results/conformance-${crypto.randomUUID()}` },
        {
          status: 404,
          code: "not_found",
          param: ["handle"],
          rule: "seed: unknown handle → 404 not_found; Cases by code: fix.param is handle",
        },
      ),
  },
];
