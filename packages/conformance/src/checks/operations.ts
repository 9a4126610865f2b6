/**
 * Every operation, both ways (issue 35): one valid request per operation of the spec that must succeed (HTTP 200,
 * or 202 followed to its end), the data routes on real ids taken from a search, real `page.cursor`s followed to
 * the end, a schedule created, listed and removed, and one invalid request per operation generated from the
 * request schemas (`OPERATIONS` of @sdgw/validators, generated from spec/openapi.yaml) with a seeded generator,
 * whose seed the report prints for replay (D170).
 */
import { OPERATIONS } from "@sdgw/validators";
import { exchangeLine, heldBack, type Exchange, type OperationKey, type RequestSpec } from "../http.ts";
import type { Check, CheckContext, Verdict } from "../types.ts";
import { slowRun } from "./runs.ts";
import { balanceOf, bodyOf, fail, firstDifference, isObject, na, pass, refusal, refusalKey, sameJson } from "./util.ts";

/** A small seeded generator (mulberry32): the same seed draws the same requests. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The generator of one check: seeded by the run's seed and the check's id, so one check's draws never shift another's. */
function rngFor(ctx: CheckContext, id: string): () => number {
  let h = ctx.options.seed >>> 0;
  for (const ch of id) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return seededRandom(h);
}

const pick = <T>(rng: () => number, values: readonly T[]): T => values[Math.floor(rng() * values.length)]!;
const WORDS = ["conformance", "coffee", "travel", "music", "startup", "football", "recipes", "camera"];

/** Ids of real things, from a search of the main platform: a post, its author and their page. */
interface RealIds {
  search: Exchange;
  postId?: string;
  /** Up to three posts of the search (the first is `postId`). */
  postIds: string[];
  authorId?: string;
  authorUrl?: string;
}

/** One search of the main platform, shared: the ids every data route and tool is then called with. */
function realIds(ctx: CheckContext): Promise<RealIds> {
  return ctx.shared("real-ids", async () => {
    const search = await follow(
      ctx,
      await ctx.http.send({ path: "/v1/search", query: { platform: ctx.options.platform, query: "conformance ids" } }),
    );
    const items = Array.isArray(bodyOf(search)["items"]) ? (bodyOf(search)["items"] as unknown[]) : [];
    const posts = items.filter((i) => isObject(i) && i["kind"] === "item" && typeof i["id"] === "string");
    const post = posts[0];
    const author = isObject(post) && isObject(post["author"]) ? post["author"] : {};
    const ids: RealIds = {
      search,
      postIds: [...new Set(posts.map((p) => String((p as Record<string, unknown>)["id"])))].slice(0, 3),
    };
    if (isObject(post)) ids.postId = String(post["id"]);
    if (typeof author["id"] === "string") ids.authorId = author["id"];
    if (typeof author["url"] === "string") ids.authorUrl = author["url"];
    return ids;
  });
}

/** Follows an answer 202 to its end (reads of its handle with `key`, no sooner than Retry-After); any other answer as is. */
export async function follow(ctx: CheckContext, x: Exchange, key?: string): Promise<Exchange> {
  let last = x;
  const until = Date.now() + ctx.options.pollBudgetMs;
  while (last.status === 202 && Date.now() < until) {
    const handle = bodyOf(last)["handle"];
    if (typeof handle !== "string") return last;
    const wait = Math.min(5, Math.max(1, Number(last.headers.get("retry-after")) || 1));
    await new Promise((r) => setTimeout(r, wait * 1000));
    last = await ctx.http.send({ path: `/v1/results/${encodeURIComponent(handle)}`, ...(key ? { key } : {}) });
  }
  return last;
}

const FAILED_STATUSES = new Set(["error", "not_supported", "timeout"]);

/** Whether a final answer is a success: HTTP 200, and no failed `status` (an envelope's or a tool's). */
function success(x: Exchange): string | undefined {
  if (x.status === 202) return `still running after the poll budget: ${exchangeLine(x, 160)}`;
  if (x.status !== 200) return `${exchangeLine(x, 200)}; expected HTTP 200 (or 202 followed to 200)`;
  const status = bodyOf(x)["status"];
  if (typeof status === "string" && FAILED_STATUSES.has(status))
    return `${exchangeLine(x, 200)}; a valid request answered status \`${status}\`, expected \`ok\` or \`empty\``;
  return undefined;
}

