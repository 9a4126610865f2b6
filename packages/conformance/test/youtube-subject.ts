/**
 * The YouTube connector and the simulator as subjects of the connector acceptance suite: the hand-written
 * exchanges of `fixtures/upstream/youtube/` (synthetic ids, names and text), their calls, pages, link forms and
 * faults. Shared by the suite's own test and the server's tests.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Simulator } from "@sdgw/engine";
import { youtubeConnector } from "@sdgw/engine/connectors";
import { loadExchanges, type ConnectorFault, type ConnectorSubject } from "../src/connectors/index.ts";

/** The hand-written YouTube exchanges. */
export const YOUTUBE_FIXTURES = fileURLToPath(new URL("../../../fixtures/upstream/youtube/", import.meta.url));

/** Synthetic ids of the fixtures. */
export const YT = {
  V1: "kY7bQ2xLm0A",
  V2: "pR3nZ8wTq1B",
  V3: "dF5hJ9cVs2C",
  V4: "mN1gK4yUe3D",
  V5: "tW6rB0oPi4E",
  MISSING: "xQ9missing0",
  C1: "UCsynthetic0000000000001",
  C2: "UCsynthetic0000000000002",
  HANDLE: "@tidepoolnotes",
  COMMENTS_TOKEN:
    "QURTSl9pMlN5bnRoZXRpY1BhZ2VUb2tlbkZvckNvbW1lbnRzT2ZUaGVUaWRlUG9vbFdhbGtBdERhd24wMDAwMDAwMDAwMDAwMDAwMDA=",
  /** A key of the right shape, made up (never a real one). */
  KEY: "AIzaSyntheticTestKey-0000000000000000",
} as const;

/** An error body of `fixtures/upstream/youtube/errors/`. */
export function youtubeError(name: string): unknown {
  return JSON.parse(readFileSync(join(YOUTUBE_FIXTURES, "errors", `${name}.json`), "utf8"));
}

/** The calls, pages and link forms both subjects answer. */
const calls = {
  search: { query: "tide pools" },
  trending: {},
  detail: { id: YT.V1 },
  comments: { id: YT.V1 },
  user_profile: { id: YT.C1 },
  user_posts: { id: YT.C1 },
};
const videoLinks = [
  `https://www.youtube.com/watch?v=${YT.V1}`,
  `https://youtu.be/${YT.V1}`,
  `https://m.youtube.com/watch?v=${YT.V1}&t=42s`,
  `https://www.youtube.com/shorts/${YT.V1}`,
  `https://www.youtube.com/embed/${YT.V1}`,
  `https://www.youtube.com/live/${YT.V1}`,
  `https://www.youtube-nocookie.com/embed/${YT.V1}`,
].map((url) => ({ operation: "detail" as const, url, id: YT.V1 }));

const videos = "/youtube/v3/videos";

