/** base64url of UTF-8 text, in any JavaScript runtime (no `Buffer`): cursors and tokens the gateway writes. */

/** base64url of UTF-8 text (no padding). */
export function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The text of a base64url string, or undefined when it is not one (or its bytes are not UTF-8). */
export function fromBase64url(value: string): string | undefined {
  try {
    const bin = atob(value.replace(/-/g, "+").replace(/_/g, "/"));
    return STRICT_UTF8.decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
}