/** What a valid request of an operation needs: a request, or why there can be none. */
type Valid = RequestSpec | { skip: string };

/** A valid request of each operation (`query` words and counts drawn from the seed). */
const VALID: Record<OperationKey, (ctx: CheckContext, rng: () => number) => Promise<Valid>> = {
  search: async (ctx, rng) => ({
    path: "/v1/search",
    query: { platform: ctx.options.platform, query: pick(rng, WORDS), count: 1 + Math.floor(rng() * 20) },
  }),
  searchPost: async (ctx, rng) => ({
    method: "POST",
    path: "/v1/search",
    body: { platform: ctx.options.platform, query: pick(rng, WORDS), count: 1 + Math.floor(rng() * 20) },
  }),
  trending: async (ctx) => ({ method: "POST", path: "/v1/trending", body: { platform: ctx.options.platform } }),
  detail: (ctx) => onPost(ctx, "/v1/detail"),
  comments: (ctx) => onPost(ctx, "/v1/comments"),
  userProfile: (ctx) => onAuthor(ctx, "/v1/user_profile"),
  userPosts: (ctx) => onAuthor(ctx, "/v1/user_posts"),
  callOperation: async (ctx, rng) => ({
    method: "POST",
    path: `/v1/call/${ctx.options.platform}.search`,
    body: { query: pick(rng, WORDS), count: 2 },
  }),
  brandBuzz: async (ctx, rng) => tool("brand_buzz", { query: pick(rng, WORDS), platforms: [ctx.options.platform] }),
  commentInsights: async (ctx) => {
    const ids = await realIds(ctx);
    return ids.postId
      ? tool("comment_insights", { targets: [`${ctx.options.platform}:${ids.postId}`], limit: 5 })
      : { skip: noIds(ids) };
  },
  accountWatch: async (ctx) => {
    const ids = await realIds(ctx);
    return ids.authorUrl ? tool("account_watch", { accounts: [ids.authorUrl], range: "7d" }) : { skip: noIds(ids) };
  },
  findCreators: async (ctx, rng) =>
    tool("find_creators", { query: pick(rng, WORDS), platforms: [ctx.options.platform], count: 3 }),
  creatorCard: async (ctx) => {
    const ids = await realIds(ctx);
    return ids.authorUrl ? tool("creator_card", { accounts: [ids.authorUrl] }) : { skip: noIds(ids) };
  },
  batchStats: async (ctx) => {
    const ids = await realIds(ctx);
    return ids.postId
      ? tool("batch_stats", { targets: [`${ctx.options.platform}:${ids.postId}`] })
      : { skip: noIds(ids) };
  },
  viralFinder: async (ctx, rng) =>
    tool("viral_finder", { query: pick(rng, WORDS), platforms: [ctx.options.platform], count: 3 }),
  findOperation: async (_ctx, rng) => ({
    method: "POST",
    path: "/v1/find",
    body: { query: pick(rng, ["comments of a post", "search posts", "user profile", "trending topics"]) },
  }),
  listCapabilities: async () => ({ path: "/v1/capabilities" }),
  getAccount: async () => ({ path: "/v1/account" }),
  listSchedules: async () => ({ path: "/v1/schedules" }),
  // Removing needs a schedule: flows.schedule creates one, lists it and removes it.
  deleteSchedule: async () => ({ skip: "checked by flows.schedule (a schedule created, listed and removed)" }),
  getResult: async (ctx) => {
    const run = await slowRun(ctx);
    const handle = run.first ? bodyOf(run.first)["handle"] : undefined;
    return typeof handle === "string"
      ? { path: `/v1/results/${encodeURIComponent(handle)}` }
      : { skip: run.notApplicable ?? "no call answered 202 with a handle" };
  },
  getOpenApiDocument: async () => ({ path: "/openapi.json", auth: "none" }),
};

const tool = (name: string, body: Record<string, unknown>): RequestSpec => ({
  method: "POST",
  path: `/v1/tools/${name}`,
  body,
});
/** Why there are no real ids: the server held the key back (D45; not applicable), or the search gave none (a failure). */
const noIds = (ids: RealIds) =>
  heldBack(ids.search) ?? `the search for real ids gave no post with an author: ${exchangeLine(ids.search, 160)}`;

