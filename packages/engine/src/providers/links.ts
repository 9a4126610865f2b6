/** Links an upstream writes, made into URIs the contract's `format: uri` accepts. */

/**
 * A parsed URL as an RFC 3986 URI: WHATWG's `href` leaves some characters in the path, query and fragment that a URI
 * may not hold there (`[`, `]`, `|`, `^`, a `%` not followed by two hex digits…); those are percent-encoded. The
 * origin is kept as parsed (an IPv6 host keeps its brackets; user information is dropped).
 */
export const asUri = (u: URL): string =>
  u.origin +
  `${u.pathname}${u.search}${u.hash}`.replace(/%(?![0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~:/?#@!$&'()*+,;=%]/gu, (c) =>
    encodeURIComponent(c),
  );

/**
 * `text` as a URI when it is a link `scheme` accepts (tested on the text as written, e.g. `/^https:\/\//`, or a
 * path `/^\/(?!\/)/` read against `base`, which it may not leave: `/\\other.host` is no path of `base`); undefined
 * for anything else (placeholders, text that is no URL).
 */
export function linkOf(text: string | undefined, scheme: RegExp, base?: string): string | undefined {
  if (!text || !scheme.test(text)) return undefined;
  try {
    const u = new URL(text, base);
    return base === undefined || u.origin === new URL(base).origin ? asUri(u) : undefined;
  } catch {
    return undefined;
  }
}
