import { defineConfig } from "tsup";

// ESM only: msw 3 ships ESM only, and so does its mock. @sdgw/engine, @sdgw/types, @sdgw/validators and msw stay imports (they
// are dependencies and a peer), so the app's own msw instance is the one the handlers register with. The
// fixtures and the OpenAPI document are data inside the bundle: no file is read at run time, in Node or a browser.
export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm"],
  dts: true,
  platform: "neutral",
  target: "es2022",
  sourcemap: false,
  clean: true,
  treeshake: true,
  external: ["msw", "@sdgw/engine", "@sdgw/types", "@sdgw/validators"],
});