async function onPost(ctx: CheckContext, path: string): Promise<Valid> {
  const ids = await realIds(ctx);
  return ids.postId
    ? { method: "POST", path, body: { platform: ctx.options.platform, id: ids.postId } }
    : { skip: noIds(ids) };
}

async function onAuthor(ctx: CheckContext, path: string): Promise<Valid> {
  const ids = await realIds(ctx);
  return ids.authorId
    ? { method: "POST", path, body: { platform: ctx.options.platform, id: ids.authorId } }
    : { skip: noIds(ids) };
}

const route = (op: OperationKey) => `${OPERATIONS[op].method.toUpperCase()} ${OPERATIONS[op].path}`;

/** `valid.<operationId>`: a valid request of the operation succeeds. */
const validChecks: Check[] = (Object.keys(VALID) as OperationKey[]).map(
  (op): Check => ({
    id: `valid.${op}`,
    title: `a valid ${route(op)} succeeds: HTTP 200 (or 202 followed to its end), status ok or empty`,
    async run(ctx) {
      const spec = await VALID[op](ctx, rngFor(ctx, `valid.${op}`));
      if ("skip" in spec) {
        if (/^checked by/.test(spec.skip)) return pass(spec.skip);
        return spec.skip.startsWith("the search") ? fail(spec.skip) : na(spec.skip);
      }
      const x = await follow(ctx, await ctx.http.send(spec));
      const wrong = success(x);
      return wrong ? fail(`${wrong} (seed: ${route(op)} answers a valid request)`) : pass(`HTTP ${x.status}`);
    },
  }),
);

/** One way to make a valid request invalid, and the parameter the refusal must name. */
interface Breakage {
  param: string;
  what: string;
  apply(body: Record<string, unknown>): void;
}

/** The breakages a request schema allows: a required parameter left out, a value outside its enum, a fraction for a whole number. */
export function breakagesOf(op: OperationKey): Breakage[] {
  const o = OPERATIONS[op] as { body?: { params?: Record<string, ParamRule> }; query?: Record<string, ParamRule> };
  const params = o.body?.params ?? o.query ?? {};
  const out: Breakage[] = [];
  for (const [name, rule] of Object.entries(params)) {
    if (rule.required)
      out.push({ param: name, what: `without the required \`${name}\``, apply: (b) => void delete b[name] });
    if (rule.allowed && rule.coerce === "string")
      out.push({
        param: name,
        what: `${name}="conformance-none"`,
        apply: (b) => {
          b[name] = "conformance-none";
        },
      });
    if (rule.allowed && rule.coerce === "list" && op !== "search")
      out.push({
        param: name,
        what: `${name}=["conformance-none"]`,
        apply: (b) => {
          b[name] = ["conformance-none"];
        },
      });
    if (rule.coerce === "integer")
      out.push({
        param: name,
        what: `${name}=1.5 (not a whole number)`,
        apply: (b) => {
          b[name] = 1.5;
        },
      });
  }
  // `platform` and `platforms` are alternatives (D17): leaving one out is no breakage when the other may stand in.
  return out.filter((b) => !(b.what.startsWith("without") && b.param === "platform" && "platforms" in params));
}

interface ParamRule {
  required?: boolean;
  coerce?: string;
  allowed?: readonly string[];
}

/** `params.generated.<operationId>`: one invalid request drawn from the schema is refused 400 invalid_params naming the parameter. */
const generatedChecks: Check[] = (Object.keys(VALID) as OperationKey[])
  .filter((op) => breakagesOf(op).length > 0)
  .map(
    (op): Check => ({
      id: `params.generated.${op}`,
      title: `an invalid ${route(op)} drawn from its request schema → 400 invalid_params naming the parameter`,
      async run(ctx) {
        const rng = rngFor(ctx, `params.generated.${op}`);
        const spec = await VALID[op](ctx, rng);
        if ("skip" in spec) return na(spec.skip);
        const broken = pick(rng, breakagesOf(op));
        const key = refusalKey(ctx);
        let sent: RequestSpec;
        if (spec.method === "POST" && isObject(spec.body)) {
          const body = { ...spec.body };
          broken.apply(body);
          sent = { ...spec, body, key };
        } else {
          const query: Record<string, unknown> = { ...(spec.query as Record<string, string | number>) };
          broken.apply(query);
          sent = { ...spec, query: query as Record<string, string | number>, key };
        }
        const x = await ctx.http.send(sent);
        const wrong = refusal(x, {
          status: 400,
          code: "invalid_params",
          param: [broken.param],
          rule: `spec/openapi.yaml request schema of ${op}; seed invalid_params; seed ${ctx.options.seed} replays it`,
        });
        return (
          wrong ?? pass(`${broken.what} → HTTP 400 invalid_params naming ${broken.param} (seed ${ctx.options.seed})`)
        );
      },
    }),
  );

