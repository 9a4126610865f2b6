/**
 * The service's own state, kept in the database's `meta` table so that every process on the file sees it: whether
 * charged calls are paused (D60). `sdgw-admin pause` / `unpause` set it; the HTTP layer reads it before a call.
 */
import type { Pause } from "../service.ts";
import { isoSeconds, type Store } from "./store.ts";

/** Reads and sets the service state; reads are cached and dropped when another connection commits. */
export class ServiceState {
  private readonly store: Store;
  private readonly now: () => number;
  private cached: Pause | null | undefined;

  constructor(store: Store, now: () => number) {
    this.store = store;
    this.now = now;
    store.onReset(() => {
      this.cached = undefined;
    });
  }

  /** The pause in force, or null. */
  paused(): Pause | null {
    this.store.sync();
    if (this.cached === undefined) {
      const row = this.store.get<{ value: string }>("SELECT value FROM meta WHERE name = 'paused'");
      this.cached = row ? (JSON.parse(row.value) as Pause) : null;
    }
    return this.cached;
  }

  /** Pauses every charged call from now on (runs already started finish). */
  pause(message: string): Pause {
    const pause: Pause = { message, since: isoSeconds(this.now()) };
    this.store.run(
      "INSERT INTO meta (name, value) VALUES ('paused', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
      JSON.stringify(pause),
    );
    this.cached = undefined;
    return pause;
  }

  /** Ends the pause; answers whether there was one. */
  unpause(): boolean {
    const changed = this.store.run("DELETE FROM meta WHERE name = 'paused'") === 1;
    this.cached = undefined;
    return changed;
  }
}
