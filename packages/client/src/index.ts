/**
 * @sdgw/client: the typed SDK of the Social Data Gateway. A call answered 202 is polled to its end, retries keep
 * one Idempotency-Key, errors are typed by code, pages and MCP `more` answers iterate.
 *
 * ```ts
 * import { createClient, isSdgwError } from "@sdgw/client";
 * const sdgw = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.SDGW_KEY });
 * const answer = await sdgw.search({ platform: "xiaohongshu", query: "露营装备" });
 * if (answer.status === "ok") for (const item of answer.items) console.log(item.kind);
 * ```
 *
 * @packageDocumentation
 */
export { createClient, sleep } from "./client.ts";
export type { Call, CallOptions, Client, ClientOptions, Logger, LogLevel, RetryInfo, SdgwPromise, ToolCall, WithResponse } from "./client.ts";
export { isSdgwError, SdgwError, SdgwPollTimeoutError, SdgwTimeoutError, SdgwTransportError } from "./errors.ts";
export type { AnySdgwError, SdgwErrorOf } from "./errors.ts";
export { collectMore, moreRows } from "./more.ts";
export type { McpToolCaller, MoreOptions } from "./more.ts";
export { fanoutEntries } from "./fanout.ts";
export { items, pages } from "./pages.ts";
