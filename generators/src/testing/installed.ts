/**
 * The packages as a project installs them, without a registry: each one packed by `pnpm pack` (as `pnpm publish`
 * packs it: its `files`, workspace ranges rewritten) and unpacked into `node_modules/@sdgw/<name>` of a fresh
 * folder, as npm unpacks a tarball. A package's third-party dependencies are the workspace's installs of them
 * (the lockfile's versions), linked into its own `node_modules`; its `@sdgw/*` dependencies are the unpacked
 * ones beside it. Tests measure and compile against these files: what a user's bundler and `tsc` read.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ROOT } from "../generate.ts";
import { packAll, workspacePackages } from "../../registry/harness.ts";

/** A folder whose `node_modules` holds the unpacked packages. */
export interface InstalledPackages {
  /** The project folder (its `node_modules/@sdgw/<name>` are the unpacked packages). */
  dir: string;
  /** The unpacked folder of a package, e.g. `installed.pkg("@sdgw/client")`. */
  pkg(name: string): string;
  /** Links a third-party package the workspace installed (in `from`'s `node_modules`, the root's by default) into the project's own. */
  link(name: string, from?: string): void;
  /** Removes the folder. */
  remove(): void;
}

/** Links every dependency the workspace installed for `pkgDir` but the `@sdgw/*` ones into `into/node_modules`. */
function linkDependencies(pkgDir: string, into: string): void {
  const source = join(pkgDir, "node_modules");
  const target = join(into, "node_modules");
  mkdirSync(target, { recursive: true });
  for (const entry of readdirSync(source)) {
    if (entry === "@sdgw" || entry.startsWith(".")) continue;
    if (entry.startsWith("@")) {
      mkdirSync(join(target, entry), { recursive: true });
      for (const child of readdirSync(join(source, entry)))
        symlinkSync(join(source, entry, child), join(target, entry, child), "dir");
    } else symlinkSync(join(source, entry), join(target, entry), "dir");
  }
}

/** Packs and unpacks every published package of the workspace (built first when stale) into a fresh folder. */
export async function installPacked(): Promise<InstalledPackages> {
  const dir = mkdtempSync(join(tmpdir(), "sdgw-installed-"));
  const packages = workspacePackages();
  const tarballs = await packAll(packages, join(dir, "tarballs"));
  for (const p of packages) {
    const unpacked = join(dir, "unpacked", p.name);
    mkdirSync(unpacked, { recursive: true });
    execFileSync("tar", ["-xzf", tarballs.get(p.name)!, "-C", unpacked]);
    const target = join(dir, "node_modules", p.name);
    mkdirSync(dirname(target), { recursive: true });
    renameSync(join(unpacked, "package"), target);
    linkDependencies(p.dir, target);
  }
  return {
    dir,
    pkg: (name) => join(dir, "node_modules", name),
    link(name, from = ROOT) {
      const resolved = realpathSync(join(from, "node_modules", name));
      const target = join(dir, "node_modules", name);
      mkdirSync(dirname(target), { recursive: true });
      symlinkSync(resolved, target, "dir");
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
