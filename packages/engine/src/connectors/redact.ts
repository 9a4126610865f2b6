/**
 * Secrets out of anything a connector logs or records (D116, D123): credentials in query parameters and headers,
 * and any known secret value wherever it appears in a text.
 */

/** Query parameters that carry credentials on the platforms we read (YouTube's `key`, OAuth tokens). */
export const SECRET_QUERY_PARAMS: readonly string[] = [
  "key",
  "api_key",
  "apikey",
  "access_token",
  "token",
  "oauth_token",
];

/** Request headers that carry credentials or sessions. */
export const SECRET_HEADERS: readonly string[] = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  "x-api-key",
  "x-goog-api-key",
];

/** What stands where a secret was. */
export const REDACTED = "REDACTED";

/** `text` with every occurrence of each secret value (4 characters or more) replaced by `REDACTED`. */
export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join(REDACTED);
  return out;
}

/** A URL as it may be logged: the values of secret query parameters replaced, user and password dropped. */
export function redactUrl(url: string, secretParams: readonly string[] = SECRET_QUERY_PARAMS): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return REDACTED;
  }
  u.username = "";
  u.password = "";
  for (const name of [...u.searchParams.keys()])
    if (secretParams.includes(name.toLowerCase())) u.searchParams.set(name, REDACTED);
  return u.href;
}

/** JSON members that carry a credential in a platform's answer (an OAuth token endpoint's). */
export const SECRET_JSON_MEMBERS: readonly string[] = ["access_token", "refresh_token", "id_token"];

/**
 * `text` (a JSON answer) with the value of every member named in `SECRET_JSON_MEMBERS` replaced by `REDACTED`
 * (D152): what a token endpoint answered is recorded without the token.
 */
export function redactJsonSecrets(text: string): string {
  return text.replace(
    new RegExp(`("(?:${SECRET_JSON_MEMBERS.join("|")})"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, "g"),
    `$1"${REDACTED}"`,
  );
}
