/**
 * The WAL checkpointer thread of a store (see `Store.startCheckpointer`): its own connection, a passive checkpoint
 * every `everyMs` (it never waits for the server's transactions), and a report to the server when the WAL stays
 * longer than `limit` frames. Stops on any message ("close").
 */

/** What the thread gets as its `workerData`. */
export interface CheckpointerData {
  path: string;
  everyMs: number;
  limit: number;
}

/** What the thread reports: the WAL stayed longer than `limit` frames. */
export type CheckpointerReport = "wal";

/**
 * The thread's code. It refers to nothing outside itself but its arguments and the globals: it runs from its source
 * text (`CHECKPOINTER_SOURCE`), so no bundler may rename or rewrite what it uses (hence the modules as arguments,
 * not `require` calls, which a bundler rewrites to a helper of its own, and no named inner functions).
 */
export function checkpointer(
  sqlite: typeof import("node:sqlite"),
  threads: typeof import("node:worker_threads"),
): void {
  const port = threads.parentPort;
  if (!port) return;
  const data: CheckpointerData = threads.workerData;
  const db = new sqlite.DatabaseSync(data.path);
  db.exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0");
  const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  const report: CheckpointerReport = "wal";
  const timer = setInterval(() => {
    try {
      const log = checkpoint.get()?.["log"];
      if (typeof log === "number" && log > data.limit) port.postMessage(report);
    } catch {
      // busy or closing: the next round
    }
  }, data.everyMs);
  port.on("message", () => {
    clearInterval(timer);
    db.close();
    port.close();
  });
}

// The worker runs `checkpointer`'s source text as eval'd CommonJS, not a file: the sources (types stripped) and both
// builds (ESM, CJS; any chunk layout) then start the same typed code, with no worker file to locate beside them.
/** The worker's code, `checkpointer` called with its modules: `new Worker(CHECKPOINTER_SOURCE, { eval: true })`. */
export const CHECKPOINTER_SOURCE = `(${checkpointer.toString()})(require("node:sqlite"), require("node:worker_threads"));\n`;
