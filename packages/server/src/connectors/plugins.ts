/**
 * An operator's own connectors (D158): a module that exports a `ConnectorDefinition` (`export default`, or `export
 * const connector`) for one of the ten platforms — a licensed source the operator pays, an internal service — loaded
 * at start-up from the paths `SDGW_CONNECTORS` names, its settings read from the variables it declares. What it
 * exports, and the provider it builds, are checked before the server starts: a malformed plug-in stops the start with
 * a message naming the module and what is wrong, never a secret.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { PLATFORMS, type Platform } from "@sdgw/types";
import type { PlatformProvider } from "@sdgw/engine";
import type { ConnectorDefinition, RawSettings } from "@sdgw/engine/connectors";
import { ConfigError, type ServerOptions } from "../config.ts";

const ROUTE_OPS = new Set(["search", "trending", "detail", "comments", "user_profile", "user_posts"]);

/** What is wrong with a module's export as a `ConnectorDefinition`, as sentences (none: it is one). */
export function definitionProblems(def: unknown): string[] {
  if (typeof def !== "object" || def === null)
    return ["it exports no connector: `export default` (or `export const connector`) a ConnectorDefinition"];
  const d = def as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof d["platform"] !== "string" || !(PLATFORMS as readonly string[]).includes(d["platform"]))
    problems.push(`"platform" must be one of ${PLATFORMS.join(", ")} (got ${JSON.stringify(d["platform"])})`);
  if (typeof d["api"] !== "string" || d["api"] === "") problems.push(`"api" must name the source it reads`);
  if (!Array.isArray(d["settings"])) problems.push(`"settings" must be a list (it may be empty)`);
  else
    for (const s of d["settings"] as Record<string, unknown>[])
      if (typeof s?.["name"] !== "string" || typeof s["env"] !== "string" || !/^SDGW_[A-Z0-9_]+$/.test(s["env"]))
        problems.push(
          `each setting needs a "name" and an "env" variable SDGW_… (got ${JSON.stringify(s).slice(0, 80)})`,
        );
  for (const f of ["configure", "budget", "secrets", "describe", "create"])
    if (typeof d[f] !== "function") problems.push(`"${f}" must be a function`);
  return problems;
}

/**
 * The provider a plug-in built, checked against the platform (D158): its platform, its operations (each one the
 * platform has, with a price of whole credits from 1 and a pricing), its functions; marked `plugged`. Or the
 * problems.
 */
export function pluggedProvider(
  platform: Platform,
  made: unknown,
  simulated: PlatformProvider | undefined,
): { provider: PlatformProvider } | { problems: string[] } {
  const p = made as PlatformProvider | null;
  const problems: string[] = [];
  if (typeof p !== "object" || p === null) return { problems: ["create() returned no provider"] };
  if (p.platform !== platform)
    problems.push(`its provider says platform ${JSON.stringify(p.platform)}, not ${platform}`);
  for (const f of ["call", "unsupported", "cursorValid"] as const)
    if (typeof p[f] !== "function") problems.push(`its provider has no ${f}() function`);
  if (typeof p.scoped !== "boolean") problems.push(`its provider must say whether it is "scoped" (true or false)`);
  const known = new Set([...ROUTE_OPS, ...(simulated?.operations ?? []).map((o) => o.name)]);
  if (!Array.isArray(p.operations) || p.operations.length === 0) problems.push("its provider lists no operations");
  else
    for (const o of p.operations) {
      const name = typeof o?.name === "string" ? o.name : JSON.stringify(o?.name);
      if (!known.has(String(o?.name)))
        problems.push(`operation ${name} is not one ${platform} has (${[...known].join(", ")})`);
      if (!Number.isSafeInteger(o?.price) || o.price < 1)
        problems.push(`operation ${name}: "price" must be whole credits from 1 (got ${JSON.stringify(o?.price)})`);
      if (o?.pricing !== "standard" && o?.pricing !== "placeholder")
        problems.push(`operation ${name}: "pricing" must be "standard" or "placeholder"`);
      if (typeof o?.description !== "string" || o.description === "")
        problems.push(`operation ${name}: "description" must say what it does`);
    }
  if (problems.length) return { problems };
  return { provider: { ...p, source: "plugged" } as PlatformProvider };
}

/**
 * Loads the modules of `SDGW_CONNECTORS` (comma-separated paths, relative to `cwd`) and checks what each exports;
 * throws a {@link ConfigError} naming each module at fault.
 */
export async function loadPlugins(list: string | undefined, cwd = process.cwd()): Promise<ConnectorDefinition[]> {
  const paths = (list ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  const out: ConnectorDefinition[] = [];
  const problems: string[] = [];
  for (const path of paths) {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(resolve(cwd, path)).href)) as Record<string, unknown>;
    } catch (e) {
      problems.push(
        `SDGW_CONNECTORS: ${path} could not be loaded (${e instanceof Error ? e.message.split("\n")[0] : String(e)})`,
      );
      continue;
    }
    const def = mod["default"] ?? mod["connector"];
    const wrong = definitionProblems(def);
    if (wrong.length) problems.push(...wrong.map((w) => `SDGW_CONNECTORS: ${path}: ${w}`));
    else out.push(def as ConnectorDefinition);
  }
  if (problems.length) throw new ConfigError(problems);
  return out;
}

/** The settings of loaded plug-ins from the variables each declares, by platform. */
export function pluginSettingsFromEnv(
  plugins: readonly ConnectorDefinition[],
  env: NodeJS.ProcessEnv,
): Partial<Record<Platform, RawSettings>> {
  const out: Partial<Record<Platform, RawSettings>> = {};
  for (const def of plugins) {
    const raw: Record<string, string> = {};
    for (const s of def.settings) if (env[s.env] !== undefined && env[s.env] !== "") raw[s.name] = env[s.env]!;
    out[def.platform] = raw;
  }
  return out;
}

/**
 * D158: `options` with the operator's own connectors added, as `pnpm start` and `sdgw-mcp` load them: the modules
 * `SDGW_CONNECTORS` names, each one's settings from the variables it declares (over any of this build's).
 *
 * @throws {@link ConfigError} naming each module at fault.
 */
export async function withPluginsFromEnv<O extends Pick<ServerOptions, "connectors" | "plugins">>(
  options: O,
  env: NodeJS.ProcessEnv = process.env,
): Promise<O> {
  const plugins = await loadPlugins(env["SDGW_CONNECTORS"]);
  if (!plugins.length) return options;
  return { ...options, plugins, connectors: { ...options.connectors, ...pluginSettingsFromEnv(plugins, env) } };
}
