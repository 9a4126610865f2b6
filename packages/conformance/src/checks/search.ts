/** `GET /v1/search`: a plain call and its billing, the fanout answer (D3, D4), and the parameter bounds. */
import type { Platform } from "@sdgw/types";
import { exchangeLine, type Exchange, type RequestSpec } from "../http.ts";
import type { Check, CheckContext } from "../types.ts";
import { balanceOf, bodyOf, expectRefusal, fail, isObject, na, pass, refusalKey } from "./util.ts";

/** D4: the top-level status of a fanout answer from its entries' statuses. */
export function fanoutStatus(statuses: readonly string[]): string {
  if (statuses.includes("ok")) return "ok";
  if (statuses.includes("empty")) return "empty";
  const first = statuses[0];
  if (first !== undefined && (first === "not_supported" || first === "timeout") && statuses.every((s) => s === first))
    return first;
  return "error";
}

interface Bound {
  id: string;
  title: string;
  spec(ctx: CheckContext): RequestSpec;
  param: readonly string[];
  rule: string;
}

const q = (ctx: CheckContext, extra: Record<string, string | number>): RequestSpec => ({
  path: "/v1/search",
  query: { platform: ctx.options.platform, query: "conformance bounds", ...extra },
});

const BOUNDS: Bound[] = [
  {
    id: "params.count-0",
    title: "count=0 → 400 invalid_params naming count",
    spec: (ctx) => q(ctx, { count: 0 }),
    param: ["count"],
    rule: "seed: count is 1 to 20",
  },
  {
    id: "params.count-21",
    title: "count=21 → 400 invalid_params naming count",
    spec: (ctx) => q(ctx, { count: 21 }),
    param: ["count"],
    rule: "seed: count is 1 to 20",
  },
  {
    id: "params.query-empty",
    title: "query= (empty) → 400 invalid_params naming query",
    spec: (ctx) => q(ctx, { query: "" }),
    param: ["query"],
    rule: "seed: query is required, min length 1 (invalid_params case 2)",
  },
  {
    id: "params.query-501",
    title: "a query of 501 characters → 400 invalid_params naming query",
    spec: (ctx) => q(ctx, { query: "q".repeat(501) }),
    param: ["query"],
    rule: "seed invalid_params case 2: query is text of 1 to 500 characters",
  },
  {
    id: "params.platforms-6",
    title: "six platforms → 400 invalid_params naming platforms",
    spec: () => ({
      path: "/v1/search",
      query: { platforms: "x,reddit,weibo,zhihu,bilibili,youtube", query: "conformance bounds" },
    }),
    param: ["platforms"],
    rule: "seed: platforms takes 1 to 5 unique values (invalid_params case 7)",
  },
  {
    id: "params.platforms-duplicate",
    title: "a platform twice in platforms → 400 invalid_params naming platforms",
    spec: (ctx) => ({
      path: "/v1/search",
      query: {
        platforms: `${ctx.options.fanoutPlatforms[0]},${ctx.options.fanoutPlatforms[0]}`,
        query: "conformance bounds",
      },
    }),
    param: ["platforms"],
    rule: "seed: platforms is an array of 1 to 5 unique platform values",
  },
  {
    id: "params.cursor-with-platforms",
    title: "cursor with platforms → 400 invalid_params naming cursor (D19)",
    spec: (ctx) => ({
      path: "/v1/search",
      query: {
        platforms: ctx.options.fanoutPlatforms.join(","),
        query: "conformance bounds",
        cursor: "conformance-cursor",
      },
    }),
    param: ["cursor"],
    rule: "D19: cursor together with platforms is invalid_params naming cursor",
  },
  {
    id: "params.limit-51",
    title: "limit=51 on POST /v1/comments → 400 invalid_params naming limit",
    spec: (ctx) => ({
      method: "POST",
      path: "/v1/comments",
      body: { platform: ctx.options.platform, id: "1", limit: 51 },
    }),
    param: ["limit"],
    rule: "seed invalid_params case 3: limit is a whole number from 1 to 50",
  },
  {
    id: "params.max-cost-negative",
    title: "max_cost_credits=-1 → 400 invalid_params naming max_cost_credits",
    spec: (ctx) => q(ctx, { max_cost_credits: -1 }),
    param: ["max_cost_credits"],
    rule: "seed invalid_params case 11: max_cost_credits is a whole number, 0 or more (D21)",
  },
  {
    id: "params.body-content-type",
    title: "a JSON body sent as text/plain (not Content-Type: application/json) → 400 invalid_params naming body",
    spec: (ctx) => ({
      method: "POST",
      path: "/v1/search",
      body: { platform: ctx.options.platform, query: "conformance content type" },
      headers: { "Content-Type": "text/plain" },
    }),
    param: ["body"],
    rule: "seed invalid_params case 1: a body must be one JSON object sent with Content-Type: application/json",
  },
  {
    id: "params.id-and-url",
    title: "both id and url on POST /v1/detail → 400 invalid_params naming id or url",
    spec: (ctx) => ({
      method: "POST",
      path: "/v1/detail",
      body: { platform: ctx.options.platform, id: "1", url: "https://example.com/post/1" },
    }),
    param: ["id", "url"],
    rule: "seed invalid_params case 6: exactly one of id, url must be given",
  },
];

