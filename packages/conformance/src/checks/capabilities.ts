/**
 * Where capability gaps answer (D41), driven from the outside: the operations a platform lacks are read from the
 * server's own `GET /v1/capabilities`; the parameter values a platform lacks are D41's own examples (wechat with
 * `content_type=video`, x with `sort=most_collected`).
 */
import { PLATFORMS } from "@sdgw/types";
import { exchangeLine, got, sleep, type Exchange, type RequestSpec } from "../http.ts";
import type { Check, CheckContext, Verdict } from "../types.ts";
import { balanceOf, bodyOf, fail, fixOf, isObject, na, pass, refusal, refusalKey } from "./util.ts";

/** The typed operations whose platform gaps the suite can ask about, and a request of each for one platform. */
const TYPED: Record<string, (platform: string) => RequestSpec> = {
  trending: (platform) => ({ method: "POST", path: "/v1/trending", body: { platform } }),
  comments: (platform) => ({ method: "POST", path: "/v1/comments", body: { platform, id: "conformance-1" } }),
  detail: (platform) => ({ method: "POST", path: "/v1/detail", body: { platform, id: "conformance-1" } }),
  user_profile: (platform) => ({ method: "POST", path: "/v1/user_profile", body: { platform, id: "conformance-1" } }),
  user_posts: (platform) => ({ method: "POST", path: "/v1/user_posts", body: { platform, id: "conformance-1" } }),
  search: (platform) => ({ method: "POST", path: "/v1/search", body: { platform, query: "conformance capabilities" } }),
};

/** D41's examples of a platform with the operation but not the parameter value. */
const VALUE_GAPS = [
  { platform: "wechat", param: "content_type", value: "video" },
  { platform: "x", param: "sort", value: "most_collected" },
] as const;

const RULE =
  "D41: a platform without the operation is 400 not_supported no_such_capability, fix.allowed the platforms that have it";

/** Which platforms offer each operation name, by the server's `GET /v1/capabilities` (read once per run). */
function catalog(ctx: CheckContext): Promise<{ byName: Map<string, string[]> } | { failure: string }> {
  return ctx.shared("capabilities", async () => {
    const x = await ctx.http.send({ path: "/v1/capabilities", auth: "none" });
    const ops = bodyOf(x)["operations"];
    if (x.status !== 200 || !Array.isArray(ops))
      return {
        failure: `${exchangeLine(x, 160)}; expected HTTP 200 with the operations (seed: GET /v1/capabilities lists what can be called)`,
      };
    const byName = new Map<string, string[]>();
    for (const o of ops)
      if (isObject(o) && typeof o["name"] === "string" && typeof o["platform"] === "string")
        byName.set(o["name"], [...(byName.get(o["name"]) ?? []), o["platform"]]);
    return { byName };
  });
}

/** A platform the catalog lists without an operation that others have: wechat's trending first (D41's own case). */
function operationGap(
  byName: Map<string, string[]>,
  names: readonly string[],
): { platform: string; name: string; allowed: string[] } | undefined {
  const gaps = names.flatMap((name) => {
    const allowed = byName.get(name) ?? [];
    return allowed.length
      ? PLATFORMS.filter((p) => !allowed.includes(p)).map((platform) => ({ platform, name, allowed }))
      : [];
  });
  return gaps.find((g) => g.platform === "wechat" && g.name === "trending") ?? gaps[0];
}

/** The finished answer of a call: itself, or the read of its handle once a 202 run has ended (polling after Retry-After). */
async function settled(ctx: CheckContext, x: Exchange, key?: string): Promise<Exchange> {
  const handle = bodyOf(x)["handle"];
  if (x.status !== 202 || typeof handle !== "string") return x;
  const until = Date.now() + ctx.options.pollBudgetMs;
  let last = x;
  while (last.status === 202 && Date.now() < until) {
    await sleep(1000 * Math.max(1, Number(last.headers.get("retry-after")) || 0));
    last = await ctx.http.send({ path: `/v1/results/${encodeURIComponent(handle)}`, ...(key ? { key } : {}) });
  }
  return last;
}

/** The fanout answer of a call (after its run, if it ran in the background), or the verdict that ends the check. */
async function fanoutOf(
  ctx: CheckContext,
  spec: RequestSpec,
  rule: string,
): Promise<{ x: Exchange; fanout: Record<string, unknown> } | { verdict: Verdict }> {
  const x = await settled(ctx, await ctx.http.send(spec));
  if (x.status === 202) return { verdict: na(`the run had not ended within the poll budget (${got(x, 100)})`) };
  const fanout = bodyOf(x)["fanout"];
  if (x.status !== 200 || !isObject(fanout))
    return { verdict: fail(`${exchangeLine(x, 200)}; expected HTTP 200 with the fanout answer (${rule})`) };
  return { x, fanout };
}

const entryStatus = (fanout: Record<string, unknown>, platform: string) =>
  isObject(fanout[platform]) ? String((fanout[platform] as Record<string, unknown>)["status"]) : "(no entry)";

