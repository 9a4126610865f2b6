/**
 * D25 and D50: a key sent in a URL has leaked, whatever the route. These are the query parameter names under which
 * clients and tools put keys; a request with any of them (in any letter case, even empty) is refused first with
 * `401 unauthorized`, reason `key_in_query`, and each value is treated as an exposed key.
 * @group Requests
 */
export const KEY_QUERY_NAMES: readonly string[] = ["key", "api_key", "apikey", "token", "access_token"];

const NAMES = new Set(KEY_QUERY_NAMES);
// A cheap first look: a name of the list, or a percent-encoded name that may decode to one. Most queries have neither.
const MAY_NAME_KEY = /(?:^\??|&)(?:(?:key|api_?key|token|access_token)(?:[=&]|$)|[^&=]*%)/i;

/**
 * The values sent under a key's name in a raw query string (with or without its `?`), as `URLSearchParams` reads
 * them; `null` when no parameter has such a name.
 * @group Requests
 */
export function keysInQuery(rawQuery: string): string[] | null {
  if (!MAY_NAME_KEY.test(rawQuery)) return null;
  let found: string[] | null = null;
  for (const [name, value] of new URLSearchParams(rawQuery)) {
    if (!NAMES.has(name.toLowerCase())) continue;
    found ??= [];
    found.push(value);
  }
  return found;
}

/** The `reason`, `message` and `fix` of the `key_in_query` refusal, the same from the server and the mock. @group Requests */
export function keyInQueryRefusal(consoleUrl: string): {
  reason: "key_in_query";
  message: string;
  fix: { action_url: string; note: string };
} {
  return {
    reason: "key_in_query",
    message: "A key was sent in the URL (?key=, ?api_key=, ?token=, …) and is refused; treat it as exposed.",
    fix: {
      action_url: consoleUrl,
      note: "Revoke this key, create a new one and send it in the X-API-Key or Authorization: Bearer header, never in the URL.",
    },
  };
}
