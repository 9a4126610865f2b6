/**
 * Reddit on its official API (issue 33, D151–D155): the mappers on the shapes Reddit writes (a comment forest with
 * `more` stubs, "continue this thread", deleted and removed comments, `edited` false or a time, thumbnails that are
 * not links, scores below 0), the app-only token (Basic auth, kept, shared by instances, fetched again before it
 * expires or when refused), and Reddit's limits (its rate-limit headers pause every instance; the gateway's own
 * requests a minute). With `../shared/upstream-samples/reddit` present, the real samples are mapped too.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { validateItem } from "@sdgw/validators";
import { describe, expect, it } from "vitest";
import { MemoryBudget, MemoryShared } from "../../src/connectors/memory.ts";
import type { ConnectorContext, SharedStore } from "../../src/connectors/context.ts";
import {
  REDDIT_TOKEN_MARGIN_MS,
  flattenComments,
  listingOf,
  redditAccount,
  redditComment,
  redditConnector,
  redditPost,
  redditTrend,
} from "../../src/providers/reddit/live.ts";
import type { ProviderOutcome } from "../../src/providers/port.ts";
import { redactJsonSecrets } from "../../src/connectors/redact.ts";
import { reddit } from "../../src/providers/reddit/index.ts";
import { Gen } from "../../src/providers/simulator/gen.ts";

const FIXTURES = join(import.meta.dirname, "..", "..", "..", "..", "fixtures", "upstream", "reddit");
const fixture = (path: string): any => JSON.parse(readFileSync(join(FIXTURES, path), "utf8"));
const RFC3339_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

function valid(item: unknown) {
  const v = validateItem(item);
  expect(v.ok, JSON.stringify(v.ok ? "" : v.errors) + JSON.stringify(item)).toBe(true);
}

describe("reddit's mappers on the shapes the API writes", () => {
  it("flattens the comment forest: parent_id and reply_count kept, more stubs and continue-this-thread are not items", () => {
    const [, forest] = fixture("comments/a1tide.json");
    const flat = flattenComments(forest.data.children);
    for (const i of flat.items) valid(i);
    expect(flat.items.map((i) => [i.id, i.parent_id, i.reply_count])).toEqual([
      ["t1_k1aaaa", "t3_a1tide", 2],
      // Deleted, yet kept: its reply points at it. One reply sent, three more named by a `more` stub.
      ["t1_k2bbbb", "t1_k1aaaa", 4],
      ["t1_k3cccc", "t1_k2bbbb", 0],
      // Its thread continues deeper ("continue this thread": a stub with id `_`, no children).
      ["t1_k4dddd", "t1_k1aaaa", 0],
      ["t1_k5eeee", "t3_a1tide", 0],
      ["t1_k6ffff", "t3_a1tide", 0],
    ]);
    expect(flat.notSent).toBe(3 + 14);
    expect(flat.continued).toBe(1);
    const [k1, k2, , k4, k5, k6] = flat.items;
    expect(k1).toMatchObject({
      text: "Great photos. What time was low tide?",
      author: { name: "shore_watcher", url: "https://www.reddit.com/user/shore_watcher/" },
      published_at: "2024-11-26T06:03:20Z",
      metrics: { likes: 25 },
    });
    // [deleted]: no author, no text, and it says so; `edited` a time.
    expect(k2!.author).toBeUndefined();
    expect(k2!.text).toBeUndefined();
    expect(k2!.platform_extra).toMatchObject({ removed: "deleted", edited_at: "2024-11-26T06:20:00Z" });
    // A score below 0 is no count of likes; the score itself stays.
    expect(k4!.metrics).toBeUndefined();
    expect(k4!.platform_extra).toMatchObject({ score: -2 });
    expect(k5!.platform_extra).toMatchObject({ removed: "removed" });
    expect(k5!.text).toBeUndefined();
    // A hidden score is not a count either.
    expect(k6!.metrics).toBeUndefined();
  });

  it("posts: thumbnails that are not links are dropped, `edited` false or a time, created_utc as RFC 3339", () => {
    const listing = listingOf(fixture("popular/p1.json"), "t3")!;
    const more = listingOf(fixture("popular/p2.json"), "t3")!;
    const posts = [...listing.data, ...more.data].map((d) => redditPost(d)!);
    for (const p of posts) valid(p);
    const byId = Object.fromEntries(posts.map((p) => [p.id, p]));
    expect(byId["t3_b2kelp"]!.platform_extra).toMatchObject({
      thumbnail: "https://b.thumbs.example.invalid/b2kelp.jpg",
      link: "https://i.redd.it/syntheticb2kelp.jpg",
    });
    expect(byId["t3_b2kelp"]!.media).toEqual([{ type: "image", url: "https://i.redd.it/syntheticb2kelp.jpg" }]);
    // "spoiler", "nsfw", "self", "default" and "" are Reddit's placeholders, not links.
    for (const id of ["t3_f6star", "t3_e5gull", "t3_a1tide", "t3_d4reef"])
      expect(byId[id]!.platform_extra?.["thumbnail"], id).toBeUndefined();
    expect(byId["t3_a1tide"]).toMatchObject({
      published_at: "2024-11-26T05:46:40Z",
      text: "Low tide was at 6:12. Found three species of anemone.",
      platform_extra: { edited_at: "2024-11-26T06:46:40Z", subreddit: "r/tidepools" },
    });
    expect(byId["t3_b2kelp"]!.platform_extra?.["edited_at"]).toBeUndefined();
    expect(byId["t3_f6star"]!.text).toBeUndefined();
    expect(byId["t3_f6star"]!.platform_extra).toMatchObject({ removed: "removed" });
    expect(byId["t3_d4reef"]!.metrics).toEqual({ comments: 1 });
    const trend = redditTrend(more.data[1]!, 5)!;
    valid(trend);
    expect(trend.heat).toBeUndefined();
    expect(trend.platform_extra).toMatchObject({ score: -3 });
  });

  it("links with characters a URI may not hold there ([, ], |, ^, a bare %) are percent-encoded, and validate", () => {
    const p = redditPost({
      id: "aaa0",
      title: "t",
      permalink: "/r/a/comments/aaa0/[x]|^%zz/",
      url: "https://example.com/a[b]?q=^#[c]",
    })!;
    valid(p);
    expect(p.url).toBe("https://www.reddit.com/r/a/comments/aaa0/%5Bx%5D%7C%5E%25zz/");
    expect(p.platform_extra?.["link"]).toBe("https://example.com/a%5Bb%5D?q=%5E#%5Bc%5D");
    // A permalink that would leave www.reddit.com (a backslash is a slash to URL parsers) is no link.
    expect(JSON.stringify(redditPost({ id: "aaa0", title: "t", permalink: "/\\evil.example/x" }) ?? null)).not.toMatch(
      /evil/,
    );
    // fast-check's counterexample (seed 1947236187): a permalink of "/[" and nothing else of use
    const bare = redditPost({ id: "aaa0", permalink: "/[" });
    if (bare) valid(bare);
  });

  it("accounts: a suspended one is a card that says so", () => {
    const card = redditAccount(fixture("user/about_suspended.json").data)!;
    valid(card);
    expect(card).toMatchObject({ id: "gone_quiet", platform_extra: { suspended: true } });
    const full = redditAccount(fixture("user/about_tidepool_notes.json").data)!;
    valid(full);
    expect(full).toMatchObject({
      followers: 812,
      platform_extra: { karma: 19511, created_at: "2015-01-01T00:00:00Z" },
    });
  });

  it("whatever the fields hold, posts and comments validate", () => {
    const anything = fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.constant(false),
      fc.constant(""),
      fc.constantFrom("self", "default", "nsfw", "spoiler", "image", "[deleted]", "[removed]"),
      fc.string(),
      fc.double(),
      fc.integer({ min: -1000, max: 2_000_000_000 }),
      fc.webUrl(),
    );
    const thing = fc.record({
      id: fc.stringMatching(/^[a-z0-9]{4,8}$/),
      name: anything,
      title: anything,
      selftext: anything,
      body: anything,
      author: anything,
      created_utc: anything,
      edited: anything,
      score: anything,
      num_comments: anything,
      thumbnail: anything,
      url: anything,
      permalink: fc.oneof(anything, fc.constant("/r/x/comments/abcd/t/")),
      subreddit: anything,
      parent_id: anything,
      is_video: anything,
    });
    fc.assert(
      fc.property(thing, (d) => {
        const p = redditPost(d as Record<string, unknown>);
        if (p) valid(p);
        const c = redditComment(d as Record<string, unknown>, 0);
        if (c) valid(c);
        for (const i of [p, c]) if (i?.published_at) expect(i.published_at).toMatch(RFC3339_UTC);
      }),
      { numRuns: 300 },
    );
  });
});

/** A fetch over canned answers, recording every request (headers and body too). */
function fakeReddit(
  answer: (
    method: string,
    url: URL,
    headers: Headers,
  ) => { status: number; body: unknown; headers?: Record<string, string> },
) {
  const sent: { method: string; url: URL; headers: Headers; body: string }[] = [];
  const fetch = (async (input: string, init: RequestInit = {}) => {
    const url = new URL(input);
    const headers = new Headers(init.headers);
    const method = (init.method ?? "GET").toUpperCase();
    sent.push({ method, url, headers, body: typeof init.body === "string" ? init.body : "" });
    const a = answer(method, url, headers);
    return new Response(JSON.stringify(a.body), { status: a.status, headers: a.headers ?? {} });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, sent };
}

const SETTINGS = {
  clientId: "SyntheticClientId01",
  clientSecret: "synthetic-client-secret-0000000001",
  userAgent: "server:sdgw-tests:1.0 (by /u/sdgw_tests)",
  baseUrl: "https://oauth.reddit.com",
  tokenUrl: "https://www.reddit.com/api/v1/access_token",
};

function provider(o: {
  fetch: typeof globalThis.fetch;
  shared?: SharedStore;
  now?: () => number;
  settings?: Record<string, string>;
  logs?: string[];
}) {
  const s = redditConnector.configure({ ...SETTINGS, ...o.settings }, (n) => n);
  const now = o.now ?? Date.now;
  const ctx: ConnectorContext = {
    fetch: o.fetch,
    budget: new MemoryBudget({ buckets: { reddit: redditConnector.budget(s) }, now }),
    cache: { get: async () => undefined, set: async () => undefined },
    now,
    log: { info: (m) => o.logs?.push(m), error: (m) => o.logs?.push(`ERROR ${m}`) },
    ...(o.shared ? { shared: o.shared } : {}),
  };
  const p = redditConnector.create(s, ctx);
  const signal = new AbortController().signal;
  return {
    p,
    run: (operation: string, params: Record<string, unknown>): Promise<ProviderOutcome> =>
      p.call({ platform: "reddit", operation, params, signal }),
  };
}

const about = fixture("user/about_tidepool_notes.json");
let issued = 0;
const tokenAnswer = (lifeS = 86_400) => ({
  status: 200,
  body: { access_token: `synthetic-token-${++issued}`, token_type: "bearer", expires_in: lifeS, scope: "*" },
});

describe("the app-only token", () => {
  it("is fetched with Basic auth and the client-credentials grant, sent as a bearer with the User-Agent, and kept", async () => {
    const up = fakeReddit((method) => (method === "POST" ? tokenAnswer() : { status: 200, body: about }));
    const { run } = provider({ fetch: up.fetch });
    for (let i = 0; i < 3; i++) expect((await run("user_profile", { id: "tidepool_notes" })).status).toBe("ok");
    const posts = up.sent.filter((r) => r.method === "POST");
    expect(posts).toHaveLength(1);
    expect(posts[0]!.url.href).toBe(SETTINGS.tokenUrl);
    expect(posts[0]!.headers.get("authorization")).toBe(
      `Basic ${Buffer.from(`${SETTINGS.clientId}:${SETTINGS.clientSecret}`).toString("base64")}`,
    );
    expect(posts[0]!.body).toBe("grant_type=client_credentials");
    expect(posts[0]!.headers.get("user-agent")).toBe(SETTINGS.userAgent);
    const gets = up.sent.filter((r) => r.method === "GET");
    expect(gets).toHaveLength(3);
    for (const g of gets) {
      expect(g.headers.get("authorization")).toMatch(/^bearer synthetic-token-\d+$/);
      expect(g.headers.get("user-agent")).toBe(SETTINGS.userAgent);
      expect(g.url.searchParams.get("raw_json")).toBe("1");
    }
  });

  it("is shared by instances through the shared store: the second instance fetches none", async () => {
    const shared = new MemoryShared({ now: Date.now });
    const one = fakeReddit((method) => (method === "POST" ? tokenAnswer() : { status: 200, body: about }));
    const two = fakeReddit((method) => (method === "POST" ? tokenAnswer() : { status: 200, body: about }));
    await provider({ fetch: one.fetch, shared }).run("user_profile", { id: "tidepool_notes" });
    await provider({ fetch: two.fetch, shared }).run("user_profile", { id: "tidepool_notes" });
    expect(one.sent.filter((r) => r.method === "POST")).toHaveLength(1);
    expect(two.sent.filter((r) => r.method === "POST")).toHaveLength(0);
    expect(two.sent[0]!.headers.get("authorization")).toBe(one.sent[1]!.headers.get("authorization"));
  });

  it("is fetched again before it expires, and when the API refuses it (once)", async () => {
    let offset = 0;
    const now = () => Date.now() + offset;
    let refused: string | null = null;
    const up = fakeReddit((method, _url, headers) => {
      if (method === "POST") return tokenAnswer(3600);
      if (headers.get("authorization") === refused)
        return { status: 401, body: { message: "Unauthorized", error: 401 } };
      return { status: 200, body: about };
    });
    const { run } = provider({ fetch: up.fetch, now });
    await run("user_profile", { id: "tidepool_notes" });
    offset = 3600_000 - REDDIT_TOKEN_MARGIN_MS - 1000;
    await run("user_profile", { id: "tidepool_notes" });
    expect(
      up.sent.filter((r) => r.method === "POST"),
      "still fresh: no new token",
    ).toHaveLength(1);
    offset = 3600_000 - REDDIT_TOKEN_MARGIN_MS + 1000;
    await run("user_profile", { id: "tidepool_notes" });
    expect(
      up.sent.filter((r) => r.method === "POST"),
      "inside the margin: a new token",
    ).toHaveLength(2);
    // The API refuses the current token: a new one is fetched and the request sent again, once.
    refused = `bearer synthetic-token-${issued}`;
    const before = up.sent.length;
    const o = await run("user_profile", { id: "tidepool_notes" });
    expect(o.status).toBe("ok");
    expect(up.sent.slice(before).map((r) => r.method)).toEqual(["GET", "POST", "GET"]);
  });

  it("a refused client secret is upstream_error, not retryable, logged without the secret", async () => {
    const logs: string[] = [];
    const up = fakeReddit((method) =>
      method === "POST" ? { status: 401, body: { message: "Unauthorized", error: 401 } } : { status: 200, body: about },
    );
    const { run, p } = provider({ fetch: up.fetch, logs });
    const o = await run("user_profile", { id: "tidepool_notes" });
    expect(o).toMatchObject({ status: "error", failure: { code: "upstream_error", retryable: false } });
    expect(up.sent.filter((r) => r.method === "GET")).toHaveLength(0);
    expect((await p.check!(new AbortController().signal)).ok).toBe(false);
    expect(logs.some((l) => l.startsWith("ERROR reddit: the platform refused the gateway's own credentials"))).toBe(
      true,
    );
    for (const l of logs) {
      expect(l).not.toContain(SETTINGS.clientSecret);
      expect(l).not.toContain(SETTINGS.clientId);
    }
  });
});

describe("the offline twin: the simulator's native Reddit JSON through the live mappers", () => {
  it("every simulated post, comment and account maps, with the live connector's mappers, to items that validate", () => {
    for (let i = 0; i < 200; i++) {
      const g = new Gen(`twin-${i}`, Date.UTC(2026, 10, 1));
      const post = reddit.fake.post({ g, topic: "tide pools" }).data as unknown as Record<string, unknown>;
      const item = redditPost(post)!;
      valid(item);
      // The simulator and the live connector agree on what the item is.
      expect(item).toMatchObject({
        id: post["name"],
        title: post["title"],
        published_at: reddit.map.post({ kind: "t3", data: post as never }).published_at,
      });
      const comment = reddit.fake.comment({ g, topic: "tide pools", parentId: String(post["name"]) })
        .data as unknown as Record<string, unknown>;
      valid(redditComment(comment, 0));
      valid(redditTrend(post, i + 1));
      const account = reddit.fake.user({ g, topic: "tide pools" }).data as unknown as Record<string, unknown>;
      const card = redditAccount(account)!;
      valid(card);
      expect(card.id).toBe(account["name"]);
    }
  });
});

describe("recordings of the token endpoint", () => {
  it("keep no token: access_token and refresh_token are redacted, escaped quotes included", () => {
    const body = JSON.stringify({
      access_token: 'abc"def-123',
      token_type: "bearer",
      refresh_token: "r-456",
      expires_in: 86400,
    });
    const out = redactJsonSecrets(body);
    expect(JSON.parse(out)).toEqual({
      access_token: "REDACTED",
      token_type: "bearer",
      refresh_token: "REDACTED",
      expires_in: 86400,
    });
  });
});

describe("reddit's limits", () => {
  it("X-Ratelimit-Remaining 0 pauses every instance until X-Ratelimit-Reset, without asking Reddit", async () => {
    const shared = new MemoryShared({ now: Date.now });
    const up = fakeReddit((method) =>
      method === "POST"
        ? tokenAnswer()
        : {
            status: 200,
            body: about,
            headers: { "x-ratelimit-remaining": "0.0", "x-ratelimit-used": "100", "x-ratelimit-reset": "30" },
          },
    );
    const first = provider({ fetch: up.fetch, shared });
    expect((await first.run("user_profile", { id: "tidepool_notes" })).status).toBe("ok");
    const sent = up.sent.length;
    const again = await first.run("user_profile", { id: "tidepool_notes" });
    expect(again).toMatchObject({ status: "error", failure: { code: "rate_limited" } });
    const retryAfter = (again as { failure: { retryAfter: number } }).failure.retryAfter;
    expect(retryAfter).toBeGreaterThanOrEqual(29);
    expect(retryAfter).toBeLessThanOrEqual(30);
    const other = fakeReddit(() => ({ status: 200, body: about }));
    const second = provider({ fetch: other.fetch, shared });
    expect((await second.run("user_profile", { id: "tidepool_notes" })).status).toBe("error");
    expect(up.sent.length).toBe(sent);
    expect(other.sent).toHaveLength(0);
  });

  it("the gateway's own requests a minute: the next one waits for the next minute, nothing sent", async () => {
    const up = fakeReddit((method) => (method === "POST" ? tokenAnswer() : { status: 200, body: about }));
    const { run } = provider({ fetch: up.fetch, settings: { minuteRequests: "2" } });
    await run("user_profile", { id: "tidepool_notes" });
    await run("user_profile", { id: "TidePool_Notes" });
    const o = await run("user_profile", { id: "tidepool_notes" });
    expect(o).toMatchObject({ status: "error", failure: { code: "rate_limited" } });
    expect((o as { failure: { message: string } }).failure.message).toContain("2 Reddit requests a minute");
    expect((o as { failure: { retryAfter: number } }).failure.retryAfter).toBeLessThanOrEqual(60);
    expect(up.sent.filter((r) => r.method === "GET")).toHaveLength(2);
  });
});

const SAMPLES = join(import.meta.dirname, "..", "..", "..", "..", "..", "shared", "upstream-samples", "reddit");

describe.skipIf(!existsSync(SAMPLES))("the real samples of ../shared/upstream-samples/reddit", () => {
  const sample = (p: string): any => JSON.parse(readFileSync(join(SAMPLES, p), "utf8"));

  it("every post, comment and account maps to an item that validates; stubs are never items", () => {
    for (const f of [
      "comments/submission_3hahrw_limit10_more.json",
      "comments/submission_6otocc_continue_thread.json",
      "comments/submission_gx8r8z_deleted_comments.json",
    ]) {
      const [post, forest] = sample(f);
      for (const d of listingOf(post, "t3")!.data) valid(redditPost(d));
      const flat = flattenComments(forest.data.children);
      expect(flat.items.length, f).toBeGreaterThan(0);
      for (const i of flat.items) {
        valid(i);
        expect(i.id).toMatch(/^t1_[a-z0-9]+$/);
        expect(i.parent_id).toMatch(/^t[13]_[a-z0-9]+$/);
      }
      const ids = new Set(flat.items.map((i) => i.id));
      for (const i of flat.items) if (i.parent_id!.startsWith("t1_")) expect(ids.has(i.parent_id!), f).toBe(true);
    }
    const deleted = flattenComments(sample("comments/submission_gx8r8z_deleted_comments.json")[1].data.children);
    const gone = deleted.items.filter((i) => i.platform_extra?.["removed"]);
    expect(gone.length).toBeGreaterThan(0);
    for (const g of gone) expect(g.author).toBeUndefined();
    expect(flattenComments(sample("comments/submission_6otocc_continue_thread.json")[1].data.children).continued).toBe(
      1,
    );
    for (const f of [
      "trending/r_popular_hot.json",
      "search/r_all_praw_oauth_search.json",
      "user_posts/spez_submitted_new.json",
      "subreddit_hot/r_askreddit_hot.json",
    ]) {
      const l = listingOf(sample(f), "t3")!;
      expect(l.data.length, f).toBeGreaterThan(0);
      for (const d of l.data) valid(redditPost(d));
      for (const [i, d] of l.data.entries()) valid(redditTrend(d, i + 1));
    }
    for (const f of ["user_profile/about_spez.json", "user_profile/about_automoderator.json"])
      valid(redditAccount(sample(f).data));
  });
});
