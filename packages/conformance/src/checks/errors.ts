/** Error codes the outside can reproduce, and unknown routes (seed Errors, Cases by code; D14, D42). */
import { TOOL_NAMES } from "@sdgw/types";
import { exchangeLine, sleep, type Exchange } from "../http.ts";
import type { Check } from "../types.ts";
import { balanceOf, bodyOf, fail, fixOf, pass, refusal, refusalKey } from "./util.ts";

export const errorChecks: Check[] = [
  {
    id: "errors.not-supported",
    title:
      "POST /v1/call/{op} with an op the catalog lacks → 400 not_supported no_such_capability with fix.allowed (D42)",
    async run(ctx) {
      const op = `${ctx.options.platform}.conformance_no_such_op`;
      const x = await ctx.http.send({ method: "POST", path: `/v1/call/${op}`, body: {}, key: refusalKey(ctx) });
      const wrong = refusal(x, {
        status: 400,
        code: "not_supported",
        reason: "no_such_capability",
        rule: "seed not_supported: reason no_such_capability, the catalog has no such op; D42",
      });
      if (wrong) return wrong;
      if (!Array.isArray(fixOf(x)["allowed"]))
        return fail(
          `${exchangeLine(x)}; no fix.allowed (seed: fix.allowed lists platforms that do; D36: required for no_such_capability)`,
        );
      return pass(`HTTP 400 not_supported, fix.allowed ${JSON.stringify(fixOf(x)["allowed"])}`);
    },
  },
  {
    id: "errors.max-cost",
    title: "max_cost_credits=0 → 402 max_cost_exceeded with quote_credits and fix.param; nothing charged",
    async run(ctx) {
      const before = await balanceOf(ctx);
      if (!before.ok) return before.verdict;
      const x = await ctx.http.send({
        path: "/v1/search",
        query: { platform: ctx.options.platform, query: "conformance budget", max_cost_credits: 0 },
      });
      const wrong = refusal(x, {
        status: 402,
        code: "max_cost_exceeded",
        param: ["max_cost_credits"],
        rule: "seed: max_cost_credits makes a call refuse with max_cost_exceeded if its quote is higher; fix.param is max_cost_credits",
      });
      if (wrong) return wrong;
      const quote = bodyOf(x)["quote_credits"];
      if (typeof quote !== "number" || quote <= 0)
        return fail(
          `${exchangeLine(x)}; quote_credits ${JSON.stringify(quote ?? null)}, expected the call's cost, above 0 (seed: quote_credits is the cost)`,
        );
      const after = await balanceOf(ctx);
      if (!after.ok) return after.verdict;
      if (after.balance !== before.balance)
        return fail(
          `the refusal moved the balance ${before.balance} → ${after.balance} (seed: every error code is uncharged)`,
        );
      return pass(`HTTP 402, quote_credits ${quote}, balance unchanged`);
    },
  },
  {
    id: "routes.unknown",
    title:
      "an unknown path → 404 not_found reason no_such_route, fix.allowed the routes, example_call GET /v1/capabilities",
    async run(ctx) {
      const x = await ctx.http.send({ path: "/v1/conformance-no-such-route" });
      const wrong = refusal(x, {
        status: 404,
        code: "not_found",
        reason: "no_such_route",
        rule: "seed not_found: no such route; D14 reason no_such_route",
      });
      if (wrong) return wrong;
      const fix = fixOf(x);
      const call = fix["example_call"] as { method?: unknown; path?: unknown } | undefined;
      if (!Array.isArray(fix["allowed"]) || call?.method !== "GET" || call.path !== "/v1/capabilities") {
        return fail(
          `${exchangeLine(x)}; expected fix.allowed (the route list) and fix.example_call GET /v1/capabilities (seed not_found: no such route)`,
        );
      }
      return pass(`HTTP 404 no_such_route, ${fix["allowed"].length} routes listed`);
    },
  },
  {
    id: "routes.outside-v1",
    title:
      "a path outside /v1 that is no route (GET /v2/search, GET /nothing) → 404 not_found " +
      "no_such_route, fix.allowed the routes, example_call GET /v1/capabilities",
    async run(ctx) {
      const seen: string[] = [];
      for (const path of ["/v2/search", "/nothing"]) {
        const x = await ctx.http.send({
          path,
          ...(path === "/v2/search" ? { query: { platform: ctx.options.platform, query: "conformance v2" } } : {}),
        });
        const wrong = refusal(x, {
          status: 404,
          code: "not_found",
          reason: "no_such_route",
          rule: "seed not_found: no such route, whatever the path; D14 reason no_such_route",
        });
        if (wrong) return wrong;
        const fix = fixOf(x);
        const call = fix["example_call"] as { method?: unknown; path?: unknown } | undefined;
        if (
          !Array.isArray(fix["allowed"]) ||
          !fix["allowed"].includes("GET /v1/capabilities") ||
          call?.method !== "GET" ||
          call.path !== "/v1/capabilities"
        ) {
          return fail(
            `${exchangeLine(x)}; expected fix.allowed (the route list, "GET /v1/capabilities" among ` +
              `them) and fix.example_call GET /v1/capabilities (seed not_found: no such route)`,
          );
        }
        seen.push(path);
      }
      return pass(`${seen.join(" and ")}: HTTP 404 no_such_route with the route list`);
    },
  },
  {
    id: "routes.unknown-tool",
    title: "POST /v1/tools/<unknown> → 404 not_found reason no_such_tool, fix.allowed the seven tools",
    async run(ctx) {
      const x = await ctx.http.send({ method: "POST", path: "/v1/tools/conformance_no_such_tool", body: {} });
      const wrong = refusal(x, {
        status: 404,
        code: "not_found",
        reason: "no_such_tool",
        rule: "seed not_found: no such tool; D14 reason no_such_tool",
      });
      if (wrong) return wrong;
      const allowed = fixOf(x)["allowed"];
      if (!Array.isArray(allowed) || [...allowed].sort().join(",") !== [...TOOL_NAMES].sort().join(",")) {
        return fail(
          `${exchangeLine(x)}; fix.allowed ${JSON.stringify(allowed ?? null)}, expected the seven ` +
            `tools ${TOOL_NAMES.join(", ")} (seed not_found: fix.allowed lists the seven tools)`,
        );
      }
      return pass("HTTP 404 no_such_tool with the seven tools");
    },
  },
  {
    id: "errors.insufficient-balance",
    title: "a call over the balance → 402 insufficient_balance, fix.action_url, nothing ran or charged",
    notApplicable: (o) =>
      o.insufficientBalanceKey
        ? undefined
        : "no key of an account without enough credits given (--insufficient-balance-key)",
    async run(ctx) {
      const key = ctx.options.insufficientBalanceKey!;
      const before = await balanceOf(ctx, key);
      if (!before.ok) return before.verdict;
      const x = await ctx.http.send({
        path: "/v1/search",
        query: { platform: ctx.options.platform, query: "conformance balance" },
        key,
      });
      const wrong = refusal(x, {
        status: 402,
        code: "insufficient_balance",
        rule: "seed: insufficient_balance (402), not enough credits; nothing ran",
      });
      if (wrong) return wrong;
      if (typeof fixOf(x)["action_url"] !== "string")
        return fail(`${exchangeLine(x)}; no fix.action_url (seed: fix.action_url is {billing_url})`);
      const after = await balanceOf(ctx, key);
      if (!after.ok) return after.verdict;
      if (after.balance !== before.balance)
        return fail(
          `the refusal moved the balance ${before.balance} → ${after.balance} (seed: every error code is uncharged)`,
        );
      return pass(`HTTP 402 insufficient_balance at balance ${before.balance}`);
    },
  },
  {
    id: "errors.daily-limit",
    title: "a call over the daily limit → 429 daily_limit_reached, reason key or account, resets_at, Retry-After",
    notApplicable: (o) => (o.dailyLimitKey ? undefined : "no key with a spent daily limit given (--daily-limit-key)"),
    async run(ctx) {
      const key = ctx.options.dailyLimitKey!;
      const x = await ctx.http.send({
        path: "/v1/search",
        query: { platform: ctx.options.platform, query: "conformance daily limit" },
        key,
      });
      const wrong = refusal(x, {
        status: 429,
        code: "daily_limit_reached",
        rule: "seed Authentication 7: daily spend limit per key and per account (daily_limit_reached)",
      });
      if (wrong) return wrong;
      const body = bodyOf(x);
      if (body["reason"] !== "key" && body["reason"] !== "account")
        return fail(
          `${exchangeLine(x)}; reason ${JSON.stringify(body["reason"] ?? null)}, expected key or account (seed Authentication 7)`,
        );
      const resets = typeof body["resets_at"] === "string" ? new Date(body["resets_at"]) : undefined;
      if (!resets || resets.getUTCHours() + resets.getUTCMinutes() + resets.getUTCSeconds() !== 0)
        return fail(
          `${exchangeLine(x)}; resets_at ${JSON.stringify(body["resets_at"] ?? null)}, expected the next UTC midnight (seed daily_limit_reached)`,
        );
      return pass(`HTTP 429 reason ${String(body["reason"])}, resets_at ${String(body["resets_at"])}`);
    },
  },
  {
    id: "errors.rate-limited",
    title: "a burst over the key's rate → 429 rate_limited with a reason and Retry-After",
    notApplicable: (o) =>
      o.rateLimitBurst
        ? undefined
        : "no burst size given (--rate-limit-burst N): the seed gives no rate, so the suite provokes it only when told",
    async run(ctx) {
      const burst = ctx.options.rateLimitBurst!;
      const answers: Exchange[] = await Promise.all(
        Array.from({ length: burst }, () => ctx.http.send({ path: "/v1/account", retryRateLimited: false })),
      );
      const limited = answers.find((x) => x.status === 429);
      if (!limited)
        return fail(
          `${burst} simultaneous GET /v1/account ` +
            `answered ${[...new Set(answers.map((x) => x.status))].join(", ")}, none 429 rate_limited (seed ` +
            `Limits: a rate per key applies to all calls; the burst was told to exceed it)`,
        );
      const wrong = refusal(limited, {
        status: 429,
        code: "rate_limited",
        rule: "seed rate_limited (429): too many calls per second for the key",
      });
      if (wrong) return wrong;
      const reason = bodyOf(limited)["reason"];
      if (!["key_qps", "workspace_concurrency", "address"].includes(String(reason)))
        return fail(
          `${exchangeLine(limited)}; reason ${JSON.stringify(reason ?? null)}, expected key_qps, workspace_concurrency or address (seed rate_limited)`,
        );
      // The key's rate is used up: wait for it, so that whatever runs next is not refused.
      await sleep(1000 * Math.min(5, Math.max(1, Number(limited.headers.get("retry-after")) || 1)));
      return pass(
        `${answers.filter((x) => x.status === 429).length} of ${burst} refused, reason ${String(reason)}, Retry-After ${limited.headers.get("retry-after")}`,
      );
    },
  },
];
