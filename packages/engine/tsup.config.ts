import { defineConfig } from "tsup";

/**
 * ESM and CJS with declarations: the main entry, `./tools` (the tools' building blocks) and `./connectors` (live
 * connectors to real platforms) and `./mcp` (the MCP tool definitions and the size bound's cutting). `platform: "neutral"`:
 * the engine imports nothing from Node, so the same files run in browsers. @sdgw/types and @sdgw/validators stay
 * imports (dependencies), so a user's bundler dedupes them with the server's or the mock's.
 */
export default defineConfig({
  entry: {
    index: "src/index.ts",
    tools: "src/tools/index.ts",
    connectors: "src/connectors/index.ts",
    mcp: "src/mcp/index.ts",
  },
  format: ["esm", "cjs"],
  dts: true,
  tsconfig: "tsconfig.build.json",
  target: "es2022",
  platform: "neutral",
  outDir: "dist",
  clean: true,
  sourcemap: false,
  treeshake: true,
  esbuildOptions(options) {
    options.mainFields = ["module", "main"];
  },
});
