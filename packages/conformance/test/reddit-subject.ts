/**
 * The Reddit connector as a subject of the connector acceptance suite: the hand-written exchanges of
 * `fixtures/upstream/reddit/` (synthetic ids, names and text; the token endpoint and the API on one fake upstream),
 * their calls, pages, link forms and faults. Shared by the suite's own test and the server's tests.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { redditConnector } from "@sdgw/engine/connectors";
import { loadExchanges, type ConnectorFault, type ConnectorSubject } from "../src/connectors/index.ts";

/** The hand-written Reddit exchanges. */
export const REDDIT_FIXTURES = fileURLToPath(new URL("../../../fixtures/upstream/reddit/", import.meta.url));

/** Synthetic ids and credentials of the fixtures (made up, never real ones). */
export const RD = {
  POST: "t3_a1tide",
  POST2: "t3_b2kelp",
  MISSING: "t3_zz9999",
  USER: "tidepool_notes",
  USER2: "kelp_forest_fan",
  CLIENT_ID: "SyntheticClientId01",
  CLIENT_SECRET: "synthetic-client-secret-0000000001",
  USER_AGENT: "server:sdgw-tests:1.0 (by /u/sdgw_tests)",
  /** A token a test has the fake token endpoint issue (the fixture's own is `REDACTED`, as recordings write it). */
  TOKEN: "synthetic-app-only-token-0001",
} as const;

/** An error body of `fixtures/upstream/reddit/errors/`. */
export function redditError(name: string): unknown {
  return JSON.parse(readFileSync(join(REDDIT_FIXTURES, "errors", `${name}.json`), "utf8"));
}

/** Settings that read the fake upstream at `url` (the token endpoint on it too). */
export const redditSettings = (url: string): Record<string, string> => ({
  clientId: RD.CLIENT_ID,
  clientSecret: RD.CLIENT_SECRET,
  userAgent: RD.USER_AGENT,
  baseUrl: url,
  tokenUrl: `${url}/api/v1/access_token`,
});

const calls = {
  search: { query: "tide pools" },
  trending: {},
  detail: { id: RD.POST },
  comments: { id: RD.POST },
  user_profile: { id: RD.USER },
  user_posts: { id: RD.USER },
};

