/** Helpers shared by the checks: verdicts, refusal expectations, balances. */
import type { CheckContext, Verdict } from "../types.ts";
import { exchangeLine, type Exchange, type RequestSpec } from "../http.ts";

/** A passed verdict. */
export const pass = (message = ""): Verdict => ({ outcome: "passed", message });
/** A failed verdict: what was sent, what came back, which rule. */
export const fail = (message: string): Verdict => ({ outcome: "failed", message });
/** A not-applicable verdict, with why. */
export const na = (message: string): Verdict => ({ outcome: "not_applicable", message });

type Json = Record<string, unknown>;
/** True for a plain JSON object. */
export const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
/** The JSON body of an exchange as an object (empty when it is not one). */
export const bodyOf = (x: Exchange): Json => (isObject(x.json) ? x.json : {});
/** The `fix` of an error answer (empty when absent). */
export const fixOf = (x: Exchange): Json => (isObject(bodyOf(x)["fix"]) ? (bodyOf(x)["fix"] as Json) : {});

/** What a refusal must look like. */
export interface Refusal {
  status: number;
  code: string;
  /** `fix.param` must be one of these (compared case-insensitively: header names). */
  param?: readonly string[];
  /** `reason` must be this. */
  reason?: string;
  /** The rule, as quoted in the message: `seed: count is 1 to 20`, `D25`, … */
  rule: string;
}

/** Checks an exchange against an expected refusal; a failed verdict saying what differs, or `undefined` when it matches. */
export function refusal(x: Exchange, want: Refusal): Verdict | undefined {
  const body = bodyOf(x);
  const expected =
    `expected HTTP ${want.status} ` +
    `\`${want.code}\`${want.reason ? ` reason \`${want.reason}\`` : ""}${
      want.param ? ` with fix.param \`${want.param.join("` or `")}\`` : ""
    } (${want.rule})`;
  const wrong: string[] = [];
  if (x.status !== want.status) wrong.push(`HTTP ${x.status}`);
  if (body["code"] !== want.code) wrong.push(`code ${JSON.stringify(body["code"] ?? null)}`);
  if (want.reason !== undefined && body["reason"] !== want.reason)
    wrong.push(`reason ${JSON.stringify(body["reason"] ?? null)}`);
  if (want.param) {
    const param = fixOf(x)["param"];
    if (typeof param !== "string" || !want.param.some((p) => p.toLowerCase() === param.toLowerCase()))
      wrong.push(`fix.param ${JSON.stringify(param ?? null)}`);
  }
  return wrong.length ? fail(`${exchangeLine(x)}; got ${wrong.join(", ")}; ${expected}`) : undefined;
}

/** Sends a request and checks it is refused as expected. */
export async function expectRefusal(
  ctx: CheckContext,
  spec: RequestSpec,
  want: Refusal,
  passMessage?: string,
): Promise<Verdict> {
  const x = await ctx.http.send(spec);
  return (
    refusal(x, want) ??
    pass(
      passMessage ??
        `HTTP ${x.status} ${want.code}${want.param ? ` naming \`${String(fixOf(x)["param"])}\`` : ""}${want.reason ? ` reason ${want.reason}` : ""}`,
    )
  );
}

/**
 * The key that carries the suite's deliberate refusals (bad parameters): the second key when there is one. A server
 * may hold a key back after many failed calls (`free_failure_limit`; D27 and D45: 20 within 60 s on the reference
 * server), so the refusals are kept off the main key, whose calls must succeed.
 */
export const refusalKey = (ctx: CheckContext): string => ctx.options.secondKey ?? ctx.options.key;

/**
 * The balance of a key's account, read from `GET /v1/account` (free, D10), for a comparison with another read.
 * First it settles every background run the suite started (`Http.settle`): a run started by an earlier check
 * is charged when it ends, and would otherwise move the balance between two reads. When a run is still going
 * after the poll budget, the comparison cannot be trusted: the answer is a not-applicable verdict naming the run;
 * when the balance cannot be read, a failed one.
 */
export async function balanceOf(
  ctx: CheckContext,
  key?: string,
): Promise<{ ok: true; balance: number } | { ok: false; verdict: Verdict }> {
  const settled = await ctx.http.settle(ctx.options.pollBudgetMs);
  if (settled.open.length) {
    const runs = settled.open.map((r) => `${r.handle} (${r.startedBy})`).join(", ");
    return {
      ok: false,
      verdict: na(
        `${settled.open.length} background run(s) the suite started had not ended after the poll ` +
          `budget of ${ctx.options.pollBudgetMs / 1000} s: ${runs}; each is charged when it ends, so a ` +
          `balance compared now could move by its charge (raise --poll-budget)`,
      ),
    };
  }
  try {
    const account = await (key ? ctx.clientFor(key) : ctx.client).account();
    return { ok: true, balance: account.billing.balance_credits };
  } catch (e) {
    const last = ctx.http.exchanges.at(-1);
    return {
      ok: false,
      verdict: fail(
        `could not read the balance ` +
          `(${(e as Error).message}): ${last ? exchangeLine(last) : "no answer"} (D10: GET /v1/account ` +
          `answers billing.balance_credits)`,
      ),
    };
  }
}

/** Deep equality of JSON values. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && sameJson(a[k], b[k]));
  }
  return false;
}

/** The first JSON pointer where two values differ (for messages). */
export function firstDifference(a: unknown, b: unknown, path = ""): string | undefined {
  if (sameJson(a, b)) return undefined;
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference(a[k], b[k], `${path}/${k}`);
      if (d) return d;
    }
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}/${i}`);
      if (d) return d;
    }
  }
  return `${path || "/"}: ${JSON.stringify(a)?.slice(0, 80)} vs ${JSON.stringify(b)?.slice(0, 80)}`;
}

/** A copy of a JSON value without some top-level paths (e.g. `billing.balance`, which is "as of the read"). */
export function without(value: unknown, paths: readonly string[]): unknown {
  const copy = JSON.parse(JSON.stringify(value ?? null)) as unknown;
  for (const p of paths) {
    const parts = p.split(".");
    let v: unknown = copy;
    for (const part of parts.slice(0, -1)) v = isObject(v) ? v[part] : undefined;
    if (isObject(v)) delete v[parts.at(-1)!];
  }
  return copy;
}
