/**
 * Text hygiene: bytes that are not text are refused, named, and never charged as replaced text; prototype names are
 * parameters like any other (refused as unknown). Over `app.inject` and over a real socket.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { harness, newIdem, validateAnswer, type Harness } from "./helpers.ts";

let h: Harness;
afterEach(async () => {
  h.audit();
  await h.server.close();
});

const balance = () => h.server.gateway.accounts.account(h.accountId)!.balance;

describe("a query that is not text", () => {
  it.each([
    ["%ZZ", "a % not followed by two hex digits"],
    ["%E9%9C", "a cut UTF-8 sequence"],
    ["%FF%FE", "bytes that are never UTF-8"],
    ["%ED%A0%80", "a lone surrogate, encoded"],
    ["a%00b", "a NUL"],
    ["%", "a lone %"],
  ])("query=%s (%s) → 400 invalid_params naming query, uncharged", async (value) => {
    h = harness();
    const before = balance();
    const a = await h.call("search", "GET", `/v1/search?platform=x&query=${value}`);
    expect([a.status, a.json.code, a.json.fix.param]).toEqual([400, "invalid_params", "query"]);
    expect(balance()).toBe(before);
  });

  it("names the parameter whose value is bad, and a bad name by itself", async () => {
    h = harness();
    expect((await h.call("search", "GET", "/v1/search?platform=x&query=ok&sort=%C3")).json.fix.param).toBe("sort");
    const name = await h.call("search", "GET", "/v1/search?platform=x&query=ok&%FFbad=1");
    expect([name.status, name.json.fix.param]).toEqual([400, "%FFbad"]);
  });

  it("any text a client percent-encodes is accepted as that text (property)", async () => {
    h = harness({ credits: 100_000 });
    await fc.assert(
      fc.asyncProperty(
        fc
          .string({ unit: "grapheme", minLength: 1, maxLength: 40 })
          .filter((s) => s.trim() !== "" && !s.includes("\u0000")),
        async (text) => {
          const a = await h.call("search", "GET", `/v1/search?platform=x&count=1&query=${encodeURIComponent(text)}`);
          expect(a.status, text).toBe(200);
          expect(a.json.applied_params.query).toBe(text);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe("prototype names", () => {
  it.each(["__proto__", "constructor", "prototype", "hasOwnProperty"])(
    "%s as a query parameter → 400 naming it, uncharged",
    async (name) => {
      h = harness();
      const before = balance();
      const a = await h.call("search", "GET", `/v1/search?platform=x&query=a&${name}=1`);
      expect([a.status, a.json.fix.param]).toEqual([400, name]);
      expect(balance()).toBe(before);
    },
  );

  it.each(["__proto__", "constructor", "prototype"])("%s in a tool body → 400 naming it, uncharged", async (name) => {
    h = harness();
    const before = balance();
    const a = await h.call("brandBuzz", "POST", "/v1/tools/brand_buzz", {
      raw: `{"query":"q","${name}":{"x":1}}`,
      headers: { "content-type": "application/json" },
    });
    expect([a.status, a.json.fix.param]).toEqual([400, name]);
    expect(balance()).toBe(before);
  });
});

describe("a body that is not text", () => {
  const post = async (payload: Buffer | string) => {
    const res = await h.server.app.inject({
      method: "POST",
      url: "/v1/detail",
      headers: { "x-api-key": h.key, "content-type": "application/json", "idempotency-key": newIdem() },
      payload,
    });
    return validateAnswer("detail", res);
  };

  it("bytes that are not UTF-8 → 400 naming body, uncharged", async () => {
    h = harness();
    const before = balance();
    const json = Buffer.from('{"platform":"douyin","id":"7301234567890123456","x":"', "utf8");
    for (const bad of [Buffer.from([0xff, 0xfe]), Buffer.from([0xe9, 0x9c]), Buffer.from([0xed, 0xa0, 0x80])]) {
      const a = await post(Buffer.concat([json, bad, Buffer.from('"}')]));
      expect([a.status, a.json.fix.param, a.json.message]).toEqual([400, "body", "The body is not UTF-8 text."]);
    }
    expect(balance()).toBe(before);
  });

  it("a lone surrogate or a NUL in a string → 400 naming its parameter, uncharged", async () => {
    h = harness();
    const before = balance();
    for (const payload of [
      '{"platform":"douyin","id":"73012\\ud800"}',
      '{"platform":"douyin","id":"7301\\u0000"}',
      '{"platform":"douyin","url":["https://v.douyin.com/a","\\udc00"]}',
    ]) {
      const a = await post(payload);
      expect([a.status, a.json.fix.param], payload).toEqual([400, payload.includes("url") ? "url" : "id"]);
    }
    expect(balance()).toBe(before);
    // A surrogate pair is text: the call runs (and is charged as any call).
    const pair = await post('{"platform":"douyin","id":"\\ud83d\\ude00"}');
    expect([pair.status, pair.json.items[0].id]).toEqual([200, "😀"]);
  });
});

describe("ids a caller chooses", () => {
  it("any text as an id gives answers that keep the contract: its links percent-encode it (property)", async () => {
    h = harness({ credits: 1_000_000 });
    const platforms = [
      "xiaohongshu",
      "douyin",
      "x",
      "reddit",
      "wechat",
      "weibo",
      "bilibili",
      "zhihu",
      "kuaishou",
      "youtube",
    ];
    const ops = [
      ["detail", "/v1/detail"],
      ["comments", "/v1/comments"],
      ["userProfile", "/v1/user_profile"],
      ["userPosts", "/v1/user_posts"],
    ] as const;
    const id = fc.oneof(
      fc.constantFrom("😀", "a b", "a/b?c#d", "%", "%41", "中文", 'x"y', "<>{}|\\^`"),
      fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...platforms),
        fc.constantFrom(...ops),
        id.filter((s) => s.trim() !== "" && !/deleted|missing|private/i.test(s) && !s.includes("\u0000")),
        async (platform, [op, path], value) => {
          // h.call validates every answer against the contract (a link must be a URI).
          const a = await h.call(op, "POST", path, { body: { platform, id: value } });
          expect([200, 400], `${platform} ${op} ${JSON.stringify(value)}`).toContain(a.status);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("over a real socket", () => {
  it("a bad query and a body of raw bytes are refused the same way", async () => {
    h = harness();
    const url = await h.server.listen({ host: "127.0.0.1", port: 0 });
    const q = await fetch(`${url}/v1/search?platform=x&query=%E9%9C`, {
      headers: { "x-api-key": h.key, "idempotency-key": newIdem() },
    });
    expect([q.status, ((await q.json()) as { fix: { param: string } }).fix.param]).toEqual([400, "query"]);
    const b = await fetch(`${url}/v1/tools/brand_buzz`, {
      method: "POST",
      headers: { "x-api-key": h.key, "content-type": "application/json" },
      body: new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
    });
    expect([b.status, ((await b.json()) as { fix: { param: string } }).fix.param]).toEqual([400, "body"]);
  });
});
