/**
 * The mutants of the reference server (issue 35, D171): each breaks exactly one rule of the contract, through the
 * proxy of mutant-proxy.ts, and names the checks that must catch it. mutants.test.ts runs the suite against each
 * and asserts it fails those checks; the README's table of mutants is checked against this list.
 */
import {
  editJson,
  internalError,
  jsonAnswer,
  parse,
  type Mutant,
  type ProxyAnswer,
  type ProxyRequest,
} from "./mutant-proxy.ts";

const is = (r: ProxyRequest, method: string, path: string | RegExp) =>
  r.method === method && (typeof path === "string" ? r.url.pathname === path : path.test(r.url.pathname));

/** A 200 answer of one route turned into a 500 (the route is broken whenever it would have succeeded). */
const broken200 =
  (method: string, path: string): Mutant["response"] =>
  (r, a) =>
    is(r, method, path) && a.status === 200 && !/"confirm":\s*false/.test(r.body ?? "") ? internalError() : a;

/** The same request again with a fresh Idempotency-Key, sent behind the suite's back: a charge it never asked for. */
async function chargeAgain(r: ProxyRequest, forward: (r: ProxyRequest) => Promise<ProxyAnswer>) {
  const url = new URL(r.url);
  url.searchParams.delete("max_cost_credits");
  let body = r.body;
  if (body) {
    const json = JSON.parse(body) as Record<string, unknown>;
    delete json["max_cost_credits"];
    body = JSON.stringify(json);
  }
  await forward({
    ...r,
    url,
    headers: { ...r.headers, "idempotency-key": `mutant-${crypto.randomUUID()}` },
    ...(body !== undefined ? { body } : {}),
  });
}

