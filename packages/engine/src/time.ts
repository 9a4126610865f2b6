/** Time helpers shared by the systems, the tools and the simulator. Every clock is passed in; none is read here. */

/** Milliseconds in a day. */
export const DAY_MS = 86_400_000;

/** An RFC 3339 UTC time in whole seconds (`2026-11-21T14:20:00Z`), as the contract writes times. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The start (00:00:00 UTC) of the UTC day that holds `ms`. */
export function utcDayStart(ms: number): number {
  return ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
}
