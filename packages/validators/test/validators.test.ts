import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FIXTURES_DIR, loadFixtureIndex } from "../../../generators/src/summary.ts";
import { CASES, strip, VALID } from "../../../spec/test/negative-cases.ts";
import * as v from "../src/index.ts";

const named = v as unknown as Record<string, v.Validator<unknown>>;

describe("every fixture passes the validator of its operation and status", () => {
  const fixtures = loadFixtureIndex().filter((f) => f.mediaType === "application/json");
  it.each(fixtures.map((f) => [f.file, f] as const))("%s", (_file, f) => {
    const body = JSON.parse(readFileSync(join(FIXTURES_DIR, f.file), "utf8"));
    const validate = v.responseValidators[f.operationId as keyof typeof v.responseValidators];
    const result = validate(f.http, body);
    expect(result.ok, result.ok ? "" : JSON.stringify(result.errors)).toBe(true);
  });
});

describe("every negative payload fails, every boundary passes", () => {
  it.each(CASES)("rejects %s", (_rule, schema, base, breakIt) => {
    const validate = named[`validate${schema}`]!;
    expect(validate, `validate${schema} exists`).toBeTypeOf("function");
    expect(validate(strip(base())).ok).toBe(true);
    const broken = validate(strip(breakIt(strip(base()))));
    expect(broken.ok).toBe(false);
    if (!broken.ok)
      expect(broken.errors[0]).toMatchObject({
        path: expect.any(String),
        message: expect.any(String),
        keyword: expect.any(String),
      });
  });
  it.each(VALID.filter(([, schema]) => named[`validate${schema}`]))("accepts %s", (_n, schema, value) => {
    expect(named[`validate${schema}`]!(value).ok).toBe(true);
  });
});

const q = (s: string) => v.parseQuery(v.OPERATIONS.search, s);
const base = "platform=x&query=ts";

/** [what, the request part's validator, input, want fix.param, want message (regexp), want fix.allowed?] */
const REFUSALS: Array<
  [string, (x: unknown) => v.RequestValidation<unknown>, unknown, string, RegExp, (readonly string[])?]
