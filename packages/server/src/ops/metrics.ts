/**
 * D113: what `GET /metrics` shows, in the Prometheus text format (prom-client). Each gateway holds one
 * {@link Metrics} with its own registry (never prom-client's global one, so two servers in one process do not
 * collide); the process's own metrics (CPU, memory, event loop, GC: `collectDefaultMetrics`) are one registry per
 * process, made at the first scrape and shown by every server of it. Labels are bounded: a route is its template
 * (`/v1/results/:handle`, never the URL asked), a status its number; nothing is labelled by key, account or address.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";

/** The clients of a PostgreSQL pool now: open, idle, and requests waiting for one. */
export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

/** Who may read `GET /metrics` (`SDGW_METRICS`). */
export type MetricsAccess = "off" | "loopback" | "on";

/** The values `SDGW_METRICS` takes. */
export const METRICS_ACCESS: readonly MetricsAccess[] = ["off", "loopback", "on"];

/** Options of {@link Metrics}: who may read `/metrics`. */
export interface MetricsOptions {
  /**
   * `loopback` (default): served while the server listens on a loopback address only (127.0.0.0/8, ::1,
   * `localhost`), else answered as an unknown path; `on`: served whatever the address; `off`: never.
   * With a `token`, `loopback` serves on any address too, to a request that carries the token.
   */
  access?: MetricsAccess;
  /** A bearer token (`SDGW_METRICS_TOKEN`): `/metrics` then answers only `Authorization: Bearer <token>`. */
  token?: string | null;
}

/** What is read at scrape time: runs in flight here, and (PostgreSQL) the pool's clients. */
export interface MetricsSources {
  /** Runs in flight on this instance now (`sdgw_runs_in_flight`). */
  inFlight?: () => number;
  /** The PostgreSQL pool's clients now (`sdgw_pg_pool_clients`); absent on the embedded store. */
  pool?: () => PoolStats;
}

/** Buckets of the latency histogram, in seconds: from a cached answer to a call that waited its 40 s. */
const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The answers of one `method route status`. */
interface Answers {
  labels: Record<string, string>;
  count: number;
  timing: Timing;
}

/** The latencies of one `method route`: a count per bucket (the last one: above every bound), their sum and count. */
interface Timing {
  labels: Record<string, string>;
  buckets: number[];
  sum: number;
  count: number;
}

/** A sample as prom-client's registry writes it. */
interface Value {
  labels: Record<string, string>;
  value: number;
  metricName?: string;
}

/** A metric whose values are read from plain numbers when scraped, for prom-client's registry. */
function scraped(name: string, help: string, type: "counter" | "histogram", values: () => Value[]) {
  const get = async () => ({ name, help, type, aggregator: "sum" as const, values: values() });
  return { name, help, type, aggregator: "sum", get, reset: () => undefined } as never;
}

/** A latency histogram's samples: cumulative buckets, `+Inf`, sum and count. */
function histogramValues(t: Timing): Value[] {
  const out: Value[] = [];
  let cumulative = 0;
  for (let i = 0; i <= BUCKETS.length; i++) {
    cumulative += t.buckets[i]!;
    const le = i < BUCKETS.length ? String(BUCKETS[i]) : "+Inf";
    out.push({ labels: { ...t.labels, le }, value: cumulative, metricName: `${NAME_DURATION}_bucket` });
  }
  out.push({ labels: t.labels, value: t.sum, metricName: `${NAME_DURATION}_sum` });
  out.push({ labels: t.labels, value: t.count, metricName: `${NAME_DURATION}_count` });
  return out;
}

const NAME_DURATION = "sdgw_http_request_duration_seconds";

let processRegistry: Registry | null = null;

/** The process's own metrics, one registry for the process (collectors are set up once, never per server). */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * The counters and gauges of one gateway. The HTTP layer counts each answer (`request`); the runs count what they
 * charge (`charged`); the limits count Redis errors (`redisError`); the PostgreSQL pool its errors (`poolError`).
 * Gauges are read when scraped (`watch`).
 */
