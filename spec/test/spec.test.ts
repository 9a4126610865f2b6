import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { deref, operations, type Parameter } from "../../generators/src/spec.ts";
import { schemaValidator, spec } from "./contract.ts";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const seedCopy = readFileSync(here("../seed-spec.md"), "utf8");

/** The seed's error table, copied by hand: code → HTTP statuses and Retry column. The spec must agree. */
const SEED_ERRORS: Record<string, { http: number[]; retry: boolean | "depends" }> = {
  invalid_params: { http: [400], retry: false },
  not_supported: { http: [400], retry: false },
  unauthorized: { http: [401], retry: false },
  insufficient_balance: { http: [402], retry: false },
  max_cost_exceeded: { http: [402], retry: false },
  plan_limit: { http: [403], retry: false },
  key_scope_denied: { http: [403], retry: false },
  not_found: { http: [200, 404], retry: false },
  idempotency_in_progress: { http: [409], retry: true },
  handle_expired: { http: [410], retry: false },
  idempotency_conflict: { http: [422], retry: false },
  daily_limit_reached: { http: [429], retry: false },
  free_failure_limit: { http: [429], retry: true },
  rate_limited: { http: [429], retry: true },
  internal_error: { http: [500], retry: true },
  temporarily_unavailable: { http: [200, 503], retry: true },
  invalid_target: { http: [200], retry: false },
  upstream_error: { http: [200], retry: "depends" },
  timeout: { http: [200], retry: false },
};

const schemas = spec.components.schemas as Record<string, Record<string, unknown>>;

/** Component schemas of the non-200 error structure, by the `code` const they carry. */
function errorStructuresByCode(): Map<string, string> {
  const out = new Map<string, string>();
  for (const ref of schemas["ErrorStructure"]!["oneOf"] as Array<{ $ref: string }>) {
    const name = ref.$ref.split("/").pop()!;
    const code = (schemas[name]!["properties"] as Record<string, { const?: string }>)["code"]!.const!;
    out.set(code, name);
  }
  return out;
}

/** Codes an envelope's error object may carry, following oneOf refs. */
function codesOf(schemaName: string): string[] {
  const s = schemas[schemaName]!;
  if (s["oneOf"]) return (s["oneOf"] as Array<{ $ref: string }>).flatMap((r) => codesOf(r.$ref.split("/").pop()!));
  return [(s["properties"] as Record<string, { const: string }>)["code"]!.const];
}

describe("the contract's header", () => {
  it("is OpenAPI 3.1 at version 1.0.0", () => {
    expect(spec.openapi).toMatch(/^3\.1\./);
    expect(spec.info.version).toBe("1.0.0");
  });

  it("keeps the vendored seed identical to shared/seed-spec.md when that file is beside the repo", () => {
    const shared = here("../../../shared/seed-spec.md");
    if (existsSync(shared)) expect(readFileSync(shared, "utf8")).toBe(seedCopy);
    expect(seedCopy).toContain("There are 19 codes");
  });
});

describe("the 19 error codes", () => {
  const catalogue = spec["x-error-catalogue"];
  const enumCodes = (schemas["ErrorCode"]!["enum"] as string[]).slice().sort();

  it("lists exactly the seed's 19 codes, in the catalogue and in ErrorCode", () => {
    expect(Object.keys(catalogue).sort()).toEqual(Object.keys(SEED_ERRORS).sort());
    expect(enumCodes).toEqual(Object.keys(SEED_ERRORS).sort());
  });

  it.each(Object.entries(SEED_ERRORS))("%s has the seed's HTTP statuses and retry rule", (code, want) => {
    expect(catalogue[code]!.http.slice().sort()).toEqual(want.http.slice().sort());
    expect(catalogue[code]!.retry).toBe(want.retry);
  });

  it.each(Object.keys(SEED_ERRORS))("%s is answerable under each of its non-200 statuses", (code) => {
    const byCode = errorStructuresByCode();
    for (const status of catalogue[code]!.http.filter((s) => s !== 200)) {
      const name = byCode.get(code);
      expect(name, `${code} needs an error structure schema`).toBeDefined();
      const resp = spec.components.responses[`Error${status}`];
      expect(resp, `components.responses.Error${status}`).toBeDefined();
      expect(JSON.stringify(resp!.content)).toContain(`#/components/schemas/${name}"`);
      const retryable = (schemas[name!]!["properties"] as Record<string, { const?: boolean }>)["retryable"]!.const;
      expect(retryable).toBe(catalogue[code]!.retry === true);
    }
  });

  it("gives every code whose only status is 200 no non-200 structure", () => {
    const byCode = errorStructuresByCode();
    for (const [code, row] of Object.entries(catalogue)) {
      expect(byCode.has(code)).toBe(row.http.some((s) => s !== 200));
    }
  });

  it("puts exactly the catalogue's envelope codes inside envelopes (seed table; D13)", () => {
    const searchCodes = new Set([...codesOf("SearchErrorObject"), "not_supported", "timeout"]);
    const dataCodes = new Set([...codesOf("DataErrorObject"), "not_supported", "timeout"]);
    for (const [code, row] of Object.entries(catalogue)) {
      expect(searchCodes.has(code), `${code} in search envelopes`).toBe(row.envelope === "all");
      expect(dataCodes.has(code), `${code} in data envelopes`).toBe(row.envelope !== "none");
    }
    expect(codesOf("SearchErrorObject").sort()).toEqual([
      "insufficient_balance",
      "invalid_params",
      "rate_limited",
      "upstream_error",
    ]);
  });
});

