import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { ERROR_CATALOGUE, ERROR_CODES } from "@sdgw/types";
import { describe, expect, it } from "vitest";
import { FIXTURES_DIR, loadFixtureIndex } from "../../../generators/src/summary.ts";
import {
  answerHeaders,
  errorAnswer,
  httpStatusOf,
  nextUtcMidnight,
  responseValidators,
  toCsv,
  toNdjson,
  validateErrorStructure,
  type HttpErrorCode,
} from "../src/index.ts";

const httpCodes = ERROR_CODES.filter((c) => ERROR_CATALOGUE[c].http.some((s) => s !== 200)) as HttpErrorCode[];

describe("errorAnswer", () => {
  it("covers the 16 codes answered under a non-200 status", () => expect(httpCodes).toHaveLength(16));

  it.each(httpCodes)("%s: a valid error structure under the seed's status, with the seed's headers", (code) => {
    const now = new Date("2026-11-21T10:00:00Z");
    const extra = code === "invalid_params" ? { fix: { param: "count" } } : {};
    const answer = errorAnswer(code, "req_1", extra as never, { now });
    expect(answer.status).toBe(ERROR_CATALOGUE[code].http.find((s) => s !== 200));
    expect(httpStatusOf(code)).toBe(answer.status);
    const v = validateErrorStructure(answer.body);
    expect(v.ok, v.ok ? "" : JSON.stringify(v.errors)).toBe(true);
    expect(answer.body.retryable).toBe(ERROR_CATALOGUE[code].retry === true);
    const wantsRetryAfter = [409, 429, 503].includes(answer.status);
    expect("Retry-After" in answer.headers).toBe(wantsRetryAfter);
    if (wantsRetryAfter) expect(answer.headers["Retry-After"]).toMatch(/^[1-9]\d*$/);
  });

  it("counts Retry-After to resets_at for a daily limit (the next UTC midnight)", () => {
    const now = new Date("2026-11-21T23:59:00.500Z");
    const answer = errorAnswer("daily_limit_reached", "req_1", { reason: "account" }, { now });
    expect(answer.body.resets_at).toBe("2026-11-22T00:00:00Z");
    expect(answer.headers["Retry-After"]).toBe("60");
  });

  it("is a valid answer of GET /v1/search under every status that route documents (property: any code, any request id)", () => {
    fc.assert(
      fc.property(fc.constantFrom(...httpCodes), fc.string({ minLength: 1, maxLength: 40 }), (code, id) => {
        const answer = errorAnswer(code, id, (code === "invalid_params" ? { fix: { param: "x" } } : {}) as never);
        return (
          !responseValidators.search.statuses.includes(answer.status) ||
          responseValidators.search(answer.status, answer.body).ok
        );
      }),
    );
  });

  it("gives the next UTC midnight", () => {
    expect(nextUtcMidnight(new Date("2026-12-31T12:00:00+08:00"))).toBe("2027-01-01T00:00:00Z");
  });
});

describe("result files (D31) match the golden fixtures byte for byte", () => {
  const files = loadFixtureIndex().filter((f) => f.mediaType !== "application/json");
  it.each(files.map((f) => [f.file, f] as const))("%s", (_n, f) => {
    const source = JSON.parse(readFileSync(join(FIXTURES_DIR, f.source!), "utf8"));
    const golden = readFileSync(join(FIXTURES_DIR, f.file), "utf8");
    expect(f.mediaType === "text/csv" ? toCsv(source) : toNdjson(source)).toBe(golden);
  });

  it("neutralises a cell that a spreadsheet would run: = + - @ (the seed) and tab, carriage return (OWASP, D53)", () => {
    const answer = {
      items: ["=1+1", "+x", "-3", "@SUM(A1)", "\tcmd", "\rcmd", "plain", "a=b"].map((text, i) => ({
        kind: "item",
        id: String(i),
        text,
      })),
    };
    const cells = toCsv(answer)
      .trimEnd()
      .split("\n")
      .slice(1)
      .map((row) => row.split(",").slice(2).join(","));
    expect(cells).toEqual(["'=1+1", "'+x", "'-3", "'@SUM(A1)", "'\tcmd", `"'\rcmd"`, "plain", "a=b"]);
  });

  it("puts platform (and target) first for fanout and targets answers", () => {
    const fan = JSON.parse(readFileSync(join(FIXTURES_DIR, "search/fanout-ok-mixed.json"), "utf8"));
    expect(toCsv(fan).split("\n")[0]!.startsWith("platform,kind,")).toBe(true);
    const targets = JSON.parse(readFileSync(join(FIXTURES_DIR, "detail/targets-ok-mixed.json"), "utf8"));
    expect(toCsv(targets).split("\n")[0]!.startsWith("platform,target,kind,")).toBe(true);
  });
});

describe("answerHeaders (D53)", () => {
  it("nosniff on every answer, no-store except on the two public documents", () => {
    for (const path of ["/v1/account", "/v1/search?platform=x", "/v1/results/h_1", "/mcp", "/nope"]) {
      expect(answerHeaders(path, "application/json; charset=utf-8"), path).toEqual({
        "x-content-type-options": "nosniff",
        "cache-control": "no-store",
      });
    }
    for (const path of ["/openapi.json", "/v1/capabilities"])
      expect(answerHeaders(path, "application/json")).toEqual({ "x-content-type-options": "nosniff" });
  });

  it("names csv and ndjson downloads by the path's last segment, with nothing a header could be broken by", () => {
    expect(answerHeaders("/v1/results/h_abc?format=csv", "text/csv; charset=utf-8")["content-disposition"]).toBe(
      'attachment; filename="h_abc.csv"',
    );
    expect(answerHeaders("/v1/tools/batch_stats", "application/x-ndjson")["content-disposition"]).toBe(
      'attachment; filename="batch_stats.ndjson"',
    );
    expect(answerHeaders('/v1/results/a"b\r\nc', "text/csv")["content-disposition"]).toBe(
      'attachment; filename="abc.csv"',
    );
    expect(answerHeaders("/", "text/csv")["content-disposition"]).toBe('attachment; filename="result.csv"');
  });
});
