/**
 * Global setup of the registry tests: packs every package, starts the local registry and publishes them all once;
 * the test files read the registry's address with `inject("registryUrl")` and install from it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { packAll, publishAll, startRegistry, workspacePackages } from "./harness.ts";

declare module "vitest" {
  export interface ProvidedContext {
    registryUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const out = mkdtempSync(join(tmpdir(), "sdgw-tarballs-"));
  const tarballs = await packAll(workspacePackages(), out);
  const registry = await startRegistry();
  try {
    await publishAll(tarballs, registry);
  } catch (e) {
    await registry.close();
    throw e;
  }
  project.provide("registryUrl", registry.url);
  return async () => {
    await registry.close();
    rmSync(out, { recursive: true, force: true });
  };
}
