/** Fixtures of the schedules' tests on both stores (storage/schedules.test.ts) and on PostgreSQL (pg-schedules). */
import type { Schedule } from "@sdgw/types";
import type { NewSchedule } from "../../src/storage/schedules.ts";

/** The three periods, taken in turn by generated sequences. */
export const EVERY = ["1h", "6h", "1d"] as const;

/** A new schedule of a workspace (its account and key named after it), the n-th of a sequence. */
export const input = (workspaceId: string, every: Schedule["every"], n = 0): NewSchedule => ({
  workspaceId,
  accountId: `acc_${workspaceId}`,
  keyId: `key_${workspaceId}_${n % 2}`,
  body: { accounts: [`https://x.com/a${n}`], range: "7d" },
  params: { accounts: [`https://x.com/a${n}`], range: "7d" } as never,
  every,
});
