/**
 * The in-process way to ask a charging route to answer 202 at once (D174): the MCP layer sets it on a
 * task-augmented `tools/call` it forwards with `app.inject`, so the task is created as soon as the run started
 * rather than after the gateway's inline wait (`SDGW_WAIT_MS`). Not part of the HTTP API: the header's value is a
 * token made when this module loads, so a request from outside (which cannot know it) is answered as always.
 */
import { randomUUID } from "node:crypto";

/** The (lowercase) name of the internal header. */
export const RESPOND_NOW_HEADER = "x-sdgw-internal-respond-now";

/** The value the header must carry: random, per process, never sent out of it. */
const TOKEN = randomUUID();

/** The header to add to an in-process request (`app.inject`) that asks to be answered 202 at once. */
export function respondNowHeader(): Record<string, string> {
  return { [RESPOND_NOW_HEADER]: TOKEN };
}

/** Whether normalized (lowercase) request headers ask, with this process's token, to be answered at once. */
export function respondsNow(headers: Readonly<Record<string, string | undefined>>): boolean {
  return headers[RESPOND_NOW_HEADER] === TOKEN;
}
