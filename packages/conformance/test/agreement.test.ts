/**
 * The mock and the reference server offer the same things (D41), seen from outside over HTTP: the platforms of each
 * typed operation in `GET /v1/capabilities`, and which platforms `platforms=all` leaves out for every value of
 * `content_type` and `sort`. The mock ships its own catalog (it never depends on @sdgw/server); this keeps the two
 * from drifting apart.
 */
import { afterAll, describe, expect, it } from "vitest";
import { startMockHttp } from "./mock-http.ts";
import { startReferenceServer } from "./reference-server.ts";

const mock = await startMockHttp({ balance: 10_000 });
const server = await startReferenceServer({ simulator: {} }); // no slow platform: every call answers at once
afterAll(async () => {
  await mock.close();
  await server.close();
});

const TYPED = ["search", "trending", "detail", "comments", "user_profile", "user_posts"];

async function offered(baseUrl: string): Promise<Record<string, string[]>> {
  const body = (await (await fetch(`${baseUrl}/v1/capabilities`)).json()) as {
    operations: Array<{ platform: string; name: string }>;
  };
  return Object.fromEntries(
    TYPED.map((name) => [
      name,
      body.operations
        .filter((o) => o.name === name)
        .map((o) => o.platform)
        .sort(),
    ]),
  );
}

/** The entries of `POST /v1/search` with `platforms: "all"` and one parameter value. */
async function all(baseUrl: string, key: string, param: string, value: string): Promise<string[]> {
  const res = await fetch(`${baseUrl}/v1/search`, {
    method: "POST",
    headers: { "X-API-Key": key, "Content-Type": "application/json" },
    body: JSON.stringify({ platforms: "all", query: "agreement", count: 1, [param]: value }),
  });
  const body = (await res.json()) as { fanout?: Record<string, unknown> };
  expect(res.status, `${baseUrl} ${param}=${value}`).toBe(200);
  return Object.keys(body.fanout ?? {}).sort();
}

describe("@sdgw/mock and @sdgw/server agree on capability gaps (D41)", () => {
  it("list the same platforms for each typed operation", async () => {
    expect(await offered(mock.baseUrl)).toEqual(await offered(server.baseUrl));
  });

  it("leave out the same platforms from platforms=all for every content_type and sort", async () => {
    for (const [param, values] of [
      ["content_type", ["all", "video", "image", "text"]],
      ["sort", ["relevance", "latest", "most_liked", "most_collected", "most_comments"]],
    ] as const) {
      for (const value of values)
        expect(await all(mock.baseUrl, "sdgw_test_key", param, value), `${param}=${value}`).toEqual(
          await all(server.baseUrl, server.keys.key, param, value),
        );
    }
  });
});
