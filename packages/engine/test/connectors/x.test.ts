/**
 * X on X API v2 (issue 33, D155–D157): the mappers on the shapes X writes (19-digit ids that must stay strings, long
 * posts in `note_tweet`, authors and media in `includes`, replies naming the post they answer), the cost guard (the
 * quote in posts read, `count` bounding `max_results`, the daily budget refusing before a request, a post read by id
 * kept for X's 24-hour billing window), and X's per-endpoint rate limits. With `../shared/upstream-samples/x`
 * present, its real samples (X's default fields only) are mapped too.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { validateItem } from "@sdgw/validators";
import { describe, expect, it } from "vitest";
import type { ConnectorContext } from "../../src/connectors/context.ts";
import { MemoryBudget, MemoryCache, MemoryShared } from "../../src/connectors/memory.ts";
import type { ProviderOutcome } from "../../src/providers/port.ts";
import { Gen } from "../../src/providers/simulator/gen.ts";
import { Simulator } from "../../src/providers/simulator/index.ts";
import { x } from "../../src/providers/x/index.ts";
import {
  X_EXPANSIONS,
  X_MEDIA_FIELDS,
  X_TWEET_FIELDS,
  X_USER_FIELDS,
  xConnector,
  xPost,
  xUser,
} from "../../src/providers/x/live.ts";

const FIXTURES = join(import.meta.dirname, "..", "..", "..", "..", "fixtures", "upstream", "x");
const fixture = (path: string): any => JSON.parse(readFileSync(join(FIXTURES, path), "utf8"));

function valid(item: unknown) {
  const v = validateItem(item);
  expect(v.ok, JSON.stringify(v.ok ? "" : v.errors) + JSON.stringify(item)).toBe(true);
}

describe("x's mappers on the shapes X API v2 writes", () => {
  it("a 19-digit id stays the exact string; author and media come from includes; the long text from note_tweet", () => {
    const page = fixture("search/tide_pools_p1.json");
    const [t1, t2] = page.data.map((t: any) => xPost(t, page.includes));
    for (const i of [t1, t2]) valid(i);
    // 1912345678901234567 is past 2^53: as a number it would read 1912345678901234700.
    expect(t1.id).toBe("1912345678901234567");
    expect(Number(t1.id).toString()).not.toBe(t1.id);
    expect(t1).toMatchObject({
      url: "https://x.com/tidepoolnotes/status/1912345678901234567",
      author: { name: "Tide Pool Notes", id: "tidepoolnotes", followers: 8123 },
      published_at: "2026-11-25T06:12:00Z",
      metrics: { likes: 412, shares: 33, comments: 3, views: 50210 },
      media: [{ type: "image", url: "https://pbs.twimg.example.invalid/media/synthetic1.jpg" }],
    });
    expect(t2.media).toEqual([
      { type: "video", url: "https://video.twimg.example.invalid/synthetic2-2176.mp4", duration_s: 60 },
    ]);
    const long = fixture("search/tide_pools_p2.json");
    expect(xPost(long.data[0], long.includes).text).toMatch(/one very shy wolf eel\.$/);
  });

  it("replies name the post they answer; a post without its author in includes still validates", () => {
    const replies = fixture("search/replies_t1.json");
    const [r1, r2] = replies.data.map((t: any) => xPost(t, replies.includes));
    expect([r1.parent_id, r2.parent_id]).toEqual(["1912345678901234567", "1912345678901240001"]);
    expect(r1.reply_count).toBe(1);
    const bare = xPost({ id: "1578522108187283456", text: "just the default fields" });
    valid(bare);
    expect(bare).toMatchObject({ url: "https://x.com/i/web/status/1578522108187283456" });
    expect(bare.author).toBeUndefined();
  });

  it("accounts: counts from public_metrics, the numeric id kept as a string", () => {
    const card = xUser(fixture("users/by_username_tidepoolnotes.json").data)!;
    valid(card);
    expect(card).toMatchObject({
      id: "tidepoolnotes",
      followers: 8123,
      following: 311,
      posts_count: 4502,
      location: "Monterey, CA",
      platform_extra: { user_id: "1900000000000000001", created_at: "2015-03-01T12:00:00Z" },
    });
  });
});

/** A fetch over canned answers, recording each request. */
function fakeX(answer: (url: URL) => { status: number; body: unknown; headers?: Record<string, string> }) {
  const sent: { url: URL; headers: Headers }[] = [];
  const fetch = (async (input: string, init: RequestInit = {}) => {
    const url = new URL(input);
    sent.push({ url, headers: new Headers(init.headers) });
    const a = answer(url);
    return new Response(JSON.stringify(a.body), { status: a.status, headers: a.headers ?? {} });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, sent };
}

const TOKEN = "AAAAAAAAAAAAAAAAAAAAASyntheticBearerToken%2F0000000000000000000000000001";

function provider(fetch: typeof globalThis.fetch, o: { dailyReads?: string; shared?: MemoryShared } = {}) {
  const s = xConnector.configure(
    { bearerToken: TOKEN, baseUrl: "https://api.x.com/2", ...(o.dailyReads ? { dailyReads: o.dailyReads } : {}) },
    (n) => n,
  );
  const ctx: ConnectorContext = {
    fetch,
    budget: new MemoryBudget({ buckets: { x: xConnector.budget(s) }, now: Date.now }),
    cache: new MemoryCache({ now: Date.now }),
    now: Date.now,
    log: { info: () => undefined, error: () => undefined },
    ...(o.shared ? { shared: o.shared } : {}),
  };
  const p = xConnector.create(s, ctx);
  const signal = new AbortController().signal;
  return {
    p,
    ctx,
    run: (operation: string, params: Record<string, unknown>): Promise<ProviderOutcome> =>
      p.call({ platform: "x", operation, params, signal }),
  };
}

describe("the cost guard", () => {
  const search = fixture("search/tide_pools_p1.json");
  const lookup = fixture("tweets/t1.json");
  const answer = (url: URL) =>
    url.pathname.endsWith("/tweets") ? { status: 200, body: lookup } : { status: 200, body: search };

  it("asks for fields and expansions, sends the Bearer token, bounds max_results by count (X's minimum 10)", async () => {
    const up = fakeX(answer);
    const { run, p } = provider(up.fetch);
    const o = await run("search", { query: "tide pools", count: 1, sort: "latest", time_range: "all" });
    expect(o.status).toBe("ok");
    expect((o as { items: unknown[] }).items).toHaveLength(1);
    const q = up.sent[0]!.url.searchParams;
    expect(q.get("max_results")).toBe("10");
    expect(q.get("tweet.fields")).toBe(X_TWEET_FIELDS);
    expect(q.get("expansions")).toBe("attachments.media_keys,author_id");
    expect(q.get("sort_order")).toBe("recency");
    expect(up.sent[0]!.headers.get("authorization")).toBe(`Bearer ${TOKEN}`);
    // The quote says what X may bill: the posts asked for.
    expect(p.upstreamCost!("search", { query: "q", count: 1 })).toBe(10);
    expect(p.upstreamCost!("search", { query: "q", count: 50 })).toBe(50);
    expect(p.upstreamCost!("user_posts", { id: "tidepoolnotes", limit: 20 })).toBe(21);
    expect(p.upstreamCost!("detail", { id: "1912345678901234567" })).toBe(1);
  });

  it("the daily budget of reads refuses before sending: rate_limited until midnight UTC, nothing sent", async () => {
    const up = fakeX(answer);
    const { run } = provider(up.fetch, { dailyReads: "15" });
    expect((await run("search", { query: "tide pools", count: 10 })).status).toBe("ok");
    const refused = await run("search", { query: "other", count: 10 });
    expect(refused).toMatchObject({ status: "error", failure: { code: "rate_limited" } });
    expect((refused as { failure: { message: string } }).failure.message).toContain("X posts and accounts read");
    expect(up.sent).toHaveLength(1);
    // A read by id (1) still fits.
    expect((await run("detail", { id: "1912345678901234567" })).status).toBe("ok");
  });

  it("a post read by id is kept for X's 24-hour billing window: read again, it is not asked for", async () => {
    const up = fakeX(answer);
    const { run } = provider(up.fetch);
    await run("detail", { id: "1912345678901234567" });
    const again = await run("detail", { url: "https://x.com/tidepoolnotes/status/1912345678901234567" });
    expect(up.sent).toHaveLength(1);
    expect(again.upstream).toEqual({ units: 0, requests: 0, cached: true });
  });

  it("x-rate-limit-remaining 0 pauses that endpoint (on every instance) until x-rate-limit-reset; others still read", async () => {
    const reset = Math.floor(Date.now() / 1000) + 300;
    const shared = new MemoryShared({ now: Date.now });
    const up = fakeX((url) =>
      url.pathname.endsWith("/search/recent")
        ? { status: 200, body: search, headers: { "x-rate-limit-remaining": "0", "x-rate-limit-reset": String(reset) } }
        : { status: 200, body: lookup },
    );
    const a = provider(up.fetch, { shared });
    await a.run("search", { query: "tide pools" });
    const b = provider(up.fetch, { shared });
    const paused = await b.run("search", { query: "something else" });
    expect(paused).toMatchObject({ status: "error", failure: { code: "rate_limited" } });
    expect((paused as { failure: { retryAfter: number } }).failure.retryAfter).toBeGreaterThan(290);
    expect((await b.run("detail", { id: "1912345678901234567" })).status).toBe("ok");
    expect(up.sent.map((r) => r.url.pathname)).toEqual(["/2/tweets/search/recent", "/2/tweets"]);
  });
});

const SAMPLES = join(import.meta.dirname, "..", "..", "..", "..", "..", "shared", "upstream-samples", "x");

describe.skipIf(!existsSync(SAMPLES))("the real samples of ../shared/upstream-samples/x", () => {
  it("every tweet and account of X's default fields maps to an item that validates, its id unchanged", () => {
    let n = 0;
    for (const folder of ["search_recent", "tweet_lookup", "user_tweets"])
      for (const f of readdirSync(join(SAMPLES, folder)).filter(
        (x) => x.endsWith(".json") && !x.includes(".request"),
      )) {
        const text = readFileSync(join(SAMPLES, folder, f), "utf8");
        const body = JSON.parse(text);
        const data = Array.isArray(body.data) ? body.data : [body.data];
        for (const t of data) {
          const item = xPost(t, body.includes ?? {});
          valid(item);
          expect(text).toContain(`"${item.id}"`);
          n += 1;
        }
      }
    expect(n).toBeGreaterThan(5);
    for (const f of ["by_username.json", "by_usernames.json"]) {
      const body = JSON.parse(readFileSync(join(SAMPLES, "user_lookup", f), "utf8"));
      for (const u of Array.isArray(body.data) ? body.data : [body.data]) valid(xUser(u));
    }
  });
});

describe("the offline twin: the simulator's X API v2 JSON through the live mappers", () => {
  // What X sends for the fields the live connector asks for: the default fields, and those it names.
  const fields = (list: string, defaults: string[]) => new Set([...defaults, ...list.split(",")]);
  const tweetFields = fields(X_TWEET_FIELDS, ["id", "text", "edit_history_tweet_ids"]);
  const userFields = fields(X_USER_FIELDS, ["id", "name", "username"]);
  const mediaFields = fields(X_MEDIA_FIELDS, ["media_key"]);
  const only = (o: object, allowed: Set<string>) => expect(Object.keys(o).filter((k) => !allowed.has(k))).toEqual([]);

  it("every simulated post, reply, account and follower is X API v2 JSON the live mappers turn into valid items", () => {
    // The expansions that put authors and media into `includes`.
    expect(X_EXPANSIONS.split(",")).toEqual(["attachments.media_keys", "author_id"]);
    let videos = 0;
    for (let i = 0; i < 200; i++) {
      const g = new Gen(`twin-${i}`, Date.UTC(2026, 10, 1));
      const post = x.fake.post({ g, topic: "tide pools" });
      // Only the fields the live connector requests, ids as 19-digit strings, expansions as X writes them.
      only(post.data, tweetFields);
      expect(post.data.id).toMatch(/^\d{19}$/);
      expect(post.data.author_id).toMatch(/^\d{19}$/);
      expect(post.includes.users?.map((u) => u.id)).toEqual([post.data.author_id]);
      for (const u of post.includes.users ?? []) only(u, userFields);
      for (const m of post.includes.media ?? []) {
        only(m, mediaFields);
        expect(post.data.attachments?.media_keys).toContain(m.media_key);
        if (m.type === "video") videos += 1;
      }
      // The JSON as it travels (a number would lose digits past 2^53).
      const wire = JSON.parse(JSON.stringify(post)) as typeof post;
      const item = xPost(wire.data, wire.includes);
      valid(item);
      expect(item.id).toBe(post.data.id);
      expect(item.author?.id).toBe(post.includes.users![0]!.username);
      // The simulator maps with the live connector's mapper: one mapping.
      expect(x.map.post(post)).toEqual(item);

      const reply = x.fake.comment({ g, topic: "", parentId: post.data.id });
      only(reply.data, tweetFields);
      expect(reply.data).toMatchObject({ conversation_id: post.data.id, referenced_tweets: [{ type: "replied_to" }] });
      const r = xPost(reply.data, reply.includes);
      valid(r);
      expect(r.parent_id).toBe(post.data.id);
      expect(x.map.comment(reply)).toEqual(r);

      const account = x.fake.user({ g, topic: "" });
      only(account.data, userFields);
      const card = xUser(account.data)!;
      valid(card);
      expect(card).toMatchObject({ id: account.data.username, platform_extra: { user_id: account.data.id } });
      expect(x.map.user(account)).toEqual(card);

      const follower = x.fake.extra!["user_followers"]!({ g, topic: "" }) as Parameters<typeof xUser>[0];
      valid(xUser(follower));

      const trend = x.fake.trend({ g, topic: "tide pools", rank: 1 });
      only(trend, new Set(["trend_name", "tweet_count"]));
      valid(x.map.trend(trend));
    }
    expect(videos).toBeGreaterThan(0);
  });

  it("a search page of simulated posts, answered by a fake X, comes out of the live connector as the simulator maps it", async () => {
    const g = new Gen("twin-page", Date.UTC(2026, 10, 1));
    const posts = Array.from({ length: 10 }, () => x.fake.post({ g, topic: "tide pools" }));
    const page = {
      data: posts.map((p) => p.data),
      includes: {
        users: posts.flatMap((p) => p.includes.users ?? []),
        media: posts.flatMap((p) => p.includes.media ?? []),
      },
      meta: { result_count: posts.length, newest_id: posts[0]!.data.id, oldest_id: posts.at(-1)!.data.id },
    };
    const up = fakeX(() => ({ status: 200, body: page }));
    const o = await provider(up.fetch).run("search", { query: "tide pools", count: 10 });
    expect(o.status).toBe("ok");
    const items = (o as { items: unknown[] }).items;
    for (const i of items) valid(i);
    expect(items).toEqual(posts.map((p) => x.map.post(p)));
  });

  it("the simulator's x answers are the live mappers' items, and stay valid", async () => {
    const sim = new Simulator({ anchor: "2026-11-01T00:00:00Z" }).providers.x;
    const signal = new AbortController().signal;
    const run = (operation: string, params: Record<string, unknown>) =>
      sim.call({ platform: "x", operation, params, signal });
    for (const [op, params] of [
      ["search", { query: "tide pools", count: 20 }],
      ["search", { query: "tide pools", type: "user", count: 5 }],
      ["detail", { id: "1912345678901234567" }],
      ["comments", { id: "1912345678901234567", limit: 20 }],
      ["user_profile", { id: "tidepoolnotes" }],
      ["user_posts", { id: "tidepoolnotes", limit: 10 }],
      ["trending", { count: 10 }],
      ["user_followers", { user: "tidepoolnotes", limit: 10 }],
    ] as const) {
      const o = await run(op, params);
      expect(o.status, op).toBe("ok");
      for (const i of (o as { items: unknown[] }).items) valid(i);
    }
    const detail = (await run("detail", { id: "1912345678901234567" })) as { items: { id: string; url: string }[] };
    expect(detail.items[0]!.id).toBe("1912345678901234567");
    expect(detail.items[0]!.url).toMatch(/^https:\/\/x\.com\/[A-Za-z0-9_]{1,15}\/status\/1912345678901234567$/);
    const posts = (await run("user_posts", { id: "tidepoolnotes", limit: 5 })) as {
      items: { author?: { id: string } }[];
    };
    for (const p of posts.items) expect(p.author?.id).toBe("tidepoolnotes");
    const comments = (await run("comments", { id: "1912345678901234567", limit: 5 })) as {
      items: { parent_id?: string }[];
    };
    for (const c of comments.items) expect(c.parent_id).toBe("1912345678901234567");
  });
});
