// docs/guides/validating-your-server.md — type-checked by `pnpm typecheck`.
import { errorAnswer, invalidBody, parseQuery, OPERATIONS, validateSearchHeaders, validateSearchQuery, validateSearchResponse } from "@sdgw/validators";

/** A framework-free handler of `GET /v1/search` that answers bad requests exactly as the seed does. */
export function handleSearch(url: URL, headers: Record<string, string>, requestId: string): { status: number; headers: Record<string, string>; body: unknown } {
  if (url.searchParams.has("key")) {
    return errorAnswer("unauthorized", requestId, { reason: "key_in_query", message: "A key in the URL is refused; treat it as exposed." });
  }
  const header = validateSearchHeaders(headers);
  if (!header.ok) return { status: 400, headers: {}, body: header.answer(requestId) };
  const query = validateSearchQuery(parseQuery(OPERATIONS.search, url.searchParams));
  if (!query.ok) return { status: 400, headers: {}, body: query.answer(requestId) };
  // query.value is typed: { platform?, platforms?, query, count?, … }
  const body = { request_id: requestId /* … your envelope … */ };
  const check = validateSearchResponse(200, body);
  if (!check.ok) console.error("this answer breaks the contract:", check.errors);
  return { status: 200, headers: {}, body };
}

/** Case 1 of invalid_params: the body is not one JSON object. */
export const notAnObject = invalidBody();
