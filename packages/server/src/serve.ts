/**
 * What the embedded and the PostgreSQL server share: the Fastify app over a gateway, the scheduler, the sweep of
 * old answers every ten minutes, listening, and the order of a stop (D113). Each server gives only what differs:
 * how its store sweeps, drains its runs and closes.
 */
import type { FastifyInstance } from "fastify";
import { buildApp } from "./http/server.ts";
import { Lifecycle } from "./ops/http.ts";
import { beginStop, closeApp, until } from "./ops/stop.ts";
import { Scheduler } from "./scheduler.ts";
import type { GatewayPorts } from "./storage/port.ts";

/** How often old answers are swept. */
const SWEEP_EVERY_MS = 10 * 60_000;

/** What a store adds to {@link serve}. */
export interface StoreLifecycle {
  /** Deletes answers past their keeping (every ten minutes); a failure is logged, never thrown. */
  sweep(): void | Promise<void>;
  /** Resolves once this process's runs in flight have ended. */
  drain(): Promise<void>;
  /** Ends this process's lease and closes the store and its connections (after the app closed). */
  release(): Promise<void>;
}

/** A served gateway, built and not yet listening. */
export interface Served {
  app: FastifyInstance;
  scheduler: Scheduler;
  lifecycle: Lifecycle;
  listen(options?: { host?: string; port?: number }): Promise<string>;
  close(options?: { drainMs?: number }): Promise<void>;
}

/** Builds the app, scheduler and sweeper over `gateway`, with `listen` and `close` in the order of D113. */
export function serve(gateway: GatewayPorts, store: StoreLifecycle): Served {
  const lifecycle = new Lifecycle();
  const app = buildApp(gateway, lifecycle);
  const scheduler = new Scheduler(gateway);
  const sweeper = setInterval(() => {
    void (async () => store.sweep())().catch((e: unknown) => gateway.log("sweep of old answers failed", e));
  }, SWEEP_EVERY_MS);
  sweeper.unref();
  return {
    app,
    scheduler,
    lifecycle,
    async listen({ host = "127.0.0.1", port = 8787 } = {}) {
      await app.listen({ host, port });
      lifecycle.host = host;
      if (gateway.config.scheduleTickMs > 0) {
        scheduler.start(gateway.config.scheduleTickMs);
        void scheduler.tick().catch((e: unknown) => gateway.log("scheduler tick failed", e));
      }
      const address = app.server.address();
      const bound = typeof address === "object" && address ? address.port : port;
      return `http://${host}:${bound}`;
    },
    async close({ drainMs = 2000 } = {}) {
      const deadline = Date.now() + drainMs;
      beginStop(app, lifecycle);
      clearInterval(sweeper);
      await scheduler.stop();
      await until(store.drain(), deadline);
      await closeApp(app, deadline);
      await store.release();
    },
  };
}
