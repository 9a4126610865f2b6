/**
 * Every answer against the contract: its JSON through `responseValidators[op](status, body)` (an unknown route's
 * through the error structure), the headers the seed and D32 require, and each violation explained by the rule of
 * the seed or the decision (Dn) it breaks.
 */
import {
  OPERATIONS,
  responseValidators,
  validateDataEnvelope,
  validateErrorStructure,
  validateFanoutAnswer,
  validateHandleAnswer,
  validateSearchEnvelope,
  validateTargetsAnswer,
  type ValidationError,
} from "@sdgw/validators";
import type { Exchange, OperationKey } from "./http.ts";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The value at a JSON pointer (`/fanout/x/error`). */
function at(value: unknown, pointer: string): unknown {
  if (pointer === "/" || pointer === "") return value;
  let v: unknown = value;
  for (const raw of pointer.split("/").slice(1)) {
    const k = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(v)) v = v[Number(k)];
    else if (isObject(v)) v = v[k];
    else return undefined;
  }
  return v;
}

const ITEM_STATUSES_WITHOUT_ITEMS = ["empty", "error", "not_supported", "timeout"];
const ENVELOPE_CODES = [
  "rate_limited",
  "insufficient_balance",
  "upstream_error",
  "invalid_params",
  "not_supported",
  "timeout",
];

/** The rule of the seed or the decisions that one schema violation breaks, in words. */
export function ruleOf(body: unknown, e: ValidationError): string {
  const value = at(body, e.path);
  const parent = at(body, e.path.replace(/\/[^/]*$/, "") || "/");
  const last = e.path.split("/").pop() ?? "";
  if (e.keyword === "additionalProperties") {
    const error = /(^|\/)error$/.test(e.path) ? value : isObject(value) ? value["error"] : undefined;
    if (isObject(error) && "fix" in error && ENVELOPE_CODES.includes(String(error["code"]))) {
      const where = /(^|\/)error$/.test(e.path) ? e.path : `${e.path === "/" ? "" : e.path}/error`;
      return (
        `the envelope error object at ${where} (code ${String(error["code"])}) carries ` +
        `\`fix\`: the seed allows no other fields in error objects, and D36 keeps the seed's six envelope ` +
        `error codes without \`fix\``
      );
    }
    const keys = isObject(value) ? Object.keys(value).join(", ") : "";
    return (
      `an extra field at ${e.path} (fields: ${keys}): the seed allows no other fields in the ` +
      `envelope, items, billing or error objects, and D3/D12 close the fanout answer and the error structure`
    );
  }
  if (last === "items" && e.keyword === "minItems" && isObject(parent)) {
    return (
      `status \`${String(parent["status"])}\` with ${Array.isArray(value) ? value.length : 0} ` +
      `items: the seed's rules by status say \`ok\` has at least 1 item`
    );
  }
  if (
    last === "items" &&
    e.keyword === "maxItems" &&
    isObject(parent) &&
    ITEM_STATUSES_WITHOUT_ITEMS.includes(String(parent["status"]))
  ) {
    return (
      `status \`${String(parent["status"])}\` with items: the seed's rules by status say ` +
      `\`empty\`, \`error\`, \`not_supported\` and \`timeout\` have 0 items`
    );
  }
  if (last === "cost" && /billing$/.test(e.path.replace(/\/cost$/, ""))) {
    const env = at(body, e.path.replace(/\/billing\/cost$/, "") || "/");
    return (
      `billing.cost ${JSON.stringify(value)} with status ` +
      `\`${isObject(env) ? String(env["status"]) : "?"}\`: the seed says cost is greater than 0 for ` +
      `\`ok\` and \`empty\` and exactly 0 otherwise (D4 for fanout)`
    );
  }
  if (last === "schema_version")
    return `schema_version ${JSON.stringify(value)}: the seed's versioning says every answer carries \`v1\``;
  if (e.keyword === "format")
    return `${e.path} ${JSON.stringify(value)} ${e.message}: the seed types it as a date-time (calendar-valid) or URI (D37: RFC 3986)`;
  if (e.keyword === "required" && /'fix'/.test(e.message))
    return `no \`fix\`: the seed says every error carries \`request_id\` and a \`fix\` (D12)`;
  return `${e.path} ${e.message}`;
}