/** Whether a page answer is a success with its `page`; a message otherwise. */
function pageOf(x: Exchange): { cursor?: string; ids: string[] } | string {
  const wrong = success(x);
  if (wrong) return wrong;
  const body = bodyOf(x);
  const page = isObject(body["page"]) ? body["page"] : {};
  const items = Array.isArray(body["items"]) ? body["items"] : [];
  const ids = items.map((i) => (isObject(i) ? String(i["id"]) : ""));
  return page["has_more"] === true && typeof page["cursor"] === "string" ? { cursor: page["cursor"], ids } : { ids };
}

const MAX_PAGES = 3;

const flowChecks: Check[] = [
  {
    id: "runs.all-ended",
    title: "every background run the suite started (each 202 with a handle) ends within the poll budget",
    async run(ctx) {
      const settled = await ctx.http.settle(ctx.options.pollBudgetMs);
      const started = ctx.http.runs.length;
      if (!started) return na("no call answered 202: no background run to follow");
      if (settled.open.length)
        return fail(
          `${settled.open.length} of ${started} background run(s) had not ended after the poll budget of ${ctx.options.pollBudgetMs / 1000} s: ${settled.open
            .map((r) => `${r.handle} (${r.startedBy}, last HTTP ${r.lastStatus})`)
            .join(
              ", ",
            )} (seed States and transitions: running → finished or timeout; D172: within the poll budget, raise --poll-budget for slower runs)`,
        );
      return pass(`${started} run(s) ended`);
    },
  },
  {
    id: "flows.pagination",
    title: "a search's page.cursor followed to the end: every page succeeds with new items",
    async run(ctx) {
      const query = { platform: ctx.options.platform, query: "conformance paging", count: 5 };
      let x = await follow(ctx, await ctx.http.send({ path: "/v1/search", query }));
      const seen = new Set<string>();
      for (let n = 1; ; n++) {
        const page = pageOf(x);
        if (typeof page === "string")
          return fail(`page ${n}: ${page} (seed paging: page.cursor of the previous answer reads the next page)`);
        if (n > 1 && page.ids.length && page.ids.every((id) => seen.has(id)))
          return fail(`page ${n} repeats the items of earlier pages: ${exchangeLine(x, 160)} (seed paging)`);
        for (const id of page.ids) seen.add(id);
        if (!page.cursor)
          return n > 1 ? pass(`${n} pages, ${seen.size} items`) : na(`one page only: ${exchangeLine(x, 120)}`);
        if (n >= MAX_PAGES) return pass(`${n} pages followed (stopped there), ${seen.size} items`);
        x = await follow(ctx, await ctx.http.send({ path: "/v1/search", query: { ...query, cursor: page.cursor } }));
      }
    },
  },
  {
    id: "flows.quote-run",
    title:
      "a tool quoted with confirm: false (free), then run with max_cost_credits at its quote, is charged exactly the quoted credits",
    async run(ctx) {
      const ids = await realIds(ctx);
      if (!ids.postIds.length) return heldBack(ids.search) ? na(noIds(ids)) : fail(noIds(ids));
      const body = { targets: ids.postIds.map((id) => `${ctx.options.platform}:${id}`) };
      const rule =
        "seed: max_cost_credits refuses a call whose quote is higher; D51: confirm: false answers the plan and price, free";
      const b0 = await balanceOf(ctx);
      if (!b0.ok) return b0.verdict;
      const quote = await ctx.http.send(tool("batch_stats", { ...body, confirm: false }));
      const q = bodyOf(quote)["quote"];
      const credits = isObject(q) ? q["quote_credits"] : undefined;
      if (quote.status !== 200 || typeof credits !== "number" || !Number.isInteger(credits) || credits < 0)
        return (
          (heldBack(quote) && na(heldBack(quote)!)) ||
          fail(`${exchangeLine(quote, 200)}; expected HTTP 200 with quote.quote_credits, a whole number (${rule})`)
        );
      const b1 = await balanceOf(ctx);
      if (!b1.ok) return b1.verdict;
      if (b1.balance !== b0.balance)
        return fail(
          `the quote ${exchangeLine(quote, 120)} moved the balance ${b0.balance} → ${b1.balance} (seed: a tool quote with confirm: false is free)`,
        );
      const ran = await follow(ctx, await ctx.http.send(tool("batch_stats", { ...body, max_cost_credits: credits })));
      const wrong = success(ran);
      if (wrong)
        return (heldBack(ran) && na(heldBack(ran)!)) || fail(`${wrong} (the run of a quote of ${credits}: ${rule})`);
      const b2 = await balanceOf(ctx);
      if (!b2.ok) return b2.verdict;
      const answer = bodyOf(ran);
      const billing = isObject(answer["billing"]) ? answer["billing"] : {};
      const cost = billing["cost_credits"];
      const moved = b1.balance - b2.balance;
      if (moved !== cost)
        return fail(
          `the run ${exchangeLine(ran, 120)} says billing.cost_credits ${String(cost)} but the ` +
            `balance moved by ${moved} (${b1.balance} → ${b2.balance}) (seed Billing: the answer says what was charged)`,
        );
      if (moved > credits)
        return fail(
          `quoted ${credits} credits and run with max_cost_credits ${credits}, the call was ` +
            `charged ${moved} (${b1.balance} → ${b2.balance}): more than its quote (${rule}: a cost over ` +
            `max_cost_credits is refused 402 max_cost_exceeded, never charged)`,
        );
      if (moved < credits && answer["status"] === "ok")
        return fail(
          `quoted ${credits} credits, the run answered status ok and was charged ${moved} ` +
            `(${b1.balance} → ${b2.balance}): with every planned call answered, the charge is the quote (D51: ` +
            `1 credit per planned call that answers)`,
        );
      return pass(
        `batch_stats of ${body.targets.length} post(s): quoted ${credits} (free), run and ` +
          `charged ${moved} (${b1.balance} ` +
          `→ ${b2.balance})${
            moved < credits ? `, status ${String(answer["status"])}: calls that did not answer are not charged` : ""
          }`,
      );
    },
  },
  {
    id: "params.cursor-long",
    title: "a made-up cursor of 200 characters → 400 invalid_params naming cursor (never a 500)",
    async run(ctx) {
      const x = await ctx.http.send({
        path: "/v1/search",
        query: { platform: ctx.options.platform, query: "conformance cursor", cursor: "c".repeat(200) },
        key: refusalKey(ctx),
      });
      return (
        refusal(x, {
          status: 400,
          code: "invalid_params",
          param: ["cursor"],
          rule: "seed: cursor is the page.cursor of an earlier answer; anything else is invalid_params",
        }) ?? pass("HTTP 400 invalid_params naming cursor")
      );
    },
  },
  {
    id: "flows.schedule",
    title: "account_watch with schedule creates a schedule, GET /v1/schedules lists it, DELETE removes it",
    async run(ctx) {
      const ids = await realIds(ctx);
      if (!ids.authorUrl) return heldBack(ids.search) ? na(noIds(ids)) : fail(noIds(ids));
      const made = await follow(
        ctx,
        await ctx.http.send(
          tool("account_watch", { accounts: [ids.authorUrl], range: "today", schedule: { every: "1d" } }),
        ),
      );
      const wrong = success(made);
      if (wrong) return fail(`${wrong} (D11: account_watch with schedule creates a schedule)`);
      const list = await ctx.http.send({ path: "/v1/schedules" });
      const schedules = Array.isArray(bodyOf(list)["schedules"]) ? (bodyOf(list)["schedules"] as unknown[]) : [];
      const mine = schedules.filter(isObject).find((s) => s["tool"] === "account_watch");
      if (list.status !== 200 || !mine || typeof mine["id"] !== "string")
        return fail(
          `${exchangeLine(list, 200)}; expected HTTP 200 listing the account_watch schedule just created (D11)`,
        );
      const id = mine["id"];
      const del = await ctx.http.send({ method: "DELETE", path: `/v1/schedules/${encodeURIComponent(id)}` });
      if (del.status !== 200 || bodyOf(del)["deleted"] !== true)
        return fail(`${exchangeLine(del, 200)}; expected HTTP 200 with deleted: true`);
      const again = await ctx.http.send({ path: "/v1/schedules" });
      const left = (Array.isArray(bodyOf(again)["schedules"]) ? (bodyOf(again)["schedules"] as unknown[]) : []).filter(
        (s) => isObject(s) && s["id"] === id,
      );
      if (again.status !== 200 || left.length)
        return fail(`${exchangeLine(again, 200)}; the removed schedule ${id} is still listed`);
      return pass(`schedule ${id} created, listed and removed`);
    },
  },
];

