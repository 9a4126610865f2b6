/**
 * The mock and the reference server, side by side: the same few hundred generated requests (fast-check: every
 * operation, valid and with one thing wrong) go to @sdgw/mock over HTTP and to @sdgw/server, and each pair of
 * answers must say the same thing — the HTTP status; for a refusal its code, reason and the parameter it names; for
 * an answer its status, its cost and its shape. Ids and timestamps are left out.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "@sdgw/server";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { SAMPLES, type Req } from "../../mock/test/helpers.ts";
import { startMockHttp } from "./mock-http.ts";

const dir = mkdtempSync(join(tmpdir(), "sdgw-differential-"));
// Limits far above what the test sends: a refusal by rate is not what is compared (the mock has scenarios for it).
const limits = { keyQps: 100_000, workspaceConcurrency: 100_000, addressPerMinute: 100_000, failureThreshold: 100_000 };
const server = createServer({ dbPath: join(dir, "sdgw.sqlite"), log: () => undefined, simulator: {}, limits });
const { accounts } = server.gateway;
const paid = accounts.createAccount({ name: "Differential", plan: "paid" }).account;
accounts.grant(paid.id, 1_000_000);
const KEY = accounts.createKey({ accountId: paid.id, name: "main" }).secret;
const NOSCOPE = accounts.createKey({ accountId: paid.id, name: "no read_data", permissions: [] }).secret;
const serverUrl = await server.listen({ host: "127.0.0.1", port: 0 });
// Nothing goes 202 by the mock's own pattern: the server answers every call inline here (the simulator waits 0 ms).
const mock = await startMockHttp({
  balance: 1_000_000,
  slow: () => false,
  keys: { [KEY]: { permissions: ["read_data"] }, [NOSCOPE]: { permissions: [] } },
});
afterAll(async () => {
  await mock.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What a request looks like after generation: the sample's request with one change (or none). */
interface Case {
  label: string;
  req: Req;
}

const BAD_VALUES: unknown[] = ["", -1, 0, 1.5, 10 ** 9, "x".repeat(600), null, true, [], {}, "all", ["x", "x"]];

/** Samples the test can send as they are (a result handle and a schedule id that neither side ever made). */
const BASES = SAMPLES.map((s) =>
  s.op === "getResult"
    ? { ...s, req: { ...s.req, path: "/v1/results/h_neverissued1" } }
    : s.op === "deleteSchedule"
      ? { ...s, req: { ...s.req, path: "/v1/schedules/sch_neverissued1" } }
      : s,
);

function mutated(base: (typeof BASES)[number], kind: number, pick: number, value: unknown): Case {
  const req: Req = structuredClone(base.req);
  const label = `${base.label}`;
  const params =
    (req.method ?? "GET") === "GET" ? (req.query ??= {}) : ((req.body as Record<string, unknown> | undefined) ?? {});
  const names = Object.keys(params);
  const name = names.length > 0 ? names[pick % names.length]! : "query";
  const set = (k: string, v: unknown) => {
    if ((req.method ?? "GET") === "GET")
      (req.query as Record<string, string>)[k] = typeof v === "string" ? v : JSON.stringify(v);
    else (params as Record<string, unknown>)[k] = v;
  };
  switch (kind) {
    case 0:
      return { label: `${label} as it is`, req };
    case 1:
      if ((req.method ?? "GET") === "GET") delete (req.query as Record<string, unknown>)[name];
      else delete (params as Record<string, unknown>)[name];
      return { label: `${label} without ${name}`, req };
    case 2:
      set(name, value);
      return { label: `${label} with ${name}=${JSON.stringify(value)?.slice(0, 40)}`, req };
    case 3:
      set("bogus", 1);
      return { label: `${label} with an unknown parameter`, req };
    case 4:
      return { label: `${label} without a key`, req: { ...req, key: null } };
    case 5:
      return { label: `${label} with a wrong key`, req: { ...req, key: "sdgw_not_a_key_0000" } };
    case 6:
      return { label: `${label} with a key without read_data`, req: { ...req, key: NOSCOPE } };
    case 7:
      if ((req.method ?? "GET") === "GET")
        return {
          label: `${label} with a URL of 9,000 characters`,
          req: { ...req, query: { ...req.query, query: "q".repeat(9000) } },
        };
      return {
        label: `${label} with a BOM before the JSON`,
        req: { ...req, raw: `\uFEFF${JSON.stringify(req.body ?? {})}` },
      };
    default:
      return { label: `${label} with a body that is not JSON`, req: { ...req, method: "POST", raw: "{" } };
  }
}

const cases = fc
  .record({
    base: fc.constantFrom(...BASES),
    kind: fc.integer({ min: 0, max: 8 }),
    pick: fc.nat(),
    value: fc.constantFrom(...BAD_VALUES),
  })
  .map(({ base, kind, pick, value }) => mutated(base, kind, pick, value));

let sequence = 0;

async function send(baseUrl: string, req: Req, idem: string): Promise<{ status: number; body: unknown; type: string }> {
  const url = new URL(req.path, baseUrl);
  for (const [k, v] of Object.entries(req.query ?? {})) for (const x of [v].flat()) url.searchParams.append(k, x);
  const headers: Record<string, string> = { "Idempotency-Key": idem, ...req.headers };
  const key = req.key === undefined ? KEY : req.key;
  if (key !== null) headers["X-API-Key"] = key;
  const init: RequestInit = { method: req.method ?? "GET", headers };
  if (req.raw !== undefined || req.body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = req.raw ?? JSON.stringify(req.body);
  }
  const res = await fetch(url, init);
  const text = await res.text();
  const type = (res.headers.get("content-type") ?? "").split(";")[0]!;
  return { status: res.status, type, body: type === "application/json" && text ? JSON.parse(text) : text.length };
}

/** What two answers must share: ids, timestamps, messages and the data itself left out. */
function gist(a: { status: number; body: unknown; type: string }): Record<string, unknown> {
  const b = (a.body ?? {}) as Record<string, unknown>;
  const fix = (b["fix"] ?? {}) as Record<string, unknown>;
  const billing = (b["billing"] ?? {}) as Record<string, unknown>;
  return {
    http: a.status,
    type: a.type,
    code: b["code"],
    reason: b["reason"],
    param: fix["param"],
    status: b["status"],
    cost: billing["cost_credits"] ?? billing["cost"],
    keys:
      a.status < 300 && typeof a.body === "object"
        ? Object.keys(b)
            .filter((k) => !["request_id", "fetched_at"].includes(k))
            .sort()
        : undefined,
  };
}

describe("@sdgw/mock and @sdgw/server answer alike (differential)", () => {
  it("gives the same answers to the same generated requests, apart from ids and timestamps", {
    timeout: 240_000,
  }, async () => {
    const differences: string[] = [];
    let compared = 0;
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        const idem = `diff-${++sequence}`;
        const [m, s] = await Promise.all([send(mock.baseUrl, c.req, idem), send(serverUrl, c.req, idem)]);
        compared++;
        seen.add(c.label.split(" ")[0]!);
        const [gm, gs] = [gist(m), gist(s)];
        if (JSON.stringify(gm) !== JSON.stringify(gs))
          differences.push(`${c.label}\n  mock:   ${JSON.stringify(gm)}\n  server: ${JSON.stringify(gs)}`);
      }),
      { numRuns: 300, seed: 20261124 },
    );
    console.log(
      `differential: ${compared} requests to each side, ${seen.size} operations, ${differences.length} differences`,
    );
    expect(differences, differences.slice(0, 30).join("\n")).toEqual([]);
  });
});
