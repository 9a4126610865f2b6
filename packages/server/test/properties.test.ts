/** Property tests (fast-check): any query string or body gets a documented answer of its route, never a 5xx. */
import fc from "fast-check";
import { PLATFORMS } from "@sdgw/types";
import { afterAll, describe, expect, it } from "vitest";
import { harness } from "./helpers.ts";

const h = harness({ credits: 1_000_000 });
afterAll(async () => {
  h.audit();
  await h.server.close();
});

const word = fc.oneof(
  fc.constantFrom(
    ...PLATFORMS,
    "all",
    "content",
    "user",
    "latest",
    "most_liked",
    "most_collected",
    "1d",
    "7d",
    "all",
    "video",
    "text",
    "-1",
    "0",
    "5",
    "21",
    "abc",
    "",
  ),
  fc.string({ maxLength: 12 }),
  fc.integer({ min: -5, max: 30 }).map(String),
);
const names = fc.constantFrom(
  "platform",
  "platforms",
  "query",
  "type",
  "sort",
  "time_range",
  "content_type",
  "scope",
  "count",
  "cursor",
  "max_cost_credits",
  "limit",
  "extra",
);

const OK_SEARCH = new Set([200, 202, 400, 402, 403, 409, 422, 429]);

describe("properties", () => {
  it("GET /v1/search answers every query string with a documented status, valid by the contract", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(names, word), { maxLength: 8 }),
        fc.option(fc.string({ minLength: 0, maxLength: 300 }), { nil: undefined }),
        async (pairs, idem) => {
          const qs = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");
          const headers: Record<string, string> = {};
          if (idem !== undefined && /^[\x20-\x7e]*$/.test(idem)) headers["idempotency-key"] = idem;
          const a = await h.call("search", "GET", `/v1/search?${qs}`, { headers });
          expect(OK_SEARCH.has(a.status), `${a.status} ${a.text}`).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  const jsonValue = fc.oneof(
    word,
    fc.integer({ min: -3, max: 60 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(word, { maxLength: 22 }),
    fc.webUrl(),
    fc.array(fc.webUrl(), { maxLength: 3 }),
  );
  const routes = [
    ["searchPost", "/v1/search"],
    ["trending", "/v1/trending"],
    ["detail", "/v1/detail"],
    ["comments", "/v1/comments"],
    ["userProfile", "/v1/user_profile"],
    ["userPosts", "/v1/user_posts"],
    ["callOperation", "/v1/call/bilibili.video_danmaku"],
    ["callOperation", "/v1/call/x.search"],
    ["findOperation", "/v1/find"],
  ] as const;

  it("POST routes answer every JSON body with a documented status, valid by the contract", async () => {
    const keys = fc.constantFrom(
      "platform",
      "platforms",
      "query",
      "id",
      "url",
      "limit",
      "cursor",
      "sort",
      "count",
      "bvid",
      "max_cost_credits",
      "scope",
      "zzz",
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        fc.oneof(fc.dictionary(keys, jsonValue, { maxKeys: 5 }), fc.jsonValue()),
        async ([op, path], body) => {
          const a = await h.call(op, "POST", path, { body });
          expect(a.status, a.text).toBeLessThan(500);
          expect([200, 202, 400, 402, 403, 409, 422, 429]).toContain(a.status);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("raw bodies that are not JSON are invalid_params, never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 50 }),
        fc.constantFrom(
          "application/json",
          "text/plain",
          "application/x-www-form-urlencoded",
          "application/json; charset=utf-8",
        ),
        async (raw, type) => {
          const a = await h.call("detail", "POST", "/v1/detail", { raw, headers: { "content-type": type } });
          expect(a.status).toBeLessThan(500);
        },
      ),
      { numRuns: 150 },
    );
  });
});
