/** Upstream exchanges read from a folder in the layout of `fixtures/upstream/<platform>/` (Node only). */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { exchangesOf, type UpstreamExchange } from "@sdgw/engine/connectors";

/**
 * Every exchange under `dir`: each `<name>.request.json` with its body `<name>.json` (other `.json` files, such as
 * error bodies kept for overrides, are read by the tests that use them).
 */
export function loadExchanges(dir: string): UpstreamExchange[] {
  const files: { path: string; text: string }[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith(".json"))
        files.push({ path: relative(dir, p).split(sep).join("/"), text: readFileSync(p, "utf8") });
    }
  };
  walk(dir);
  return exchangesOf(files).map((x) => ({ ...x, source: join(dir, x.source ?? "") }));
}
