/**
 * Type tests: the discriminated unions of the contract narrow in TypeScript the way the spec's `oneOf`s say.
 * Run by vitest's typecheck (tsc) and by `pnpm typecheck`. Imports go through the package name, which resolves
 * to src/ by the `source` export condition (tsconfig `customConditions`).
 */
import { describe, expectTypeOf, test } from "vitest";
import type {
  Answer,
  AnswerStatus,
  BrandBuzzRequest,
  DataEnvelope,
  DetailRequest,
  EnvelopeError,
  ErrorAnswer,
  ErrorCode,
  ErrorOf,
  ErrorStructure,
  FanoutAnswer,
  FanoutEntry,
  HandleAnswer,
  Item,
  ItemKind,
  OperationId,
  Platform,
  RequestBody,
  ScheduleDeleted,
  SearchEnvelope,
  SearchRequest,
  SuccessAnswer,
  TargetsAnswer,
  ToolAnswer,
  ToolName,
  ToolQuoteAnswer,
  ToolRequest,
  ViralFinderRequest,
} from "@sdgw/types";
import type { ANSWER_STATUSES, ERROR_CATALOGUE, ERROR_CODES, ITEM_KINDS, PLATFORMS, TOOL_NAMES } from "@sdgw/types";

declare const envelope: SearchEnvelope;
declare const data: DataEnvelope;
declare const fanout: FanoutAnswer;
declare const targets: TargetsAnswer;
declare const item: Item;
declare const err: ErrorStructure;
declare const answer: ToolAnswer | ToolQuoteAnswer;

type SearchErrorCode = "rate_limited" | "insufficient_balance" | "upstream_error" | "invalid_params";

describe("SearchEnvelope narrows on status", () => {
  test("ok: items are Item[] and there is no error", () => {
    if (envelope.status === "ok") {
      expectTypeOf(envelope.items).toEqualTypeOf<Item[]>();
      // @ts-expect-error an ok envelope has no error
      void envelope.error;
      expectTypeOf(envelope.billing.cost).toEqualTypeOf<number>();
    }
  });

  test("error: error.code is exactly the seed's four codes", () => {
    if (envelope.status === "error") {
      expectTypeOf(envelope.error.code).toEqualTypeOf<SearchErrorCode>();
      expectTypeOf(envelope.billing.cost).toEqualTypeOf<0>();
      if (envelope.error.code === "rate_limited") expectTypeOf(envelope.error.retry_after).toEqualTypeOf<number>();
      if (envelope.error.code === "upstream_error") expectTypeOf(envelope.error.action_url).toEqualTypeOf<string>();
    }
  });

  test("timeout and not_supported: error.code is that code", () => {
    if (envelope.status === "timeout") expectTypeOf(envelope.error.code).toEqualTypeOf<"timeout">();
    if (envelope.status === "not_supported") expectTypeOf(envelope.error.code).toEqualTypeOf<"not_supported">();
  });

  test("empty: no error", () => {
    if (envelope.status === "empty") {
      // @ts-expect-error an empty envelope has no error
      void envelope.error;
    }
  });

  test("status is the five answer statuses", () => {
    expectTypeOf<SearchEnvelope["status"]>().toEqualTypeOf<AnswerStatus>();
  });
});

describe("DataEnvelope adds the codes of D13", () => {
  test("error: seven codes, not_found with a fix", () => {
    if (data.status === "error") {
      expectTypeOf(data.error.code).toEqualTypeOf<
        SearchErrorCode | "not_found" | "invalid_target" | "temporarily_unavailable"
      >();
      if (data.error.code === "invalid_target") expectTypeOf(data.error.fix.param).toEqualTypeOf<string>();
    }
  });

  test("EnvelopeError holds exactly the codes the catalogue lets stand in an envelope", () => {
    type Catalogue = typeof ERROR_CATALOGUE;
    type InEnvelope = { [C in keyof Catalogue]: Catalogue[C]["envelope"] extends "none" ? never : C }[keyof Catalogue];
    expectTypeOf<EnvelopeError["code"]>().toEqualTypeOf<InEnvelope>();
  });
});

describe("fanout and targets", () => {
  test("fanout is keyed by platform and its entries narrow on status", () => {
    const entry = fanout.fanout.reddit;
    expectTypeOf(entry).toEqualTypeOf<FanoutEntry | undefined>();
    if (entry?.status === "timeout") expectTypeOf(entry.error.code).toEqualTypeOf<"timeout">();
    if (entry?.status === "ok") expectTypeOf(entry.items).toEqualTypeOf<Item[]>();
    // @ts-expect-error not a platform
    void fanout.fanout.twitter;
    // @ts-expect-error a fanout answer never has a top-level error (D4)
    void fanout.error;
  });

  test("targets answer cells carry the target", () => {
    const cell = targets.targets[0];
    expectTypeOf(cell?.target).toEqualTypeOf<string | undefined>();
    // a target's error takes the codes of D13, as a data envelope's
    if (cell?.result.status === "error")
      expectTypeOf(cell.result.error.code).toEqualTypeOf<Extract<DataEnvelope, { status: "error" }>["error"]["code"]>();
  });
});

