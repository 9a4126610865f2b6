/**
 * A TCP proxy on a free loopback port in front of a service on 127.0.0.1 (PostgreSQL, Redis), for tests of the
 * faults a real network has:
 * - `cut()` closes every connection and refuses new ones (the service gone);
 * - `reset()` sends a TCP RST on every open connection, new ones are forwarded (a restart, a middlebox dropping
 *   connections);
 * - `blackhole("both")` lets no byte through on any connection, old or new, until `restore()` — they stay open, and
 *   what was sent meanwhile arrives then, as TCP retransmits it after a partition heals (unless a peer gave up and
 *   closed); `blackhole("answers")` lets the client's bytes through and holds the service's answers (statements
 *   reach the database and commit, their answers are lost);
 * - `restore()` forwards again.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

/** Which way a blackhole holds bytes. */
export type Blackhole = "both" | "answers";

/** A proxy's controls. */
export interface FaultProxy {
  port: number;
  /** Connections opened through it so far. */
  readonly connections: number;
  cut(): void;
  reset(): void;
  blackhole(way?: Blackhole): void;
  restore(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | null;
  /** Bytes held each way while blackholed. */
  toUpstream: Buffer[];
  toClient: Buffer[];
}

/** Starts a fault proxy to `127.0.0.1:target`. */
export async function faultProxy(target: number): Promise<FaultProxy> {
  const pairs = new Set<Pair>();
  let refusing = false;
  let hole: Blackhole | null = null;
  let opened = 0;

  const connectUpstream = (pair: Pair) => {
    const upstream = connect(target, "127.0.0.1");
    pair.upstream = upstream;
    upstream.on("error", () => undefined).on("close", () => drop(pair));
    upstream.on("data", (d: Buffer) => {
      if (hole !== null) pair.toClient.push(d);
      else pair.client.write(d);
    });
    for (const d of pair.toUpstream.splice(0)) upstream.write(d);
  };
  const drop = (pair: Pair) => {
    pairs.delete(pair);
    pair.client.destroy();
    pair.upstream?.destroy();
  };

  const server: Server = createServer((client) => {
    opened++;
    client.on("error", () => undefined);
    if (refusing) return void client.destroy();
    const pair: Pair = { client, upstream: null, toUpstream: [], toClient: [] };
    pairs.add(pair);
    client.on("close", () => drop(pair));
    client.on("data", (d: Buffer) => {
      if (hole === "both" || !pair.upstream) pair.toUpstream.push(d);
      else pair.upstream.write(d);
    });
    // A connection opened in a blackhole seems to connect, and nothing comes back until it is restored.
    if (hole !== "both") connectUpstream(pair);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const each = (f: (p: Pair) => void) => {
    for (const p of [...pairs]) f(p);
  };
  return {
    port: (server.address() as { port: number }).port,
    get connections() {
      return opened;
    },
    cut() {
      refusing = true;
      each(drop);
    },
    reset() {
      each((p) => {
        pairs.delete(p);
        p.client.resetAndDestroy();
        p.upstream?.destroy();
      });
    },
    blackhole(way: Blackhole = "both") {
      hole = way;
    },
    restore() {
      refusing = false;
      hole = null;
      each((p) => {
        if (!p.upstream) return connectUpstream(p);
        for (const d of p.toUpstream.splice(0)) p.upstream.write(d);
        for (const d of p.toClient.splice(0)) p.client.write(d);
      });
    },
    async close() {
      refusing = true;
      each(drop);
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