export const searchChecks: Check[] = [
  {
    id: "search.single",
    title:
      "platform=<p> → 200 envelope of that platform; an ok/empty answer costs what the balance moved, a failure nothing",
    async run(ctx) {
      const before = await balanceOf(ctx);
      if (!before.ok) return before.verdict;
      // Through the SDK, as a client would call it (the exchange is recorded all the same).
      let x: Exchange;
      try {
        await ctx.client.search(
          { platform: ctx.options.platform as Platform, query: "conformance single", count: 3 },
          { wait: false },
        );
        x = ctx.http.exchanges.at(-1)!;
      } catch (e) {
        const last = ctx.http.exchanges.at(-1);
        return fail(
          `${last ? exchangeLine(last) : (e as Error).message}; expected HTTP 200 with the envelope (seed GET /v1/search responses)`,
        );
      }
      if (x.status === 202)
        return na(
          `${exchangeLine(x, 120)}: the call ran in the background; its billing is checked by runs.charged-once`,
        );
      if (x.status !== 200)
        return fail(`${exchangeLine(x)}; expected HTTP 200 with the envelope (seed GET /v1/search responses)`);
      const body = bodyOf(x);
      if ("fanout" in body || body["platform"] !== ctx.options.platform)
        return fail(
          `${exchangeLine(x)}; expected the single-platform envelope with platform "${ctx.options.platform}" (D17: platform answers the envelope)`,
        );
      const after = await balanceOf(ctx);
      if (!after.ok) return after.verdict;
      const billing = isObject(body["billing"]) ? body["billing"] : {};
      const cost = Number(billing["cost"]);
      const moved = before.balance - after.balance;
      const charged = body["status"] === "ok" || body["status"] === "empty";
      if (charged && moved !== cost)
        return fail(
          `${exchangeLine(x, 160)}; billing.cost ${cost} but the balance moved by ${moved} ` +
            `(${before.balance} → ${after.balance}) (seed: billing is in credits; an ok or empty call is ` +
            `charged its cost once)`,
        );
      if (!charged && moved !== 0)
        return fail(
          `${exchangeLine(x, 160)}; status ${String(body["status"])} but the balance moved by ${moved} (seed Billing: a failed call is never charged)`,
        );
      if (charged && billing["balance"] !== after.balance)
        return fail(
          `${exchangeLine(x, 160)}; billing.balance ${String(billing["balance"])} but GET ` +
            `/v1/account then says ${after.balance} (seed: the billing block shows the balance)`,
        );
      return pass(
        `status ${String(body["status"])}, ${Array.isArray(body["items"]) ? body["items"].length : 0} ` +
          `items, cost ${cost}, balance ${before.balance} → ${after.balance}`,
      );
    },
  },
  {
    id: "search.fanout",
    title: "platforms=a,b → 200 fanout answer with exactly those entries and D4's top-level status",
    async run(ctx) {
      const [a, b] = ctx.options.fanoutPlatforms;
      const x = await ctx.http.send({
        path: "/v1/search",
        query: { platforms: `${a},${b}`, query: "conformance fanout", count: 2 },
      });
      if (x.status === 202) return na(`${exchangeLine(x, 120)}: the fanout ran in the background`);
      if (x.status !== 200)
        return fail(
          `${exchangeLine(x)}; expected HTTP 200 with the fanout answer (D17: platforms always answers the fanout answer)`,
        );
      const body = bodyOf(x);
      const fanout = body["fanout"];
      if (!isObject(fanout)) return fail(`${exchangeLine(x)}; no \`fanout\` object (seed: multi-platform answer; D17)`);
      const keys = Object.keys(fanout).sort();
      if (keys.join(",") !== [a, b].sort().join(","))
        return fail(
          `${exchangeLine(x, 160)}; fanout has entries ${JSON.stringify(keys)}, expected ` +
            `exactly ${JSON.stringify([a, b].sort())} (seed: fanout is keyed by the requested platforms)`,
        );
      const statuses = keys.map((k) => String((fanout[k] as Record<string, unknown>)["status"]));
      const want = fanoutStatus(statuses);
      if (body["status"] !== want)
        return fail(
          `${exchangeLine(x, 160)}; entries ${keys.map((k, i) => `${k}:${statuses[i]}`).join(", ")} ` +
            `make the top-level status \`${want}\`, got \`${String(body["status"])}\` (D4)`,
        );
      return pass(`status ${want} from ${keys.map((k, i) => `${k}:${statuses[i]}`).join(", ")}`);
    },
  },
  ...BOUNDS.map(
    (b): Check => ({
      id: b.id,
      title: b.title,
      run: (ctx) =>
        expectRefusal(
          ctx,
          { ...b.spec(ctx), key: refusalKey(ctx) },
          { status: 400, code: "invalid_params", param: b.param, rule: b.rule },
        ),
    }),
  ),
];
