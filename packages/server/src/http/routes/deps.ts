/**
 * What every route group is given (`RouteDeps`): the gateway and the refusals built over it; and `handler`, the
 * wrapper of every route of the contract (a thrown `Refusal` is its answer, any other throw a 500 that echoes nothing).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { GatewayPorts as Gateway } from "../../storage/port.ts";
import { newRequestId } from "../../ids.ts";
import type { HttpAnswer } from "../../runs/types.ts";
import { Refusal, send } from "../answer.ts";
import { HttpErrors } from "../errors.ts";
import { DatabaseUnavailable } from "../../storage/postgres/unavailable.ts";
import { withRequestId } from "../../ops/log.ts";

export interface RouteDeps {
  readonly gw: Gateway;
  readonly errors: HttpErrors;
}

export function createRouteDeps(gw: Gateway): RouteDeps {
  return { gw, errors: new HttpErrors(gw) };
}

/**
 * A route's handler: a new request id, the answer sent once the store is durable. Its work runs as that request's
 * (D113): every line logged within it, or by a run it started, carries the id.
 */
export function handler(
  deps: RouteDeps,
  fn: (req: FastifyRequest, requestId: string) => Promise<HttpAnswer> | HttpAnswer,
) {
  const { gw } = deps;
  return (req: FastifyRequest, reply: FastifyReply) => {
    const requestId = newRequestId(gw.now());
    return withRequestId(requestId, () => answer(deps, req, reply, requestId, fn));
  };
}

/** The handler's work: `fn`'s answer, a refusal, 503 when the database does not answer, or a 500. */
async function answer(
  deps: RouteDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  requestId: string,
  fn: (req: FastifyRequest, requestId: string) => Promise<HttpAnswer> | HttpAnswer,
) {
  const { gw } = deps;
  try {
    const answer = await fn(req, requestId);
    await gw.durable();
    return send(reply, answer);
  } catch (e) {
    if (e instanceof Refusal) {
      await gw.durable();
      return send(reply, e.answer);
    }
    if (e instanceof DatabaseUnavailable) {
      // D108: the shared database does not answer. Nothing was committed, so nothing is held or charged; the
      // words of a pause, as for the limits' Redis (D107).
      gw.log(`request ${requestId}: ${e.message}`);
      return send(reply, deps.errors.databaseUnavailable(requestId));
    }
    gw.log(`request ${requestId} failed`, e);
    return send(reply, deps.errors.internal(requestId));
  }
}
