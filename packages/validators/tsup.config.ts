import { defineConfig } from "tsup";

// ajv's runtime helpers (ucs2length, equal, the ajv-formats checks) are devDependencies and get bundled, so the
// shipped files import nothing from ajv: no schema compiler, no eval, no require() in the ESM build. The error
// catalogue of @sdgw/types (a few hundred bytes) is bundled too, so the bundle imports nothing at all.
export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm", "cjs"],
  dts: true,
  platform: "neutral",
  target: "es2022",
  sourcemap: false,
  minify: true,
  clean: true,
  treeshake: true,
  noExternal: ["ajv", "ajv-formats", "@sdgw/types"],
  esbuildOptions(options) {
    options.mainFields = ["module", "main"];
  },
});
