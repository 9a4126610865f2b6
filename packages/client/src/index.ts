/**
 * {@include ../README.md}
 *
 * @packageDocumentation
 * @module @sdgw/client
 */
export { createClient, sleep } from "./client.ts";
export type {
  Call,
  CallOptions,
  Client,
  ClientOptions,
  Logger,
  LogLevel,
  RetryInfo,
  SdgwPromise,
  ToolCall,
  WithResponse,
} from "./client.ts";
export {
  isSdgwError,
  SdgwAbortError,
  SdgwBaseError,
  SdgwError,
  SdgwPollTimeoutError,
  SdgwTimeoutError,
  SdgwTransportError,
} from "./errors.ts";
export type { AnySdgwError, SdgwErrorOf } from "./errors.ts";
export { collectMore, moreRows } from "./more.ts";
export type { McpToolCaller, MoreOptions } from "./more.ts";
export { fanoutEntries } from "./fanout.ts";
export { items, pages } from "./pages.ts";
