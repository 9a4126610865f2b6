/**
 * YouTube's pure mappers on the shapes the real API writes (D124): parts and fields may be missing, counts are
 * strings (some past 2^31), titles of search results are HTML-escaped, times carry milliseconds. Whatever comes,
 * the items validate with @sdgw/validators: counts integers, ids strings, text plain, `published_at` RFC 3339 UTC.
 * With `../shared/upstream-samples/youtube` present (CI has it), every real sample is mapped too, and the live
 * connector runs on them.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { validateItem } from "@sdgw/validators";
import { describe, expect, it } from "vitest";
import { MemoryBudget, MemoryCache } from "../../src/connectors/memory.ts";
import { youtube, type YtChannel, type YtComment, type YtVideo } from "../../src/providers/youtube/index.ts";
import { youtubeConnector } from "../../src/providers/youtube/live.ts";
import type { ProviderOutcome } from "../../src/providers/port.ts";
import { Gen } from "../../src/providers/simulator/gen.ts";

const RFC3339_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const digits = fc.bigInt({ min: 0n, max: 9_007_199_254_740_991n }).map(String);
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const text = fc.oneof(
  fc.string(),
  fc.constantFrom("Rock &amp; Roll", "Don&#39;t stop", "&quot;Quoted&quot;", "a &lt;b&gt;", ""),
);
const time = fc.oneof(
  fc
    .date({ min: new Date("2005-04-23"), max: new Date("2099-01-01"), noInvalidDate: true })
    .map((d) => d.toISOString()),
  fc.constant("2019-03-21T20:37:49Z"),
);
const videoId = fc.stringMatching(/^[A-Za-z0-9_-]{11}$/);
const channelId = fc.stringMatching(/^UC[A-Za-z0-9_-]{22}$/);

const video: fc.Arbitrary<YtVideo> = fc.record(
  {
    id: videoId,
    snippet: fc.record(
      {
        title: text,
        description: maybe(text),
        channelId,
        channelTitle: maybe(text),
        publishedAt: time,
        categoryId: maybe(fc.constantFrom("10", "22", "28")),
      },
      { requiredKeys: ["title", "channelId", "publishedAt"] },
    ),
    statistics: maybe(
      fc.record(
        { viewCount: maybe(digits), likeCount: maybe(digits), commentCount: maybe(digits) },
        { requiredKeys: [] },
      ),
    ),
    contentDetails: maybe(
      fc.record({ duration: maybe(fc.constantFrom("PT21M7S", "PT1H2M3S", "PT4M", "P0D")) }, { requiredKeys: [] }),
    ),
  },
  { requiredKeys: ["id", "snippet"] },
);

const channel: fc.Arbitrary<YtChannel> = fc.record(
  {
    id: channelId,
    snippet: fc.record(
      {
        title: text,
        description: maybe(text),
        customUrl: maybe(fc.constantFrom("@google", "@a_b.c")),
        country: maybe(fc.constantFrom("US", "JP")),
      },
      { requiredKeys: ["title"] },
    ),
    statistics: maybe(
      fc.record(
        { subscriberCount: maybe(digits), videoCount: maybe(digits), hiddenSubscriberCount: maybe(fc.boolean()) },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: ["id", "snippet"] },
);

const comment: fc.Arbitrary<YtComment> = fc.record({
  id: fc.stringMatching(/^Ug[A-Za-z0-9_-]{10,30}$/),
  snippet: fc.record(
    {
      videoId: maybe(videoId),
      topLevelComment: fc.record({
        snippet: fc.record(
          {
            textOriginal: maybe(text),
            textDisplay: maybe(fc.constantFrom('<a href="x">link</a> &amp; more', "")),
            authorDisplayName: fc.string(),
            authorChannelId: maybe(fc.record({ value: channelId })),
            likeCount: maybe(fc.nat()),
            publishedAt: time,
          },
          { requiredKeys: ["authorDisplayName", "publishedAt"] },
        ),
      }),
      totalReplyCount: maybe(fc.nat()),
    },
    { requiredKeys: ["topLevelComment"] },
  ),
});

function valid(item: unknown) {
  const v = validateItem(item);
  expect(v.ok, JSON.stringify(v.ok ? "" : v.errors) + JSON.stringify(item)).toBe(true);
}

describe("youtube's mappers on the real API's shapes", () => {
  it("videos: items validate; counts are integers or absent, never 0 for a hidden count; titles plain; times UTC", () => {
    fc.assert(
      fc.property(video, (v) => {
        const item = youtube.map.post(v);
        valid(item);
        expect(item.id).toBe(v.id);
        if (v.statistics?.likeCount === undefined) expect(item.metrics?.likes).toBeUndefined();
        else expect(item.metrics?.likes).toBe(Number(v.statistics.likeCount));
        if (item.title) expect(item.title).not.toMatch(/&(amp|quot|#39);/);
        expect(item.published_at).toMatch(RFC3339_UTC);
      }),
    );
  });

  it("channels and comments validate, a hidden subscriber count is absent, comment text is plain", () => {
    fc.assert(fc.property(channel, (c) => valid(youtube.map.user(c))));
    fc.assert(
      fc.property(comment, (t) => {
        const item = youtube.map.comment(t);
        valid(item);
        if (item.text) expect(item.text).not.toMatch(/<a /);
      }),
    );
    const hidden = youtube.map.user({
      id: "UCsynthetic0000000000002",
      snippet: { title: "x" },
      statistics: { subscriberCount: "0", hiddenSubscriberCount: true },
    });
    expect(hidden.followers).toBeUndefined();
  });
});

const SAMPLES = join(import.meta.dirname, "..", "..", "..", "..", "..", "shared", "upstream-samples", "youtube");
const sample = (f: string) =>
  JSON.parse(readFileSync(join(SAMPLES, f), "utf8")) as { items: any[]; nextPageToken?: string };

describe.skipIf(!existsSync(SAMPLES))("the real samples of ../shared/upstream-samples/youtube", () => {
  it("every video, channel, comment thread and search result maps to an item that validates", () => {
    const videos = [
      "videos/info_single.json",
      "videos/info_multi.json",
      "videos/info_single_full_parts.json",
      "videos/chart_most_popular_p1.json",
      "videos/chart_most_popular_p2.json",
    ];
    let n = 0;
    for (const f of videos)
      for (const v of sample(f).items) {
        valid(youtube.map.post(v));
        valid(youtube.map.trend(v));
        n++;
      }
    for (const f of [
      "channels/info_multi_full_parts.json",
      "channels/info_single_statistics.json",
      "channels/info_snippet_only.json",
    ])
      for (const c of sample(f).items) {
        valid(youtube.map.user(c));
        n++;
      }
    for (const f of [
      "comment_threads/by_video_p1.json",
      "comment_threads/by_video_p2.json",
      "comment_threads/single.json",
    ])
      for (const t of sample(f).items) {
        const item = youtube.map.comment(t);
        valid(item);
        expect(item.text).toBe(t.snippet.topLevelComment.snippet.textOriginal || undefined);
        n++;
      }
    const titles: string[] = [];
    for (const f of ["search/keywords_surfing_p1.json", "search/keywords_surfing_p2.json"])
      for (const r of sample(f).items) {
        const item = youtube.map.post({ id: r.id.videoId, snippet: r.snippet });
        valid(item);
        titles.push(item.title!);
        n++;
      }
    expect(titles).toContain("World's best surfing 2017");
    expect(titles).toContain('"Pacific Dreams" A California Surfing Film');
    const google = youtube.map.user(sample("channels/info_multi_full_parts.json").items[0]);
    expect(google).toMatchObject({
      id: "UCK8sQmJBp8GCxrOtXWBpyEA",
      url: "https://www.youtube.com/@google",
      followers: 10_700_000,
    });
    expect(youtube.map.post(sample("videos/info_single_full_parts.json").items[0])).toMatchObject({
      published_at: "2019-03-21T20:37:49Z",
      metrics: { views: 7920, likes: 190, comments: 32 },
      media: [{ type: "video", duration_s: 1267 }],
    });
    expect(n).toBeGreaterThan(60);
  });

  it("the live connector answers all six operations from them, every answer's items valid", async () => {
    // The samples' requests were inferred (other parts, other page sizes): answer by path and the one parameter
    // that tells them apart.
    const answer = (url: URL): unknown => {
      const q = url.searchParams;
      switch (url.pathname) {
        case "/youtube/v3/search":
          return q.get("type") === "channel"
            ? sample("search/channels.json")
            : sample(q.get("pageToken") ? "search/keywords_surfing_p2.json" : "search/keywords_surfing_p1.json");
        case "/youtube/v3/videos":
          if (q.get("chart"))
            return sample(
              q.get("pageToken") ? "videos/chart_most_popular_p2.json" : "videos/chart_most_popular_p1.json",
            );
          return q.get("id") === "D-lhorsDlUQ"
            ? sample("videos/info_single_full_parts.json")
            : sample("videos/info_multi.json");
        case "/youtube/v3/channels":
          return sample("channels/info_multi_full_parts.json");
        case "/youtube/v3/commentThreads":
          return sample(q.get("pageToken") ? "comment_threads/by_video_p2.json" : "comment_threads/by_video_p1.json");
        case "/youtube/v3/playlistItems":
          return sample(q.get("pageToken") ? "playlist_items/paged_p2.json" : "playlist_items/paged_p1.json");
      }
      return { error: { code: 404, message: "no sample" } };
    };
    const fetch = (async (u: string) =>
      new Response(JSON.stringify(answer(new URL(u))), { status: 200 })) as unknown as typeof globalThis.fetch;
    const settings = youtubeConnector.configure(
      { apiKey: "AIzaSyntheticSampleKey-00000000000000", baseUrl: "https://www.googleapis.com/youtube/v3" },
      (n) => n,
    );
    const provider = youtubeConnector.create(settings, {
      fetch,
      budget: new MemoryBudget({ buckets: { youtube: youtubeConnector.budget(settings) }, now: Date.now }),
      cache: new MemoryCache({ now: Date.now }),
      now: Date.now,
      log: { info: () => undefined, error: () => undefined },
    });
    const signal = new AbortController().signal;
    const run = (operation: string, params: Record<string, unknown>) =>
      provider.call({ platform: "youtube", operation, params, signal });
    type Answered = { items: Record<string, unknown>[]; page?: { cursor?: string } };
    const ok = (o: ProviderOutcome): Answered => {
      expect(o.status, JSON.stringify(o).slice(0, 300)).toBe("ok");
      if (o.status === "ok") for (const i of o.items) valid(i);
      return o as unknown as Answered;
    };
    const search = ok(await run("search", { query: "surfing", count: 10 }));
    expect(search.items).toHaveLength(25);
    const page2 = ok(await run("search", { query: "surfing", count: 10, cursor: search.page!.cursor }));
    expect(page2.items[0]).not.toEqual(search.items[0]);
    ok(await run("search", { query: "google", count: 5, type: "user" }));
    const chart = ok(await run("trending", { count: 5 }));
    expect(chart.items.map((i) => (i as { rank: number }).rank)).toEqual([1, 2, 3, 4, 5]);
    expect(ok(await run("trending", { count: 5, cursor: chart.page!.cursor })).items[0]).toMatchObject({ rank: 6 });
    expect(ok(await run("detail", { url: "https://youtu.be/D-lhorsDlUQ" })).items[0]).toMatchObject({
      id: "D-lhorsDlUQ",
      metrics: { views: 7920 },
    });
    const comments = ok(await run("comments", { id: "F1UP7wRCPH8", limit: 5, sort: "latest" }));
    expect(comments.items[0]).toMatchObject({ text: "Google.com", parent_id: "F1UP7wRCPH8" });
    ok(await run("comments", { id: "F1UP7wRCPH8", limit: 5, sort: "latest", cursor: comments.page!.cursor }));
    ok(await run("user_profile", { id: "UCK8sQmJBp8GCxrOtXWBpyEA" }));
    const posts = await run("user_posts", { id: "UCK8sQmJBp8GCxrOtXWBpyEA", limit: 10, sort: "latest" });
    // The playlist sample's videos are not among the videos.list samples: the page answers empty, not invented.
    expect(["ok", "empty"]).toContain(posts.status);
  });
});

describe("the offline twin: the simulator's native YouTube JSON through the live connector", () => {
  // The parts the live connector asks for (`part=snippet,statistics,contentDetails`; comment threads `snippet`).
  const only = (o: object, allowed: string[]) => expect(Object.keys(o).filter((k) => !allowed.includes(k))).toEqual([]);

  it("simulated videos, channels and comment threads, answered by a fake YouTube, come out of the live connector as the simulator maps them", async () => {
    const g = new Gen("youtube-twin", Date.UTC(2026, 10, 1));
    const ids = Array.from({ length: 12 }, (_, i) => `twinVideo${String(i).padStart(2, "0")}`);
    const videos = ids.map((id) => youtube.fake.post({ g, topic: "tide pools", id }));
    const channel = youtube.fake.user({ g, topic: "", id: "UCtwinChannel0000000000a" });
    const threads = Array.from({ length: 8 }, () => youtube.fake.comment({ g, topic: "", parentId: ids[0]! }));
    for (const v of videos) only(v, ["id", "snippet", "statistics", "contentDetails"]);
    only(channel, ["id", "snippet", "statistics", "contentDetails"]);
    for (const t of threads) only(t, ["id", "snippet"]);
    const answer = (url: URL): unknown => {
      const q = url.searchParams;
      switch (url.pathname) {
        case "/youtube/v3/videos":
          return q.get("chart")
            ? { items: videos.slice(0, Number(q.get("maxResults"))) }
            : { items: videos.filter((v) => (q.get("id") ?? "").split(",").includes(v.id)) };
        case "/youtube/v3/channels":
          return { items: q.get("id") === channel.id ? [channel] : [] };
        case "/youtube/v3/commentThreads":
          return { items: q.get("videoId") === ids[0] ? threads : [] };
      }
      return { error: { code: 404, message: "not served by this fake" } };
    };
    const fetch = (async (u: string) =>
      new Response(JSON.stringify(answer(new URL(u))), { status: 200 })) as unknown as typeof globalThis.fetch;
    const settings = youtubeConnector.configure(
      { apiKey: "AIzaSyntheticTwinKey-000000000000000000", baseUrl: "https://www.googleapis.com/youtube/v3" },
      (n) => n,
    );
    const provider = youtubeConnector.create(settings, {
      fetch,
      budget: new MemoryBudget({ buckets: { youtube: youtubeConnector.budget(settings) }, now: Date.now }),
      cache: new MemoryCache({ now: Date.now }),
      now: Date.now,
      log: { info: () => undefined, error: () => undefined },
    });
    const signal = new AbortController().signal;
    const run = async (operation: string, params: Record<string, unknown>) => {
      const o = await provider.call({ platform: "youtube", operation, params, signal });
      expect(o.status, JSON.stringify(o).slice(0, 300)).toBe("ok");
      const items = (o as { items: unknown[] }).items;
      for (const i of items) valid(i);
      return items;
    };
    expect(await run("detail", { id: ids[3]! })).toEqual([youtube.map.post(videos[3]!)]);
    expect(await run("user_profile", { id: channel.id })).toEqual([youtube.map.user(channel)]);
    expect(await run("comments", { id: ids[0]!, limit: 8, sort: "latest" })).toEqual(
      threads.map((t) => youtube.map.comment(t)),
    );
    expect(await run("trending", { count: 5 })).toEqual(
      videos.slice(0, 5).map((v, i) => ({ ...youtube.map.trend(v), rank: i + 1 })),
    );
  });
});
