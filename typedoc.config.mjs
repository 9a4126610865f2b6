// @ts-check
import { OptionDefaults } from "typedoc";

/**
 * The reference of the public packages, built in CI with warnings as errors: every export documented, every link
 * valid. openapi-typescript writes the spec's descriptions as `@description` and consts as `@constant`.
 * @type {Partial<import("typedoc").TypeDocOptions>}
 */
export default {
  name: "Social Data Gateway toolkit",
  entryPoints: [
    "packages/types/src/index.ts",
    "packages/validators/src/index.ts",
    "packages/engine/src/index.ts",
    "packages/engine/src/connectors/index.ts",
    "packages/engine/src/mcp/index.ts",
    "packages/client/src/index.ts",
    "packages/mock/src/index.ts",
    "packages/server/src/index.ts",
    "packages/conformance/src/index.ts",
    "packages/conformance/src/vitest.ts",
    "packages/conformance/src/connectors/index.ts",
  ],
  entryPointStrategy: "resolve",
  tsconfig: "tsconfig.docs.json",
  out: "docs/reference",
  readme: "none",
  plugin: ["./docs/typedoc-declared-types.mjs"],
  disableSources: true,
  excludePrivate: true,
  excludeInternal: true,
  treatWarningsAsErrors: true,
  blockTags: [...OptionDefaults.blockTags, "@description", "@constant"],
  validation: { notExported: true, invalidLink: true, notDocumented: true },
  requiredToBeDocumented: ["Function", "Class", "Interface", "TypeAlias", "Variable", "Enum"],
  packagesRequiringDocumentation: [
    "@sdgw/types",
    "@sdgw/validators",
    "@sdgw/engine",
    "@sdgw/client",
    "@sdgw/mock",
    "@sdgw/server",
    "@sdgw/conformance",
  ],
  sort: ["source-order"],
  // Types TypeDoc infers (the generated validators carry no annotations) are spelled out to this depth, then `...`.
  maxTypeConversionDepth: 4,
};