describe("every operation", () => {
  const ops = operations(spec);

  it("covers every route the seed names", () => {
    const routes = ops.map((o) => `${o.method.toUpperCase()} ${o.path}`);
    for (const want of [
      "GET /v1/search",
      "POST /v1/search",
      "POST /v1/trending",
      "POST /v1/detail",
      "POST /v1/comments",
      "POST /v1/user_profile",
      "POST /v1/user_posts",
      "POST /v1/call/{op}",
      "POST /v1/find",
      "GET /v1/capabilities",
      "GET /v1/account",
      "GET /v1/schedules",
      "GET /v1/results/{handle}",
      "GET /openapi.json",
      ...[
        "brand_buzz",
        "comment_insights",
        "account_watch",
        "find_creators",
        "creator_card",
        "batch_stats",
        "viral_finder",
      ].map((t) => `POST /v1/tools/${t}`),
    ]) {
      expect(routes).toContain(want);
    }
  });

  it.each(ops.map((o) => [o.op.operationId, o] as const))(
    "%s has a method-like operationId, summary, description, example and a 4xx answer",
    (_id, o) => {
      expect(o.op.operationId).toMatch(/^[a-z][A-Za-z]+$/);
      expect(o.op.summary.length).toBeGreaterThan(5);
      expect(o.op.description.length).toBeGreaterThan(20);
      expect(Object.keys(o.op.responses).some((s) => /^4\d\d$/.test(s))).toBe(true);
      const media = [
        ...Object.values(o.op.requestBody?.content ?? {}),
        ...Object.values(o.op.responses).flatMap((r) => Object.values(deref(spec, r).content ?? {})),
      ];
      expect(media.some((m) => m.example !== undefined || m.examples !== undefined)).toBe(true);
    },
  );

  it("sends Retry-After with every 202, 409, 429 and 503 answer", () => {
    for (const o of ops) {
      for (const [status, r] of Object.entries(o.op.responses)) {
        if (["202", "409", "429", "503"].includes(status)) {
          expect(Object.keys(deref(spec, r).headers ?? {}), `${o.op.operationId} ${status}`).toContain("Retry-After");
        }
      }
    }
  });

  it("documents X-Should-Retry on every 200 that can carry a timeout", () => {
    for (const o of ops) {
      const ok = o.op.responses["200"];
      if (!ok) continue;
      const body = JSON.stringify(deref(spec, ok).content ?? {});
      const canTimeout = /Envelope|FanoutAnswer|TargetsAnswer|ToolAnswer|FinishedAnswer/.test(body);
      expect(Object.keys(deref(spec, ok).headers ?? {}).includes("X-Should-Retry"), o.op.operationId).toBe(canTimeout);
    }
  });
});

describe("authentication", () => {
  it("accepts X-API-Key and Bearer and documents the query key as refused", () => {
    expect(spec["security"]).toEqual([{ ApiKeyHeader: [] }, { BearerAuth: [] }]);
    const s = spec.components.securitySchemes as Record<string, { in?: string; name?: string; description?: string }>;
    expect(s["ApiKeyHeader"]).toMatchObject({ in: "header", name: "X-API-Key" });
    expect(s["KeyInQuery"]).toMatchObject({ in: "query", name: "key" });
    expect(s["KeyInQuery"]!.description).toMatch(/key_in_query/);
    expect(JSON.stringify(spec.paths)).not.toContain("KeyInQuery");
  });

  it("needs no key on capabilities, find and openapi.json, and a key everywhere else", () => {
    const open = operations(spec).filter((o) => Array.isArray(o.op.security) && o.op.security.length === 0);
    expect(open.map((o) => o.op.operationId).sort()).toEqual([
      "findOperation",
      "getOpenApiDocument",
      "listCapabilities",
    ]);
    // …but a key in their URL is still refused (D25): their only 401 is key_in_query.
    for (const o of open) expect(o.op.description).toMatch(/key_in_query|no key/i);
    for (const o of operations(spec)) expect(o.op.responses["401"], o.op.operationId).toBeDefined();
  });
});