/** A JSON-RPC exchange with the server's MCP endpoint (not recorded: MCP answers are not the HTTP contract's). */
async function rpc(
  ctx: CheckContext,
  method: string,
  params: unknown,
  id: number | null,
): Promise<{ status: number; message?: Record<string, unknown>; text: string }> {
  const res = await ctx.options.fetch(`${ctx.options.baseUrl}${ctx.options.mcpPath}`, {
    method: "POST",
    headers: {
      "X-API-Key": ctx.options.key,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": "2025-06-18",
    },
    body: JSON.stringify(id === null ? { jsonrpc: "2.0", method, params } : { jsonrpc: "2.0", id, method, params }),
    signal: AbortSignal.timeout(ctx.options.requestTimeoutMs),
  });
  const text = await res.text();
  // JSON, or server-sent events whose data lines carry the message.
  const raw = /event-stream/.test(res.headers.get("content-type") ?? "")
    ? (text
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trim())
        .at(-1) ?? "")
    : text;
  let message: Record<string, unknown> | undefined;
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (isObject(parsed)) message = parsed;
  } catch {
    message = undefined;
  }
  return { status: res.status, text: ctx.http.redact(text.slice(0, 200)), ...(message ? { message } : {}) };
}

/** The seconds to wait when a tool result is an error `rate_limited` (its retry_after, at least 1); 0 otherwise. */
function rateLimitedTool(call: { message?: Record<string, unknown> }): number {
  const r = isObject(call.message?.["result"]) ? call.message["result"] : undefined;
  if (r?.["isError"] !== true) return 0;
  const structured = isObject(r["structuredContent"]) ? r["structuredContent"] : undefined;
  const text = JSON.stringify(r["content"] ?? "");
  if (structured?.["code"] !== "rate_limited" && !/\brate_limited\b/.test(text)) return 0;
  return Math.max(1, Math.ceil(Number(structured?.["retry_after"]) || 1));
}

