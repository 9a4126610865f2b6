/**
 * What the MCP endpoint answers a request whose key is missing or refused (D142), the same at the reference server's
 * `/mcp` and the mock's.
 */
/**
 * The `WWW-Authenticate` header of a 401 at /mcp (D62, D142): the key goes in X-API-Key. No `Bearer` challenge,
 * which OAuth-capable clients (the MCP Inspector, SDK clients with an auth provider) take as an offer of OAuth and
 * answer with a discovery that this server does not serve; `Authorization: Bearer <key>` is still taken.
 */
export const MCP_WWW_AUTHENTICATE = 'ApiKey header="X-API-Key"';

/** The JSON-RPC error code of a refused key at /mcp (D142), in the range JSON-RPC leaves to servers. */
export const MCP_UNAUTHORIZED_CODE = -32001;

/** The id of a JSON-RPC request body (text or parsed), or null when it has none or is not one. */
function jsonRpcId(raw: unknown): string | number | null {
  let body = raw;
  if (typeof raw === "string") {
    try {
      body = JSON.parse(raw);
    } catch {
      return null;
    }
  }
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/**
 * The body of a 401 at /mcp (D142): a JSON-RPC error answer to the request (its `id`, code -32001, a message a
 * person can read: what is wrong with the key and what to do, from the structure's `message` and `fix.note`) that is also the contract's `unauthorized` error
 * structure (its members at the top level, as over HTTP, and as `error.data`).
 */
export function unauthorizedBody(structure: Record<string, unknown>, requestBody: unknown): Record<string, unknown> {
  const fix = structure["fix"] as { note?: unknown } | undefined;
  const said = typeof structure["message"] === "string" ? structure["message"] : "This key was refused.";
  const message = [said, typeof fix?.note === "string" ? fix.note : ""].filter((p) => p !== "").join(" ");
  return {
    jsonrpc: "2.0",
    id: jsonRpcId(requestBody),
    error: { code: MCP_UNAUTHORIZED_CODE, message, data: structure },
    ...structure,
  };
}
