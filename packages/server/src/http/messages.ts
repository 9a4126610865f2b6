/**
 * The long sentences of the HTTP layer's answers (`message`, `fix.note`, warnings), by name; a function where the
 * sentence takes values. The wording is part of the contract's examples and of the tests: change it here only.
 */
export const MESSAGES = {
  /** D57: one connection over the cap of an address. */
  tooManyConnections: (cap: number) =>
    `This address holds ${cap} open connections, the most one address may; close some or reuse them (keep-alive).`,
  headersTooLargeNote: "Send less: a cursor of up to 20,000 characters fits in the URL; long lists go in a POST body.",
  notHttp: "The request is not valid HTTP/1.1 (its request line or a header could not be read).",
  failedCallsNote: "Check the parameters of the failing calls; GET /v1/capabilities lists what each op takes.",
  workspaceConcurrency: (most: number) => `Too many calls running at once in this workspace (at most ${most}).`,
  addressRate: (perMinute: number) =>
    `Too many requests from this network address (at most ${perMinute} a minute on routes without a key).`,
  /** D74: the account's cap on calls started per UTC day. */
  dailyCap: (started: number, cap: number, resets: string) =>
    `This account has started ${started} of its ${cap} calls of today (its daily cap) and this request makes more; ` +
    `calls are accepted again at ${resets}. Nothing ran and nothing was charged.`,
  dailyCapNote:
    "Send the same call again after resets_at, with the same Idempotency-Key; support can raise the account's cap.",
  dailyLimit: (o: { of: "key" | "account"; spent: number; limit: number; quote: number; resets: string }) =>
    `This ${o.of} has spent ${o.spent} of its daily limit of ${o.limit} credits and this call would cost ${o.quote}; ` +
    `it restarts at ${o.resets}.`,
  dailyLimitNote: (of: "key" | "account") =>
    of === "key"
      ? "The account owner can raise or switch off the key's daily limit."
      : "The owner can raise or switch off the account's daily limit.",
  answerLost:
    "The first answer under this Idempotency-Key was charged but its stored copy is lost (a system crash); " +
    "nothing is charged for this request. Use a new key to call again.",
  pausedNote: "Send the same call again later, with the same Idempotency-Key; the status page says when calls resume.",
  maxCostExceeded: (credits: number, maxCost: number, more: string) =>
    `This call's quote is ${credits} credits, over max_cost_credits ${maxCost}; nothing ran.${more}`,
  /** D73: a tool's scale=large, named by `confirm` or by `scale`. */
  largeScaleConfirmNote:
    "Send confirm: false to see the plan and price of scale=large, or scale small or standard to run now.",
  largeScaleNote:
    "Send scale small or standard to run now, or confirm: false to see the plan and price of scale=large.",
  batchesNeedPurchase: "Batches open after the first purchase (D58). Nothing ran and nothing was charged.",
  batchesNeedPurchaseNote: "Buy credits to open batches; confirm: false shows the plan and price now.",
  schedulesNeedPurchase:
    "Schedules open after the first purchase; this call without `schedule` runs now. " +
    "Nothing ran and nothing was charged.",
  scheduleCreated: (s: { id: string; every: string; next_run_at: string }) =>
    `Schedule ${s.id} created: this account_watch call runs again every ${s.every} under this key, charged like this ` +
    `call (next at ${s.next_run_at}); GET /v1/schedules lists it, DELETE /v1/schedules/${s.id} stops it.`,
} as const;
