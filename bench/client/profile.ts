/**
 * Reads the `.cpuprofile` that `node --cpu-prof` wrote for one worker (profile mode) and turns it into µs per call,
 * for the samples of the timed windows only (the worker reports them in hrtime µs, the clock of the profile's
 * timestamps). Used by run.ts when the target is missed (or with --profile).
 *
 * Three views, each raw fetch against the SDK:
 *   - self time by where the code lives (openapi-fetch, @sdgw/client, undici = Node's fetch, other node internals,
 *     V8 builtins such as JSON.parse, GC, …);
 *   - call-outs: synchronous time spent below the frames of the caller's code (the bench's raw `call`, openapi-fetch,
 *     @sdgw/client), by the first callee outside them, e.g. "openapi-fetch coreFetch → undici _Request";
 *   - the functions whose self time grew the most per call from raw fetch to the SDK.
 */
import { readFileSync } from "node:fs";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export type Category =
  | "openapi-fetch"
  | "@sdgw/client"
  | "bench harness"
  | "undici (fetch, Request, Headers)"
  | "node internals"
  | "native (JSON.parse, socket write, …)"
  | "(garbage collector)"
  | "(program)"
  | "(idle)"
  | "other";

/** The code the caller owns: time below these frames is the call's synchronous cost. */
const CALLER: readonly Category[] = ["openapi-fetch", "@sdgw/client", "bench harness"];

export function categoryOf(frame: CallFrame): Category {
  const { url, functionName } = frame;
  if (url.includes("/openapi-fetch/")) return "openapi-fetch";
  if (url.includes("/packages/client/")) return "@sdgw/client";
  if (url.includes("/bench/client/")) return "bench harness";
  if (url.startsWith("node:internal/deps/undici")) return "undici (fetch, Request, Headers)";
  if (url.startsWith("node:")) return "node internals";
  if (url === "") {
    if (functionName === "(garbage collector)" || functionName === "(program)" || functionName === "(idle)")
      return functionName;
    if (functionName === "(root)") return "other";
    return "native (JSON.parse, socket write, …)";
  }
  return "other";
}

