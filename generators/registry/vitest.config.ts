import { defineConfig } from "vitest/config";

/**
 * The registry tests (`pnpm test:registry`): slow (they install from registries on several Node versions), so
 * apart from `pnpm test`; `.ci/run` runs both. They test the published files, so no `source` condition here.
 */
export default defineConfig({
  test: {
    root: new URL("../..", import.meta.url).pathname,
    include: ["generators/registry/**/*.test.ts"],
    globalSetup: ["generators/registry/global-setup.ts"],
    testTimeout: 600_000,
    hookTimeout: 900_000,
    // npm installs are mostly waiting on the network and disk; two files at once keep both cores busy.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