describe("Item narrows on kind", () => {
  test("leaderboard has rank and no buckets", () => {
    if (item.kind === "leaderboard") {
      expectTypeOf(item.rank).toEqualTypeOf<number>();
      // @ts-expect-error a leaderboard item has no buckets
      void item.buckets;
    }
  });

  test("distribution has buckets, timeseries points, profile_card name", () => {
    if (item.kind === "distribution") expectTypeOf(item.buckets).toEqualTypeOf<{ label: string; value: number }[]>();
    if (item.kind === "timeseries") expectTypeOf(item.points).toEqualTypeOf<{ t: string; value: number }[]>();
    if (item.kind === "profile_card") expectTypeOf(item.name).toEqualTypeOf<string>();
  });

  test("ItemKind is the five kinds, as ITEM_KINDS", () => {
    expectTypeOf<ItemKind>().toEqualTypeOf<"item" | "profile_card" | "leaderboard" | "distribution" | "timeseries">();
    expectTypeOf<(typeof ITEM_KINDS)[number]>().toEqualTypeOf<ItemKind>();
  });
});

describe("ErrorStructure narrows on code", () => {
  test("max_cost_exceeded has quote_credits", () => {
    if (err.code === "max_cost_exceeded") {
      expectTypeOf(err.quote_credits).toEqualTypeOf<number>();
      expectTypeOf(err.fix.param).toEqualTypeOf<"max_cost_credits">();
      expectTypeOf(err.retryable).toEqualTypeOf<false>();
    }
  });

  test("rate_limited has reason and retry_after", () => {
    if (err.code === "rate_limited") {
      expectTypeOf(err.reason).toEqualTypeOf<"key_qps" | "workspace_concurrency" | "address">();
      expectTypeOf(err.retry_after).toEqualTypeOf<number>();
      expectTypeOf(err.retryable).toEqualTypeOf<true>();
    }
  });

  test("codes without their own members have none", () => {
    if (err.code === "internal_error") {
      // @ts-expect-error internal_error has no reason
      void err.reason;
    }
  });

  test("ErrorOf picks one code", () => {
    expectTypeOf<ErrorOf<"rate_limited">["reason"]>().toEqualTypeOf<"key_qps" | "workspace_concurrency" | "address">();
    expectTypeOf<ErrorOf<"daily_limit_reached">["resets_at"]>().toEqualTypeOf<string>();
    expectTypeOf<ErrorOf<"max_cost_exceeded">>().toEqualTypeOf<
      Extract<ErrorStructure, { code: "max_cost_exceeded" }>
    >();
    // the three codes answered only inside HTTP 200 envelopes have no error structure
    expectTypeOf<ErrorOf<"timeout">>().toBeNever();
  });

  test("ErrorStructure holds exactly the codes the catalogue answers under a non-200 status", () => {
    type Catalogue = typeof ERROR_CATALOGUE;
    type NonOk = {
      [C in keyof Catalogue]: Exclude<Catalogue[C]["http"][number], 200> extends never ? never : C;
    }[keyof Catalogue];
    expectTypeOf<ErrorStructure["code"]>().toEqualTypeOf<NonOk>();
  });
});

describe("scalar unions match the runtime lists", () => {
  test("Platform is the ten platforms", () => {
    expectTypeOf<Platform>().toEqualTypeOf<
      "xiaohongshu" | "douyin" | "x" | "reddit" | "wechat" | "weibo" | "bilibili" | "zhihu" | "kuaishou" | "youtube"
    >();
    expectTypeOf<(typeof PLATFORMS)[number]>().toEqualTypeOf<Platform>();
    expectTypeOf<(typeof PLATFORMS)["length"]>().toEqualTypeOf<10>();
  });

  test("ErrorCode has 19 members", () => {
    expectTypeOf<ErrorCode>().toEqualTypeOf<
      | "invalid_params"
      | "not_supported"
      | "unauthorized"
      | "insufficient_balance"
      | "max_cost_exceeded"
      | "plan_limit"
      | "key_scope_denied"
      | "not_found"
      | "idempotency_in_progress"
      | "handle_expired"
      | "idempotency_conflict"
      | "daily_limit_reached"
      | "free_failure_limit"
      | "rate_limited"
      | "internal_error"
      | "temporarily_unavailable"
      | "invalid_target"
      | "upstream_error"
      | "timeout"
    >();
    expectTypeOf<(typeof ERROR_CODES)[number]>().toEqualTypeOf<ErrorCode>();
    expectTypeOf<(typeof ERROR_CODES)["length"]>().toEqualTypeOf<19>();
    expectTypeOf<keyof typeof ERROR_CATALOGUE>().toEqualTypeOf<ErrorCode>();
  });

  test("ToolName and AnswerStatus match TOOL_NAMES and ANSWER_STATUSES", () => {
    expectTypeOf<(typeof TOOL_NAMES)[number]>().toEqualTypeOf<ToolName>();
    expectTypeOf<(typeof TOOL_NAMES)["length"]>().toEqualTypeOf<7>();
    expectTypeOf<(typeof ANSWER_STATUSES)[number]>().toEqualTypeOf<AnswerStatus>();
  });
});