const shortUrl = (url: string) =>
  url
    .replace(/^.*\/node_modules\//, "")
    .replace(/^.*\/(packages|bench)\//, "$1/")
    .replace(/^node:internal\/deps\//, "");
export const frameName = (f: CallFrame) =>
  `${f.functionName || "(anonymous)"} ${f.url ? `${shortUrl(f.url)}:${f.lineNumber + 1}` : "(native)"}`;

export interface ProfileSummary {
  calls: number;
  /** µs per call of the window's samples, all code. */
  totalUs: number;
  byCategory: Map<Category, number>;
  /** µs per call of self time by function (`frameName`), with its category. */
  byFunction: Map<string, { us: number; category: Category }>;
  /** µs per call below caller frames, by "caller → first callee outside the caller's code". */
  callOuts: Map<string, number>;
  /** µs per call below caller frames, in all (synchronous). */
  callerUs: number;
  samples: number;
}

/** Summarizes the samples inside the windows (hrtime µs) in µs per call (the windows' calls). */
export function summarizeProfile(
  path: string,
  windows: Array<{ fromUs: number; toUs: number; calls: number }>,
): ProfileSummary {
  const calls = windows.reduce((n, w) => n + w.calls, 0);
  const p = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const byId = new Map<number, ProfileNode>(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Windows outside the profile (a different clock after all) would keep no sample: refuse rather than mislead.
  if (!windows.every((w) => w.fromUs >= p.startTime && w.toUs <= p.endTime + 1000))
    throw new Error(`${path}: the windows are not within the profile's time`);
  const ws = [...windows].sort((x, y) => x.fromUs - y.fromUs);
  let wi = 0;
  const self = new Map<number, number>();
  let t = p.startTime;
  let kept = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    const next = i + 1 < p.samples.length ? t + p.timeDeltas[i + 1]! : p.endTime;
    while (wi < ws.length && t >= ws[wi]!.toUs) wi++;
    if (wi >= ws.length || t < ws[wi]!.fromUs) continue;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + Math.max(0, next - t));
    kept++;
  }
  const per = (us: number) => us / calls;
  const byCategory = new Map<Category, number>();
  const byFunction = new Map<string, { us: number; category: Category }>();
  const callOuts = new Map<string, number>();
  let totalUs = 0;
  let callerUs = 0;
  for (const [id, us] of self) {
    const node = byId.get(id)!;
    const category = categoryOf(node.callFrame);
    totalUs += us;
    byCategory.set(category, (byCategory.get(category) ?? 0) + us);
    const name = frameName(node.callFrame);
    const f = byFunction.get(name) ?? { us: 0, category };
    f.us += us;
    byFunction.set(name, f);
    // Walk up: the first frame of caller code above this one, and the frame just below it (the callee).
    let child = id;
    let up = parent.get(id);
    if (CALLER.includes(category)) {
      callerUs += us;
      continue;
    }
    while (up !== undefined && !CALLER.includes(categoryOf(byId.get(up)!.callFrame))) {
      child = up;
      up = parent.get(up);
    }
    if (up === undefined) continue;
    callerUs += us;
    const callerFrame = byId.get(up)!.callFrame;
    const key = `${categoryOf(callerFrame)} ${callerFrame.functionName || "(anonymous)"} → ${frameName(byId.get(child)!.callFrame)}`;
    callOuts.set(key, (callOuts.get(key) ?? 0) + us);
  }
  const scale = <K, V>(m: Map<K, V>, f: (v: V) => V) => new Map([...m].map(([k, v]) => [k, f(v)]));
  return {
    calls,
    totalUs: per(totalUs),
    byCategory: scale(byCategory, per),
    byFunction: scale(byFunction, (v) => ({ ...v, us: per(v.us) })),
    callOuts: scale(callOuts, per),
    callerUs: per(callerUs),
    samples: kept,
  };
}

const CATEGORIES: readonly Category[] = [
  "bench harness",
  "@sdgw/client",
  "openapi-fetch",
  "undici (fetch, Request, Headers)",
  "node internals",
  "native (JSON.parse, socket write, …)",
  "(garbage collector)",
  "(program)",
  "other",
  "(idle)",
];

/** The printed lines comparing the raw fetch profile with the SDK's. */
export function profileLines(raw: ProfileSummary, sdk: ProfileSummary): string[] {
  const lines: string[] = [];
  const out = (s: string) => lines.push(s);
  const f = (x: number) => x.toFixed(1);
  const pad = (s: string, w: number) => s + " ".repeat(Math.max(0, w - [...s].length));
  const lpad = (s: string, w: number) => " ".repeat(Math.max(0, w - [...s].length)) + s;
  const busy = (s: ProfileSummary) => s.totalUs - (s.byCategory.get("(idle)") ?? 0);
  out(
    `  CPU busy per call (all but idle): raw ${f(busy(raw))} µs, SDK ${f(busy(sdk))} µs, ` +
      `+${f(busy(sdk) - busy(raw))} µs (${raw.calls} and ${sdk.calls} calls, ${raw.samples} ` +
      `and ${sdk.samples} samples)`,
  );
  out(`  self time by code, µs per call          ${lpad("raw", 8)} ${lpad("SDK", 8)} ${lpad("SDK-raw", 8)}`);
  for (const c of CATEGORIES) {
    const a = raw.byCategory.get(c) ?? 0;
    const b = sdk.byCategory.get(c) ?? 0;
    if (a < 0.05 && b < 0.05) continue;
    out(`    ${pad(c, 37)} ${lpad(f(a), 8)} ${lpad(f(b), 8)} ${lpad((b - a >= 0 ? "+" : "") + f(b - a), 8)}`);
  }
  out(
    `  synchronous time below the caller's code (raw: the bench's call; SDK: @sdgw/client + openapi-fetch), µs per call:`,
  );
  out(
    `    raw ${f(raw.callerUs)}, SDK ${f(sdk.callerUs)}; the largest parts (own code = self time of the caller's frames):`,
  );
  const ownOf = (s: ProfileSummary) =>
    CALLER.map((c) => [`${c} (own code)`, s.byCategory.get(c) ?? 0] as const).filter(([, us]) => us >= 0.05);
  for (const [label, s] of [
    ["raw", raw],
    ["SDK", sdk],
  ] as const) {
    const parts = [...s.callOuts, ...ownOf(s)].sort((x, y) => y[1] - x[1]).slice(0, label === "raw" ? 5 : 9);
    for (const [k, us] of parts) out(`    ${pad(label, 4)} ${lpad(f(us), 6)}  ${k}`);
  }
  out(`  functions whose self time grew the most (µs per call, SDK - raw):`);
  const names = new Set([...raw.byFunction.keys(), ...sdk.byFunction.keys()]);
  const grew = [...names]
    .map((n) => ({
      n,
      d: (sdk.byFunction.get(n)?.us ?? 0) - (raw.byFunction.get(n)?.us ?? 0),
      c: (sdk.byFunction.get(n) ?? raw.byFunction.get(n))!.category,
    }))
    .filter((x) => x.c !== "(idle)")
    .sort((x, y) => y.d - x.d)
    .slice(0, 12);
  for (const g of grew) out(`    ${lpad((g.d >= 0 ? "+" : "") + f(g.d), 6)}  ${g.n}  [${g.c}]`);
  return lines;
}
