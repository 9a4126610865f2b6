import { defineConfig } from "tsup";

// @sdgw/types is types only: its declarations are inlined into ours (dts.resolve), so the published client needs
// no runtime dependency but openapi-fetch.
export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm", "cjs"],
  dts: { resolve: ["@sdgw/types"] },
  platform: "neutral",
  target: "es2022",
  clean: true,
  treeshake: true,
  external: ["openapi-fetch"],
});
