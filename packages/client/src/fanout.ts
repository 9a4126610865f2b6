import type { FanoutAnswer, FanoutEntry, Platform } from "@sdgw/types";

/**
 * The entries of a fanout answer as `[platform, entry]` pairs, typed (`Object.entries` loses the types of a map
 * keyed by platform).
 *
 * ```ts
 * for (const [platform, entry] of fanoutEntries(answer)) if (entry.status === "ok") render(platform, entry.items);
 * ```
 * @category Paging
 */
export function fanoutEntries(answer: Pick<FanoutAnswer, "fanout">): Array<[Platform, FanoutEntry]> {
  return Object.entries(answer.fanout) as Array<[Platform, FanoutEntry]>;
}