describe("tool answers", () => {
  test("a tool answer narrows on status; a quote has no status", () => {
    if ("status" in answer) {
      if (answer.status === "ok") expectTypeOf(answer.charge.charged_credits).toEqualTypeOf<number>();
      if (answer.status === "error") expectTypeOf(answer.charge.charged_credits).toEqualTypeOf<0>();
    } else {
      expectTypeOf(answer.quote.mode).toEqualTypeOf<"inline" | "background">();
    }
  });
});

describe("requests", () => {
  test("a search takes exactly one of platform and platforms, and no cursor with platforms", () => {
    expectTypeOf<{ query: string; platform: "x" }>().toExtend<SearchRequest>();
    expectTypeOf<{ query: string; platforms: ["x", "reddit"] }>().toExtend<SearchRequest>();
    expectTypeOf<{ query: 2024; platforms: "all" }>().toExtend<SearchRequest>();
    expectTypeOf<{ query: string; platform: "x"; cursor: string }>().toExtend<SearchRequest>();
    expectTypeOf<{ query: string }>().not.toExtend<SearchRequest>();
    expectTypeOf<{ query: string; platform: "x"; platforms: ["x"] }>().not.toExtend<SearchRequest>();
    expectTypeOf<{ query: string; platforms: ["x"]; cursor: string }>().not.toExtend<SearchRequest>();
  });

  test("detail takes exactly one of id and url", () => {
    expectTypeOf<{ platform: "bilibili"; id: string }>().toExtend<DetailRequest>();
    expectTypeOf<{ platform: "bilibili"; url: string[] }>().toExtend<DetailRequest>();
    expectTypeOf<{ platform: "bilibili" }>().not.toExtend<DetailRequest>();
    expectTypeOf<{ platform: "bilibili"; id: string; url: string }>().not.toExtend<DetailRequest>();
  });

  test("members with a default stay optional", () => {
    expectTypeOf<{ query: string }>().toExtend<BrandBuzzRequest>();
    expectTypeOf<BrandBuzzRequest["scale"]>().toEqualTypeOf<"small" | "standard" | "large" | undefined>();
  });

  test("ToolRequest reads each tool's body from the paths", () => {
    expectTypeOf<ToolRequest<"brand_buzz">>().toEqualTypeOf<BrandBuzzRequest>();
    expectTypeOf<ToolRequest<"viral_finder">>().toEqualTypeOf<ViralFinderRequest>();
  });
});

describe("operation helpers", () => {
  test("OperationId, RequestBody, SuccessAnswer, Answer, ErrorAnswer", () => {
    expectTypeOf<"search" | "searchPost" | "getResult" | "brandBuzz">().toExtend<OperationId>();
    expectTypeOf<RequestBody<"searchPost">>().toEqualTypeOf<SearchRequest>();
    expectTypeOf<RequestBody<"search">>().toBeNever();
    expectTypeOf<SuccessAnswer<"search">>().toEqualTypeOf<SearchEnvelope | FanoutAnswer>();
    expectTypeOf<SuccessAnswer<"detail">>().toEqualTypeOf<DataEnvelope | TargetsAnswer>();
    expectTypeOf<SuccessAnswer<"deleteSchedule">>().toEqualTypeOf<ScheduleDeleted>();
    expectTypeOf<Answer<"search", 202>>().toEqualTypeOf<HandleAnswer>();
    expectTypeOf<Answer<"search", 429>["code"]>().toEqualTypeOf<
      "daily_limit_reached" | "free_failure_limit" | "rate_limited"
    >();
    expectTypeOf<ErrorAnswer<"deleteSchedule">["code"]>().toEqualTypeOf<
      | "invalid_params"
      | "not_supported"
      | "unauthorized"
      | "not_found"
      | "daily_limit_reached"
      | "free_failure_limit"
      | "rate_limited"
      | "internal_error"
      | "temporarily_unavailable"
    >();
  });
});
