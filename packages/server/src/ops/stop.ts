/**
 * D113: how a server stops. At its first moment `readyz` answers 503 and the listening socket closes (new
 * connections are refused, so a load balancer sends them elsewhere); connections already open stay, so a request
 * that still arrives on one is answered `503 temporarily_unavailable` in the contract's words (`Connection: close`)
 * instead of finding its connection reset. Runs in flight get until the deadline to end; then the app closes, the
 * connections still open are cut, and the caller closes its storage.
 */
import { Server as NetServer } from "node:net";
import type { FastifyInstance } from "fastify";
import type { Lifecycle } from "./http.ts";

/** The default of `SDGW_SHUTDOWN_GRACE_MS`: below Kubernetes' default `terminationGracePeriodSeconds` (30 s). */
export const DEFAULT_SHUTDOWN_GRACE_MS = 25_000;

/** The first moment of a stop: readiness fails, new requests are refused, the listening socket closes. */
export function beginStop(app: FastifyInstance, lifecycle: Lifecycle): void {
  if (lifecycle.stopping) return;
  lifecycle.stopping = true;
  // net.Server's own close: it stops accepting without closing the idle keep-alive connections (http.Server's
  // close would), so a request that still comes on one gets the contract's 503 rather than a reset.
  if (app.server.listening) NetServer.prototype.close.call(app.server);
}

/** Resolves when `work` has ended or at `deadline` (ms since the epoch), whichever comes first. */
export async function until(work: Promise<unknown>, deadline: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((r) => {
    timer = setTimeout(r, Math.max(0, deadline - Date.now()));
  });
  await Promise.race([
    work.then(
      () => undefined,
      () => undefined,
    ),
    late,
  ]);
  clearTimeout(timer);
}

/**
 * Closes the app: waits until `deadline` for the requests in flight (each answer closes its connection), then cuts
 * what is still open.
 */
export async function closeApp(app: FastifyInstance, deadline: number): Promise<void> {
  const closed = app.close();
  await until(closed, deadline);
  app.server.closeAllConnections();
  await closed;
}
