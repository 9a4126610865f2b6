/**
 * Builds the console into dist/, served by @sdgw/server at /console/. Preact's JSX through Vite's own oxc
 * transform (no Babel preset needed); workspace packages resolve to their sources (`source` condition). The
 * Playground's lazy chunk holds @sdgw/validators' precompiled request validators (about 800 KB minified, 58 KB gzip).
 */
import { defineConfig } from "vite";

export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  resolve: { conditions: ["source"] },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1200,
    modulePreload: { polyfill: false },
  },
});
