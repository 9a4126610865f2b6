import type { FanoutAnswer, HandleAnswer, SearchEnvelope, ToolAnswer, ToolQuoteAnswer } from "@sdgw/types";
import { describe, expectTypeOf, it } from "vitest";
import { createClient, isSdgwError, type SdgwPromise, type WithResponse } from "../src/index.ts";

const sdgw = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey: "k" });

describe("typed calls", () => {
  it("answers the envelope for one platform and the fanout answer for several", () => {
    expectTypeOf(sdgw.search({ platform: "weibo", query: "双十一" })).toEqualTypeOf<SdgwPromise<SearchEnvelope>>();
    expectTypeOf(sdgw.search({ platforms: ["x", "reddit"], query: "q" })).toEqualTypeOf<SdgwPromise<FanoutAnswer>>();
    expectTypeOf(sdgw.search({ platforms: "all", query: "q" })).toEqualTypeOf<SdgwPromise<FanoutAnswer>>();
  });

  it("widens to the handle answer only with { wait: false }", () => {
    expectTypeOf(sdgw.search({ platform: "x", query: "q" }, { wait: false })).toEqualTypeOf<
      SdgwPromise<SearchEnvelope | HandleAnswer>
    >();
  });

  it("answers a tool's quote for confirm: false and its result otherwise", () => {
    expectTypeOf(sdgw.tools.brandBuzz({ query: "q" })).toEqualTypeOf<SdgwPromise<ToolAnswer>>();
    expectTypeOf(sdgw.tools.brandBuzz({ query: "q", confirm: true })).toEqualTypeOf<SdgwPromise<ToolAnswer>>();
    expectTypeOf(sdgw.tools.brandBuzz({ query: "q", confirm: false })).toEqualTypeOf<SdgwPromise<ToolQuoteAnswer>>();
    expectTypeOf(sdgw.tools.viralFinder({ query: "q" }, { wait: false })).toEqualTypeOf<
      SdgwPromise<ToolAnswer | HandleAnswer>
    >();
    const confirm = Math.random() > 0.5;
    expectTypeOf(sdgw.tools.brandBuzz({ query: "q", confirm })).toEqualTypeOf<
      SdgwPromise<ToolAnswer | ToolQuoteAnswer>
    >();
  });

  it("refuses parameters the contract does not have", () => {
    // @ts-expect-error: an eleventh platform
    void sdgw.search({ platform: "tiktok", query: "q" });
    // @ts-expect-error: count is a number
    void sdgw.search({ platform: "x", query: "q", count: "5" });
    // @ts-expect-error: detail takes id or url, not query
    void sdgw.detail({ platform: "x", query: "q" });
    // @ts-expect-error: include of creator_card does not offer comments
    void sdgw.tools.creatorCard({ accounts: ["https://x.com/vercel"], include: ["comments"] });
  });

  it("narrows the envelope by status", async () => {
    const answer = await sdgw.search({ platform: "x", query: "q" });
    if (answer.status === "error")
      expectTypeOf(answer.error.code).toEqualTypeOf<
        "rate_limited" | "insufficient_balance" | "upstream_error" | "invalid_params"
      >();
  });
});

describe("errors", () => {
  it("narrow by code to that code's fields", () => {
    const e: unknown = new Error("x");
    if (isSdgwError(e)) {
      if (e.code === "daily_limit_reached") {
        expectTypeOf(e.resets_at).toEqualTypeOf<string>();
        expectTypeOf(e.reason).toEqualTypeOf<"key" | "account">();
      }
      if (e.code === "rate_limited") expectTypeOf(e.retry_after).toEqualTypeOf<number>();
      expectTypeOf(e.status).toEqualTypeOf<number>();
      expectTypeOf(e.request_id).toEqualTypeOf<string>();
    }
    if (isSdgwError(e, "max_cost_exceeded")) expectTypeOf(e.quote_credits).toEqualTypeOf<number>();
  });
});

describe("withResponse", () => {
  it("answers the same typed data with the status, headers and request id", () => {
    expectTypeOf(sdgw.search({ platforms: ["x"], query: "q" }).withResponse()).toEqualTypeOf<
      Promise<WithResponse<FanoutAnswer>>
    >();
    expectTypeOf(sdgw.results.get("h", { format: "csv" }).withResponse()).toEqualTypeOf<
      Promise<WithResponse<string | HandleAnswer>>
    >();
  });
});
