/** The Playground's form types: generators/src/forms.ts writes src/generated/forms.ts with them (kinds explained there). */

/** A field of a Playground form. */
export interface FormField {
  name: string;
  kind: "text" | "integer" | "boolean" | "enum" | "enums" | "text_or_integer" | "list" | "json";
  required: boolean;
  description?: string;
  options?: string[];
  all?: boolean;
  single?: boolean;
  min?: number;
  max?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  default?: unknown;
}

/** A POST operation of the contract with a JSON body, as a form. */
export interface FormOperation {
  operationId: string;
  method: "POST";
  path: string;
  summary: string;
  tool: boolean;
  fields: FormField[];
}
