/**
 * Progress of the runs in flight in this process, by handle (D141): a run that answered 202 reports how far it is
 * (its cells ended of its cells planned for a data call, its waves ended of its waves planned for a tool run) each
 * time that moves, and once more when its end is committed (a read of its handle then answers the finished result).
 * The MCP server listens to send `notifications/progress` and to answer as soon as the run ends.
 */

/** How far a run is. */
export interface RunProgress {
  /** Cells (data call) or waves (tool run) ended. */
  done: number;
  /** Cells or waves planned. */
  total: number;
  /** True once the run's end is committed: reading its handle answers its finished result (or its error). */
  ended: boolean;
  /** What `done` and `total` count. */
  unit: "cells" | "waves";
}

/** Called with a run's progress: at once when it starts listening, then on every change, last with `ended`. */
export type RunListener = (progress: RunProgress) => void;

/** The progress of this process's runs with a handle, and who listens to it. */
export class RunWatchers {
  private readonly runs = new Map<string, { last: RunProgress; listeners: Set<RunListener> }>();

  /** Records a run's progress under its handle and tells its listeners; an ended run is forgotten after that. */
  update(handle: string, progress: RunProgress): void {
    let entry = this.runs.get(handle);
    if (!entry) {
      if (progress.ended) return;
      entry = { last: progress, listeners: new Set() };
      this.runs.set(handle, entry);
    }
    entry.last = progress;
    for (const listener of [...entry.listeners]) {
      try {
        listener(progress);
      } catch {
        // A listener's failure is its own; the run and the other listeners go on.
      }
    }
    if (progress.ended) this.runs.delete(handle);
  }

  /**
   * Listens to the run under `handle`: `listener` gets its progress at once, then each change, last with `ended`.
   * Returns the function that stops listening, or null when no run of this process is in flight under `handle`
   * (it ended, or another process runs it).
   */
  watch(handle: string, listener: RunListener): (() => void) | null {
    const entry = this.runs.get(handle);
    if (!entry) return null;
    entry.listeners.add(listener);
    listener(entry.last);
    return () => void entry.listeners.delete(listener);
  }
}
