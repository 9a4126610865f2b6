import { defineConfig } from "vitest/config";
import type { Reporter, TestModule } from "vitest/node";

/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own summary, so that CI
 * (which reads plain "N passed, N failed" lines, not vitest's coloured table) can count what ran.
 */
const closingCount: Reporter = {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") counts.passed++;
        else if (state === "failed") counts.failed++;
        else counts.skipped++;
      }
    }
    console.log(`\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  },
};

export default defineConfig({
  // Workspace packages export "source": "./src/index.ts" before their dist files, so tests run against the
  // sources with no build. Node-side tests resolve in vite's `ssr` environment (`ssr.resolve`), which vitest also
  // passes to its workers as `--conditions`; `resolve` covers the `client` environment (jsdom, happy-dom).
  // Vitest's config plugin supplies its own defaults for both (`node`, `development|production`) and vite
  // concatenates arrays, so the lists resolve to ["source", "node", "development|production"]: the defaults stay.
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    include: [
      "spec/**/*.test.ts",
      "fixtures/**/*.test.ts",
      "generators/**/*.test.ts",
      "packages/*/test/**/*.test.ts",
      "packages/*/src/**/*.test.ts",
      "examples/**/*.test.ts",
      "docs/*.test.ts",
    ],
    // The registry tests install from registries on three Node versions: `pnpm test:registry` runs them.
    exclude: ["**/node_modules/**", "**/dist/**", "generators/registry/**"],
    reporters: ["default", closingCount],
    // Many tests start processes and databases: on a busy 2-core machine vitest's 5 s default fails them for being
    // slow, not wrong. A test that hangs still fails, after 60 s.
    testTimeout: 60_000,
    // Two test files at a time, even on 2 cores (vitest's default there is one: the cores less one). Most files
    // wait on processes, sockets, databases and Retry-After more than they compute; their databases, Redis prefixes
    // and ports are their own, so files never share state.
    maxWorkers: 2,
    hookTimeout: 60_000,
    typecheck: {
      enabled: true,
      checker: "tsc",
      tsconfig: "./tsconfig.json",
      include: ["packages/*/test/**/*.test-d.ts"],
      exclude: ["**/node_modules/**", "**/dist/**"],
    },
  },
});
