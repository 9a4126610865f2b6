/** Time helpers shared by the systems, the tools and the simulator. Every clock is passed in; none is read here. */

/** Milliseconds in a day. */
export const DAY_MS = 86_400_000;

/** The start (00:00:00 UTC) of the UTC day that holds `ms`. */
export function utcDayStart(ms: number): number {
  return ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
}