/** The result of a tools/call: the exchange, the tool result and its structuredContent. */
interface ToolCall {
  call: Awaited<ReturnType<typeof rpc>>;
  result?: Record<string, unknown>;
  structured?: Record<string, unknown>;
}

/**
 * Calls an MCP tool: again after a `rate_limited` result's wait (an earlier check's burst), and an answer with
 * status running read on with `{ handle }` until it ends (within the poll budget).
 */
async function callTool(ctx: CheckContext, name: string, args: Record<string, unknown>, id: number): Promise<ToolCall> {
  let call = await rpc(ctx, "tools/call", { name, arguments: args }, id);
  for (let retry = 0; retry < ctx.options.rateLimitRetries && rateLimitedTool(call); retry++) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(5, rateLimitedTool(call)) * 1000));
    call = await rpc(ctx, "tools/call", { name, arguments: args }, id);
  }
  let r = isObject(call.message?.["result"]) ? call.message["result"] : undefined;
  let structured = r && isObject(r["structuredContent"]) ? r["structuredContent"] : undefined;
  const until = Date.now() + ctx.options.pollBudgetMs;
  let reads = 0;
  while (structured?.["status"] === "running" && typeof structured["handle"] === "string" && Date.now() < until) {
    const wait = Math.min(5, Math.max(1, Number(structured["retry_after_seconds"]) || 1));
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    call = await rpc(ctx, "tools/call", { name, arguments: { handle: structured["handle"] } }, id + 100 + reads++);
    r = isObject(call.message?.["result"]) ? call.message["result"] : undefined;
    structured = r && isObject(r["structuredContent"]) ? r["structuredContent"] : undefined;
  }
  return { call, ...(r ? { result: r } : {}), ...(structured ? { structured } : {}) };
}

/** The rows of an answer as D30 counts them: its `items`, its `targets`, or every fanout entry's `items` in entry order. */
export function answerRows(answer: Record<string, unknown>): unknown[] | undefined {
  if (Array.isArray(answer["items"])) return answer["items"];
  if (Array.isArray(answer["targets"])) return answer["targets"];
  if (isObject(answer["fanout"]))
    return Object.values(answer["fanout"]).flatMap((e) => (isObject(e) && Array.isArray(e["items"]) ? e["items"] : []));
  return undefined;
}

