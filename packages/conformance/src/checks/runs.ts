/**
 * One call that answers 202, followed through its whole life (seed States and transitions; GET /v1/results): the
 * same call again while it runs (409), reads while running, polling no sooner than Retry-After, the finished read
 * in json, csv and ndjson (D31), a replay after the end (D40), another key's read (404), a bad format (400).
 */
import { toCsv, toNdjson, validateHandleAnswer } from "@sdgw/validators";
import { schemaProblems } from "../contract.ts";
import { exchangeLine, got, heldBack, sleep, type Exchange } from "../http.ts";
import type { Check, CheckContext, Verdict } from "../types.ts";
import { balanceOf, bodyOf, expectRefusal, fail, firstDifference, isObject, na, pass, refusal, sameJson, without } from "./util.ts";

/** Everything the suite saw of its one 202 run. */
export interface SlowRun {
  /** Why the run checks cannot apply (no 202, or the run never ended within the budget). */
  notApplicable?: string;
  /** Why the scenario itself failed (a broken 202 answer, an unreadable balance). */
  failure?: string;
  params: Readonly<Record<string, string>>;
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

/** The wait an answer asks for: Retry-After or retry_after_seconds, at least 1 s. */
function askedWait(x: Exchange): number {
  const body = bodyOf(x);
  return 1000 * Math.max(1, Number(x.headers.get("retry-after")) || 0, Number(body["retry_after_seconds"]) || 0);
}

/** Runs the 202 scenario once per suite run (shared by every check of this file). */
export function slowRun(ctx: CheckContext): Promise<SlowRun> {
  return ctx.shared("slow-run", async () => {
    const params = ctx.options.slowSearch;
    const run: SlowRun = { params, polls: [] };
    const before = await balanceOf(ctx);
    if (!before.ok) return { ...run, failure: before.message };
    run.balanceBefore = before.balance;
    const key = ctx.http.newIdempotencyKey("run");
    const call = () => ctx.http.send({ path: "/v1/search", query: params, idempotencyKey: key });
    const started = Date.now();
    let first: Exchange;
    try {
      first = await call();
    } catch (e) {
      return { ...run, notApplicable: `the server never answered 202 within the budget: ${(e as Error).message}` };
    }
    run.first = first;
    if (first.status !== 202) {
      run.notApplicable = heldBack(first) ?? `${exchangeLine(first, 120)}: the call answered HTTP ${first.status}, not 202, so no run to follow (give slowSearch / --slow-query parameters that this server answers with 202)`;
      return run;
    }
    const handle = bodyOf(first)["handle"];
    if (typeof handle !== "string" || !/^[A-Za-z0-9_-]{1,128}$/.test(handle)) return { ...run, failure: `${exchangeLine(first)}: a 202 without a usable handle (seed: the 202 answer carries handle)` };
    run.handle = handle;
    const read = (format?: string, key?: string) =>
      ctx.http.send({ path: `/v1/results/${encodeURIComponent(handle)}`, ...(format ? { query: { format } } : {}), ...(key ? { key } : {}) });

    run.second = await call();
    run.runningRead = await read("csv");
    let last = run.runningRead;
    if (last.status !== 202) last = await read();
    const budget = ctx.options.pollBudgetMs;
    for (let polls = 0; last.status === 202; polls++) {
      const asked = askedWait(last);
      if (Date.now() + asked - started > budget || polls >= 60) {
        run.notApplicable = `the run ${handle} had not ended after ${Math.round((Date.now() - started) / 1000)} s of polling (budget ${budget / 1000} s; last ${got(last, 120)})`;
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
  if (f.status === 500 && bodyOf(f)["code"] === "internal_error") return { verdict: na(`the run broke on the server's side (${got(f, 160)}); nothing to compare (seed: a broken run reads 500 internal_error)`) };
  if (f.status !== 200 || !isObject(f.json)) return { verdict: fail(`the finished read ${exchangeLine(f)}; expected HTTP 200 with the original call's answer (${RUN_RULE}: finished → the original answer and status)`) };
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
      if (c === '"' && text[i + 1] === '"') (cell += '"', i++);
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") (row.push(cell), (cell = ""));
    else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell !== "" || row.length) (row.push(cell), rows.push(row));
  return rows;
}

/** The first line where two texts differ (for messages). */
function lineDiff(want: string, gotText: string): string {
  const a = want.split("\n");
  const b = gotText.split("\n");
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `line ${i + 1}: expected ${JSON.stringify((a[i] ?? "(none)").slice(0, 120))}, got ${JSON.stringify((b[i] ?? "(none)").slice(0, 120))}`;
  }
  return "the texts differ";
}

export const runChecks: Check[] = [
  {
    id: "runs.202-answer",
    title: "a call that cannot finish in time answers 202 with a handle, Retry-After and charge 0",
    async run(ctx) {
      const r = await withRun(ctx, false);
      if (r.verdict) return r.verdict;
      const run = r.value;
      const first = run.first!;
      const body = bodyOf(first);
      const v = validateHandleAnswer(body);
      if (!v.ok) return fail(`${exchangeLine(first)}; not the handle answer (${RUN_RULE}: HTTP 202 with a handle)`);
      const billing = body["billing"] as Record<string, unknown>;
      if (billing["cost_credits"] !== 0) return fail(`${exchangeLine(first)}; billing.cost_credits ${String(billing["cost_credits"])} (${RUN_RULE}: charge 0; seed Billing: nothing is charged before a run ends)`);
      return pass(`handle ${run.handle}, Retry-After ${first.headers.get("retry-after")}`);
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
      if (second.status === 200 && second.headers.get("idempotent-replayed") === "true") return na(`the run had already ended when the same call was sent again (${got(second, 100)})`);
      return refusal(second, { status: 409, code: "idempotency_in_progress", rule: "seed Idempotency: same key and parameters while the run is going → HTTP 409 idempotency_in_progress" }) ?? pass(`HTTP 409, Retry-After ${second.headers.get("retry-after")}`);
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
      if (read.status !== 202) return na(`the run had ended by the first read (${got(read, 100)})`);
      const body = bodyOf(read);
      if (body["handle"] !== run.handle || body["status"] !== "running") return fail(`${exchangeLine(read)}; expected the handle answer of ${run.handle} with status running (GET /v1/results: running → HTTP 202 with the handle body, whatever the format)`);
      return pass("HTTP 202 handle answer for format=csv");
    },
  },
  {
    id: "runs.lifecycle",
    title: "polled no sooner than Retry-After, the run ends; the finished read is the original call's answer under HTTP 200",
    async run(ctx) {
      const r = await withRun(ctx, true);
      if (r.verdict) return r.verdict;
      const run = r.value;
      for (const p of run.polls.slice(0, -1)) {
        if (p.x.status !== 202 || bodyOf(p.x)["handle"] !== run.handle) return fail(`a read before the end ${exchangeLine(p.x)}; expected HTTP 202 with the same handle (${RUN_RULE}: running → running, same body)`);
      }
      const f = await withFinished(ctx);
      if (f.verdict) return f.verdict;
      const { body } = f.value;
      // D31: a finished read is checked against the answer schema of the call that made it.
      const own = schemaProblems("search", 200, body);
      if (own.length) return fail(`the finished read ${exchangeLine(run.finished!, 160)} is not a valid answer of GET /v1/search: ${own.join("; ")} (${RUN_RULE}: finished → what the original call would have answered; D31)`);
      const params = run.params;
      if (params["platforms"] !== undefined) {
        if (!isObject(body["fanout"])) return fail(`the finished read ${exchangeLine(run.finished!, 160)} is not the fanout answer the call asked for (${RUN_RULE}: finished → the original answer; D17)`);
      } else if ("fanout" in body || body["platform"] !== params["platform"]) {
        return fail(`the finished read ${exchangeLine(run.finished!, 160)} is not the ${params["platform"]} envelope the call asked for (${RUN_RULE}: finished → exactly what the original call would have answered)`);
      }
      const applied = isObject(body["applied_params"]) ? body["applied_params"]["query"] : undefined;
      if (params["query"] !== undefined && applied !== undefined && applied !== params["query"]) return fail(`the finished read's applied_params.query ${JSON.stringify(applied)} is not the call's ${JSON.stringify(params["query"])} (${RUN_RULE})`);
      const waits = run.polls.map((p) => `${Math.round(p.waitedMs / 100) / 10}s≥${p.askedMs / 1000}s`).join(", ");
      return pass(`${run.polls.length} poll(s) after Retry-After (${waits || "none needed"}); finished status ${String(body["status"])}`);
    },
  },
  {
    id: "runs.charged-once",
    title: "the run is charged once, its billing.cost, when it ends; reads and the replay are free",
    async run(ctx) {
      const r = await withFinished(ctx);
      if (r.verdict) return r.verdict;
      const { run, body } = r.value;
      if (run.balanceBefore === undefined || run.balanceAfter === undefined) return fail("could not read the balance before and after the run (D10)");
      const cost = Number((body["billing"] as Record<string, unknown> | undefined)?.["cost"]);
      const moved = run.balanceBefore - run.balanceAfter;
      if (moved !== cost) {
        return fail(`the balance moved by ${moved} (${run.balanceBefore} → ${run.balanceAfter}) over the run, its reads and its replay, but the finished answer's billing.cost is ${cost} (${RUN_RULE}: charge applied once; seed Billing: reading a stored result is free; D7)`);
      }
      return pass(`charged ${cost} once (${run.balanceBefore} → ${run.balanceAfter})`);
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
      const reads = [run.runningRead, ...run.polls.map((p) => p.x), run.again].filter((x): x is Exchange => x !== undefined && (x.status === 200 || x.status === 202) && isObject(x.json));
      for (const x of reads) {
        if (bodyOf(x)["request_id"] !== id) {
          return fail(`${exchangeLine(x, 160)}; request_id ${JSON.stringify(bodyOf(x)["request_id"] ?? null)}, expected the call's ${JSON.stringify(id)} (D47: a running or finished read keeps the original call's request_id: one call, one id to quote)`);
        }
      }
      const running = reads.filter((x) => x.status === 202).length;
      const finished = reads.length - running;
      if (!finished) return pass(`${running} running read(s) kept ${String(id)}; the run did not end within the budget, so no finished read was compared`);
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
      if (again.status !== 200) return fail(`the second read ${exchangeLine(again)}; expected HTTP 200 (${RUN_RULE}: finished → finished, repeatable)`);
      const a = without(body, ["billing.balance", "billing.balance_credits"]);
      const b = without(again.json, ["billing.balance", "billing.balance_credits"]);
      if (!sameJson(a, b)) return fail(`two reads of ${run.handle} differ at ${firstDifference(a, b)} (${RUN_RULE}: returns the original answer and status; repeatable)`);
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
      if (csv.status !== 200 || !/^text\/csv\b/i.test(csv.headers.get("content-type") ?? "")) return fail(`${exchangeLine(csv, 160)} (content-type ${JSON.stringify(csv.headers.get("content-type"))}); expected HTTP 200 text/csv (GET /v1/results: format csv)`);
      for (const [r, row] of parseCsv(csv.text).entries()) {
        for (const [c, cell] of row.entries()) {
          if (/^[=+\-@]/.test(cell)) return fail(`csv row ${r + 1} column ${c + 1} is ${JSON.stringify(cell.slice(0, 60))}: a cell that starts with =, +, - or @ must get an apostrophe in front (seed File formats 4)`);
        }
      }
      const want = toCsv(body);
      if (csv.text !== want) return fail(`the csv is not the rendering of the JSON read: ${lineDiff(want, csv.text)} (seed File formats 1–4: a column for every field, nested a.b, lists in one cell; D31: RFC 4180 quoting, header order as first met, lists as JSON)`);
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
      if (nd.status !== 200 || !/^application\/x-ndjson\b/i.test(nd.headers.get("content-type") ?? "")) return fail(`${exchangeLine(nd, 160)} (content-type ${JSON.stringify(nd.headers.get("content-type"))}); expected HTTP 200 application/x-ndjson (GET /v1/results: format ndjson)`);
      const want = toNdjson(body);
      if (nd.text !== want) return fail(`the ndjson is not the rendering of the JSON read: ${lineDiff(want, nd.text)} (seed File formats 5: one JSON object per line; D31: rows are the items in order)`);
      return pass(`${nd.text.split("\n").filter(Boolean).length} line(s), byte-identical to toNdjson`);
    },
  },
  {
    id: "idempotency.replay-after-run",
    title: "the same key and parameters after the run ended → 200, the finished answer, Idempotent-Replayed: true (D40)",
    async run(ctx) {
      const r = await withFinished(ctx);
      if (r.verdict) return r.verdict;
      const { run, body } = r.value;
      const replay = run.replay!;
      if (replay.status !== 200) return fail(`${exchangeLine(replay)}; expected HTTP 200 with the finished answer (seed Idempotency: after the run has ended the first result is returned again; D40)`);
      if (replay.headers.get("idempotent-replayed") !== "true") return fail(`${exchangeLine(replay, 120)} came without Idempotent-Replayed: true (D35)`);
      const keep = (v: unknown) => (isObject(v) ? { status: v["status"], items: v["items"], fanout: v["fanout"], cost: (v["billing"] as Record<string, unknown> | undefined)?.["cost"] } : v);
      if (!sameJson(keep(body), keep(replay.json))) return fail(`the replay differs from the finished read at ${firstDifference(keep(body), keep(replay.json))} (seed Idempotency: the first result is returned again; D35: unchanged)`);
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
      return refusal(run.otherKey!, { status: 404, code: "not_found", rule: "seed Authentication 6: a results handle is read only by the key that started the call; another key gets 404 not_found" }) ?? pass("HTTP 404 not_found");
    },
  },
  {
    id: "results.format-invalid",
    title: "format=xlsx → 400 invalid_params naming format",
    async run(ctx) {
      const run = await slowRun(ctx);
      const rule = "seed GET /v1/results: format is json, csv or ndjson; any other value gives invalid_params (case 12)";
      if (run.xlsx) return refusal(run.xlsx, { status: 400, code: "invalid_params", param: ["format"], rule }) ?? pass(`HTTP 400 naming format (handle of the 202 run)`);
      const x = await ctx.http.send({ path: `/v1/results/conformance-${crypto.randomUUID()}`, query: { format: "xlsx" } });
      if (x.status === 404) return na(`no handle of this key to read (${run.notApplicable ?? "no 202"}), and the server checks the handle before the format (${got(x, 80)})`);
      return refusal(x, { status: 400, code: "invalid_params", param: ["format"], rule }) ?? pass("HTTP 400 naming format (unknown handle)");
    },
  },
  {
    id: "results.unknown-handle",
    title: "an unknown handle → 404 not_found with fix.param handle",
    run: (ctx) =>
      expectRefusal(
        ctx,
        { path: `/v1/results/conformance-${crypto.randomUUID()}` },
        { status: 404, code: "not_found", param: ["handle"], rule: "seed: unknown handle → 404 not_found; Cases by code: fix.param is handle" },
      ),
  },
];
