/**
 * Links in `targets` and `accounts`: the contract's link rules live in `@sdgw/validators` (one parser for the
 * server, the mock and any client that checks a link before sending it).
 */
export { platformOfHost, resolveLink } from "@sdgw/validators";
export type { LinkKind, LinkResolution, ResolvedLink } from "@sdgw/validators";