> = [
  ["query missing", v.validateSearchQuery, q("platform=x"), "query", /^`query` is required\.$/],
  ["query empty", v.validateSearchQuery, q("platform=x&query="), "query", /text of 1 to 500 characters/],
  [
    "query of 501 characters",
    v.validateSearchQuery,
    q(`platform=x&query=${"字".repeat(501)}`),
    "query",
    /text of 1 to 500 characters/,
  ],
  [
    "query a negative number (body)",
    v.validateSearchPostBody,
    { platform: "x", query: -1 },
    "query",
    /non-empty string or a whole number/,
  ],
  ["count 0", v.validateSearchQuery, q(`${base}&count=0`), "count", /whole number from 1 to 20/],
  ["count 21", v.validateSearchQuery, q(`${base}&count=21`), "count", /whole number from 1 to 20/],
  ["count not a number", v.validateSearchQuery, q(`${base}&count=ten`), "count", /whole number from 1 to 20/],
  [
    "platform missing",
    v.validateSearchQuery,
    q("query=ts"),
    "platform",
    /`platform` is required/,
    ["xiaohongshu", "douyin", "x", "reddit", "wechat", "weibo", "bilibili", "zhihu", "kuaishou", "youtube"],
  ],
  ["platform and platforms", v.validateSearchQuery, q("platform=x&platforms=reddit&query=ts"), "platforms", /not both/],
  ["an eleventh platform", v.validateSearchQuery, q("platform=tiktok&query=ts"), "platform", /one of/],
  [
    "six platforms",
    v.validateSearchQuery,
    q("platforms=x,reddit,weibo,douyin,zhihu,bilibili&query=ts"),
    "platforms",
    /at most 5/,
  ],
  ["duplicate platforms", v.validateSearchQuery, q("platforms=x&platforms=x&query=ts"), "platforms", /unique/],
  ["cursor with platforms", v.validateSearchQuery, q("platforms=x,reddit&query=ts&cursor=abc"), "cursor", /platforms/],
  ["cursor of 20001", v.validateSearchQuery, q(`${base}&cursor=${"c".repeat(20001)}`), "cursor", /invalid or expired/],
  [
    "sort outside the list",
    v.validateSearchQuery,
    q(`${base}&sort=random`),
    "sort",
    /one of/,
    ["relevance", "latest", "most_liked", "most_collected", "most_comments"],
  ],
  ["unknown parameter", v.validateSearchQuery, q(`${base}&limit=5`), "limit", /not a parameter of this call/],
  [
    "max_cost_credits -1",
    v.validateSearchQuery,
    q(`${base}&max_cost_credits=-1`),
    "max_cost_credits",
    /whole number, 0 or more/,
  ],
  [
    "max_cost_credits 1.5",
    v.validateSearchPostBody,
    { platform: "x", query: "q", max_cost_credits: 1.5 },
    "max_cost_credits",
    /whole number, 0 or more/,
  ],
  [
    "limit 0",
    v.validateCommentsBody,
    { platform: "reddit", id: "t3_1", limit: 0 },
    "limit",
    /whole number from 1 to 50/,
  ],
  [
    "limit 51",
    v.validateUserPostsBody,
    { platform: "douyin", id: "1", limit: 51 },
    "limit",
    /whole number from 1 to 50/,
  ],
  [
    "id and url",
    v.validateDetailBody,
    { platform: "x", id: "1", url: "https://x.com/a/status/1" },
    "id",
    /Exactly one of `id`, `url`/,
  ],
  ["neither id nor url", v.validateDetailBody, { platform: "x" }, "id", /Exactly one of `id`, `url`/],
  [
    "21 ids",
    v.validateDetailBody,
    { platform: "x", id: Array.from({ length: 21 }, (_, i) => String(i)) },
    "id",
    /at most 20 platforms or targets/,
  ],
  [
    "21 targets",
    v.validateBatchStatsBody,
    { targets: Array.from({ length: 21 }, (_, i) => `https://b23.tv/${i}`) },
    "targets",
    /at most 20 platforms or targets/,
  ],
  [
    "21 accounts",
    v.validateCreatorCardBody,
    { accounts: Array.from({ length: 21 }, (_, i) => `https://x.com/u${i}`) },
    "accounts",
    /at most 20/,
  ],
  [
    "include comments on creator_card",
    v.validateCreatorCardBody,
    { accounts: ["https://x.com/vercel"], include: ["comments"] },
    "include",
    /does not offer comments for this call/,
    ["posts", "metrics"],
  ],
  [
    "window 14d",
    v.validateBrandBuzzBody,
    { query: "瑞幸", window: "14d" },
    "window",
    /not a value this tool takes/,
    ["7d", "30d"],
  ],
  [
    "range 1y",
    v.validateAccountWatchBody,
    { accounts: ["https://x.com/vercel"], range: "1y" },
    "range",
    /one of the tool's values/,
    ["today", "7d", "14d", "30d"],
  ],
  [
    "format xlsx (results)",
    v.validateGetResultQuery,
    v.parseQuery(v.OPERATIONS.getResult, "format=xlsx"),
    "format",
    /one of `json`, `csv`, `ndjson`/,
    ["json", "csv", "ndjson"],
  ],
  [
    "format xlsx (batch_stats)",
    v.validateBatchStatsBody,
    { targets: ["https://b23.tv/1"], format: "xlsx" },
    "format",
    /one of `json`, `csv`, `ndjson`/,
  ],
  [
    "Idempotency-Key missing",
    v.validateSearchHeaders,
    {},
    "Idempotency-Key",
    /^`Idempotency-Key` is missing: send the header/,
  ],
  [
    "Idempotency-Key with a space",
    v.validateSearchHeaders,
    { "idempotency-key": "a b" },
    "Idempotency-Key",
    /1 to 255 visible ASCII/,
  ],
  [
    "Idempotency-Key of 256",
    v.validateSearchHeaders,
    { "idempotency-key": "k".repeat(256) },
    "Idempotency-Key",
    /1 to 255 visible ASCII/,
  ],
  ["a body that is not an object", v.validateDetailBody, [1, 2], "body", /one JSON object/],
  ["a malformed op", v.validateCallOperationPath, { op: "tiktok.search" }, "op", /.+/],
  ["a handle with a dot", v.validateGetResultPath, { handle: "h_1.20" }, "handle", /.+/],
];

