/** Key carriers and refusals (seed Authentication; D25, D26, D28). */
import { exchangeLine } from "../http.ts";
import type { Check, CheckContext } from "../types.ts";
import { bodyOf, expectRefusal, fail, fixOf, pass, refusal } from "./util.ts";

/** A key the suite puts in URLs: never a real one (a key sent in a URL is treated as exposed and refused from then on). */
export const DUMMY_URL_KEY = "sdgw_conformance_not_a_real_key";
/** A key no server knows. */
export const UNKNOWN_KEY = "sdgw_conformance_unknown_key_0000";

const searchQuery = (ctx: CheckContext, query = "conformance auth") => ({
  platform: ctx.options.platform,
  query,
  count: 1,
});

export const authChecks: Check[] = [
  {
    id: "auth.x-api-key",
    title: "X-API-Key carries the key: GET /v1/account answers 200",
    async run(ctx) {
      const x = await ctx.http.send({ path: "/v1/account", auth: "x-api-key" });
      return x.status === 200
        ? pass("HTTP 200")
        : fail(`${exchangeLine(x)}; expected HTTP 200 (seed Authentication 1: header X-API-Key carries the key)`);
    },
  },
  {
    id: "auth.bearer",
    title: "Authorization: Bearer carries the key on a free and a data route",
    async run(ctx) {
      const account = await ctx.http.send({ path: "/v1/account", auth: "bearer" });
      if (account.status !== 200)
        return fail(
          `${exchangeLine(account)}; expected HTTP 200 (seed Authentication 1: Authorization: Bearer carries the key)`,
        );
      const search = await ctx.http.send({
        path: "/v1/search",
        query: searchQuery(ctx, "conformance bearer"),
        auth: "bearer",
      });
      if (search.status !== 200 && search.status !== 202)
        return fail(`${exchangeLine(search)}; expected HTTP 200 or 202 (seed Authentication 1)`);
      return pass(`account HTTP 200, search HTTP ${search.status}`);
    },
  },
  {
    id: "auth.both-same",
    title: "the same key in X-API-Key and Bearer is accepted (D25)",
    async run(ctx) {
      const x = await ctx.http.send({
        path: "/v1/account",
        auth: { xApiKey: ctx.options.key, bearer: ctx.options.key },
      });
      return x.status === 200
        ? pass("HTTP 200")
        : fail(`${exchangeLine(x)}; expected HTTP 200 (D25: both carriers are accepted when they carry the same key)`);
    },
  },
  {
    id: "auth.both-differ",
    title: "two different keys in X-API-Key and Bearer → 401 unauthorized reason invalid (D25)",
    async run(ctx) {
      const other = ctx.options.secondKey ?? UNKNOWN_KEY;
      const v = await expectRefusal(
        ctx,
        { path: "/v1/account", auth: { xApiKey: ctx.options.key, bearer: other } },
        {
          status: 401,
          code: "unauthorized",
          reason: "invalid",
          rule: "D25: two carriers with different keys are refused, reason invalid, never resolved by guessing",
        },
      );
      return v.outcome === "passed"
        ? pass(
            `HTTP 401 invalid (Bearer carried ${ctx.options.secondKey ? "the second key" : "an unknown key; give --second-key to try two valid keys"})`,
          )
        : v;
    },
  },
  {
    id: "auth.missing",
    title: "no key → 401 unauthorized reason missing, on a data and on a free route",
    async run(ctx) {
      for (const spec of [
        { path: "/v1/search", query: searchQuery(ctx), auth: "none" as const },
        { path: "/v1/account", auth: "none" as const },
      ]) {
        const v = await expectRefusal(ctx, spec, {
          status: 401,
          code: "unauthorized",
          reason: "missing",
          rule: "seed Authentication 4: reason missing",
        });
        if (v.outcome !== "passed") return v;
      }
      return pass("search and account: HTTP 401 missing");
    },
  },
  {
    id: "auth.invalid",
    title: "an unknown key → 401 unauthorized reason invalid",
    run: (ctx) =>
      expectRefusal(
        ctx,
        { path: "/v1/search", query: searchQuery(ctx), key: UNKNOWN_KEY },
        { status: 401, code: "unauthorized", reason: "invalid", rule: "seed Authentication 4: reason invalid" },
      ),
  },
  {
    id: "auth.key-in-query",
    title: "key= in the URL of a data route → 401 key_in_query, whatever header came (D25)",
    run: (ctx) =>
      expectRefusal(
        ctx,
        { path: "/v1/search", query: { ...searchQuery(ctx), key: DUMMY_URL_KEY } },
        {
          status: 401,
          code: "unauthorized",
          reason: "key_in_query",
          rule: "seed Authentication 2: a key in the URL is rejected with reason key_in_query; D25: whatever headers also came",
        },
      ),
  },
  {
    id: "auth.key-in-query-keyless",
    title: "key= in the URL of a keyless route → 401 key_in_query (D25)",
    run: (ctx) =>
      expectRefusal(
        ctx,
        { path: "/v1/capabilities", query: { key: DUMMY_URL_KEY }, auth: "none" },
        {
          status: 401,
          code: "unauthorized",
          reason: "key_in_query",
          rule: "D25: keyless routes need no key, but a key in their URL is refused all the same",
        },
      ),
  },
  {
    id: "auth.keyless-routes",
    title: "GET /v1/capabilities, POST /v1/find and GET /openapi.json answer 200 without a key",
    async run(ctx) {
      const caps = await ctx.http.send({ path: "/v1/capabilities", auth: "none" });
      const find = await ctx.http.send({
        method: "POST",
        path: "/v1/find",
        auth: "none",
        body: { query: "search posts by keyword" },
      });
      const openapi = await ctx.http.send({ path: "/openapi.json", auth: "none" });
      for (const x of [caps, find, openapi])
        if (x.status !== 200)
          return fail(
            `${exchangeLine(x)}; expected HTTP 200 (seed Authentication 3: GET /v1/capabilities and POST /v1/find need no key; D25 adds GET /openapi.json)`,
          );
      const info = bodyOf(openapi)["info"] as { version?: unknown } | undefined;
      if (info?.version !== "1.0.0")
        return fail(
          `GET /openapi.json → info.version ${JSON.stringify(info?.version ?? null)}; expected "1.0.0" (seed Versioning 3)`,
        );
      return pass("three routes HTTP 200; openapi.json info.version 1.0.0");
    },
  },
  {
    id: "auth.scope-denied",
    title: "a key without read_data → 403 key_scope_denied on a data call, 200 on GET /v1/account (D26)",
    notApplicable: (o) => (o.noscopeKey ? undefined : "no key without read_data given (--noscope-key)"),
    async run(ctx) {
      const key = ctx.options.noscopeKey!;
      const x = await ctx.http.send({ path: "/v1/search", query: searchQuery(ctx), key });
      const wrong = refusal(x, {
        status: 403,
        code: "key_scope_denied",
        rule: "seed Authentication 5: a key needs read_data for data calls",
      });
      if (wrong) return wrong;
      const allowed = fixOf(x)["allowed"];
      if (!Array.isArray(allowed) || allowed.length !== 1 || allowed[0] !== "read_data")
        return fail(
          `${exchangeLine(x)}; fix.allowed ${JSON.stringify(allowed ?? null)}, expected ["read_data"] (seed Authentication 5)`,
        );
      const account = await ctx.http.send({ path: "/v1/account", key });
      if (account.status !== 200)
        return fail(
          `${exchangeLine(account)}; expected HTTP 200 (D26: a key without read_data still reads GET /v1/account)`,
        );
      return pass("search HTTP 403 key_scope_denied with fix.allowed [read_data]; account HTTP 200");
    },
  },
];