describe("Idempotency-Key", () => {
  const search = operations(spec).find((o) => o.op.operationId === "search")!;
  const param = (search.op.parameters ?? [])
    .map((p) => deref<Parameter>(spec, p))
    .find((p) => p.name === "Idempotency-Key");
  const valid = schemaValidator("IdempotencyKey");

  it("is a required header of GET /v1/search", () => {
    expect(param).toMatchObject({ in: "header", required: true });
  });

  it("accepts every 1..255 printable ASCII key (the bound the seed calls certainly valid)", () => {
    const printable = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(
        fc.array(printable, { minLength: 1, maxLength: 255 }).map((a) => a.join("")),
        (key) => valid(key),
      ),
    );
  });

  it("refuses empty keys, spaces, non-ASCII and keys over 255 (D15)", () => {
    for (const bad of ["", "a b", "ключ", "tab\tkey", "x".repeat(256), "x".repeat(513)])
      expect(valid(bad), JSON.stringify(bad)).toBe(false);
  });
});

describe("spec/DECISIONS.md", () => {
  const decisions = readFileSync(here("../DECISIONS.md"), "utf8");
  const ids = new Set([...decisions.matchAll(/^### (D\d+)\./gm)].map((m) => m[1]));

  /** Each "not shown" (and each disagreement) of the seed → the decision that settles it. */
  const GAPS: Array<[RegExp, string[]]> = [
    [/Value types of `applied_params` entries and `platform_extra` entries: not shown/, ["D1", "D2"]],
    [/Fanout answer: other top-level fields and how the top-level status derives/, ["D3", "D4"]],
    [/Element shape of `cells` and `steps`: not shown/, ["D5", "D6"]],
    [/Fields of account, schedule and tool-run resources: not shown/, ["D8", "D10", "D11"]],
    [/Transitions of schedules and of tool runs beyond those above: not shown/, ["D11", "D8"]],
    [/\| `POST \/v1\/\{search\\\|trending.*not shown/, ["D23"]],
    [/\| `POST \/v1\/call\/\{op\}` \| Request and response shape: not shown/, ["D23"]],
    [/\| `POST \/v1\/tools\/\{tool\}` \| Request and response shape: not shown/, ["D8", "D24"]],
    [/\| `POST \/v1\/find` \|.*not shown/, ["D23"]],
    [/\| `GET \/v1\/capabilities` \|.*not shown/, ["D23"]],
    [/\| `GET \/v1\/account` \| Response shape: not shown/, ["D10"]],
    [/\| `GET \/v1\/schedules` \|.*not shown/, ["D11"]],
    [/\| `GET \/openapi.json` \| Response shape: not shown/, ["D34"]],
    [/Search parameter interplay: meaning of `scope`.*not shown/, ["D17", "D18"]],
    [/Other permissions of a key: not shown/, ["D26"]],
    [/Precedence when several key carriers are sent: not shown/, ["D25"]],
    [/Events, webhooks and event kinds: not shown/, ["D33"]],
    [/The exact JSON envelope of errors returned under non-200 HTTP statuses.*not shown/, ["D12"]],
    [/Numeric values of the per-key rate and of the concurrency limit: not shown/, ["D27"]],
    [/Threshold and window of the free-failure limit: not shown/, ["D27"]],
    [/Number of calls a free account may make before `plan_limit`: not shown/, ["D27"]],
    [/Deprecation and compatibility policy: not shown/, ["D34"]],
  ];

  it("settles every 'not shown' of the seed", () => {
    const lines = seedCopy.split("\n").filter((l) => /not shown/.test(l));
    for (const line of lines) {
      const hit = GAPS.find(([re]) => re.test(line));
      expect(hit, `no decision mapped for seed line: ${line}`).toBeDefined();
      for (const id of hit![1]) expect(ids.has(id), `${id} for: ${line}`).toBe(true);
    }
    expect(lines.length).toBe(GAPS.length);
  });

  it("settles the seed's disagreements and the MCP tool count", () => {
    expect(decisions).toMatch(/### D15\. `Idempotency-Key` length/);
    expect(decisions).toMatch(/### D7\. The two billing shapes/);
    expect(decisions).toMatch(/### D29\. The 13 charging MCP tools/);
    expect(decisions).toMatch(/### D35\. Idempotent replay/);
  });

  it("defines every decision the spec refers to", () => {
    const raw = readFileSync(here("../openapi.yaml"), "utf8");
    for (const m of raw.matchAll(/\bD(\d+)\b/g)) expect(ids.has(`D${m[1]}`), `D${m[1]}`).toBe(true);
  });
});
