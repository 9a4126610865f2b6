import { defineConfig } from "tsup";

// The library (`.`), the vitest entry (`./vitest`), the connector acceptance suite (`./connectors`) and the command
// `sdgw-conformance`, ESM and CJS with
// declarations, in one build so that cleaning the output folder cannot race a second build. Dependencies stay
// imports: @sdgw/client, @sdgw/validators and @sdgw/types are dependencies, vitest an optional peer (only
// `./vitest` imports it). The command runs on Node 22 or later.
export default defineConfig({
  entry: { index: "src/index.ts", vitest: "src/vitest.ts", cli: "src/cli.ts", connectors: "src/connectors/index.ts" },
  format: ["esm", "cjs"],
  dts: { entry: { index: "src/index.ts", vitest: "src/vitest.ts", connectors: "src/connectors/index.ts" } },
  platform: "node",
  target: "node22",
  clean: true,
  treeshake: true,
  external: ["vitest", "@sdgw/client", "@sdgw/validators", "@sdgw/types", "@sdgw/engine"],
});
