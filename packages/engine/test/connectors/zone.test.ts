/** Budgets refill at midnight in their zone (D121): YouTube's at midnight Pacific time, daylight saving included. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isTimeZone, nextMidnight, zonedDay } from "../../src/connectors/zone.ts";

const LA = "America/Los_Angeles";
const at = (iso: string) => Date.parse(iso);

describe("midnight Pacific", () => {
  it("is 08:00Z in winter and 07:00Z in summer, on the days daylight saving starts and ends too", () => {
    expect(new Date(nextMidnight(at("2026-01-15T12:00:00Z"), LA)).toISOString()).toBe("2026-01-16T08:00:00.000Z");
    expect(new Date(nextMidnight(at("2026-07-04T06:59:59Z"), LA)).toISOString()).toBe("2026-07-04T07:00:00.000Z");
    // 2026-03-08: clocks go forward at 02:00 PST; that day's midnight is still 08:00Z, the next is 07:00Z.
    expect(new Date(nextMidnight(at("2026-03-08T07:59:00Z"), LA)).toISOString()).toBe("2026-03-08T08:00:00.000Z");
    expect(new Date(nextMidnight(at("2026-03-08T12:00:00Z"), LA)).toISOString()).toBe("2026-03-09T07:00:00.000Z");
    // 2026-11-01: clocks go back at 02:00 PDT; the next midnight is 08:00Z.
    expect(new Date(nextMidnight(at("2026-11-01T12:00:00Z"), LA)).toISOString()).toBe("2026-11-02T08:00:00.000Z");
    expect(zonedDay(at("2026-01-16T07:59:59Z"), LA)).toBe("2026-01-15");
    expect(zonedDay(at("2026-01-16T08:00:00Z"), LA)).toBe("2026-01-16");
  });

  it("is always the first moment of the next day in the zone, within 25 hours", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.parse("2000-01-01"), max: Date.parse("2099-12-31") }),
        fc.constantFrom(LA, "UTC", "Asia/Shanghai", "Europe/Berlin"),
        (now, zone) => {
          const next = nextMidnight(now, zone);
          expect(next).toBeGreaterThan(now);
          expect(next - now).toBeLessThanOrEqual(25 * 3_600_000);
          expect(zonedDay(next, zone)).not.toBe(zonedDay(now, zone));
          expect(zonedDay(next - 1000, zone)).toBe(zonedDay(now, zone));
        },
      ),
      { numRuns: 300 },
    );
    expect(isTimeZone(LA)).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
  });
});
