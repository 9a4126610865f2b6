/**
 * Which tools an MCP server offers (D79): toolsets (`data`, `tools`, `discovery`, `account`, or `all`) and the
 * read-only filter (only the free tools). `tools/list` lists, and `tools/call` accepts, only the tools the filter
 * keeps; any other name is an unknown tool.
 */
import { MCP_TOOL_DEFINITIONS, MCP_TOOLSETS, type McpToolDefinition, type McpToolsetName } from "@sdgw/engine/mcp";

export { MCP_TOOLSETS };
export type { McpToolDefinition, McpToolsetName };

/** The env var of `sdgw-mcp` and `/mcp` naming the toolsets to offer (comma-separated; default all). */
export const MCP_TOOLSETS_ENV = "SDGW_MCP_TOOLSETS";

/** The env var of `sdgw-mcp` and `/mcp` that offers only the free tools when `1` or `true`. */
export const MCP_READ_ONLY_ENV = "SDGW_MCP_READ_ONLY";

/** Which tools a server offers. */
export interface McpToolFilter {
  /** The toolsets to offer (default: all). `"all"` stands for every toolset. */
  toolsets?: readonly string[] | null;
  /** Offer only the free tools (`find`, `capabilities`, `account`): nothing can charge (default false). */
  readOnly?: boolean;
}

/** A toolset name that is not one, or a read-only value that is not one: the message names where it came from. */
export class McpToolsetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "McpToolsetError";
  }
}

const NAMES = Object.keys(MCP_TOOLSETS) as McpToolsetName[];

/**
 * Parses a toolset list (`"data,tools"`, `"all"`), naming `source` (e.g. `--toolsets` or `SDGW_MCP_TOOLSETS`) and
 * the allowed names when a name is unknown or the list is empty.
 *
 * @throws {@link McpToolsetError}
 */
export function parseToolsets(value: string | readonly string[], source: string): McpToolsetName[] {
  const names = (typeof value === "string" ? value.split(",") : [...value]).map((n) => n.trim()).filter(Boolean);
  const allowed = `${NAMES.join(", ")} (or all)`;
  if (names.length === 0) throw new McpToolsetError(`${source} names no toolset. Allowed: ${allowed}.`);
  const unknown = names.filter((n) => n !== "all" && !(NAMES as string[]).includes(n));
  if (unknown.length)
    throw new McpToolsetError(
      `${source}: unknown toolset ${unknown.map((n) => JSON.stringify(n)).join(", ")}. Allowed: ${allowed}.`,
    );
  return names.includes("all") ? [...NAMES] : NAMES.filter((n) => names.includes(n));
}

/**
 * Parses a read-only flag value: `1`, `true`, `yes` or `on` (true), `0`, `false`, `no`, `off` or empty (false).
 *
 * @throws {@link McpToolsetError} naming `source` for any other value.
 */
export function parseReadOnly(value: string, source: string): boolean {
  const v = value.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["", "0", "false", "no", "off"].includes(v)) return false;
  throw new McpToolsetError(`${source} must be 1 or 0 (true or false), got ${JSON.stringify(value)}.`);
}

/**
 * The tools a filter keeps, in `tools/list` order: those of its toolsets (all by default) and, read-only, only the
 * free ones. Toolset names are checked as {@link parseToolsets} checks them (source `toolsets`).
 *
 * @throws {@link McpToolsetError} for an unknown toolset name.
 */
export function selectTools(filter: McpToolFilter = {}): readonly McpToolDefinition[] {
  const sets = filter.toolsets ? parseToolsets(filter.toolsets, "toolsets") : NAMES;
  return MCP_TOOL_DEFINITIONS.filter((t) => sets.includes(t.toolset) && (!filter.readOnly || !t.charging));
}

/**
 * The filter of `SDGW_MCP_TOOLSETS` and `SDGW_MCP_READ_ONLY` (unset or empty: no filter).
 *
 * @throws {@link McpToolsetError} naming the variable for a value that is not valid.
 */
export function toolFilterFromEnv(env: NodeJS.ProcessEnv = process.env): McpToolFilter {
  const out: McpToolFilter = {};
  const sets = env[MCP_TOOLSETS_ENV];
  if (sets !== undefined && sets.trim() !== "") out.toolsets = parseToolsets(sets, MCP_TOOLSETS_ENV);
  const ro = env[MCP_READ_ONLY_ENV];
  if (ro !== undefined && parseReadOnly(ro, MCP_READ_ONLY_ENV)) out.readOnly = true;
  return out;
}

/**
 * The filter of `sdgw-mcp`'s command line: `--read-only`, `--toolsets a,b` or `--toolsets=a,b`, over the env's
 * (flags win). Any other argument is refused.
 *
 * @throws {@link McpToolsetError} naming the flag or variable at fault and the allowed names.
 */
export function toolFilterFromArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): McpToolFilter {
  const out = toolFilterFromEnv(env);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--read-only") out.readOnly = true;
    else if (arg === "--toolsets") {
      const value = argv[i + 1];
      if (value === undefined || value.startsWith("--"))
        throw new McpToolsetError(`--toolsets needs a value: a comma-separated list of ${NAMES.join(", ")} (or all).`);
      out.toolsets = parseToolsets(value, "--toolsets");
      i++;
    } else if (arg.startsWith("--toolsets="))
      out.toolsets = parseToolsets(arg.slice("--toolsets=".length), "--toolsets");
    else
      throw new McpToolsetError(
        `Unknown argument ${JSON.stringify(arg)}. sdgw-mcp takes --read-only and --toolsets ${NAMES.join(",")} (or all).`,
      );
  }
  return out;
}
