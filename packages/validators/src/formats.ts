/**
 * The string formats of the contract, compiled into the generated validators (D96): `date` and `date-time` check
 * the calendar (`2025-02-30`, `2025-02-29` and `2024-02-30` are refused, `2024-02-29` is a date) with one regular
 * expression and a few character codes read only when the day is past the 28th or the second is 60, at about what
 * ajv-formats' *fast* regular expression costs (1.1–1.3× its time, against 30× for its full mode); `uri` is
 * ajv-formats' *full* RFC 3986 check, same answers (D37), with plain http(s) links read without the expression. Each
 * is a plain function of its own, so a bundle keeps only the ones it reaches.
 *
 * `date-time` is RFC 3339 §5.6: `YYYY-MM-DDTHH:MM:SS`, an optional fraction (`.` and one or more digits), then `Z`
 * or `+hh:mm` / `-hh:mm` (hours 00–23, minutes 00–59). `T` and `Z` may be lower case, as the RFC's ABNF allows; a
 * space for `T`, a missing offset, `+hhmm` and `+hh` are refused. A leap second (`:60`) is accepted, as ajv-formats'
 * full mode does, only when the time is 23:59 in UTC (`23:59:60Z`, `00:59:60+01:00`), on any date.
 */

// The shape, with each field's digits in range as far as a regular expression says it cheaply; the calendar (day
// of the month, 29 February) and the leap second are checked after it, in code, only when they can matter.
const DATE = /^\d\d\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])$/;
const DATE_TIME =
  /^\d\d\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])[Tt](?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;
const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The two digits at `i` as a number (the shape is checked first). */
const num = (s: string, i: number): number => s.charCodeAt(i) * 10 + s.charCodeAt(i + 1) - 528;

/** Whether the day of `YYYY-MM-DD…` (shape checked, day 01–31) is in its month. */
function inMonth(s: string): boolean {
  if (s.charCodeAt(8) < 50) return true; // days 01–19
  const day = num(s, 8);
  if (day <= 28) return true;
  const month = num(s, 5);
  if (day <= DAYS[month]!) return true;
  if (month !== 2 || day !== 29) return false;
  // 29 February: leap years are divisible by 4, centuries only by 400.
  const lo = num(s, 2);
  return lo === 0 ? num(s, 0) % 4 === 0 : lo % 4 === 0;
}

/** A leap second is inserted at 23:59:60 UTC: whether `…THH:MM:60…±hh:mm` (or `Z`) falls there. */
function leapSecond(s: string): boolean {
  const n = s.length;
  const sign = s.charCodeAt(n - 6); // `+` or `-` of an offset; a digit or `.` before a `Z`
  const east = sign === 43 ? 1 : sign === 45 ? -1 : 0;
  const offset = east * (num(s, n - 5) * 60 + num(s, n - 2));
  return (((num(s, 11) * 60 + num(s, 14) - offset) % 1440) + 1440) % 1440 === 1439;
}

/** RFC 3339 `full-date`: `2024-02-29`. */
export function date(s: string): boolean {
  return DATE.test(s) && inMonth(s);
}

/** RFC 3339 `date-time`: `2026-11-21T08:30:00Z`, `2025-02-28T10:00:00.250+08:00`. */
export function dateTime(s: string): boolean {
  return DATE_TIME.test(s) && inMonth(s) && (s.charCodeAt(17) !== 54 || leapSecond(s)); // 54: a `6` opens second 60
}

const NOT_URI_FRAGMENT = /\/|:/;
// ajv-formats 3.0.1 `fullFormats.uri`, unchanged: RFC 3986 (http://jmrware.com/articles/2009/uri_regexp/URI_regex.html)
// with a required scheme.
const URI =
  /^(?:[a-z][a-z0-9+\-.]*:)(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)(?:\?(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$/i;

/**
 * The common case: `http://` or `https://`, a host of letters, digits, `-` and `.`, an optional port, then path
 * segments, a query and a fragment of RFC 3986 pchars and percent-escapes. Each part is a sub-language of that part
 * of `URI`, so every string it accepts `URI` accepts; a miss only means "ask `URI`", which costs about twice as much
 * (it tries user info, then IPv6 and IPv4 hosts, before a name).
 */
const PLAIN_HTTP =
  /^https?:\/\/[A-Za-z0-9][A-Za-z0-9\-.]*(?::\d{1,5})?(?:\/(?:[\w\-.~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})*)*(?:\?(?:[\w\-.~!$&'()*+,;=:@/?]|%[0-9a-fA-F]{2})*)?(?:#(?:[\w\-.~!$&'()*+,;=:@/?]|%[0-9a-fA-F]{2})*)?$/;

/** RFC 3986 URI with a scheme: exactly ajv-formats' full `uri` (D37), with a quicker path for plain http(s) links. */
export function uri(s: string): boolean {
  return PLAIN_HTTP.test(s) || (NOT_URI_FRAGMENT.test(s) && URI.test(s));
}

/** The formats by their JSON Schema names, as the generator hands them to ajv. */
export const FORMATS = { date, "date-time": dateTime, uri } as const;

/** The export name of each format in this module, for the generated code's imports. */
export const FORMAT_EXPORTS = { date: "date", "date-time": "dateTime", uri: "uri" } as const;
