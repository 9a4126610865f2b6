/**
 * A gate in front of the simulator's platforms, shared by the MCP tests that must know a run is still going (progress,
 * tasks): a platform call waits at the gate until a test opens it.
 */
import { Simulator, type PlatformProvider } from "@sdgw/engine";
import type { Platform } from "@sdgw/types";

/** A counting gate: `wait` resolves when a permit is given (now, or when `open` gives one). */
export class Gate {
  private permits = 0;
  private readonly waiting: Array<() => void> = [];
  /** Calls waiting at the gate. */
  get waiters(): number {
    return this.waiting.length;
  }
  wait(): Promise<void> {
    if (this.permits > 0) {
      this.permits--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  /** Takes back the permits not used yet. */
  reset(): void {
    this.permits = 0;
  }
  open(n = 1): void {
    for (let i = 0; i < n; i++) {
      const next = this.waiting.shift();
      if (next) next();
      else this.permits++;
    }
  }
}

/** The simulator's providers, each call waiting at `gate` first. */
export function gated(gate: Gate): Record<Platform, PlatformProvider> {
  const sim = new Simulator({ knobs: { "*": { latencyMs: 0 } } });
  return Object.fromEntries(
    Object.entries(sim.providers).map(([platform, provider]) => [
      platform,
      new Proxy(provider, {
        get(target, prop) {
          if (prop === "call")
            return async (request: Parameters<PlatformProvider["call"]>[0]) => {
              await gate.wait();
              return target.call(request);
            };
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === "function" ? value.bind(target) : value;
        },
      }),
    ]),
  ) as Record<Platform, PlatformProvider>;
}
