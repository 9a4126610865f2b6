/**
 * The contenders: each turns the name of an answer schema into a check `(value) => boolean`.
 * (a) ours, from source; (b) ajv 8 compiling the same document at run time with the generator's options and
 * ajv-formats' full formats; (bf) the same with ajv-formats' fast formats (no calendar check: it accepts 2025-02-30);
 * (c) TypeBox 1.x compiling the same JSON Schema document directly (`typebox/schema` Compile);
 * (d1) zod 4 `z.fromJSONSchema` on the same document; (d2) zod 4 through our mechanical translator.
 * Each library is imported only when its contender is made, so a throughput child process loads only its own.
 */
import { SCHEMA_ID } from "../../generators/src/spec.ts";
import type { SchemaDoc } from "./schema-doc.ts";
import type { AnswerSchema } from "./workloads.ts";

export type Check = (value: unknown) => boolean;

export interface Contender {
  key: string;
  label: string;
  /** How the contender gets the contract. */
  route: string;
  /** Throws when the contender cannot build this schema. */
  build(name: AnswerSchema): Check;
}

export const CONTENDER_KEYS = ["a", "b", "bf", "c", "d1", "d2"] as const;
export type ContenderKey = (typeof CONTENDER_KEYS)[number];

type Validate = (value: unknown) => { ok: boolean };

/** (a) ours: the package's `validateX` (what a user calls), `.ok` of its result. */
async function ours(): Promise<Contender> {
  const api = await import("../../packages/validators/src/index.ts");
  const named = api as unknown as Record<string, Validate>;
  return {
    key: "a",
    label: "(a) @sdgw/validators",
    route:
      "ajv standalone code generated at build time (src/generated/standalone.js), imported from source; validateX(v).ok",
    build(name) {
      if (name === "ScheduleDeleted") return (v) => api.responseValidators.deleteSchedule(200, v).ok;
      const validate = named[`validate${name}`];
      if (!validate) throw new Error(`@sdgw/validators exports no validate${name}`);
      return (v) => validate(v).ok;
    },
  };
}

/**
 * (b) the ajv options of generators/src/validators.ts, minus the standalone-code ones; inlineRefs at its default.
 * Formats from ajv-formats: (b) full mode, as the contract needs; (bf) fast mode, the speed bar of issue 18.
 */
async function ajv(doc: SchemaDoc, mode: "full" | "fast"): Promise<Contender> {
  const { Ajv2020 } = await import("ajv/dist/2020.js");
  const addFormats = await import("ajv-formats");
  const instance = new Ajv2020({
    allErrors: false,
    strict: true,
    strictTypes: false,
    strictRequired: false,
    discriminator: true,
  });
  addFormats.default.default(instance, { mode, keywords: false });
  instance.addSchema(structuredClone(doc));
  return {
    key: mode === "full" ? "b" : "bf",
    label: mode === "full" ? "(b) ajv 8 at run time" : "(bf) ajv 8, fast formats",
    route:
      `Ajv2020 + ajv-formats ${mode}, same document and options (inlineRefs default), compiled ` +
      `at start-up${mode === "fast" ? " (accepts 2025-02-30)" : ""}`,
    build(name) {
      const validate = instance.getSchema(`${SCHEMA_ID}#/$defs/${name}`);
      if (!validate) throw new Error(`ajv found no ${name}`);
      return (v) => validate(v) as boolean;
    },
  };
}

/** (c) TypeBox 1.x: its JIT compiler takes plain JSON Schema 2020-12, so it gets the same document. */
async function typebox(doc: SchemaDoc): Promise<Contender> {
  const { default: Schema } = await import("typebox/schema");
  return {
    key: "c",
    label: "(c) TypeBox 1.4",
    route: "typebox/schema Compile() of the same JSON Schema 2020-12 document (no translation); Check(v)",
    build(name) {
      const validator = Schema.Compile({ ...structuredClone(doc), $ref: `#/$defs/${name}` } as unknown as Parameters<
        typeof Schema.Compile
      >[0]);
      if (!validator.IsAccelerated()) throw new Error("TypeBox fell back to its dynamic (non-JIT) checker");
      return (v) => validator.Check(v);
    },
  };
}

/** (d1) zod 4's own converter. */
async function zodFromJsonSchema(doc: SchemaDoc): Promise<Contender> {
  const { z } = await import("zod");
  return {
    key: "d1",
    label: "(d1) zod 4.6 fromJSONSchema",
    route: "z.fromJSONSchema() of the same document; safeParse(v).success",
    build(name) {
      const schema = z.fromJSONSchema({ ...structuredClone(doc), $ref: `#/$defs/${name}` } as Parameters<
        typeof z.fromJSONSchema
      >[0]);
      return (v) => schema.safeParse(v).success;
    },
  };
}

/** (d2) zod 4 through bench/validators/zod-translator.ts. */
async function zodTranslated(doc: SchemaDoc): Promise<Contender> {
  const { ZodTranslator } = await import("./zod-translator.ts");
  const translator = new ZodTranslator(structuredClone(doc));
  return {
    key: "d2",
    label: "(d2) zod 4.6 translated",
    route: "zod-translator.ts: strictObject, discriminatedUnion, iso.datetime, url, refinements; safeParse(v).success",
    build(name) {
      const schema = translator.named(name);
      return (v) => schema.safeParse(v).success;
    },
  };
}

export function makeContender(key: ContenderKey, doc: SchemaDoc): Promise<Contender> {
  switch (key) {
    case "a":
      return ours();
    case "b":
      return ajv(doc, "full");
    case "bf":
      return ajv(doc, "fast");
    case "c":
      return typebox(doc);
    case "d1":
      return zodFromJsonSchema(doc);
    case "d2":
      return zodTranslated(doc);
  }
}
