/**
 * Network faults for tests that need a dependency to go away: a TCP proxy on a free loopback port in front of a
 * service (PostgreSQL, Redis) that a test cuts (`down`: every connection closed, new ones refused), blackholes
 * (`blackhole`: connections accepted or kept, not a byte forwarded, as a host that dropped off the network) and
 * restores (`up`).
 */
import { connect, createServer, type Server, type Socket } from "node:net";

/** A TCP proxy to a loopback service, and its faults. */
export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  port: number;
  /** Cuts every connection and refuses new ones. */
  down(): void;
  /** Forwards nothing any more: open connections stay open but silent, new ones are accepted and left waiting. */
  blackhole(): void;
  /** Serves again; connections held by a blackhole are closed (their clients see them end, as after a reset). */
  up(): void;
  /** Stops listening and closes every connection. */
  close(): void;
}

/** A TCP proxy on a free loopback port to `127.0.0.1:target`. */
export async function tcpProxy(target: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let mode: "up" | "down" | "blackhole" = "up";
  const server: Server = createServer((client) => {
    if (mode === "down") return client.destroy();
    sockets.add(client);
    client.on("error", () => client.destroy()).on("close", () => sockets.delete(client));
    if (mode === "blackhole") return; // accepted, never answered
    const upstream = connect(target, "127.0.0.1");
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const cutAll = () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
  };
  return {
    port: (server.address() as { port: number }).port,
    down() {
      mode = "down";
      cutAll();
    },
    blackhole() {
      mode = "blackhole";
      for (const s of sockets) {
        s.unpipe();
        s.pause();
      }
    },
    up() {
      if (mode === "blackhole") cutAll();
      mode = "up";
    },
    close() {
      cutAll();
      server.close();
    },
  };
}