describe("request validators answer as the seed does", () => {
  it.each(REFUSALS)("%s → invalid_params naming the parameter", (_what, validate, input, param, message, allowed) => {
    const result = validate(input);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.invalid.param).toBe(param);
    expect(result.invalid.message).toMatch(message);
    if (allowed) expect(result.invalid.allowed).toEqual(allowed);
    const answer = result.answer("req_test");
    expect(v.validateErrorStructure(answer).ok).toBe(true);
    expect(answer).toMatchObject({ code: "invalid_params", retryable: false, fix: { param } });
  });

  it.each<[string, (x: unknown) => v.RequestValidation<unknown>, unknown]>([
    ["platforms=all", v.validateSearchQuery, q("platforms=all&query=ts")],
    ["repeated platforms", v.validateSearchQuery, q("platforms=x&platforms=reddit&query=ts")],
    ["comma-separated platforms", v.validateSearchQuery, q("platforms=x,reddit,weibo,douyin,zhihu&query=ts")],
    ["count 1 and a cursor of 20000", v.validateSearchQuery, q(`${base}&count=1&cursor=${"c".repeat(20000)}`)],
    ["a 500-character query", v.validateSearchQuery, q(`platform=x&query=${"字".repeat(500)}`)],
    ["an emoji query counted in characters", v.validateSearchQuery, q(`platform=x&query=${"😀".repeat(500)}`)],
    ["max_cost_credits 0", v.validateSearchQuery, q(`${base}&max_cost_credits=0`)],
    ["a 255-character Idempotency-Key", v.validateSearchHeaders, { "idempotency-key": "~".repeat(255) }],
    ["a 1-character Idempotency-Key", v.validateSearchHeaders, v.normalizeHeaders({ "Idempotency-Key": "!" })],
    [
      "20 urls",
      v.validateDetailBody,
      { platform: "x", url: Array.from({ length: 20 }, (_, i) => `https://x.com/a/status/${i}`) },
    ],
    ["limit 50", v.validateCommentsBody, { platform: "reddit", id: "t3_1", limit: 50 }],
    ["format ndjson", v.validateGetResultQuery, v.parseQuery(v.OPERATIONS.getResult, "?format=ndjson")],
  ])("accepts %s", (_what, validate, input) => {
    const result = validate(input);
    expect(result.ok, result.ok ? "" : result.invalid.message).toBe(true);
  });

  it("accepts every 1..255 printable ASCII Idempotency-Key (property)", () => {
    const key = fc
      .array(
        fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
        { minLength: 1, maxLength: 255 },
      )
      .map((a) => a.join(""));
    fc.assert(fc.property(key, (k) => v.validateSearchHeaders({ "idempotency-key": k }).ok));
  });

  it("accepts every count from 1 to 20 and refuses every other whole number (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1000, max: 1000 }),
        (n) => v.validateSearchQuery(q(`${base}&count=${n}`)).ok === (n >= 1 && n <= 20),
      ),
    );
  });
});

describe("any JSON value (property)", () => {
  const validators = Object.entries(named).filter(
    ([k, f]) => k.startsWith("validate") && typeof f === "function" && !k.endsWith("Response"),
  );

  it("gives a result from every validator and never throws", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        for (const [, validate] of validators) {
          const result = validate(value) as { ok: boolean; invalid?: v.InvalidParams };
          if (typeof result.ok !== "boolean") return false;
          if (!result.ok && "invalid" in result && !(result.invalid!.param && result.invalid!.message)) return false;
        }
        return true;
      }),
      { numRuns: 300 },
    );
  });

  it("never throws on objects shaped like a search query", () => {
    const query = fc.dictionary(
      fc.constantFrom("platform", "platforms", "query", "count", "cursor", "sort", "scope", "type", "x"),
      fc.oneof(fc.string(), fc.integer(), fc.array(fc.string())),
    );
    fc.assert(fc.property(query, (value) => typeof v.validateSearchQuery(value).ok === "boolean"));
  });

  it("every answer validator answers for every documented status", () => {
    for (const [id, validate] of Object.entries(v.responseValidators)) {
      for (const status of validate.statuses)
        expect(typeof validate(status, { any: "thing" }).ok, `${id} ${status}`).toBe("boolean");
      expect(validate(299, {}).ok).toBe(false);
    }
  });
});

describe("parseQuery", () => {
  it("reads repeated and comma-separated lists, numbers, and the word all", () => {
    expect(q("platforms=x&platforms=reddit,weibo&query=露营&count=5")).toEqual({
      platforms: ["x", "reddit", "weibo"],
      query: "露营",
      count: 5,
    });
    expect(q("platforms=all&query=a")).toEqual({ platforms: "all", query: "a" });
    expect(q("platforms=x&query=a")).toEqual({ platforms: ["x"], query: "a" });
    expect(q(`${new URLSearchParams({ count: "07" })}`)).toEqual({ count: 7 });
    expect(q("count=1e3")).toEqual({ count: "1e3" });
  });
});
