import { copyFileSync } from "node:fs";
import { defineConfig } from "tsup";

// The library (ESM and CJS with declarations; dependencies stay external) and the commands `sdgw-admin` and
// `sdgw-mcp`, in one
// build so that cleaning the output folder cannot race a second build. The spec is copied beside the build so
// that GET /openapi.json works from the installed package.
export default defineConfig({
  entry: {
    index: "src/index.ts",
    internal: "src/internal.ts",
    "sdgw-admin": "src/bin/sdgw-admin.ts",
    "sdgw-mcp": "src/bin/sdgw-mcp.ts",
  },
  format: ["esm", "cjs"],
  dts: { entry: { index: "src/index.ts", internal: "src/internal.ts" } },
  platform: "node",
  target: "node24",
  shims: true,
  clean: true,
  treeshake: true,
  // tsup drops the `node:` prefix by default; `node:sqlite` exists only with it (there is no bare `sqlite`).
  removeNodeProtocol: false,
  onSuccess: async () => copyFileSync("../../spec/openapi.yaml", "dist/openapi.yaml"),
});
