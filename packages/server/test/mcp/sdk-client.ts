/**
 * Loads the official MCP client (`@modelcontextprotocol/client`) in tests. The test run resolves with the `source`
 * condition (workspace packages export their TypeScript sources); a dependency of the client, `eventsource`, also
 * exports `source` (TypeScript under node_modules, which Node will not strip). A resolve hook drops `source` for
 * imports made from inside node_modules, where it is never meant to apply.
 */
import { registerHooks } from "node:module";

let registered = false;
if (!registered) {
  registered = true;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (context.parentURL?.includes("/node_modules/") && context.conditions?.includes("source")) {
        return nextResolve(specifier, { ...context, conditions: context.conditions.filter((c) => c !== "source") });
      }
      return nextResolve(specifier, context);
    },
  });
}

/** The official client package, loaded after the hook above. */
export const sdk: typeof import("@modelcontextprotocol/client") = await import("@modelcontextprotocol/client");