export const MUTANTS: readonly Mutant[] = [
  {
    name: "long-cursor-500",
    breaks: "a cursor of more than 64 characters answers 500 instead of 400 invalid_params naming cursor",
    caughtBy: ["params.cursor-long"],
    request: (r) => ((r.url.searchParams.get("cursor")?.length ?? 0) > 64 ? internalError() : r),
  },
  {
    name: "real-cursor-500",
    breaks: "every page.cursor the server itself gave answers 500: pagination is gone (seed paging)",
    caughtBy: ["flows.pagination"],
    request(r, ctx) {
      const cursor = r.url.searchParams.get("cursor");
      return cursor && (ctx.state.get("cursors") as Set<string> | undefined)?.has(cursor) ? internalError() : r;
    },
    response(_r, a, ctx) {
      const cursor = parse(a)?.["page"]?.["cursor"];
      if (typeof cursor === "string") {
        const seen = (ctx.state.get("cursors") as Set<string> | undefined) ?? new Set<string>();
        ctx.state.set("cursors", seen.add(cursor));
      }
      return a;
    },
  },
  {
    name: "cursor-ignored",
    breaks: "a cursor is ignored: every page is the first page again (seed paging)",
    caughtBy: ["flows.pagination"],
    request(r) {
      if (!r.url.searchParams.has("cursor") || r.url.searchParams.get("cursor")!.length > 64) return r;
      const url = new URL(r.url);
      url.searchParams.delete("cursor");
      return { ...r, url };
    },
  },
  {
    name: "detail-500",
    breaks: "every successful POST /v1/detail answers 500",
    caughtBy: ["valid.detail"],
    response: broken200("POST", "/v1/detail"),
  },
  {
    name: "comments-500",
    breaks: "every successful POST /v1/comments answers 500",
    caughtBy: ["valid.comments"],
    response: broken200("POST", "/v1/comments"),
  },
  {
    name: "user-profile-500",
    breaks: "every successful POST /v1/user_profile answers 500",
    caughtBy: ["valid.userProfile"],
    response: broken200("POST", "/v1/user_profile"),
  },
  {
    name: "user-posts-500",
    breaks: "every successful POST /v1/user_posts answers 500",
    caughtBy: ["valid.userPosts"],
    response: broken200("POST", "/v1/user_posts"),
  },
  {
    name: "tool-500",
    breaks: "every confirmed POST /v1/tools/creator_card answers 500 (its quote still works)",
    caughtBy: ["valid.creatorCard"],
    response: broken200("POST", "/v1/tools/creator_card"),
  },
  {
    name: "trending-500",
    breaks: "every successful POST /v1/trending answers 500",
    caughtBy: ["valid.trending"],
    response: broken200("POST", "/v1/trending"),
  },
  {
    name: "mcp-500",
    breaks: "POST /mcp answers 500: the MCP tools are gone (seed: the same functions are offered over MCP)",
    caughtBy: ["mcp.flow"],
    request: (r) => (r.url.pathname === "/mcp" ? internalError() : r),
  },
  {
    name: "mcp-more-skips-rows",
    breaks:
      "an MCP tool called with { handle: more.handle } reads on one row after the position it " +
      "names: a row of every later page is lost (seed: MCP large-answer object more; D30)",
    caughtBy: ["mcp.more"],
    request(r) {
      if (r.url.pathname !== "/mcp" || !r.body) return r;
      const message = JSON.parse(r.body) as { method?: string; params?: { arguments?: Record<string, unknown> } };
      const handle = message.params?.arguments?.["handle"];
      const at = typeof handle === "string" ? /^(.+)\.(\d+)$/.exec(handle) : null;
      if (message.method !== "tools/call" || !at) return r;
      message.params!.arguments!["handle"] = `${at[1]}.${Number(at[2]) + 1}`;
      return { ...r, body: JSON.stringify(message) };
    },
  },
  {
    name: "tool-run-charged-over-quote",
    breaks:
      "a tool run sent with max_cost_credits at its quote is charged again behind its answer: the " +
      "balance moves by twice the quote (D51: a run is charged at most its quote, once)",
    caughtBy: ["flows.quote-run"],
    async response(r, a, ctx) {
      if (
        is(r, "POST", "/v1/tools/batch_stats") &&
        a.status === 200 &&
        /"max_cost_credits":\s*\d/.test(r.body ?? "") &&
        !/"confirm":\s*false/.test(r.body ?? "")
      )
        await chargeAgain(r, ctx.forward);
      return a;
    },
  },
  {
    name: "schedule-not-deleted",
    breaks: "DELETE /v1/schedules/{id} answers deleted: true but removes nothing",
    caughtBy: ["flows.schedule"],
    request: (r) =>
      is(r, "DELETE", /^\/v1\/schedules\/[^/]+$/)
        ? jsonAnswer(200, {
            request_id: "req_mutant_delete",
            schema_version: "v1",
            deleted: true,
            schedule_id: decodeURIComponent(r.url.pathname.split("/").pop()!),
          })
        : r,
  },
  {
    name: "search-drops-fetched-at",
    breaks: "a search answer without the required `fetched_at` (seed: search answer fields)",
    caughtBy: ["search.single", "valid.search"],
    response: (r, a) =>
      is(r, "GET", "/v1/search") && a.status === 200 ? editJson(a, (b) => delete b["fetched_at"]) : a,
  },
  {
    name: "trending-status-201",
    breaks: "POST /v1/trending answers HTTP 201 instead of 200",
    caughtBy: ["valid.trending"],
    response: (r, a) => (is(r, "POST", "/v1/trending") && a.status === 200 ? { ...a, status: 201 } : a),
  },
  {
    name: "refusal-charged",
    breaks: "a 402 max_cost_exceeded refusal is charged (seed: every error code is uncharged)",
    caughtBy: ["errors.max-cost"],
    async response(r, a, ctx) {
      if (a.status === 402 && parse(a)?.["code"] === "max_cost_exceeded") await chargeAgain(r, ctx.forward);
      return a;
    },
  },
  {
    name: "replay-charged",
    breaks: "an idempotent replay is charged again (seed Idempotency: a replay costs 0; D35)",
    caughtBy: ["idempotency.replay"],
    async response(r, a, ctx) {
      if (a.headers["idempotent-replayed"] === "true" && a.status === 200) await chargeAgain(r, ctx.forward);
      return a;
    },
  },
  {
    name: "page-loses-cursor",
    breaks: "page.has_more is true but page.cursor is gone (seed paging: has_more true requires cursor)",
    caughtBy: ["flows.pagination"],
    response: (_r, a) =>
      editJson(a, (b) => {
        if (b["page"]?.["has_more"] === true) delete b["page"]["cursor"];
      }),
  },
  {
    name: "invalid-params-wrong-code",
    breaks: "a bad parameter is refused 400 with code `not_found` instead of `invalid_params`",
    caughtBy: ["params.count-21", "params.generated.search"],
    response: (_r, a) =>
      a.status === 400 && parse(a)?.["code"] === "invalid_params"
        ? editJson(a, (b) => {
            b["code"] = "not_found";
          })
        : a,
  },
  {
    name: "invalid-params-no-fix-param",
    breaks: "a 400 invalid_params without fix.param (D12: the refusal names the parameter)",
    caughtBy: ["params.count-0", "params.generated.detail"],
    response: (_r, a) =>
      a.status === 400 && parse(a)?.["code"] === "invalid_params"
        ? editJson(a, (b) => {
            b["fix"] = { note: "Check the parameters." };
          })
        : a,
  },
  {
    name: "429-without-retry-after",
    breaks: "a 429 without the Retry-After header (D32)",
    caughtBy: ["errors.rate-limited"],
    response(_r, a) {
      if (a.status !== 429) return a;
      const headers = { ...a.headers };
      delete headers["retry-after"];
      return { ...a, headers };
    },
  },
  {
    name: "202-without-retry-after",
    breaks: "a 202 without the Retry-After header (D32)",
    caughtBy: ["runs.202-answer"],
    response(_r, a) {
      if (a.status !== 202) return a;
      const headers = { ...a.headers };
      delete headers["retry-after"];
      return { ...a, headers };
    },
  },
  {
    name: "idempotency-key-replays-other-body",
    breaks:
      "an Idempotency-Key sent again with other parameters replays the first answer instead of 409 idempotency_conflict",
    caughtBy: ["idempotency.conflict"],
    async request(r, ctx) {
      const key = r.headers["idempotency-key"];
      if (!key) return r;
      const seen = ctx.state.get(`idem:${key}`) as { what: string; answer: ProxyAnswer } | undefined;
      const what = `${r.method} ${r.url.pathname}?${r.url.searchParams.toString()} ${r.body ?? ""}`;
      if (seen && seen.what !== what && seen.answer.status === 200) return seen.answer;
      return r;
    },
    response(r, a, ctx) {
      const key = r.headers["idempotency-key"];
      if (key && !ctx.state.has(`idem:${key}`))
        ctx.state.set(`idem:${key}`, {
          what: `${r.method} ${r.url.pathname}?${r.url.searchParams.toString()} ${r.body ?? ""}`,
          answer: a,
        });
      return a;
    },
  },
  {
    name: "handle-never-finishes",
    breaks: "a 202 handle never finishes: every read of GET /v1/results/{handle} answers the first 202 again",
    caughtBy: ["runs.all-ended"],
    response(r, a, ctx) {
      if (a.status === 202) {
        const handle = parse(a)?.["handle"];
        if (typeof handle === "string" && !ctx.state.has(`run:${handle}`)) ctx.state.set(`run:${handle}`, a);
        return a;
      }
      const m = /^\/v1\/results\/([^/]+)$/.exec(r.url.pathname);
      const first = m ? (ctx.state.get(`run:${decodeURIComponent(m[1]!)}`) as ProxyAnswer | undefined) : undefined;
      return first && a.status === 200 ? first : a;
    },
  },
  {
    name: "key-in-query-accepted",
    breaks: "a key in the URL is used instead of refused 401 key_in_query (seed Authentication 2; D25)",
    caughtBy: ["auth.key-in-query", "auth.key-in-query-keyless"],
    request(r, ctx) {
      if (!r.url.searchParams.has("key")) return r;
      const url = new URL(r.url);
      url.searchParams.delete("key");
      return { ...r, url, headers: { "x-api-key": ctx.keys.key, ...r.headers } };
    },
  },
  {
    name: "count-21-accepted",
    breaks: "count=21 is answered as count=20 instead of 400 invalid_params (seed: count is 1 to 20)",
    caughtBy: ["params.count-21"],
    request(r) {
      if (r.url.searchParams.get("count") !== "21") return r;
      const url = new URL(r.url);
      url.searchParams.set("count", "20");
      return { ...r, url };
    },
  },
  {
    name: "scope-ignored",
    breaks: "a key without read_data reads data: the permission is not checked (403 key_scope_denied)",
    caughtBy: ["auth.scope-denied"],
    request: (r, ctx) =>
      r.headers["x-api-key"] === ctx.keys.noscopeKey && r.url.pathname !== "/v1/account"
        ? { ...r, headers: { ...r.headers, "x-api-key": ctx.keys.key } }
        : r,
  },
  {
    name: "fanout-status-wrong",
    breaks: "a fanout answer's top-level status is `error` whatever its entries say (D4)",
    caughtBy: ["search.fanout"],
    response: (_r, a) =>
      editJson(a, (b) => {
        if (b["fanout"] && b["status"] === "ok") b["status"] = "error";
      }),
  },
  {
    name: "ok-without-items",
    breaks: "a single-platform search answers `ok` with 0 items (seed: ok has at least 1 item)",
    caughtBy: ["search.single"],
    response: (r, a) =>
      is(r, "GET", "/v1/search") && a.status === 200
        ? editJson(a, (b) => {
            if (b["status"] === "ok" && !b["fanout"]) b["items"] = [];
          })
        : a,
  },
];

/** A decision's number as the README links it (docs/readme-links.test.ts: every Dn is a link to its entry). */
const linked = (text: string) =>
  text.replace(/\bD(\d+)\b/g, "[D$1](https://github.com/sdgw/toolkit/blob/main/spec/DECISIONS.md#d$1)");

/** The table as the README shows it, built from mutants.ts. */
export function mutantTable(): string {
  return [
    "| Mutant | What it breaks | Caught by |",
    "| --- | --- | --- |",
    ...MUTANTS.map(
      (m) =>
        `| \`${m.name}\` | ${linked(m.breaks.replace(/\|/g, "\\|"))} | ${m.caughtBy.map((c) => `\`${c}\``).join(", ")} |`,
    ),
  ].join("\n");
}
