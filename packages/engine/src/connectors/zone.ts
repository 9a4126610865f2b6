/**
 * Days in a time zone, for budgets that refill at a platform's midnight (YouTube's at midnight Pacific time, D121).
 * `Intl` knows the zones' rules (daylight saving included) in Node and in browsers.
 */

const formats = new Map<string, Intl.DateTimeFormat>();

function format(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formats.set(timeZone, f);
  }
  return f;
}

/** The wall-clock fields of `ms` in `timeZone`. */
function wall(ms: number, timeZone: string): { y: number; m: number; d: number; h: number; min: number; s: number } {
  const parts: Record<string, number> = {};
  for (const p of format(timeZone).formatToParts(ms)) if (p.type !== "literal") parts[p.type] = Number(p.value);
  return {
    y: parts["year"]!,
    m: parts["month"]!,
    d: parts["day"]!,
    h: parts["hour"]!,
    min: parts["minute"]!,
    s: parts["second"]!,
  };
}

/** Whether `timeZone` is one `Intl` knows (`America/Los_Angeles`, `UTC`). */
export function isTimeZone(timeZone: string): boolean {
  try {
    format(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The date of `ms` in `timeZone`, `YYYY-MM-DD`. */
export function zonedDay(ms: number, timeZone: string): string {
  const w = wall(ms, timeZone);
  return `${w.y}-${String(w.m).padStart(2, "0")}-${String(w.d).padStart(2, "0")}`;
}

/** The offset of `timeZone` from UTC at `ms`, in ms (Pacific daylight time: −7 h). */
function offsetAt(ms: number, timeZone: string): number {
  const w = wall(ms, timeZone);
  return Date.UTC(w.y, w.m - 1, w.d, w.h, w.min, w.s) - (ms - (((ms % 1000) + 1000) % 1000));
}

/** The next midnight in `timeZone` after `ms` (ms since the epoch): when a budget of that zone refills. */
export function nextMidnight(ms: number, timeZone: string): number {
  const w = wall(ms, timeZone);
  const localMidnight = Date.UTC(w.y, w.m - 1, w.d + 1);
  // The offset at midnight may differ from now's (a daylight-saving change today): take it at the guess, twice.
  let guess = localMidnight - offsetAt(ms, timeZone);
  guess = localMidnight - offsetAt(guess, timeZone);
  return guess > ms ? guess : localMidnight - offsetAt(guess + 3_600_000, timeZone);
}
