// @ts-check
/**
 * A TypeDoc plugin: a signature's parameters and return type are shown as they are written in the source.
 *
 * TypeDoc converts them from the checker's types, which forget the names of aliases of indexed types
 * (`type FanoutAnswer = components["schemas"]["FanoutAnswer"]`): `SdgwPromise<FanoutAnswer>` was rendered as the
 * whole answer spelled out, in every overload, which made single pages of tens of megabytes. Where the declaration
 * has a type node (every declared signature), this converts the node instead, so the page links `FanoutAnswer`.
 * The same holds for properties (TypeDoc reads an interface's properties from the checker too).
 * Inferred types (no node) are left as TypeDoc made them.
 *
 * Last, openapi-typescript's `components` is one object of four (`schemas`, `responses`, `parameters`, `headers`),
 * each an object of hundreds of members: TypeDoc printed each whole as its signature and then again member by member,
 * a page of 1.8 MB. Each of the four is shown as an interface of its own page instead.
 */
import ts from "typescript";
import { Comment, Converter, ReflectionKind, ReflectionType } from "typedoc";

/**
 * Shows a member whose type is an object literal as an interface of its own page (members only).
 * @param {import("typedoc").DeclarationReflection} member
 * @param {string} summary its summary, when it has none
 */
function asInterface(member, summary) {
  if (
    !(member.type instanceof ReflectionType) ||
    !member.type.declaration.children?.length ||
    member.type.declaration.signatures?.length
  )
    return false;
  const literal = member.type.declaration;
  member.kind = ReflectionKind.Interface;
  member.children = literal.children;
  for (const child of member.children ?? []) child.parent = member;
  if (literal.indexSignatures) member.indexSignatures = literal.indexSignatures;
  delete member.type;
  member.comment ??= new Comment([{ kind: "text", text: summary }]);
  return true;
}

/** @param {import("typedoc").Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const alias of context.project.getReflectionsByKind(ReflectionKind.TypeAlias)) {
      if (alias.name !== "components" || alias.parent?.name !== "@sdgw/types") continue;
      for (const part of alias.children ?? []) {
        if (
          !asInterface(part, `The contract's \`components.${part.name}\`, one member per entry of spec/openapi.yaml.`)
        )
          continue;
        for (const entry of part.children ?? []) asInterface(entry, `The contract's \`${part.name}.${entry.name}\`.`);
      }
    }
  });
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context, reflection) => {
    if (!reflection.kindOf(ReflectionKind.Property | ReflectionKind.Variable)) return;
    const symbol = context.getSymbolFromReflection(reflection);
    const declaration = symbol?.getDeclarations()?.[0];
    if (
      !declaration ||
      !(
        ts.isPropertySignature(declaration) ||
        ts.isPropertyDeclaration(declaration) ||
        ts.isVariableDeclaration(declaration)
      )
    )
      return;
    if (!declaration.type) return;
    reflection.type = context.converter.convertType(context.withScope(reflection), declaration.type);
  });
  app.converter.on(Converter.EVENT_CREATE_SIGNATURE, (context, signature, declaration) => {
    if (!declaration || !("parameters" in declaration)) return;
    const scoped = context.withScope(signature);
    const returns = /** @type {ts.TypeNode | undefined} */ (declaration.type);
    if (
      returns &&
      !ts.isTypePredicateNode(returns) &&
      returns.kind !== ts.SyntaxKind.ThisType &&
      !ts.isJSDocReturnTag(/** @type {ts.Node} */ (returns))
    ) {
      signature.type = context.converter.convertType(scoped, returns);
    }
    const params = /** @type {ts.NodeArray<ts.ParameterDeclaration>} */ (declaration.parameters);
    for (const reflection of signature.parameters ?? []) {
      const node = params.find((p) => ts.isIdentifier(p.name) && p.name.text === reflection.name);
      if (!node?.type || node.type.kind === ts.SyntaxKind.ThisType) continue;
      // An optional parameter's checker type carries `| undefined`; its node does not, as TypeDoc shows it.
      reflection.type = context.converter.convertType(scoped, node.type);
    }
  });
}
