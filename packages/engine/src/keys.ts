/**
 * The key a request presents (D25): in `X-API-Key` or as `Authorization: Bearer <key>` (one key, or the same in
 * both), or why it presents none that can be read — the reasons and words of the reference server's `401
 * unauthorized`. Pure: looking the key up is the caller's.
 */

/** The key a request presents, or why not (`reason`, `message` and `fix.note` of its 401 answer). */
export type PresentedKey =
  | { ok: true; key: string }
  | { ok: false; reason: "missing" | "invalid"; message: string; note: string };

/** Reads the key of a request from its headers (lower-case names). */
export function presentedKey(headers: Readonly<Record<string, string | undefined>>): PresentedKey {
  const header = headers["x-api-key"];
  const auth = headers["authorization"];
  const bearer = auth === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1];
  if (auth !== undefined && bearer === undefined) {
    const note = "Send your key as `Authorization: Bearer <key>` or in the X-API-Key header.";
    return { ok: false, reason: "invalid", message: "The Authorization header must be `Bearer <key>`.", note };
  }
  if (header !== undefined && bearer !== undefined && header !== bearer) {
    const note = "Send one key: in X-API-Key or as Authorization: Bearer, or the same key in both.";
    return { ok: false, reason: "invalid", message: "X-API-Key and Authorization carry two different keys.", note };
  }
  const key = header ?? bearer;
  if (key) return { ok: true, key };
  const note = "Send your key in the X-API-Key header or as Authorization: Bearer.";
  return { ok: false, reason: "missing", message: "No key was sent; a valid key is required.", note };
}

/** The display prefix of a key (its first 12 characters), never enough to use it: how answers show a key. */
export function keyPrefix(secret: string): string {
  return secret.slice(0, 12);
}
