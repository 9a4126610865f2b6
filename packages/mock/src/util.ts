/** Fresh ids: request ids and handles. Browser-safe (Web Crypto only). */

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"; // Crockford base32, as in the fixtures' request ids
const HANDLE_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

function randomString(length: number, alphabet: string): string {
  const bytes = new Uint8Array(length);
  globalThis.crypto.getRandomValues(bytes);
  let out = "";
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

/** A fresh `request_id`, shaped like the fixtures' (`req_` and 26 base32 characters). */
export function newRequestId(): string {
  return `req_${randomString(26, ALPHABET)}`;
}

/** A fresh results handle (`h_` and 12 letters or digits). */
export function newHandle(): string {
  return `h_${randomString(12, HANDLE_ALPHABET)}`;
}