export class Metrics {
  /** Who may read `/metrics`. */
  readonly access: MetricsAccess;
  /** The bearer token `/metrics` asks for, or null. */
  readonly token: string | null;
  private readonly registry = new Registry();
  /** Answers by `method route status`, each with the latency histogram of its `method route`. */
  private readonly answers = new Map<string, Answers>();
  private readonly timings = new Map<string, Timing>();
  private readonly credits: Counter;
  private readonly poolErrors: Counter;
  private readonly redisErrors: Counter;
  private sources: MetricsSources = {};
  constructor(options: MetricsOptions = {}) {
    this.access = options.access ?? "loopback";
    this.token = options.token ?? null;
    const registers = [this.registry];
    // The counts of every request are plain numbers, read by prom-client when scraped (a label set hashed on every
    // request cost several µs: bench/server/ops.ts).
    const answers = this.answers;
    const timings = this.timings;
    this.registry.registerMetric(
      scraped(
        "sdgw_http_requests_total",
        "HTTP requests answered, by method, route template and status.",
        "counter",
        () => [...answers.values()].map((a) => ({ labels: a.labels, value: a.count })),
      ),
    );
    this.registry.registerMetric(
      scraped(
        "sdgw_http_request_duration_seconds",
        "Time from a request's arrival to its answer sent, in seconds, by method and route template.",
        "histogram",
        () => [...timings.values()].flatMap(histogramValues),
      ),
    );
    this.credits = new Counter({
      name: "sdgw_charged_credits_total",
      help: "Credits charged by the runs that ended on this instance.",
      registers,
    });
    this.poolErrors = new Counter({
      name: "sdgw_pg_pool_errors_total",
      help: "Errors of the PostgreSQL pool's connections (a connection lost while idle, a failed connect).",
      registers,
    });
    this.redisErrors = new Counter({
      name: "sdgw_redis_errors_total",
      help: "Errors of the connection to the limits' Redis and of its commands.",
      registers,
    });
    const sources = () => this.sources;
    new Gauge({
      name: "sdgw_runs_in_flight",
      help: "Runs in flight on this instance now (within their request or after their 202).",
      registers,
      collect() {
        this.set(sources().inFlight?.() ?? 0);
      },
    });
    new Gauge({
      name: "sdgw_pg_pool_clients",
      help: "Clients of this instance's PostgreSQL pool now, by state: total (open), idle, waiting (requests queued for one).",
      labelNames: ["state"] as const,
      registers,
      collect() {
        const pool = sources().pool?.();
        if (!pool) return;
        this.set({ state: "total" }, pool.total);
        this.set({ state: "idle" }, pool.idle);
        this.set({ state: "waiting" }, pool.waiting);
      },
    });
  }

  /** Counts one answer: its method, its route's template (never the URL asked), its status and its time. */
  request(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`;
    const a = this.answers.get(key) ?? this.answersOf(key, method, route, status);
    a.count++;
    const t = a.timing;
    t.count++;
    t.sum += seconds;
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    t.buckets[i]!++;
  }

  private answersOf(key: string, method: string, route: string, status: number): Answers {
    const timingKey = `${method} ${route}`;
    let timing = this.timings.get(timingKey);
    if (!timing) {
      timing = { labels: { method, route }, buckets: new Array<number>(BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
      this.timings.set(timingKey, timing);
    }
    const a = { labels: { method, route, status: String(status) }, count: 0, timing };
    this.answers.set(key, a);
    return a;
  }

  /** Counts credits charged by a run's end (0 is counted as nothing). */
  charged(credits: number): void {
    if (credits > 0) this.credits.inc(credits);
  }

  /** Counts an error of the PostgreSQL pool. */
  poolError(): void {
    this.poolErrors.inc();
  }

  /** Counts an error of Redis (the connection or a command). */
  redisError(): void {
    this.redisErrors.inc();
  }

  /** Sets what the gauges read at scrape time (merged with what was set before). */
  watch(sources: MetricsSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** The exposition: this gateway's metrics and the process's. */
  text(): Promise<string> {
    return Registry.merge([processMetrics(), this.registry]).metrics();
  }

  /** The content type of {@link Metrics.text} (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }
}