/** The YouTube connector against the fake upstream. */
export function youtubeSubject(): ConnectorSubject {
  const upstreamFault = (
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
    body: o.body ?? { id: YT.V1 },
    inject: (upstream) => upstream!.override({ path: over.path ?? videos, ...over }),
    expect,
    ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
  });
  return {
    name: "youtube (live, YouTube Data API v3)",
    platform: "youtube",
    exchanges: loadExchanges(YOUTUBE_FIXTURES),
    connector: youtubeConnector,
    settings: (url) => ({ apiKey: YT.KEY, baseUrl: `${url}/youtube/v3` }),
    badSettings: [
      { why: "no key", settings: (url) => ({ baseUrl: `${url}/youtube/v3` }), names: "apiKey" },
      {
        why: "a key with a space",
        settings: (url) => ({ apiKey: "AIza secret key", baseUrl: `${url}/youtube/v3` }),
        names: "apiKey",
      },
      {
        why: "plain http to another host",
        settings: () => ({ apiKey: YT.KEY, baseUrl: "http://youtube.example/v3" }),
        names: "baseUrl",
      },
      {
        why: "a key in the base URL",
        settings: () => ({ apiKey: YT.KEY, baseUrl: "https://www.googleapis.com/youtube/v3?key=AIzaLeaked" }),
        names: "baseUrl",
      },
      { why: "not a URL", settings: () => ({ apiKey: YT.KEY, baseUrl: "googleapis" }), names: "baseUrl" },
      {
        why: "the key pasted as the base URL",
        settings: () => ({ apiKey: YT.KEY, baseUrl: YT.KEY }),
        names: "baseUrl",
      },
      {
        why: "no daily units",
        settings: (url) => ({ apiKey: YT.KEY, baseUrl: `${url}/youtube/v3`, dailyUnits: "0" }),
        names: "dailyUnits",
      },
      {
        why: "a region of three letters",
        settings: (url) => ({ apiKey: YT.KEY, baseUrl: `${url}/youtube/v3`, region: "USA" }),
        names: "region",
      },
      {
        why: "a setting it does not have",
        settings: (url) => ({ apiKey: YT.KEY, baseUrl: `${url}/youtube/v3`, apikey: "x" }),
        names: "apikey",
      },
    ],
    calls,
    paging: [
      { operation: "search", body: { query: "tide pools" }, upstreamToken: "CAoQAA" },
      { operation: "trending", body: {}, upstreamToken: "CAIQAA", otherBody: { scope: YT.C1 } },
      { operation: "comments", body: { id: YT.V1 }, upstreamToken: YT.COMMENTS_TOKEN, otherBody: { id: YT.V2 } },
      { operation: "user_posts", body: { id: YT.C1 }, upstreamToken: "EAAaBlBUOkNBSQ", otherBody: { id: YT.C2 } },
    ],
    urlForms: [
      ...videoLinks,
      { operation: "user_profile", url: `https://www.youtube.com/channel/${YT.C1}`, id: YT.C1 },
      { operation: "user_profile", url: `https://www.youtube.com/${YT.HANDLE}`, id: YT.C1 },
    ],
    notALink: { operation: "detail", url: "https://vimeo.com/76979871" },
    faults: [
      upstreamFault(
        "quota exceeded",
        { status: 403, body: youtubeError("403_quota_exceeded") },
        { status: "error", code: "rate_limited" },
      ),
      upstreamFault(
        "our key refused",
        { status: 400, body: youtubeError("400_key_invalid") },
        { status: "error", code: "upstream_error", retryable: false },
      ),
      upstreamFault(
        "our access forbidden",
        { status: 403, body: youtubeError("403_forbidden") },
        { status: "error", code: "upstream_error", retryable: false },
      ),
      upstreamFault(
        "a server error",
        { status: 503, body: youtubeError("503_backend_error") },
        { status: "error", code: "upstream_error", retryable: true },
      ),
      upstreamFault("a network error", { reset: true }, { status: "error", code: "upstream_error", retryable: true }),
      upstreamFault(
        "too many requests",
        { status: 429, headers: { "retry-after": "120" }, body: {} },
        { status: "error", code: "rate_limited" },
      ),
      upstreamFault("no answer in time", { hang: true }, { status: "timeout" }, { timeoutMs: 1500 }),
      upstreamFault(
        "comments of a video that does not exist",
        { path: "/youtube/v3/commentThreads", status: 404, body: youtubeError("404_video_not_found") },
        { status: "error", code: "not_found" },
        { operation: "comments" },
      ),
      {
        name: "an id with no video",
        operation: "detail",
        body: { id: YT.MISSING },
        inject: () => undefined,
        expect: { status: "error", code: "not_found" },
      },
      {
        name: "a channel that does not exist",
        operation: "user_profile",
        body: { id: "UCsynthetic0000000000009" },
        inject: () => undefined,
        expect: { status: "error", code: "not_found" },
      },
      {
        name: "an id that is not a video id",
        operation: "detail",
        body: { id: "abc" },
        inject: () => undefined,
        expect: { status: "error", code: "invalid_target" },
      },
    ],
  };
}

/** The simulator's youtube, as the suite's second subject: no settings, no upstream, faults by its knobs. */
export function simulatorSubject(): ConnectorSubject {
  const sim = new Simulator();
  const knob = (
    name: string,
    fault: "upstream_error" | "rate_limited" | "timeout",
    expect: ConnectorFault["expect"],
  ): ConnectorFault => ({
    name,
    operation: "detail",
    body: { id: YT.V1 },
    inject: () => {
      sim.setKnobs("youtube", { fault });
      return () => sim.setKnobs("youtube", null);
    },
    expect,
  });
  return {
    name: "youtube (simulated)",
    platform: "youtube",
    provider: () => sim.providers.youtube,
    calls,
    paging: [
      { operation: "search", body: { query: "tide pools" } },
      { operation: "comments", body: { id: YT.V1 } },
    ],
    urlForms: [
      ...videoLinks,
      { operation: "user_profile", url: `https://www.youtube.com/channel/${YT.C1}`, id: YT.C1 },
      { operation: "user_profile", url: `https://www.youtube.com/${YT.HANDLE}`, id: YT.HANDLE },
    ],
    notALink: { operation: "detail", url: "https://vimeo.com/76979871" },
    faults: [
      knob("a server error", "upstream_error", { status: "error", code: "upstream_error", retryable: true }),
      knob("the platform's rate limit", "rate_limited", { status: "error", code: "rate_limited" }),
      knob("no answer in time", "timeout", { status: "timeout" }),
      {
        name: "a deleted video",
        operation: "detail",
        body: { id: "deleted-video" },
        inject: () => undefined,
        expect: { status: "error", code: "not_found" },
      },
    ],
  };
}
