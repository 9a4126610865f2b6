/**
 * The format functions compiled into the validators (D96): `date` and `date-time` against a reference built on the
 * Date object (a date is valid when it survives a round trip through the UTC calendar), hand cases, and `uri`
 * against ajv-formats' full check, which it must equal.
 */
import fullFormatsModule from "ajv-formats/dist/formats.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { date, dateTime, uri } from "../src/formats.ts";
import * as v from "../src/index.ts";

const { fullFormats } = fullFormatsModule as unknown as typeof import("ajv-formats/dist/formats.js");
const ajvUri = fullFormats.uri as (s: string) => boolean;

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** Whether y-m-d h:mi:s names a real instant: the Date object keeps every field as given. */
function roundTrips(y: number, m: number, d: number, h = 0, mi = 0, s = 0): boolean {
  const t = new Date(Date.UTC(2000, 0, 1));
  t.setUTCFullYear(y, m - 1, d); // setUTCFullYear, not Date.UTC: years 0–99 are not moved to the 1900s
  t.setUTCHours(h, mi, s, 0);
  return (
    t.getUTCFullYear() === y &&
    t.getUTCMonth() === m - 1 &&
    t.getUTCDate() === d &&
    t.getUTCHours() === h &&
    t.getUTCMinutes() === mi &&
    t.getUTCSeconds() === s
  );
}

/** Reference date-time: the fields round-trip, the offset is in range, and a leap second falls at 23:59 UTC. */
function reference(y: number, m: number, d: number, h: number, mi: number, s: number, offset: number | "Z"): boolean {
  const oh = offset === "Z" ? 0 : Math.trunc(Math.abs(offset) / 60);
  if (oh > 23) return false;
  if (s === 60) {
    if (!roundTrips(y, m, d, h, mi, 0)) return false;
    const utc = Date.UTC(2000, 0, 1, h, mi) - (offset === "Z" ? 0 : offset) * 60_000;
    const at = new Date(utc);
    return at.getUTCHours() === 23 && at.getUTCMinutes() === 59;
  }
  return roundTrips(y, m, d, h, mi, s);
}

const offsetText = (o: number | "Z") =>
  o === "Z" ? "Z" : `${o < 0 ? "-" : "+"}${pad(Math.trunc(Math.abs(o) / 60))}:${pad(Math.abs(o) % 60)}`;

describe("date", () => {
  it.each([
    ["2024-02-29", true],
    ["2000-02-29", true],
    ["1900-02-28", true],
    ["0000-02-29", true],
    ["1999-12-31", true],
    ["2025-02-29", false],
    ["2025-02-30", false],
    ["2024-02-30", false],
    ["1900-02-29", false],
    ["2100-02-29", false],
    ["2025-04-31", false],
    ["2025-13-01", false],
    ["2025-00-10", false],
    ["2025-01-00", false],
    ["2025-01-32", false],
    ["2025-1-01", false],
    ["2025-01-01 ", false],
    ["2025/01/01", false],
    ["+2025-01-01", false],
    ["２０２５-01-01", false],
    ["", false],
  ])("%s → %s", (s, ok) => expect(date(s)).toBe(ok));

  it("agrees with the UTC calendar on every year, month and day", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 99 }),
        fc.integer({ min: 0, max: 99 }),
        (y, m, d) => {
          expect(date(`${pad(y, 4)}-${pad(m)}-${pad(d)}`)).toBe(m >= 1 && m <= 12 && d >= 1 && roundTrips(y, m, d));
        },
      ),
      { numRuns: 20_000 },
    );
  });
});

