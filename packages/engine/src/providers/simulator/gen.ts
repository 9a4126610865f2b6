/**
 * The simulator's deterministic generator: a small seeded PRNG (FNV-1a of the seed text into mulberry32) and the
 * helpers the platform folders use to make native-looking upstream JSON. Same seed, same data.
 */
import { DAY_MS, isoSeconds } from "../../time.ts";

/** FNV-1a, 32 bits. */
export function hash32(text: string, from = 0x811c9dc5): number {
  let h = from;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const codesOf = (alphabet: string): readonly number[] => Array.from(alphabet, (c) => c.charCodeAt(0));
const HEX = codesOf("0123456789abcdef");
const LOWER = codesOf("abcdefghijklmnopqrstuvwxyz0123456789");
const BASE62_CODES = codesOf(BASE62);

/** A seeded source of values. */
export class Gen {
  private state: number;
  /** The moment the simulated platforms stand at (ms); dates are before it. */
  readonly anchor: number;

  /**
   * `seed`'s generator; `after` is `hash32(prefix)` when the seed text is `prefix + seed` (the hash goes on from it:
   * many generators of one prefix hash it once).
   */
  constructor(seed: string, anchor: number, after?: number) {
    this.state = hash32(seed, after) || 1;
    this.anchor = anchor;
  }

  /** A number in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A whole number in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** A count with a long tail, as engagement numbers have: mostly small, sometimes huge. */
  count(scale: number): number {
    return Math.floor(scale * this.next() ** 3 * 10) + this.int(0, Math.max(1, Math.floor(scale / 10)));
  }

  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)]!;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  digits(n: number): string {
    let s = String(this.int(1, 9));
    while (s.length < n) s += String(this.int(0, 9));
    return s;
  }

  /**
   * `n` characters, each `alphabet[this.int(0, alphabet.length - 1)]`, made as one flat string (appending one
   * character at a time made a chain of `n` pieces, flattened again by whoever read it).
   */
  private chars(n: number, alphabet: readonly number[]): string {
    if (!(n > 0)) return "";
    const codes = new Array<number>(Math.ceil(n));
    for (let i = 0; i < codes.length; i++) codes[i] = alphabet[this.int(0, alphabet.length - 1)]!;
    return String.fromCharCode.apply(null, codes);
  }

  hex(n: number): string {
    return this.chars(n, HEX);
  }

  base62(n: number): string {
    return this.chars(n, BASE62_CODES);
  }

  lower(n: number): string {
    return this.chars(n, LOWER);
  }

  /** A moment within `days` before the anchor (ms). */
  past(days: number): number {
    return this.anchor - Math.floor(this.next() * days * DAY_MS);
  }
}

/** RFC 3339 with a fixed offset (`+08:00` for the Chinese platforms, `Z` for UTC). */
export function rfc3339(ms: number, offsetHours = 0): string {
  const shifted = ms + offsetHours * 3_600_000;
  // Years 1970–9999 by arithmetic (what `toISOString` writes, without building a Date); the rest by Date.
  if (
    shifted >= 0 &&
    shifted < 253_402_300_800_000 &&
    Number.isInteger(offsetHours) &&
    offsetHours > -100 &&
    offsetHours < 100
  ) {
    return `${isoSecondsOf(shifted)}${offsetHours === 0 ? "Z" : `${offsetHours >= 0 ? "+" : "-"}${TWO[Math.abs(offsetHours)]}:00`}`;
  }
  if (offsetHours === 0) return isoSeconds(ms);
  const local = new Date(ms + offsetHours * 3_600_000).toISOString().slice(0, 19);
  const sign = offsetHours >= 0 ? "+" : "-";
  const hh = String(Math.abs(offsetHours)).padStart(2, "0");
  return `${local}${sign}${hh}:00`;
}

const TWO = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, "0"));

/** `YYYY-MM-DDTHH:MM:SS` of a time in ms since 1970 (before 10000), as `toISOString` writes it (days to civil date: H. Hinnant). */
function isoSecondsOf(ms: number): string {
  const secs = Math.floor(ms / 1000);
  const days = Math.floor(secs / 86_400);
  const rest = secs - days * 86_400;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hh = Math.floor(rest / 3600);
  const mm = Math.floor((rest - hh * 3600) / 60);
  return `${year}-${TWO[month]}-${TWO[day]}T${TWO[hh]}:${TWO[mm]}:${TWO[rest - hh * 3600 - mm * 60]}`;
}

/** A link made safe as an RFC 3986 URI (D37): non-ASCII and reserved characters of a segment percent-encoded. */
export function seg(text: string): string {
  return encodeURIComponent(text);
}

/** Twitter's and Weibo's date format: `Wed Nov 18 12:04:00 +0000 2026`. */
export function twitterDate(ms: number, offsetHours = 0): string {
  const d = new Date(ms + offsetHours * 3_600_000);
  const days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const p = (n: number) => String(n).padStart(2, "0");
  const off = `${offsetHours >= 0 ? "+" : "-"}${p(Math.abs(offsetHours))}00`;
  const time = `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
  return `${days[d.getUTCDay()]} ${months[d.getUTCMonth()]} ${p(d.getUTCDate())} ${time} ${off} ${d.getUTCFullYear()}`;
}

/** Parses `twitterDate` back to ms (pure; used by the x and weibo mappings). */
export function parseTwitterDate(text: string): number {
  const m = /^\w{3} (\w{3}) (\d{2}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2}) (\d{4})$/.exec(text);
  if (!m) return Number.NaN;
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const utc = Date.UTC(Number(m[9]), months.indexOf(m[1]!), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
  const off = (m[6] === "-" ? -1 : 1) * (Number(m[7]) * 60 + Number(m[8])) * 60_000;
  return utc - off;
}

/** ISO 8601 durations as YouTube writes them (`PT12M3S`) to seconds. */
export function isoDurationSeconds(text: string): number {
  const m = /^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?$/.exec(text);
  return m ? Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0) : 0;
}

/** Numbers some platforms send as text ("3120", "1.2万"). */
export function num(value: string | number | undefined): number {
  if (value === undefined) return 0;
  if (typeof value === "number") return Math.max(0, Math.floor(value));
  const wan = value.endsWith("万") ? /^([\d.]+)万$/.exec(value) : null;
  if (wan) return Math.floor(Number(wan[1]) * 10_000);
  const n = Number(value);
  return Number.isFinite(n) ? Math.max(0, Math.floor(n)) : 0;
}
