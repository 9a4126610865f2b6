/** `POST /v1/call/{op}`: any op of the catalog by name, typed (a data route's op) or extra (a provider's own). */
import type { FastifyInstance } from "fastify";
import { bodyProblem } from "@sdgw/validators";
import { planOperation } from "@sdgw/engine";
import { admitCall } from "../admission.ts";
import { runCall } from "../charging.ts";
import { handler, type RouteDeps } from "./deps.ts";

export function registerCallRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.post<{ Params: { op: string } }>(
    "/v1/call/:op",
    handler(deps, async (req, requestId) => {
      const op = (req.params as { op: string }).op;
      const plan = (v: { body: Record<string, unknown> }) => planOperation(deps.gw.catalog, op, v.body, bodyProblem);
      const call = admitCall(deps, req, requestId, { operationId: "callOperation", body: true, path: { op }, plan });
      const { caller, body, headers } = call;
      return runCall(deps, {
        caller,
        requestId,
        operationId: "callOperation",
        params: { op, body },
        idempotencyKey: headers["idempotency-key"],
        plan: call.plan,
        maxCost: body["max_cost_credits"],
      });
    }),
  );
}
