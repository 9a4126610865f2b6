/**
 * Turns a validator's failure into the seed's `invalid_params` answer: the parameter in `fix.param`, the allowed
 * values in `fix.allowed` where the seed lists them, and the seed's own wording of each case ("Cases by code").
 */
import type { OperationInfo, ParamInfo } from "./table-types.ts";

/** The part of a request a validator checks. @group Requests */
export type RequestPart = "query" | "headers" | "path" | "body";

/** What is wrong with a request, in the seed's terms. @group Requests */
export interface InvalidParams {
  /** The parameter at fault (`fix.param`). */
  param: string;
  /** The seed's wording of the case. */
  message: string;
  /** `fix.allowed`, where the seed lists allowed values. */
  allowed?: readonly string[];
  /** `fix.note`, where a case has one. */
  note?: string;
}

interface AjvError {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  params: Record<string, unknown>;
}

const PLATFORMS = [
  "xiaohongshu",
  "douyin",
  "x",
  "reddit",
  "wechat",
  "weibo",
  "bilibili",
  "zhihu",
  "kuaishou",
  "youtube",
] as const;
const TARGET_LISTS = new Set(["id", "url", "targets", "accounts"]);

/** Canonical spelling of header parameters (validators see lower-case names). */
function canonical(op: OperationInfo, part: RequestPart, name: string): string {
  if (part !== "headers") return name;
  return Object.keys(op.headers).find((h) => h.toLowerCase() === name.toLowerCase()) ?? name;
}

function paramsOf(op: OperationInfo, part: RequestPart): Readonly<Record<string, ParamInfo>> {
  switch (part) {
    case "query":
      return op.query;
    case "headers":
      return op.headers;
    case "path":
      return op.pathParams;
    case "body":
      return op.body?.params ?? {};
  }
}

const decode = (segment: string) => segment.replace(/~1/g, "/").replace(/~0/g, "~");

function valueAt(root: unknown, pointer: string): unknown {
  return pointer
    .split("/")
    .slice(1)
    .map(decode)
    .reduce<unknown>((v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), root);
}

/** The "exactly one of" rules of the spec: `platform`/`platforms` (D17) and `id`/`url` (case 6). */
function exactlyOne(op: OperationInfo, part: RequestPart, errors: readonly AjvError[]): InvalidParams | undefined {
  const rootOneOf = errors.find((e) => e.keyword === "oneOf" && e.instancePath === "" && e.schemaPath === "#/oneOf");
  if (!rootOneOf) return undefined;
  const both = Array.isArray(rootOneOf.params["passingSchemas"]);
  const params = paramsOf(op, part);
  if ("platforms" in params) {
    return both
      ? { param: "platforms", message: "Send `platform` or `platforms`, not both.", allowed: ["platform", "platforms"] }
      : { param: "platform", message: "`platform` is required.", allowed: params["platform"]?.allowed ?? PLATFORMS };
  }
  return {
    param: "id",
    message:
      "Exactly one of `id`, `url` must be given; only one of them may be a list; each value of a list is fetched and charged as its own call.",
    allowed: ["id", "url"],
  };
}