/** The narrowest named schema of an answer, to explain a failure by its own branch rather than a `oneOf`'s. */
function narrowed(status: number, body: unknown): ValidationError[] | undefined {
  if (!isObject(body)) return undefined;
  if (status === 202) return failures(validateHandleAnswer(body));
  if (status !== 200 || "code" in body) return failures(validateErrorStructure(body));
  if ("fanout" in body) return failures(validateFanoutAnswer(body));
  if ("targets" in body) return failures(validateTargetsAnswer(body));
  if ("platform" in body && "items" in body)
    return failures(validateSearchEnvelope(body)) ?? failures(validateDataEnvelope(body));
  return undefined;
}

function failures(v: { ok: true } | { ok: false; errors: ValidationError[] }): ValidationError[] | undefined {
  return v.ok ? undefined : v.errors;
}

/** Why a JSON answer does not match its operation's schema under its status; empty when it matches. */
export function schemaProblems(op: OperationKey | null, status: number, body: unknown): string[] {
  const where = op ? `${op} under HTTP ${status}` : `the error structure (no route of the contract)`;
  let errors: ValidationError[] | undefined;
  if (op) {
    const validate = responseValidators[op] as ((
      status: number,
      body: unknown,
    ) => { ok: true } | { ok: false; errors: ValidationError[] }) & { statuses: readonly number[] };
    if (!validate.statuses.includes(status)) {
      return [
        `HTTP ${status} is not an answer the contract documents for ${op} ` +
          `(${OPERATIONS[op].method.toUpperCase()} ${OPERATIONS[op].path} answers ${validate.statuses.join(", ")})`,
      ];
    }
    errors = failures(validate(status, body));
  } else {
    errors = failures(validateErrorStructure(body));
  }
  if (!errors) return [];
  const specific = narrowed(status, body) ?? errors;
  const shown = specific
    .filter((e) => e.keyword !== "oneOf" && e.keyword !== "anyOf" && e.keyword !== "if")
    .slice(0, 3);
  return [
    `the answer does not match the contract (${where}): ${(shown.length ? shown : specific.slice(0, 1)).map((e) => ruleOf(body, e)).join("; ")}`,
  ];
}

/** Every way an exchange breaks the contract: JSON schema, media type, and the headers the seed and D32 require. */
export function contractProblems(x: Exchange): string[] {
  const problems: string[] = [];
  const type = x.headers.get("content-type") ?? "";
  const fileRead = x.op === "getResult" && x.status === 200 && /^(text\/csv|application\/x-ndjson)\b/i.test(type);
  if (!fileRead) {
    if (x.json === undefined) {
      if (x.status !== 204)
        problems.push(
          `HTTP ${x.status} answered ${type ? `\`${type}\`` : "no content type"}${x.text ? "" : " and no body"}, not the JSON the contract documents`,
        );
    } else {
      problems.push(...schemaProblems(x.op, x.status, x.json));
    }
  }
  const body = isObject(x.json) ? x.json : {};
  const retryAfter = x.headers.get("retry-after");
  if ([202, 409, 429, 503].includes(x.status)) {
    if (retryAfter === null || !/^\d+$/.test(retryAfter.trim()) || Number(retryAfter) < 1) {
      problems.push(
        `HTTP ${x.status} without a Retry-After of whole seconds ≥ 1 ` +
          `(got ${retryAfter === null ? "none" : JSON.stringify(retryAfter)}; D32: Retry-After is sent on ` +
          `every 202, 409, 429 and 503)`,
      );
    } else if (
      x.status === 202 &&
      typeof body["retry_after_seconds"] === "number" &&
      body["retry_after_seconds"] !== Number(retryAfter)
    ) {
      problems.push(
        `202 with retry_after_seconds ${String(body["retry_after_seconds"])} but ` +
          `Retry-After ${retryAfter} (seed: retry_after_seconds is the same number as the Retry-After header)`,
      );
    } else if (typeof body["retry_after"] === "number" && Math.ceil(body["retry_after"]) !== Number(retryAfter)) {
      problems.push(
        `retry_after ${String(body["retry_after"])} but Retry-After ${retryAfter} (D32: the body's retry_after rounded up)`,
      );
    }
  }
  if (x.status === 200 && body["status"] === "timeout" && x.headers.get("x-should-retry") !== "false") {
    problems.push(`status \`timeout\` without the header X-Should-Retry: false (seed, timeout row; D32)`);
  }
  return problems;
}