describe("date-time", () => {
  it.each([
    ["2026-11-21T08:30:00Z", true],
    ["2024-02-29T23:59:59Z", true],
    ["2026-11-21t08:30:00z", true],
    ["2026-11-21T08:30:00.1Z", true],
    ["2026-11-21T08:30:00.123456789+08:00", true],
    ["2026-11-21T08:30:00-23:59", true],
    ["2016-12-31T23:59:60Z", true],
    ["2016-12-31T23:59:60.5Z", true],
    ["2017-01-01T00:59:60+01:00", true],
    ["2016-12-31T15:59:60-08:00", true],
    ["2016-12-31T23:59:60+01:00", false],
    ["2016-12-31T22:59:60Z", false],
    ["2016-12-31T23:58:60Z", false],
    ["2025-02-29T10:00:00Z", false],
    ["2025-02-30T10:00:00+08:00", false],
    ["2024-02-30T10:00:00Z", false],
    ["2026-11-21T24:00:00Z", false],
    ["2026-11-21T23:60:00Z", false],
    ["2026-11-21T23:59:61Z", false],
    ["2026-11-21T08:30:00", false],
    ["2026-11-21 08:30:00Z", false],
    ["2026-11-21T08:30:00+0800", false],
    ["2026-11-21T08:30:00+08", false],
    ["2026-11-21T08:30:00+24:00", false],
    ["2026-11-21T08:30:00+08:60", false],
    ["2026-11-21T08:30:00.Z", false],
    ["2026-11-21T08:30Z", false],
    ["2026-11-21T08:30:00ZZ", false],
    ["2026-11-21T08:30:00+08:00 ", false],
    ["2026-11-21", false],
    ["", false],
  ])("%s → %s", (s, ok) => expect(dateTime(s)).toBe(ok));

  it("agrees with the UTC calendar on random fields and offsets", () => {
    const offset = fc.oneof(fc.constant("Z" as const), fc.integer({ min: -1500, max: 1500 }));
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 31 }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 61 }),
        fc.integer({ min: 0, max: 61 }),
        offset,
        fc.option(fc.stringMatching(/^[0-9]{1,9}$/), { nil: undefined }),
        (y, m, d, h, mi, s, o, fraction) => {
          const text = `${pad(y, 4)}-${pad(m)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}${fraction === undefined ? "" : `.${fraction}`}${offsetText(o)}`;
          expect(dateTime(text), text).toBe(reference(y, m, d, h, mi, s, o));
        },
      ),
      { numRuns: 50_000 },
    );
  });

  it("agrees on leap seconds at every offset", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 59 }),
        fc.integer({ min: -1439, max: 1439 }),
        (h, mi, o) => {
          const text = `2016-12-31T${pad(h)}:${pad(mi)}:60${offsetText(o)}`;
          expect(dateTime(text), text).toBe(reference(2016, 12, 31, h, mi, 60, o));
        },
      ),
      { numRuns: 20_000 },
    );
  });

  it("refuses what is not one (random text near the shape)", () => {
    const near = fc.stringMatching(
      /^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]*)?([Zz]|[+-][0-9]{2}:?[0-9]{0,2})?$/,
    );
    fc.assert(
      fc.property(near, (text) => {
        const m = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(\.\d+)?(?:([Zz])|([+-])(\d\d):(\d\d))$/.exec(text);
        const offset = m?.[8] ? "Z" : m ? (m[9] === "-" ? -1 : 1) * (+m[10]! * 60 + +m[11]!) : 0;
        const want =
          !!m && (offset === "Z" || +m[11]! < 60) && reference(+m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!, +m[6]!, offset);
        expect(dateTime(text), text).toBe(want);
      }),
      { numRuns: 20_000 },
    );
  });

  it("is what the validators check: SearchEnvelope refuses 2025-02-30 and takes 2024-02-29", () => {
    const env = {
      request_id: "r",
      schema_version: "v1",
      fetched_at: "2024-02-29T10:00:00+08:00",
      status: "empty",
      applied_params: {},
      warnings: [],
      items: [],
      platform: "x",
      billing: { cost: 1, balance: 1, unit: "credits" },
    };
    expect(v.validateSearchEnvelope(env).ok).toBe(true);
    const bad = v.validateSearchEnvelope({ ...env, fetched_at: "2025-02-30T10:00:00+08:00" });
    expect(bad).toMatchObject({
      ok: false,
      errors: [{ path: "/fetched_at", keyword: "format", message: 'must match format "date-time"' }],
    });
  });
});

describe("uri", () => {
  it.each([
    "https://x.com/a/status/1",
    "https://www.weibo.com/search?q=%23%E5%8F%8C%E5%8D%81%E4%B8%80%23",
    "https://[::1]:8080/p",
    "mailto:a@b.c",
    "urn:isbn:0451450523",
    "https://user:pw@host/",
    "https://x.com/a b",
    "https://www.weibo.com/search?q=#双十一#",
    "//x.com/a",
    "x.com/a",
    "https://x.com/%zz",
    "https://x.com/a%2",
    "https://a_b.com/x",
    "https://x.com/#a#b",
    "https://x.com/a?b?c#d?e/f",
    "http://x.com:/p",
    "http://x.com:123456/p",
    "https://x.com?q=1",
    "https://x.com#f",
    "https://-x.com/",
    "HTTPS://X.COM/A",
    "https://x.com/ü",
    "https:x.com",
    "",
  ])("%s: as ajv-formats' full uri", (s) => expect(uri(s)).toBe(ajvUri(s)));

  it("equals ajv-formats' full uri on random URLs and text", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.webUrl({ withQueryParameters: true, withFragments: true }),
          fc.string(),
          fc.string({ unit: "grapheme" }).map((s) => `https://x.com/${s}`),
        ),
        (s) => {
          expect(uri(s), s).toBe(ajvUri(s));
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it("equals ajv-formats' full uri on text near a plain http(s) link (both the quick path and the fallback)", () => {
    const near = fc.stringMatching(
      /^(https?|ftp|HTTP):\/\/[a-zA-Z0-9._~%@:[\]-]{0,12}(:[0-9]{0,6})?([/?#][a-zA-Z0-9%/?#:@!$&'()*+,;=_~ ü"-]{0,30})?$/,
    );
    fc.assert(
      fc.property(near, (s) => {
        expect(uri(s), s).toBe(ajvUri(s));
      }),
      { numRuns: 20_000 },
    );
  });
});
