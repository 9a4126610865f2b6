/**
 * The schema document every runtime contender compiles: `schemaDocument(spec)` with the discriminators our generator
 * injects (the same function, imported from the generator).
 */
import { injectDiscriminators } from "../../generators/src/validators.ts";
import { loadSpec, schemaDocument, type OpenApiDoc } from "../../generators/src/spec.ts";

type Schema = Record<string, unknown>;

export interface SchemaDoc {
  $id: string;
  $schema: string;
  $defs: Record<string, unknown>;
}

/** The spec and its component schemas as one 2020-12 document with discriminators injected (a fresh copy). */
export function benchSchemaDocument(): { spec: OpenApiDoc; doc: SchemaDoc } {
  const spec = loadSpec();
  const doc = schemaDocument(spec);
  injectDiscriminators(doc.$defs as Record<string, Schema>);
  return { spec, doc };
}