/** The Reddit connector against the fake upstream. */
export function redditSubject(): ConnectorSubject {
  const fault = (
    name: string,
    over: {
      method?: string;
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
    body: o.body ?? { id: RD.POST },
    inject: (upstream) => upstream!.override({ path: over.path ?? "/api/info", ...over }),
    expect,
    ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
  });
  return {
    name: "reddit (live, Reddit Data API, app-only OAuth2)",
    platform: "reddit",
    exchanges: loadExchanges(REDDIT_FIXTURES),
    connector: redditConnector,
    settings: redditSettings,
    badSettings: [
      {
        why: "a client id without its secret",
        settings: (url) => ({ clientId: RD.CLIENT_ID, userAgent: RD.USER_AGENT, baseUrl: url }),
        names: "clientSecret",
      },
      {
        why: "no user agent",
        settings: (url) => ({ clientId: RD.CLIENT_ID, clientSecret: RD.CLIENT_SECRET, baseUrl: url }),
        names: "userAgent",
      },
      {
        why: "a generic user agent",
        settings: (url) => ({ ...redditSettings(url), userAgent: "python-requests/2.32.3" }),
        names: "userAgent",
      },
      {
        why: "a secret with a space",
        settings: (url) => ({ ...redditSettings(url), clientSecret: "synthetic secret value" }),
        names: "clientSecret",
      },
      {
        why: "plain http to another host",
        settings: () => ({
          ...redditSettings("http://reddit.example"),
          tokenUrl: "https://www.reddit.com/api/v1/access_token",
        }),
        names: "baseUrl",
      },
      {
        why: "a token URL with a query",
        settings: (url) => ({ ...redditSettings(url), tokenUrl: `${url}/api/v1/access_token?grant_type=password` }),
        names: "tokenUrl",
      },
      {
        why: "no requests a minute",
        settings: (url) => ({ ...redditSettings(url), minuteRequests: "0" }),
        names: "minuteRequests",
      },
      {
        why: "a setting it does not have",
        settings: (url) => ({ ...redditSettings(url), password: "hunter2-synthetic" }),
        names: "password",
      },
    ],
    calls,
    paging: [
      { operation: "search", body: { query: "tide pools" }, upstreamToken: "t3_c3crab" },
      { operation: "trending", body: {}, upstreamToken: "t3_a1tide", otherBody: { scope: "r/tidepools" } },
      { operation: "user_posts", body: { id: RD.USER }, upstreamToken: "t3_a1tide", otherBody: { id: RD.USER2 } },
    ],
    urlForms: [
      ...[
        "https://www.reddit.com/r/tidepools/comments/a1tide/tide_pool_walk_at_dawn/",
        "https://old.reddit.com/r/tidepools/comments/a1tide/tide_pool_walk_at_dawn/",
        "https://reddit.com/r/tidepools/comments/a1tide",
        "https://www.reddit.com/comments/a1tide/",
        "https://redd.it/a1tide",
        "https://np.reddit.com/r/tidepools/comments/a1tide/x/k1aaaa/",
      ].map((url) => ({ operation: "detail" as const, url, id: RD.POST })),
      { operation: "user_profile", url: `https://www.reddit.com/user/${RD.USER}/`, id: RD.USER },
      { operation: "user_profile", url: `https://www.reddit.com/u/${RD.USER}`, id: RD.USER },
      { operation: "user_profile", url: `https://old.reddit.com/user/${RD.USER}/submitted/`, id: RD.USER },
    ],
    notALink: { operation: "detail", url: "https://news.ycombinator.com/item?id=1" },
    faults: [
      fault(
        "our app refused by the token service",
        { method: "POST", path: "/api/v1/access_token", status: 401, body: redditError("token_401") },
        { status: "error", code: "upstream_error", retryable: false },
      ),
      fault(
        "the token refused by the API, twice",
        { status: 401, body: redditError("401_unauthorized") },
        { status: "error", code: "upstream_error", retryable: false },
      ),
      fault(
        "our app blocked",
        { status: 403, body: redditError("403_blocked") },
        { status: "error", code: "upstream_error", retryable: false },
      ),
      fault(
        "a private community",
        { path: "/comments/a1tide", status: 403, body: redditError("403_private") },
        { status: "error", code: "not_found" },
        { operation: "comments" },
      ),
      fault(
        "a server error",
        { status: 503, body: { message: "Service Unavailable", error: 503 } },
        { status: "error", code: "upstream_error", retryable: true },
      ),
      fault("a network error", { reset: true }, { status: "error", code: "upstream_error", retryable: true }),
      fault(
        "too many requests",
        {
          status: 429,
          headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "45", "x-ratelimit-used": "100" },
          body: redditError("429_too_many"),
        },
        { status: "error", code: "rate_limited" },
      ),
      fault("no answer in time", { hang: true }, { status: "timeout" }, { timeoutMs: 1500 }),
      fault(
        "an account that does not exist",
        { path: "/user/nobody_here/about", status: 404, body: redditError("404_not_found") },
        { status: "error", code: "not_found" },
        { operation: "user_profile", body: { id: "nobody_here" } },
      ),
      {
        name: "an id with no post",
        operation: "detail",
        body: { id: RD.MISSING },
        inject: () => undefined,
        expect: { status: "error", code: "not_found" },
      },
      {
        name: "an id that is not a post id",
        operation: "detail",
        body: { id: "not a post" },
        inject: () => undefined,
        expect: { status: "error", code: "invalid_target" },
      },
    ],
  };
}
