/**
 * The X connector as a subject of the connector acceptance suite: the hand-written exchanges of
 * `fixtures/upstream/x/` (synthetic 19-digit ids, names and text, every request naming its fields), their calls,
 * pages, link forms and faults; trending is not offered live (D156). Shared by the suite's own test and the server's.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { xConnector } from "@sdgw/engine/connectors";
import { loadExchanges, type ConnectorFault, type ConnectorSubject } from "../src/connectors/index.ts";

/** The hand-written X exchanges. */
export const X_FIXTURES = fileURLToPath(new URL("../../../fixtures/upstream/x/", import.meta.url));

/** Synthetic ids and the token of the fixtures (made up, never real ones). */
export const XF = {
  T1: "1912345678901234567",
  T2: "1912345678901234999",
  T3: "1912345678901235001",
  MISSING: "1912345678900000000",
  USER: "tidepoolnotes",
  USER_ID: "1900000000000000001",
  USER2: "kelpforestfan",
  TOKEN: "AAAAAAAAAAAAAAAAAAAAASyntheticBearerToken%2F0000000000000000000000000001",
} as const;

/** An error body of `fixtures/upstream/x/errors/`. */
export function xError(name: string): unknown {
  return JSON.parse(readFileSync(join(X_FIXTURES, "errors", `${name}.json`), "utf8"));
}

/** Settings that read the fake upstream at `url`. */
export const xSettings = (url: string): Record<string, string> => ({ bearerToken: XF.TOKEN, baseUrl: `${url}/2` });

/** The X connector against the fake upstream. */
export function xSubject(): ConnectorSubject {
  const fault = (
    name: string,
    over: {
      path?: string;
      status?: number;
      body?: unknown;
      headers?: Record<string, string>;
      hang?: boolean;
      reset?: boolean;
    },
    expect: ConnectorFault["expect"],
    o: { operation?: ConnectorFault["operation"]; body?: Record<string, unknown>; timeoutMs?: number } = {},
  ): ConnectorFault => ({
    name,
    operation: o.operation ?? "detail",
    body: o.body ?? { id: XF.T1 },
    inject: (upstream) => upstream!.override({ path: over.path ?? "/2/tweets", ...over }),
    expect,
    ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
  });
  return {
    name: "x (live, X API v2, app-only Bearer token)",
    platform: "x",
    exchanges: loadExchanges(X_FIXTURES),
    connector: xConnector,
    settings: xSettings,
    badSettings: [
      { why: "no token", settings: (url) => ({ baseUrl: `${url}/2` }), names: "bearerToken" },
      {
        why: "a token with a line break",
        settings: (url) => ({ bearerToken: "AAAA\nBBBB", baseUrl: `${url}/2` }),
        names: "bearerToken",
      },
      {
        why: "plain http to another host",
        settings: () => ({ bearerToken: XF.TOKEN, baseUrl: "http://api.x.example/2" }),
        names: "baseUrl",
      },
      { why: "no reads a day", settings: (url) => ({ ...xSettings(url), dailyReads: "0" }), names: "dailyReads" },
      {
        why: "a setting it does not have",
        settings: (url) => ({ ...xSettings(url), apiKey: "synthetic-key-value" }),
        names: "apiKey",
      },
    ],
    calls: {
      search: { query: "tide pools" },
      detail: { id: XF.T1 },
      comments: { id: XF.T1 },
      user_profile: { id: XF.USER },
      user_posts: { id: XF.USER },
    },
    unavailable: ["trending"],
    paging: [
      { operation: "search", body: { query: "tide pools" }, upstreamToken: "b26v89c19zqg8o3fr5synthetic01" },
      {
        operation: "user_posts",
        body: { id: XF.USER },
        upstreamToken: "7140dibdnow9c7btw4b0synthetic02",
        otherBody: { id: XF.USER2 },
      },
    ],
    urlForms: [
      ...[
        `https://x.com/${XF.USER}/status/${XF.T1}`,
        `https://twitter.com/${XF.USER}/status/${XF.T1}`,
        `https://mobile.twitter.com/${XF.USER}/status/${XF.T1}`,
        `https://x.com/i/web/status/${XF.T1}`,
        `https://x.com/${XF.USER}/status/${XF.T1}/photo/1`,
        `https://www.x.com/${XF.USER}/status/${XF.T1}?s=20`,
      ].map((url) => ({ operation: "detail" as const, url, id: XF.T1 })),
      { operation: "user_profile", url: `https://x.com/${XF.USER}`, id: XF.USER },
      { operation: "user_profile", url: `https://twitter.com/${XF.USER}/`, id: XF.USER },
    ],
    notALink: { operation: "detail", url: "https://www.threads.net/@tidepoolnotes/post/C1" },
    faults: [
      fault(
        "our token refused",
        { status: 401, body: xError("401_unauthorized") },
        { status: "error", code: "upstream_error", retryable: false },
      ),
      fault(
        "our access level too low",
        { status: 403, body: xError("403_client_not_enrolled") },
        { status: "error", code: "upstream_error", retryable: false },
      ),
      fault(
        "too many requests",
        {
          status: 429,
          headers: { "x-rate-limit-remaining": "0", "x-rate-limit-reset": String(Math.floor(Date.now() / 1000) + 600) },
          body: xError("429_too_many"),
        },
        { status: "error", code: "rate_limited" },
      ),
      fault(
        "the monthly usage cap",
        { path: "/2/tweets/search/recent", status: 429, body: xError("429_usage_capped") },
        { status: "error", code: "rate_limited" },
        { operation: "search", body: { query: "tide pools" } },
      ),
      fault(
        "a query X refuses",
        { path: "/2/tweets/search/recent", status: 400, body: xError("400_invalid_query") },
        { status: "error", code: "upstream_error", retryable: false },
        { operation: "search", body: { query: "(((" } },
      ),
      fault(
        "a server error",
        { status: 503, body: xError("503_unavailable") },
        { status: "error", code: "upstream_error", retryable: true },
      ),
      fault("a network error", { reset: true }, { status: "error", code: "upstream_error", retryable: true }),
      fault("no answer in time", { hang: true }, { status: "timeout" }, { timeoutMs: 1500 }),
      {
        name: "an id with no post",
        operation: "detail",
        body: { id: XF.MISSING },
        inject: () => undefined,
        expect: { status: "error", code: "not_found" },
      },
      {
        name: "an account that does not exist",
        operation: "user_profile",
        body: { id: "nobody_here" },
        inject: () => undefined,
        expect: { status: "error", code: "not_found" },
      },
      {
        name: "an id that is not a post id",
        operation: "detail",
        body: { id: "12345678901234567890" },
        inject: () => undefined,
        expect: { status: "error", code: "invalid_target" },
      },
    ],
  };
}
