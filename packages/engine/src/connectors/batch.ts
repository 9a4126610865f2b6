/**
 * Coalescing of id lookups (D124): calls that read objects by id within a few milliseconds of each other (the
 * targets of one request start together) share one upstream request of up to `max` ids — YouTube's `videos.list`
 * and `channels.list` take 50 for one unit. Each call still answers, and is charged, as a call of its own.
 */

/** What one member of a batch gets: the batch's result and its share of what the request cost (1/n). */
export interface BatchShare<R> {
  result: R;
  share: number;
}

/** Options of a {@link Batcher}. */
export interface BatcherOptions<R> {
  /** How long keys are collected before a request goes (ms). */
  windowMs: number;
  /** The most distinct keys of one request. */
  max: number;
  /** Makes one upstream request for `keys`, with the batch's signal and deadline. */
  run: (keys: string[], signal: AbortSignal, deadline: number | undefined) => Promise<R>;
}

interface Member<R> {
  key: string;
  signal: AbortSignal;
  deadline: number | undefined;
  resolve: (v: BatchShare<R>) => void;
  reject: (e: unknown) => void;
}

/**
 * Collects keys for `windowMs`, then runs one request per `max` distinct keys. The request's signal aborts only
 * when every member's has (one caller that gives up does not cancel the others'); its deadline is the latest.
 */
export class Batcher<R> {
  private pending: Member<R>[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private readonly o: BatcherOptions<R>;

  /** A batcher that runs `o.run` once per window and per `o.max` keys. */
  constructor(o: BatcherOptions<R>) {
    this.o = o;
  }

  /** Adds `key` to the next batch; resolves to that batch's result and this member's share. */
  load(key: string, signal: AbortSignal, deadline?: number): Promise<BatchShare<R>> {
    return new Promise((resolve, reject) => {
      this.pending.push({ key, signal, deadline, resolve, reject });
      this.timer ??= setTimeout(() => this.flush(), this.o.windowMs);
    });
  }

  private flush(): void {
    this.timer = null;
    const members = this.pending;
    this.pending = [];
    const groups: Member<R>[][] = [];
    let keys = new Set<string>();
    for (const m of members) {
      if (!keys.has(m.key) && keys.size >= this.o.max) {
        keys = new Set();
      }
      if (keys.size === 0) groups.push([]);
      keys.add(m.key);
      groups.at(-1)!.push(m);
    }
    for (const group of groups) void this.runGroup(group);
  }

  private async runGroup(group: Member<R>[]): Promise<void> {
    const controller = new AbortController();
    let live = group.length;
    const listening: (() => void)[] = [];
    for (const m of group) {
      const onAbort = () => {
        live -= 1;
        if (live === 0) controller.abort(m.signal.reason);
      };
      if (m.signal.aborted) onAbort();
      else {
        m.signal.addEventListener("abort", onAbort, { once: true });
        listening.push(() => m.signal.removeEventListener("abort", onAbort));
      }
    }
    const deadlines = group.map((m) => m.deadline);
    const deadline = deadlines.includes(undefined) ? undefined : Math.max(...(deadlines as number[]));
    const keys = [...new Set(group.map((m) => m.key))];
    try {
      const result = await this.o.run(keys, controller.signal, deadline);
      for (const m of group) m.resolve({ result, share: 1 / group.length });
    } catch (e) {
      for (const m of group) m.reject(e);
    } finally {
      for (const stop of listening) stop();
    }
  }
}
