/**
 * What the sessions tests share (the storage suite's contract and differential, and pg-sessions.test.ts): a clock's
 * start, small limits and lifetimes so that generated sequences reach them, two accounts, and a cheap password hash.
 */
import { randomBytes, scryptSync } from "node:crypto";
import type { SessionConfig } from "../../src/config.ts";

export const T0 = Date.UTC(2026, 10, 25, 9, 0, 0);
export const MINUTE = 60_000;
export const PASSWORD = "correct horse battery staple";
/** Small limits and lifetimes, so that generated sequences reach them. */
export const CONFIG: SessionConfig = {
  idleMs: 30 * MINUTE,
  lifetimeMs: 2 * 3600_000,
  failuresPerEmail: 3,
  failuresPerAddress: 4,
  failureWindowMs: 10 * MINUTE,
};
export const ACCOUNTS = ["acc_diff_a", "acc_diff_b"];

/**
 * A hash in `hashPasswordSync`'s format at the lowest cost `verifyPassword` takes (N = 16, r = 1), so that the
 * generated sign-ins check passwords quickly. The format and the check are the module's; only the cost is the test's.
 */
function cheapHash(password: string): string {
  const salt = randomBytes(16);
  const key = scryptSync(password.normalize("NFC"), salt, 32, { N: 16, r: 1, p: 1 });
  return `scrypt$16$1$1$${salt.toString("base64url")}$${key.toString("base64url")}`;
}
export const CHEAP = cheapHash(PASSWORD);