export const capabilityChecks: Check[] = [
  {
    id: "capabilities.no-operation",
    title:
      "a platform without the operation (as GET /v1/capabilities lists it) → 400 not_supported " +
      "no_such_capability, fix.allowed the platforms that have it (D41), with or without a key (D50)",
    async run(ctx) {
      const c = await catalog(ctx);
      if ("failure" in c) return fail(c.failure);
      const gap = operationGap(c.byName, Object.keys(TYPED));
      if (!gap)
        return na(
          "GET /v1/capabilities lists every typed operation (search, trending, detail, comments, " +
            "user_profile, user_posts) on every platform that has any: no gap to ask for",
        );
      const x = await ctx.http.send({ ...TYPED[gap.name]!(gap.platform), key: refusalKey(ctx) });
      const wrong = refusal(x, { status: 400, code: "not_supported", reason: "no_such_capability", rule: RULE });
      if (wrong) return wrong;
      const allowed = fixOf(x)["allowed"];
      if (!Array.isArray(allowed) || [...allowed].map(String).sort().join(",") !== [...gap.allowed].sort().join(",")) {
        return fail(
          `${exchangeLine(x)}; fix.allowed ${JSON.stringify(allowed ?? null)}, expected the ` +
            `platforms GET /v1/capabilities lists for ${gap.name}: ${JSON.stringify(gap.allowed)} (${RULE}; D36)`,
        );
      }
      // D50: decided from the request alone, like validation, so it comes before the key is looked at.
      const keyless = await ctx.http.send({ ...TYPED[gap.name]!(gap.platform), auth: "none" });
      const early = refusal(keyless, {
        status: 400,
        code: "not_supported",
        reason: "no_such_capability",
        rule: `${RULE}; D50: the request is judged before the key, so without a key it is the same 400, not 401`,
      });
      if (early) return early;
      return pass(
        `${gap.platform} ${gap.name}: HTTP 400 no_such_capability, fix.allowed the ${gap.allowed.length} platforms that have it; the same without a key (D50)`,
      );
    },
  },
  {
    id: "capabilities.no-value",
    title:
      "a platform with the operation but not the value (wechat content_type=video, x " +
      "sort=most_collected) → HTTP 200 status not_supported, cost 0, nothing charged (D41)",
    async run(ctx) {
      const c = await catalog(ctx);
      if ("failure" in c) return fail(c.failure);
      const cases = VALUE_GAPS.filter((g) => (c.byName.get("search") ?? []).includes(g.platform));
      if (!cases.length)
        return na("GET /v1/capabilities lists neither wechat.search nor x.search, the platforms of D41's examples");
      const key = refusalKey(ctx);
      const before = await balanceOf(ctx, key);
      if (!before.ok) return before.verdict;
      const seen: string[] = [];
      for (const g of cases) {
        const x = await settled(
          ctx,
          await ctx.http.send({
            path: "/v1/search",
            query: { platform: g.platform, query: "conformance capabilities", [g.param]: g.value },
            key,
          }),
          key,
        );
        const body = bodyOf(x);
        const billing = isObject(body["billing"]) ? body["billing"] : {};
        const error = isObject(body["error"]) ? body["error"] : {};
        if (
          x.status !== 200 ||
          body["status"] !== "not_supported" ||
          error["code"] !== "not_supported" ||
          billing["cost"] !== 0
        ) {
          return fail(
            `${exchangeLine(x, 200)}; expected HTTP 200 with status not_supported, error ` +
              `not_supported and billing.cost 0 (D41: ${g.platform} has search but not ${g.param}=${g.value}; it ` +
              `is the platform's limit met while running, answered like a timeout, and never charged)`,
          );
        }
        seen.push(`${g.platform} ${g.param}=${g.value}`);
      }
      const after = await balanceOf(ctx, key);
      if (!after.ok) return after.verdict;
      if (after.balance !== before.balance)
        return fail(
          `the not_supported answers moved the balance ${before.balance} → ${after.balance} (seed Billing: a failed call is never charged; D41: cost 0)`,
        );
      return pass(`${seen.join(", ")}: HTTP 200 not_supported, cost 0, balance unchanged`);
    },
  },
  {
    id: "capabilities.fanout",
    title: "in a fanout, a platform without the operation and one without the value are not_supported entries (D41)",
    async run(ctx) {
      const c = await catalog(ctx);
      if ("failure" in c) return fail(c.failure);
      const seen: string[] = [];
      const searchers = c.byName.get("search") ?? [];
      const other = [ctx.options.platform, ...PLATFORMS].find((p) => p !== "wechat" && searchers.includes(p));
      const gap = operationGap(c.byName, ["trending", "search"]);
      const partner = gap && [ctx.options.platform, ...PLATFORMS].find((p) => gap.allowed.includes(p));
      // Both calls go out at once: on a server that runs them in the background, their runs are followed together.
      const valueGap =
        searchers.includes("wechat") && other
          ? fanoutOf(
              ctx,
              {
                path: "/v1/search",
                query: { platforms: `wechat,${other}`, query: "conformance capabilities", content_type: "video" },
              },
              "D17: platforms answers the fanout answer",
            )
          : undefined;
      const path = gap?.name === "trending" ? "/v1/trending" : "/v1/search";
      const opGap =
        gap && partner
          ? fanoutOf(
              ctx,
              {
                method: "POST",
                path,
                body: {
                  platforms: [gap.platform, partner],
                  ...(gap.name === "search" ? { query: "conformance capabilities" } : {}),
                },
              },
              "D17: platforms answers the fanout answer",
            )
          : undefined;
      const [fv, fo] = await Promise.all([valueGap, opGap]);
      if (fv) {
        if ("verdict" in fv) return fv.verdict;
        if (entryStatus(fv.fanout, "wechat") !== "not_supported")
          return fail(
            `${exchangeLine(fv.x, 200)}; the wechat entry is ${entryStatus(fv.fanout, "wechat")}, ` +
              `expected not_supported (D41: wechat has search but not content_type=video; in a fanout it is a ` +
              `not_supported entry)`,
          );
        seen.push(`search wechat,${other} content_type=video: wechat not_supported`);
      }
      if (fo && gap) {
        if ("verdict" in fo) return fo.verdict;
        if (entryStatus(fo.fanout, gap.platform) !== "not_supported")
          return fail(
            `${exchangeLine(fo.x, 200)}; the ${gap.platform} entry ` +
              `is ${entryStatus(fo.fanout, gap.platform)}, expected not_supported (D41: ${gap.platform} has ` +
              `no ${gap.name}, as GET /v1/capabilities lists it; in a fanout it is a not_supported entry, not a ` +
              `refusal of the call)`,
          );
        seen.push(`${gap.name} ${gap.platform},${partner}: ${gap.platform} not_supported`);
      }
      if (!seen.length)
        return na(
          "GET /v1/capabilities shows no platform without search or trending, and no wechat.search: nothing to ask",
        );
      return pass(seen.join("; "));
    },
  },
  {
    id: "capabilities.platforms-all",
    title:
      "platforms=all leaves out a platform without the operation and one without the value, and says so in a warning (D41)",
    async run(ctx) {
      const c = await catalog(ctx);
      if ("failure" in c) return fail(c.failure);
      const seen: string[] = [];
      const check = (spec: RequestSpec, left: string, why: string) => {
        // Sent at once; judged in order once both answered (a background run of each is followed meanwhile).
        const answer = fanoutOf(ctx, spec, "D17: platforms always answers the fanout answer");
        pending.push(answer);
        return async (): Promise<Verdict | undefined> => {
          const f = await answer;
          if ("verdict" in f) return f.verdict;
          const keys = Object.keys(f.fanout);
          if (keys.includes(left))
            return fail(
              `${exchangeLine(f.x, 200)}; the answer has a ${left} entry (${entryStatus(f.fanout, left)}), but ${why}: platforms=all leaves it out (D41)`,
            );
          if (!keys.length)
            return fail(
              `${exchangeLine(f.x, 200)}; no entries (D17: platforms=all means every platform that offers the operation)`,
            );
          const warnings = bodyOf(f.x)["warnings"];
          if (
            !Array.isArray(warnings) ||
            !warnings.some((w) => typeof w === "string" && /platforms=all|\ball\b/.test(w))
          ) {
            return fail(
              `${exchangeLine(f.x, 200)}; warnings ${JSON.stringify(warnings ?? null)} say nothing ` +
                `of platforms=all (D41: platforms=all leaves out both kinds and says so in a warning; D3: a ` +
                `warning about the whole request)`,
            );
          }
          seen.push(`${spec.path} without ${left} (${keys.length} entries)`);
          return undefined;
        };
      };
      const pending: Array<Promise<unknown>> = [];
      const judges: Array<() => Promise<Verdict | undefined>> = [];
      if ((c.byName.get("search") ?? []).includes("x")) {
        judges.push(
          check(
            {
              path: "/v1/search",
              query: { platforms: "all", query: "conformance capabilities", sort: "most_collected", count: 1 },
            },
            "x",
            "x has search but not sort=most_collected",
          ),
        );
      }
      const gap = operationGap(c.byName, ["trending", "search"]);
      if (gap) {
        const body = {
          platforms: "all",
          count: 1,
          ...(gap.name === "search" ? { query: "conformance capabilities" } : {}),
        };
        judges.push(
          check(
            { method: "POST", path: gap.name === "trending" ? "/v1/trending" : "/v1/search", body },
            gap.platform,
            `GET /v1/capabilities lists no ${gap.platform}.${gap.name}`,
          ),
        );
      }
      await Promise.allSettled(pending); // both ended (and a rejection is never left unhandled) before either is judged
      for (const judge of judges) {
        const v = await judge();
        if (v) return v;
      }
      if (!seen.length)
        return na(
          "GET /v1/capabilities lists no x.search and no platform without search or trending: nothing to leave out",
        );
      return pass(seen.join("; "));
    },
  },
];
