/**
 * D112: what the depth check of a JSON body (`nestsDeeperThan`, run by `admitRequest` before `JSON.parse`) costs,
 * beside `JSON.parse` of the same text and the whole `admitRequest`, per body, in ns. Bodies: a search (89 B), a
 * comment_insights call with 20 links (1.3 KB), a 500 KB body of one long string, and the worst text for the scan,
 * 500 KB of escaped quotes. Run: `node bench/validators/depth.ts` (a few seconds).
 */
import { admitRequest, nestsDeeperThan } from "../../packages/validators/src/index.ts";

const targets = Array.from(
  { length: 20 },
  (_, i) => `https://www.xiaohongshu.com/explore/64f1a2b3c4d5e6f7a8b9c${String(i).padStart(3, "0")}`,
);
const BODIES: Record<string, [string, string]> = {
  "search, 89 B": [
    "searchPost",
    JSON.stringify({ platforms: ["xiaohongshu", "douyin", "weibo"], query: "露营 装备", count: 10, sort: "latest" }),
  ],
  "comment_insights, 20 links": ["commentInsights", JSON.stringify({ targets, limit: 50, confirm: true })],
  "one string, 500 KB": ["findOperation", JSON.stringify({ query: "x".repeat(400), junk: "y".repeat(500_000) })],
  "escaped quotes, 500 KB": ["findOperation", JSON.stringify({ query: "x", junk: 'y\\"'.repeat(100_000) })],
};

/** Mean ns per call over `n` calls, after a tenth of them as warm-up. */
function ns(f: () => unknown, n: number): number {
  for (let i = 0; i < n / 10; i++) f();
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  return Number(process.hrtime.bigint() - t) / n;
}

console.log("body                          bytes   depth scan   JSON.parse   admitRequest   (ns per body)");
for (const [name, [op, text]] of Object.entries(BODIES)) {
  const n = text.length > 10_000 ? 1000 : 200_000;
  const scan = ns(() => nestsDeeperThan(text), n);
  const parse = ns(() => JSON.parse(text), n);
  const request = {
    rawQuery: "",
    headers: { "idempotency-key": "k" },
    body: { contentType: "application/json", text },
  };
  const admit = ns(() => admitRequest(op as "searchPost", request), Math.max(100, n / 5));
  const cell = (v: number, w: number) => v.toFixed(0).padStart(w);
  console.log(
    `${name.padEnd(28)}${String(text.length).padStart(7)}${cell(scan, 13)}${cell(parse, 13)}${cell(admit, 15)}`,
  );
}
