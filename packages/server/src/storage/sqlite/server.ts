/** The server: a gateway (storage and systems) and its Fastify app, with start and stop. */
import type { FastifyInstance } from "fastify";
import type { GatewayOptions } from "../../config.ts";
import type { Lifecycle } from "../../ops/http.ts";
import type { Scheduler } from "../../scheduler.ts";
import { serve } from "../../serve.ts";
import { createGateway, type Gateway } from "./gateway.ts";

/** A reference server, built and not yet listening. */
export interface SdgwServer {
  app: FastifyInstance;
  gateway: Gateway;
  /** Runs schedules as they fall due (ticking from `listen` on, every `scheduleTickMs`). */
  scheduler: Scheduler;
  /** Listens on `host:port` (default 127.0.0.1:8787); resolves to the base URL. */
  listen(options?: { host?: string; port?: number }): Promise<string>;
  /** D113: where it listens and whether its stop began (`readyz` answers 503 from the first moment of `close`). */
  lifecycle: Lifecycle;
  /**
   * Stops (D113): at once `readyz` answers 503, new connections are refused and a request that still arrives on an
   * open one is answered `503 temporarily_unavailable`; then waits up to `drainMs` (default 2000; `pnpm start`:
   * `SDGW_SHUTDOWN_GRACE_MS`) for runs in flight, cuts the connections still open, ends this process's lease (a
   * run still in flight is ended broken, uncharged, by the next process on the file) and closes the store (and
   * the connection to Redis of the limits, D107).
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

/**
 * Builds a server over a new gateway: `createServer({ dbPath: ":memory:", waitMs: 50 })`.
 *
 * @example
 * ```ts
 * import { createServer } from "@sdgw/server";
 *
 * const server = createServer({ dbPath: "./data/sdgw.sqlite" });
 * const { account } = server.gateway.accounts.createAccount({ name: "Acme", plan: "paid" });
 * server.gateway.accounts.grant(account.id, 1000);
 * const { secret } = server.gateway.accounts.createKey({ accountId: account.id });
 * console.log(await server.listen({ port: 8787 }), secret); // http://127.0.0.1:8787 sdgw_…
 * ```
 */
export function createServer(options: GatewayOptions = {}): SdgwServer {
  const gateway = createGateway(options);
  const served = serve(gateway, {
    sweep: () => gateway.runs.sweep(),
    drain: () => gateway.runs.drain(),
    async release() {
      gateway.runs.close();
      try {
        await gateway.store.close();
      } finally {
        await gateway.limits.close();
      }
    },
  });
  return { ...served, gateway };
}
