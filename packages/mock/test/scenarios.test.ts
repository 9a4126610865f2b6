/**
 * Every operation through every scenario (the six statuses and the 19 codes), turned on both ways (`mock.use`
 * and the `x-sdgw-scenario` header): the answer has the HTTP status and the status or code the scenario names
 * wherever the operation documents it, says `x-sdgw-scenario-skipped` where it does not, validates against the
 * contract (`responseValidators`), and carries the headers the seed requires.
 */
import { ERROR_CATALOGUE, type ErrorCode } from "@sdgw/types";
import { OPERATIONS, responseValidators } from "@sdgw/validators";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createMock, scenario, SCENARIO_NAMES, SKIPPED_HEADER, type ScenarioName } from "../src/index.ts";
import { BASE, idem, SAMPLES, send, startRun, type Got, type Sample } from "./helpers.ts";

const mock = createMock({ baseUrl: BASE });
const server = setupServer(...mock.handlers);
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterAll(() => server.close());
beforeEach(() => mock.reset());

const STATUSES = ["ok", "empty", "error", "not_supported", "timeout"];
/** The seed's four envelope codes of GET /v1/search, the only ones a fanout entry takes (with not_supported and timeout). */
const SEARCH_TABLE = ["rate_limited", "insufficient_balance", "upstream_error", "invalid_params"];

type Expected = { http: number; status?: string; code?: string } | "skipped";

/**
 * Every scenario name, and the codes the seed answers in two ways under their other status (`@200`: inside the
 * envelope; `not_supported@400`: the refusal rather than the envelope status; `temporarily_unavailable@503`).
 */
const CASES: string[] = [
  ...SCENARIO_NAMES,
  "not_supported@400",
  "temporarily_unavailable@503",
  ...["rate_limited", "insufficient_balance", "invalid_params", "not_found", "temporarily_unavailable"].map(
    (c) => `${c}@200`,
  ),
];

/** What the seed and the decisions say a scenario gives on one request; written apart from the mock's own logic. */
function expected(sample: Sample, name: string): Expected {
  const op = sample.op;
  const documented = OPERATIONS[op].responses as readonly number[];
  const runs = op === "getResult" || documented.includes(202);
  const [plain, at] = name.split("@") as [string, string | undefined];
  if (at !== undefined) {
    const code = plain as ErrorCode;
    if (at !== "200") return documented.includes(Number(at)) ? { http: Number(at), code } : "skipped";
    const inSearchTable = SEARCH_TABLE.includes(code);
    if (!runs || ((sample.fanout || op === "search") && !inSearchTable)) return "skipped";
    return { http: 200, status: "error", code };
  }
  if (STATUSES.includes(name) && runs) {
    return {
      http: 200,
      status: name,
      ...(name === "error" ? { code: "upstream_error" } : name === "ok" || name === "empty" ? {} : { code: name }),
    };
  }
  if (name === "running") return runs ? { http: 202, status: "running" } : "skipped";
  if (name === "ok") return { http: 200 };
  if (["empty", "error", "timeout"].includes(name)) return "skipped";
  const code = name as ErrorCode;
  const dataRoute = runs && op !== "search" && op !== "getResult";
  const at200 =
    code === "invalid_target" ||
    code === "upstream_error" ||
    ((code === "not_found" || code === "temporarily_unavailable") && dataRoute);
  if (at200) {
    if (!runs) return "skipped";
    if (sample.fanout && !SEARCH_TABLE.includes(code)) return "skipped"; // D13: fanout entries take the search table
    if (op === "search" && code === "invalid_target") return "skipped"; // D13: GET /v1/search takes the seed's four
    return { http: 200, status: "error", code };
  }
  const status = ERROR_CATALOGUE[code].http.find((h) => h !== 200)!;
  return documented.includes(status) ? { http: status, code } : "skipped";
}

/** Every failed unit of an answer (the envelope, each fanout entry, each target cell). */
function units(body: any): Array<{ status: string; error?: { code: string } }> {
  if (body.fanout) return Object.values(body.fanout);
  if (body.targets) return body.targets.map((c: any) => c.result);
  return [body];
}

