import { defineConfig } from "tsup";

// The generated validators import their run-time helpers and formats from src/runtime.ts and src/formats.ts (ESM
// copies, D96), so the shipped files import nothing from ajv: no schema compiler, no eval, no require() in the ESM
// build. The error catalogue of @sdgw/types (a few hundred bytes) is bundled too, so the bundle imports nothing.
export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm", "cjs"],
  dts: true,
  platform: "neutral",
  target: "es2022",
  sourcemap: false,
  // Minified names and syntax, not whitespace: esbuild drops `/* @__PURE__ */` with the whitespace, and without
  // those a user's bundler keeps every validator when one is imported (57 KB instead of 11 KB min+gzip).
  minify: false,
  clean: true,
  treeshake: true,
  noExternal: ["@sdgw/types"],
  esbuildOptions(options) {
    options.mainFields = ["module", "main"];
    // @sdgw/types from its sources, so the build needs no other package built first (a fresh clone, the bench).
    options.conditions = ["source"];
    options.minifySyntax = true;
    options.minifyIdentifiers = true;
  },
});
