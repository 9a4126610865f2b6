/**
 * `pnpm registry`: the packages of this checkout on a local registry, for trying them as users install them before
 * they are on the public registry. Builds and packs every package, publishes them to Verdaccio on
 * 127.0.0.1:4873 (`--port N` for another; it serves only `@sdgw/*` and fetches nothing from elsewhere), prints
 * the line a project's `.npmrc` needs, and serves until Ctrl-C (its storage is deleted then).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { packAll, publishAll, startRegistry, workspacePackages } from "./harness.ts";

const { values } = parseArgs({ options: { port: { type: "string", default: "4873" } } });
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`pnpm registry: --port must be a port number, 0 to 65535 (got ${values.port})`);
  process.exit(2);
}
const packages = workspacePackages();
const out = mkdtempSync(join(tmpdir(), "sdgw-tarballs-"));
const began = Date.now();
/** One line per step, with the seconds since the start: building a package takes up to a minute on a slow machine. */
const progress = (line: string) => console.log(`${((Date.now() - began) / 1000).toFixed(0).padStart(4)} s  ${line}`);
console.log(
  `Building, packing and publishing ${packages.length} packages to a local registry (a few minutes the first time):`,
);
const tarballs = await packAll(packages, out, progress);
progress(`starting the registry on 127.0.0.1:${port}…`);
const registry = await startRegistry(port);
await publishAll(tarballs, registry, progress);
rmSync(out, { recursive: true, force: true });
console.log(`
${packages.map((p) => `${p.name}@${p.version}`).join(", ")} published to ${registry.url}

In your project, add this line to its .npmrc (every other package still comes from the npm registry):

  @sdgw:registry=${registry.url}

then install as the READMEs say, e.g. npm install @sdgw/client. Serving until Ctrl-C.`);
const stop = async () => {
  await registry.close();
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