function checkHeaders(got: Got): void {
  if ([202, 409, 429, 503].includes(got.status))
    expect(Number(got.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  if ([202, 409, 429, 503].includes(got.status)) expect(got.headers.get("retry-after")).toMatch(/^\d+$/);
  if (got.body?.status === "timeout") expect(got.headers.get("x-should-retry")).toBe("false");
  if (got.status === 202) expect(got.body.retry_after_seconds).toBe(Number(got.headers.get("retry-after")));
}

async function request(sample: Sample, headers: Record<string, string>): Promise<Got> {
  const req = { ...sample.req, headers: { ...sample.req.headers, ...headers } };
  if (sample.op === "getResult") req.path = `/v1/results/${await startRun()}`;
  else if (OPERATIONS[sample.op].responses.includes(202 as never)) req.headers["Idempotency-Key"] = idem();
  return send(req);
}

describe.each(["use", "header"] as const)("scenarios turned on by %s", (how) => {
  describe.each(SAMPLES)("$label", (sample) => {
    it.each(CASES)("%s", async (name) => {
      const [plain, at] = name.split("@") as [ScenarioName, string | undefined];
      if (how === "use")
        mock.use(scenario(plain, { operation: sample.op, times: 1, ...(at ? { http: Number(at) } : {}) }));
      const got = await request(sample, how === "header" ? { "x-sdgw-scenario": name } : {});
      const want = expected(sample, name);

      const valid = responseValidators[sample.op](got.status, got.body);
      expect(
        valid.ok,
        `${sample.label} × ${name}: ${JSON.stringify(valid.ok ? [] : valid.errors)}\n${got.text.slice(0, 600)}`,
      ).toBe(true);
      checkHeaders(got);

      if (want === "skipped") {
        expect(
          got.headers.get(SKIPPED_HEADER),
          `${sample.label} × ${name} should be skipped; got ${got.status} ${got.text.slice(0, 300)}`,
        ).toBeTruthy();
        return;
      }
      expect(got.headers.get(SKIPPED_HEADER), got.headers.get(SKIPPED_HEADER) ?? "").toBeNull();
      expect(got.status, got.text.slice(0, 400)).toBe(want.http);
      if (want.http !== 200 && want.http !== 202) {
        expect(got.body.code).toBe(want.code);
        expect(got.body.request_id).toMatch(/^req_/);
        return;
      }
      if (want.status) expect(got.body.status).toBe(want.status);
      if (want.http === 200 && want.status) {
        for (const u of units(got.body)) {
          expect(u.status).toBe(want.status);
          if (want.code) expect(u.error?.code).toBe(want.code);
          else expect(u.error).toBeUndefined();
        }
        const cost = got.body.billing.cost ?? got.body.billing.cost_credits;
        if (want.status === "ok" || want.status === "empty") expect(cost).toBeGreaterThan(0);
        else expect(cost).toBe(0);
      }
    });
  });
});

describe("scenario options", () => {
  it("forces a code for every operation until reset, once with times: 1, and per operation", async () => {
    mock.use(scenario("rate_limited"));
    for (const path of ["/v1/capabilities", "/v1/account", "/openapi.json"])
      expect((await send({ path })).status).toBe(429);
    mock.reset();
    expect((await send({ path: "/v1/account" })).status).toBe(200);

    mock.use(scenario("internal_error", { times: 1 }));
    expect((await send({ path: "/v1/account" })).status).toBe(500);
    expect((await send({ path: "/v1/account" })).status).toBe(200);

    mock.use(scenario("plan_limit", { operation: "search" }));
    expect((await send({ path: "/v1/account" })).status).toBe(200);
    const got = await send({
      path: "/v1/search",
      query: { platform: "x", query: "a" },
      headers: { "Idempotency-Key": idem() },
    });
    expect([got.status, got.body.code]).toEqual([403, "plan_limit"]);
  });

  it("answers a code inside the envelope with http: 200, and temporarily_unavailable as a 503 refusal on a data route with http: 503", async () => {
    mock.use(scenario("rate_limited", { http: 200, times: 1 }));
    const inside = await send({
      path: "/v1/search",
      query: { platform: "douyin", query: "a" },
      headers: { "Idempotency-Key": idem() },
    });
    expect([inside.status, inside.body.status, inside.body.error.code]).toEqual([200, "error", "rate_limited"]);
    expect(inside.body.error.retry_after).toBeGreaterThan(0);

    mock.use(scenario("temporarily_unavailable", { http: 503, times: 1 }));
    const refused = await send({
      method: "POST",
      path: "/v1/detail",
      body: { platform: "weibo", id: "5236417809123457" },
    });
    expect([refused.status, refused.body.code]).toEqual([503, "temporarily_unavailable"]);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    const header = await send({
      method: "POST",
      path: "/v1/detail",
      body: { platform: "weibo", id: "5236417809123457" },
      headers: { "x-sdgw-scenario": "not_found@200" },
    });
    expect([header.status, header.body.status, header.body.error.code, header.body.error.retryable]).toEqual([
      200,
      "error",
      "not_found",
      false,
    ]);
    expect(header.body.error.fix.note).toMatch(/Check the id or link/); // the server's not_found object (engine)
  });

  it("the newest use wins, a used-up scenario stops, and an unknown header name is reported", async () => {
    mock.use(scenario("timeout", { times: 1 }));
    mock.use(scenario("empty", { times: 1 }));
    const a = await send({ method: "POST", path: "/v1/trending", body: { platform: "weibo" } });
    const b = await send({ method: "POST", path: "/v1/trending", body: { platform: "weibo" } });
    const c = await send({ method: "POST", path: "/v1/trending", body: { platform: "weibo" } });
    expect([a.body.status, b.body.status, c.body.status]).toEqual(["empty", "timeout", "ok"]);

    const d = await send({
      method: "POST",
      path: "/v1/trending",
      body: { platform: "weibo" },
      headers: { "x-sdgw-scenario": "meltdown" },
    });
    expect(d.status).toBe(200);
    expect(d.headers.get(SKIPPED_HEADER)).toContain("meltdown");
  });

  it("refuses a bad scenario at once", () => {
    expect(() => scenario("meltdown" as never)).toThrow(/no scenario "meltdown"/);
    expect(() => scenario("ok", { operation: "nope" as never })).toThrow(/no operation/);
    expect(() => scenario("ok", { times: 0 })).toThrow(/times/);
  });

  it("gives each forced answer a fresh request_id and the code's own fields", async () => {
    mock.use(scenario("daily_limit_reached"));
    const [a, b] = [await send({ path: "/v1/account" }), await send({ path: "/v1/account" })];
    expect(a.body.request_id).not.toBe(b.body.request_id);
    expect(a.body.reason).toBe("key");
    expect(Date.parse(a.body.resets_at)).toBeGreaterThan(Date.now());
    const wait = Number(a.headers.get("retry-after"));
    expect(Math.abs(wait - (Date.parse(a.body.resets_at) - Date.now()) / 1000)).toBeLessThan(5);
  });
});
