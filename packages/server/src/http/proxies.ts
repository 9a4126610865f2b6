/**
 * D111: the server behind proxies (a load balancer, a reverse proxy). Off by default: the client is the socket's
 * peer and `X-Forwarded-*` headers are ignored. With `trustProxy` (env `SDGW_TRUST_PROXY`), Fastify's `req.ip`,
 * `req.protocol` and `req.host` follow `X-Forwarded-For`, `X-Forwarded-Proto` and `X-Forwarded-Host` as far as the
 * trusted proxies go, so the per-address limits, the console's sign-in throttling and its `Secure` cookie follow
 * the client behind them; and the connection cap per address (D57) does not count a trusted proxy's own sockets.
 *
 * Fastify 5 itself trusts nothing when given a number (a bare hop count cannot tell a proxy from a client that
 * reaches the server directly), so both forms are handed to it as a function of (address, hop).
 */
import { BlockList, isIP } from "node:net";

/**
 * Which peers' `X-Forwarded-For` and `X-Forwarded-Proto` are believed (D111): a number of proxies in front (every
 * request passes that many; each socket's peer is taken for the nearest), the proxies' addresses and CIDR ranges
 * (IPv4 or IPv6, or the names `loopback`, `linklocal`, `uniquelocal`), or null: none (the default).
 */
export type TrustProxy = number | readonly string[] | null;

/** The ranges of the names proxy-addr (Express, Fastify) takes. */
const NAMED: Readonly<Record<string, readonly string[]>> = {
  loopback: ["127.0.0.1/8", "::1/128"],
  linklocal: ["169.254.0.0/16", "fe80::/10"],
  uniquelocal: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"],
};

const WHAT =
  "the number of proxies in front (a whole number from 1) or a comma-separated list of the proxies' " +
  "addresses or CIDR ranges (IPv4 or IPv6; loopback, linklocal, uniquelocal)";

/** A value of `trustProxy` that is not one: the message names the setting (`SDGW_TRUST_PROXY` or `trustProxy`). */
export class TrustProxyError extends Error {
  constructor(name: string, got: unknown) {
    super(`${name} must be ${WHAT} (got ${JSON.stringify(got)})`);
    this.name = "TrustProxyError";
  }
}

/** One address or range, or null when it is not one: `[address, prefix length, family]`. */
function rangeOf(entry: string): [string, number, "ipv4" | "ipv6"] | null {
  const slash = entry.indexOf("/");
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0 || address.includes("%")) return null;
  const max = family === 4 ? 32 : 128;
  const prefix = slash < 0 ? max : /^\d{1,3}$/.test(entry.slice(slash + 1)) ? Number(entry.slice(slash + 1)) : -1;
  if (prefix < 0 || prefix > max) return null;
  return [address, prefix, family === 4 ? "ipv4" : "ipv6"];
}

/**
 * Checks a `trustProxy` value given in code and gives it back: null, a whole number from 1, or a non-empty list of
 * addresses, CIDR ranges and names.
 *
 * @throws {@link TrustProxyError} naming `name` for anything else.
 */
export function checkTrustProxy(value: unknown, name = "trustProxy"): TrustProxy {
  if (value === null || value === undefined) return null;
  if (typeof value === "number") {
    if (Number.isSafeInteger(value) && value >= 1) return value;
    throw new TrustProxyError(name, value);
  }
  if (!Array.isArray(value) || value.length === 0) throw new TrustProxyError(name, value);
  const entries = value.map((v) => (typeof v === "string" ? v.trim() : v));
  for (const e of entries)
    if (typeof e !== "string" || !(e.toLowerCase() in NAMED || rangeOf(e))) throw new TrustProxyError(name, e);
  return entries as string[];
}

/**
 * Reads `SDGW_TRUST_PROXY`: a whole number from 1 (the proxies in front) or a comma-separated list of addresses,
 * CIDR ranges and names (`10.0.0.0/8, 2001:db8::/32, loopback`).
 *
 * @throws {@link TrustProxyError} naming `name`.
 */
export function parseTrustProxy(raw: string, name = "SDGW_TRUST_PROXY"): TrustProxy {
  const text = raw.trim();
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (Number.isSafeInteger(hops) && hops >= 1) return hops;
    throw new TrustProxyError(name, raw);
  }
  const entries = text.split(",").map((e) => e.trim());
  if (entries.some((e) => e === "")) throw new TrustProxyError(name, raw);
  try {
    return checkTrustProxy(entries, name);
  } catch (e) {
    throw e instanceof TrustProxyError ? new TrustProxyError(name, raw) : e;
  }
}

/** How a server applies `trustProxy`. */
export interface ProxyTrust {
  /**
   * Fastify's `trustProxy`: whether the address `hop` steps from the server (0: the socket's peer, then
   * `X-Forwarded-For` from its right end) is a trusted proxy, whose word on the next one is believed.
   */
  trusts(address: string, hop: number): boolean;
  /**
   * Whether a connection from this peer is left out of the cap per address (D57): a trusted proxy carries many
   * clients. With a hop count every peer is taken for a proxy, so the cap applies to none.
   */
  exempts(remoteAddress: string | undefined): boolean;
}

/** The trust of a `trustProxy` value (null: trust none, as Fastify's default). */
export function proxyTrust(value: TrustProxy): ProxyTrust | null {
  const trust = checkTrustProxy(value);
  if (trust === null) return null;
  if (typeof trust === "number") return { trusts: (_address, hop) => hop < trust, exempts: () => true };
  const list = new BlockList();
  for (const entry of trust) {
    for (const one of NAMED[entry.toLowerCase()] ?? [entry]) {
      const [address, prefix, family] = rangeOf(one)!;
      list.addSubnet(address, prefix, family);
    }
  }
  const listed = (address: string | undefined) => {
    const family = address ? isIP(address) : 0;
    return family !== 0 && list.check(address!, family === 4 ? "ipv4" : "ipv6");
  };
  return { trusts: (address) => listed(address), exempts: listed };
}