/** The seed's wording for a failing parameter, where the seed words it; else the spec's bound in words. */
function wordingFor(param: string, info: ParamInfo | undefined, error: AjvError, value: unknown): InvalidParams {
  const allowed = info?.allowed;
  const base = { param, ...(allowed ? { allowed } : {}) };
  switch (param) {
    case "query":
      if (error.keyword === "required") return { ...base, message: "`query` is required." };
      if (error.keyword === "minLength" || error.keyword === "maxLength")
        return { ...base, message: "`query` must be text of 1 to 500 characters." };
      return { ...base, message: "`query` must be a non-empty string or a whole number." };
    case "Idempotency-Key":
      if (error.keyword === "required") {
        return {
          ...base,
          message:
            "`Idempotency-Key` is missing: send the header with 1 to 255 visible ASCII characters, a new value for each new call.",
        };
      }
      return { ...base, message: "`Idempotency-Key` must be 1 to 255 visible ASCII characters." };
    case "cursor":
      return { ...base, message: "`cursor` is invalid or expired; restart without `cursor`." };
    case "format":
      return { ...base, message: "`format` is one of `json`, `csv`, `ndjson`." };
    case "window":
      return {
        ...base,
        message: `\`window\` is not a value this tool takes (allowed: ${(allowed ?? []).join(", ")}).`,
      };
    case "range":
      return { ...base, message: `\`range\` must be one of the tool's values (${(allowed ?? []).join(", ")}).` };
    case "include":
      if (error.keyword === "enum")
        return { ...base, message: `\`include\` does not offer ${String(value)} for this call.` };
      break;
    case "platforms":
      if (error.keyword === "maxItems")
        return { ...base, message: "`platforms` takes at most 5; one request takes at most 20 platforms or targets." };
      break;
  }
  if (TARGET_LISTS.has(param) && error.keyword === "maxItems")
    return { ...base, message: "One request takes at most 20 platforms or targets." };
  if (error.keyword === "required") return { ...base, message: `\`${param}\` is required.` };
  return { ...base, message: `\`${param}\` must be ${info?.wording ?? "valid"}.` };
}

/** Explains a failed validation of one request part in the seed's terms. @group Requests */
export function explainFailure(
  op: OperationInfo,
  part: RequestPart,
  errors: readonly AjvError[],
  value: unknown,
): InvalidParams {
  if (part === "body" && (value === null || typeof value !== "object" || Array.isArray(value))) {
    return invalidBody();
  }
  const one = exactlyOne(op, part, errors);
  if (one) return one;
  const params = paramsOf(op, part);
  // Inside a oneOf each branch reports its first failure; a `type` failure only says that branch was the wrong
  // shape, so the failure of the branch of the right shape (a list too long, a number too big) explains better.
  const substantive = errors.filter((e) => e.keyword !== "oneOf" && e.keyword !== "discriminator");
  const error = substantive.find((e) => e.keyword !== "type") ?? substantive[0] ?? errors[0];
  if (!error) return { param: part, message: `The ${part} of this call is not valid.` };

  if (error.keyword === "additionalProperties" && error.instancePath === "") {
    const name = String(error.params["additionalProperty"]);
    if (name === "")
      return {
        param: "(empty name)",
        message: "A parameter with an empty name is not a parameter of this call.",
        allowed: Object.keys(params),
      };
    return {
      param: canonical(op, part, name),
      message: `\`${name}\` is not a parameter of this call.`,
      allowed: Object.keys(params),
    };
  }
  if (error.schemaPath.startsWith("#/dependentSchemas/platforms")) {
    return {
      param: "cursor",
      message:
        "`cursor` cannot be sent with `platforms`; continue one platform with `platform` and that platform's `cursor`.",
    };
  }
  if (error.schemaPath.startsWith("#/dependentSchemas/cursor")) {
    return { param: "cursor", message: "`cursor` goes with a single `id` or `url`, not with a list." };
  }
  const name =
    error.keyword === "required" && error.instancePath === ""
      ? String(error.params["missingProperty"])
      : decode(error.instancePath.split("/")[1] ?? part);
  const param = canonical(op, part, name);
  const path = error.instancePath.split("/").slice(1).map(decode);
  if (path.length > 1 && error.keyword === "enum" && typeof path[1] === "string" && !/^\d+$/.test(path[1])) {
    // A member of an object parameter (`schedule.every`): name the member and its values.
    const values = ((error.params as { allowedValues?: unknown[] }).allowedValues ?? []).map(String);
    return {
      param,
      message: `\`${param}.${path.slice(1).join(".")}\` must be one of ${values.join(", ")}.`,
      ...(values.length ? { allowed: values } : {}),
    };
  }
  return wordingFor(param, params[param] ?? params[name], error, valueAt(value, error.instancePath));
}

/** Case 1: the body is not one JSON object, or not valid JSON. @group Requests */
export function invalidBody(): InvalidParams {
  return {
    param: "body",
    message: "The body must be one JSON object.",
    note: "Send one JSON object with `Content-Type: application/json`.",
  };
}
