// docs/guides/conformance.md — type-checked by `pnpm typecheck`.
// #region conformance-vitest
import { defineConformanceSuite } from "@sdgw/conformance/vitest";

defineConformanceSuite({ baseUrl: process.env["SDGW_BASE_URL"] ?? "http://127.0.0.1:8787", key: process.env["SDGW_KEY"] ?? "" });
// #endregion