/** Three platforms for a fanout search of 20 rows each: the main one, the fanout's, then others of the seed. */
function morePlatforms(ctx: CheckContext): string[] {
  return [
    ...new Set([ctx.options.platform, ...ctx.options.fanoutPlatforms, "x", "reddit", "youtube", "weibo", "bilibili"]),
  ].slice(0, 3);
}

/** The most pages `mcp.more` reads on (a 60 KB page holds dozens of rows: 60 rows take 2). */
const MAX_MORE_PAGES = 20;

const mcpChecks: Check[] = [
  {
    id: "mcp.flow",
    title: "MCP: initialize → tools/list → tools/call search answers rows, as the HTTP route does",
    notApplicable: (o) => (o.mcpPath === false ? "MCP is not checked (mcpPath: false)" : undefined),
    async run(ctx): Promise<Verdict> {
      const where = `POST ${ctx.options.mcpPath}`;
      const init = await rpc(
        ctx,
        "initialize",
        { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "sdgw-conformance", version: "1" } },
        1,
      );
      const result = isObject(init.message?.["result"]) ? init.message["result"] : undefined;
      if (init.status !== 200 || !result || typeof result["protocolVersion"] !== "string")
        return fail(
          `${where} initialize → HTTP ${init.status} ${init.text}; expected a JSON-RPC result with ` +
            `protocolVersion (seed: the same functions are offered over MCP as tools)`,
        );
      await rpc(ctx, "notifications/initialized", {}, null);
      const list = await rpc(ctx, "tools/list", {}, 2);
      const tools = isObject(list.message?.["result"])
        ? (list.message["result"] as Record<string, unknown>)["tools"]
        : [];
      const names = Array.isArray(tools) ? tools.map((t) => (isObject(t) ? String(t["name"]) : "")) : [];
      if (list.status !== 200 || !names.includes("search"))
        return fail(`${where} tools/list → HTTP ${list.status} ${list.text}; expected a list of tools with \`search\``);
      // Called again after a `rate_limited` result's wait (an earlier check's burst; the rate is not what this check
      // is about), and an answer with status running read on with only { handle } until it ends.
      const {
        call,
        result: r,
        structured,
      } = await callTool(ctx, "search", { platform: ctx.options.platform, query: "conformance mcp", count: 2 }, 3);
      if (r?.["isError"] === true && /free_failure_limit/.test(call.text))
        return na(
          `${where} tools/call search: the server held the key back with 429 free_failure_limit ` +
            `until ${String(structured?.["retry_at"] ?? "its retry_at")} after the suite's deliberate refusals (D45)`,
        );
      if (call.status !== 200 || !r || r["isError"] === true || !structured)
        return fail(
          `${where} tools/call search → HTTP ${call.status} ${call.text}; expected a result with structuredContent, not isError`,
        );
      const items = Array.isArray(structured["items"]) ? structured["items"].length : 0;
      if (structured["status"] !== "ok" || items < 1)
        return fail(
          `${where} tools/call search answered status ${String(structured["status"])} with ${items} items; expected ok with rows`,
        );
      return pass(`${names.length} tools; search answered ${items} items`);
    },
  },
  {
    id: "mcp.more",
    title:
      "MCP: an answer too large for one message carries more; { handle: more.handle } reads on " +
      "until no more, the rows are those of GET /v1/results of the handle",
    notApplicable: (o) => (o.mcpPath === false ? "MCP is not checked (mcpPath: false)" : undefined),
    async run(ctx): Promise<Verdict> {
      const where = `POST ${ctx.options.mcpPath} tools/call search`;
      const rule = "seed: MCP large-answer object more; D30";
      await rpc(
        ctx,
        "initialize",
        { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "sdgw-conformance", version: "1" } },
        1,
      );
      await rpc(ctx, "notifications/initialized", {}, null);
      const platforms = morePlatforms(ctx);
      const args = { platforms, query: "conformance more", count: 20 };
      const first = await callTool(ctx, "search", args, 2);
      if (first.result?.["isError"] === true && /free_failure_limit/.test(first.call.text))
        return na(
          `${where}: the server held the key back with 429 free_failure_limit ` +
            `until ${String(first.structured?.["retry_at"] ?? "its retry_at")} after the suite's ` +
            `deliberate refusals (D45)`,
        );
      if (first.call.status !== 200 || !first.structured || first.result?.["isError"] === true)
        return fail(
          `${where} ${JSON.stringify(args)} → HTTP ${first.call.status} ${first.call.text}; expected a result with structuredContent, not isError`,
        );
      const rows = answerRows(first.structured);
      if (!rows)
        return fail(`${where} ${JSON.stringify(args)} answered no rows (status ${String(first.structured["status"])})`);
      let more = first.structured["more"];
      if (more === undefined) {
        const bytes = first.call.text.length >= 200 ? "" : ` (${first.call.text.length} bytes)`;
        return na(
          `the fanout search of ${platforms.join(", ")} (count 20) answered ${rows.length} row(s) ` +
            `in one MCP message${bytes}, without more: nothing to read on; the seed bounds a message at about ` +
            `60 KB (D78), and the suite cannot make a larger answer from outside`,
        );
      }
      const collected = [...rows];
      const seen = new Set<string>();
      let pages = 1;
      let base: string | undefined;
      while (more !== undefined) {
        if (
          !isObject(more) ||
          typeof more["handle"] !== "string" ||
          !/^[A-Za-z0-9_-]{1,128}\.\d+$/.test(more["handle"])
        )
          return fail(
            `page ${pages}: more is ${JSON.stringify(more).slice(0, 160)}; expected { handle: "handle.position", rows_left, note } (${rule})`,
          );
        const handle = more["handle"];
        base ??= handle.slice(0, handle.lastIndexOf("."));
        if (seen.has(handle))
          return fail(`page ${pages} gave more.handle ${handle} again: reading on does not move (${rule})`);
        seen.add(handle);
        if (pages >= MAX_MORE_PAGES)
          return fail(`still more after ${pages} pages (${collected.length} rows): reading on does not end (${rule})`);
        const rowsLeft = more["rows_left"];
        const page = await callTool(ctx, "search", { handle }, 10 + pages);
        pages++;
        if (page.call.status !== 200 || !page.structured || page.result?.["isError"] === true)
          return fail(
            `${where} { handle: ${JSON.stringify(handle)} } (page ${pages}) → ` +
              `HTTP ${page.call.status} ${page.call.text}; expected the next rows (${rule}: pass more.handle to ` +
              `the same tool for the next rows)`,
          );
        const next = answerRows(page.structured) ?? [];
        if (!next.length) return fail(`page ${pages} ({ handle: ${JSON.stringify(handle)} }) has no rows (${rule})`);
        const left = typeof rowsLeft === "number" ? rowsLeft - next.length : undefined;
        const nextMore = page.structured["more"];
        if (
          left !== undefined &&
          (nextMore === undefined ? left !== 0 : !isObject(nextMore) || nextMore["rows_left"] !== left)
        )
          return fail(
            `page ${pages - 1} said rows_left ${String(rowsLeft)}, page ${pages} ` +
              `carries ${next.length} row(s) ` +
              `and ${
                nextMore === undefined
                  ? "no more"
                  : `rows_left ${String(isObject(nextMore) ? nextMore["rows_left"] : nextMore)}`
              } (${rule})`,
          );
        collected.push(...next);
        more = nextMore;
      }
      const whole = await ctx.http.send({ path: `/v1/results/${encodeURIComponent(base!)}` });
      if (whole.status !== 200)
        return fail(
          `${exchangeLine(whole, 160)}; expected HTTP 200 with the whole result (seed: over HTTP ` +
            `the same handle without the position returns the whole result at once)`,
        );
      const want = answerRows(bodyOf(whole)) ?? [];
      if (!sameJson(collected, want))
        return fail(
          `the ${collected.length} rows read over MCP in ${pages} pages are not the ${want.length} ` +
            `rows of GET /v1/results/${base}: first difference ` +
            `at ${firstDifference(collected, want) ?? "(none)"} (${rule}: the pages are the result's rows ` +
            `in order, each once)`,
        );
      return pass(`${pages} pages, ${collected.length} rows, equal to GET /v1/results/${base}`);
    },
  },
];

/** The checks of every operation, the flows and MCP, in the order they run. */
export const operationChecks: Check[] = [...validChecks, ...flowChecks, ...generatedChecks, ...mcpChecks];
