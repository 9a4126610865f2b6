/**
 * Record and replay (D123): record mode writes what the live connector received, redacted (no key, no volatile
 * parameter), in the layout of fixtures/upstream; replay mode answers from such files only — from a recording or
 * from the hand-written fixtures — and fails loudly on a request none of them answers.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { loadExchanges, startFakeUpstream } from "../../conformance/src/connectors/index.ts";
import { YOUTUBE_FIXTURES, YT } from "../../conformance/test/youtube-subject.ts";
import { createServer } from "../src/storage/sqlite/server.ts";
import { GENEROUS } from "./helpers.ts";

const tmp = mkdtempSync(join(tmpdir(), "sdgw-cassettes-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const FIXTURES_UPSTREAM = fileURLToPath(new URL("../../../fixtures/upstream/", import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]));
}

function gateway(o: Parameters<typeof createServer>[0]) {
  const logs: string[] = [];
  const server = createServer({ dbPath: ":memory:", limits: GENEROUS, log: (m) => logs.push(m), ...o });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "Cassettes", plan: "paid" });
  gw.accounts.grant(account.id, 100);
  const key = gw.accounts.createKey({ accountId: account.id, name: "k" }).secret;
  const call = async (path: string, body: unknown) => {
    const res = await server.app.inject({
      method: "POST",
      url: path,
      headers: { "x-api-key": key, "content-type": "application/json" },
      payload: JSON.stringify(body),
    });
    return { http: res.statusCode, ...JSON.parse(res.body) };
  };
  return { server, logs, call };
}

describe("record and replay", () => {
  const recordings = join(tmp, "recordings");
  let recorded: { detail: any; search: any };

  it("record mode writes each exchange, without the key or a volatile parameter", async () => {
    const upstream = await startFakeUpstream({ exchanges: loadExchanges(YOUTUBE_FIXTURES) });
    // A search of the last 7 days sends publishedAfter, a time computed from now: volatile.
    const searchP1 = loadExchanges(YOUTUBE_FIXTURES).find((x) => x.source?.endsWith("tide_pools_p1.json"))!;
    upstream.override({ path: "/youtube/v3/search", query: { q: "tide pools week" }, body: searchP1.response.body });
    const g = gateway({
      connectors: { youtube: { apiKey: YT.KEY, baseUrl: `${upstream.url}/youtube/v3` } },
      upstreamRecordDir: recordings,
    });
    try {
      recorded = {
        detail: await g.call("/v1/detail", { platform: "youtube", id: YT.V1 }),
        search: await g.call("/v1/search", { platform: "youtube", query: "tide pools week", time_range: "7d" }),
      };
    } finally {
      await g.server.close();
      await upstream.close();
    }
    expect(recorded.detail.status).toBe("ok");
    expect(recorded.search.status).toBe("ok");
    expect(upstream.requests.find((r) => r.path.endsWith("/search"))!.query["publishedAfter"]).toMatch(/Z$/);
    const written = files(join(recordings, "youtube"))
      .map((f) => f.slice(recordings.length + 1))
      .sort();
    // One body and one request file per exchange: the search, and the two videos.list reads (detail, statistics).
    expect(written.every((f) => /^youtube\/(search|videos)\/200-[0-9a-f]{12}(\.request)?\.json$/.test(f))).toBe(true);
    expect(written.filter((f) => f.startsWith("youtube/search/")).length).toBe(2);
    expect(written.filter((f) => f.startsWith("youtube/videos/")).length).toBe(4);
    for (const f of files(recordings)) expect(readFileSync(f, "utf8"), f).not.toContain(YT.KEY);
    const search = JSON.parse(
      readFileSync(files(join(recordings, "youtube", "search")).find((f) => f.endsWith(".request.json"))!, "utf8"),
    );
    expect(search).toMatchObject({ method: "GET", path: "/youtube/v3/search", response: { status: 200 } });
    expect(search.query).toEqual({
      maxResults: "10",
      order: "relevance",
      part: "snippet",
      q: "tide pools week",
      type: "video",
    });
  });

  it("replay mode answers the same from the recordings, with nothing sent anywhere, and breaks loudly on anything else", async () => {
    // The base URL is a closed port: replay never sends a request.
    const g = gateway({
      connectors: { youtube: { apiKey: YT.KEY, baseUrl: "http://127.0.0.1:9/youtube/v3" } },
      upstreamReplayDir: recordings,
    });
    try {
      const detail = await g.call("/v1/detail", { platform: "youtube", id: YT.V1 });
      expect(detail.items).toEqual(recorded.detail.items);
      const search = await g.call("/v1/search", { platform: "youtube", query: "tide pools week", time_range: "7d" });
      expect(search.items).toEqual(recorded.search.items);
      const missing = await g.call("/v1/detail", { platform: "youtube", id: YT.V4 });
      expect([missing.http, missing.code]).toEqual([500, "internal_error"]);
      expect(g.logs).toContain(
        `replay: no recording in ${recordings} answers GET ` +
          `/youtube/v3/videos?id=${YT.V4}&part=snippet%2Cstatistics%2CcontentDetails; record it ` +
          `(SDGW_UPSTREAM_RECORD) or add a fixture`,
      );
    } finally {
      await g.server.close();
    }
  });

  it("replays the hand-written fixtures too (SDGW_UPSTREAM_REPLAY=fixtures/upstream)", async () => {
    const g = gateway({
      connectors: { youtube: { apiKey: YT.KEY, baseUrl: "http://127.0.0.1:9/youtube/v3" } },
      upstreamReplayDir: FIXTURES_UPSTREAM,
    });
    try {
      const posts = await g.call("/v1/user_posts", {
        platform: "youtube",
        url: `https://www.youtube.com/${YT.HANDLE}`,
      });
      expect(posts.items.map((i: { id: string }) => i.id)).toEqual([YT.V1, YT.V3]);
      expect(g.server.gateway.upstream.summary()).toContain(
        `youtube live (YouTube Data API v3 at http://127.0.0.1:9/youtube/v3, replaying ${FIXTURES_UPSTREAM}`,
      );
    } finally {
      await g.server.close();
    }
  });
});
