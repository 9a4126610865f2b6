import { defineConfig } from "tsup";

/**
 * ESM (`dist/index.js`) and CJS (`dist/index.cjs`) with their declarations (`index.d.ts`, `index.d.cts`).
 * Workspace consumers and tests do not need this build: they resolve the `source` export condition to src/.
 */
export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm", "cjs"],
  dts: true,
  tsconfig: "tsconfig.build.json",
  target: "es2022",
  platform: "node",
  outDir: "dist",
  clean: true,
  sourcemap: false,
  splitting: false,
  treeshake: true,
});
