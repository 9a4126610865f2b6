/**
 * The fingerprint of a call's parameters (D35), the same on every store: the operation and the validated request
 * as canonical JSON (keys sorted), hashed. It is stored with every Idempotency-Key's record and compared with the
 * fingerprints of records written before, by another process or a previous version: changing it would answer 422
 * to a true replay across an upgrade.
 */
import { hash } from "node:crypto";

/** JSON with object keys sorted, so that `{a,b}` and `{b,a}` give the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  let out: string;
  if (Array.isArray(value)) {
    out = "[";
    for (let i = 0; i < value.length; i++) out += (i > 0 ? "," : "") + (i in value ? canonicalJson(value[i]) : "");
    return `${out}]`;
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length > 1) keys.sort();
  out = "{";
  let first = true;
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined) continue;
    out += `${first ? "" : ","}${JSON.stringify(k)}:${canonicalJson(v)}`;
    first = false;
  }
  return `${out}}`;
}

/** The fingerprint of a request: SHA-256 of the operation and its canonical parameters. */
export function fingerprint(operation: string, params: unknown): string {
  return hash("sha256", `${operation}\n${canonicalJson(params)}`, "base64url");
}
