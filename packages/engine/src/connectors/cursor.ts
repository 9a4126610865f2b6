/**
 * Opaque cursors of live connectors (D115): what the upstream needs to go on (its page token and whatever state
 * page 1 fixed, such as the `publishedAfter` a `time_range` became), bound to the platform, the operation and a
 * hash of the other parameters, versioned, as base64url JSON. A cursor of another platform, operation or query, a
 * garbled one and one of another version are all refused (`invalid_params` naming `cursor`) before anything runs.
 */
import { base64url, fromBase64url } from "../encoding.ts";
import { hash32 } from "../providers/simulator/gen.ts";
import { seedText } from "../canonical.ts";
import type { ProviderOutcome } from "../providers/port.ts";
import { invalidTarget } from "./errors.ts";

/** The version written into every cursor; a cursor of another version is refused. */
export const CURSOR_VERSION = 1;

/** The longest cursor the contract carries (`page.cursor`, `cursor`: 1 to 20 000 characters). */
export const MAX_CURSOR_LENGTH = 20_000;

/** Parameters that do not change what the pages are: paging itself, how many per page, the request's own. */
const UNBOUND = new Set(["cursor", "count", "limit", "max_cost_credits", "op", "platform"]);

/** What a cursor is bound to. `params` are the call's parameters, normalised by the connector (a link → its id). */
export interface CursorBinding {
  platform: string;
  operation: string;
  params: Readonly<Record<string, unknown>>;
}

/** The state a connector keeps in a cursor: short strings and numbers (a page token, an offset). */
export type CursorState = Readonly<Record<string, string | number>>;

/** 64 bits of FNV-1a (two seeds) over the canonical text of the bound parameters, as 16 hex digits. */
export function paramsHash(params: Readonly<Record<string, unknown>>): string {
  const bound: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) if (!UNBOUND.has(k) && v !== undefined) bound[k] = v;
  const text = seedText(bound);
  return (
    hash32(text).toString(16).padStart(8, "0") +
    hash32(text, 0x01000193 ^ 0x9e3779b9)
      .toString(16)
      .padStart(8, "0")
  );
}

/** A cursor carrying `state`; null when it would be longer than the contract allows. */
export function encodeCursor(binding: CursorBinding, state: CursorState): string | null {
  const cursor = base64url(
    JSON.stringify({
      v: CURSOR_VERSION,
      p: binding.platform,
      o: binding.operation,
      h: paramsHash(binding.params),
      s: state,
    }),
  );
  return cursor.length <= MAX_CURSOR_LENGTH ? cursor : null;
}

/** The state of a cursor written for this binding, or null when it is garbled, of another version or bound elsewhere. */
export function decodeCursor(binding: CursorBinding, cursor: string): CursorState | null {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const text = fromBase64url(cursor);
  if (text === undefined) return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const c = v as Record<string, unknown>;
  if (c["v"] !== CURSOR_VERSION || c["p"] !== binding.platform || c["o"] !== binding.operation) return null;
  if (c["h"] !== paramsHash(binding.params)) return null;
  const s = c["s"];
  if (typeof s !== "object" || s === null || Array.isArray(s)) return null;
  for (const value of Object.values(s)) if (typeof value !== "string" && typeof value !== "number") return null;
  return s as CursorState;
}

/**
 * Where a call goes on from: the state of its `cursor` (none: the first page), or the refusal of a cursor not
 * written for this binding (`invalid_params` naming `cursor`), before anything is asked of the upstream.
 */
export function resumeState(
  binding: CursorBinding,
  cursor: unknown,
): { state: CursorState } | { outcome: ProviderOutcome } {
  if (typeof cursor !== "string") return { state: {} };
  const decoded = decodeCursor(binding, cursor);
  return decoded
    ? { state: decoded }
    : {
        outcome: invalidTarget(
          "cursor",
          `\`cursor\` is not a cursor of this ${binding.platform} call; restart without \`cursor\`.`,
        ),
      };
}
