/**
 * One cold start, run by run.ts in a fresh node process: the time from before the validator's import to after the
 * first validation of the large answer. Prints `{"ms": …, "ok": …}`.
 *
 *   node bench/validators/cold.ts <ours-src|ours-dist|ajv> <large-answer.json> <schema-document.json>
 *
 * Everything the contender loads is imported dynamically after the clock starts; the inputs are read before it.
 * The runtime ajv contender reads its schema document (JSON, discriminators already injected: what an app would
 * ship) inside the timed part, then compiles SearchEnvelope and what it references.
 */
import { readFileSync } from "node:fs";

const [mode, largePath, docPath] = process.argv.slice(2);
if (!mode || !largePath || !docPath) throw new Error("usage: cold.ts <ours-src|ours-dist|ajv> <large.json> <doc.json>");
const large: unknown = JSON.parse(readFileSync(largePath, "utf8"));
const SCHEMA_ID = "https://sdgw.dev/schemas/v1.json";

type Validate = (value: unknown) => { ok: boolean };
const modules: Record<string, string> = {
  "ours-src": new URL("../../packages/validators/src/index.ts", import.meta.url).href,
  "ours-dist": new URL("../../packages/validators/dist/index.js", import.meta.url).href,
};

const t0 = process.hrtime.bigint();
let ok: boolean;
if (mode === "ajv") {
  const { Ajv2020 } = await import("ajv/dist/2020.js");
  const addFormats = await import("ajv-formats");
  const ajv = new Ajv2020({
    allErrors: false,
    strict: true,
    strictTypes: false,
    strictRequired: false,
    discriminator: true,
  });
  addFormats.default.default(ajv, { mode: "full", keywords: false });
  ajv.addSchema(JSON.parse(readFileSync(docPath, "utf8")) as object);
  const validate = ajv.getSchema(`${SCHEMA_ID}#/$defs/SearchEnvelope`)!;
  ok = validate(large) as boolean;
} else {
  const href = modules[mode];
  if (!href) throw new Error(`unknown mode ${mode}`);
  const m = (await import(href)) as { validateSearchEnvelope: Validate };
  ok = m.validateSearchEnvelope(large).ok;
}
const t1 = process.hrtime.bigint();
process.stdout.write(`${JSON.stringify({ ms: Number(t1 - t0) / 1e6, ok })}\n`);
