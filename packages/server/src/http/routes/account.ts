/** `GET /v1/account`: the caller's account, workspace, key and balance (free: any key state that authenticates). */
import type { FastifyInstance } from "fastify";
import { creditBilling } from "@sdgw/engine";
import { SCHEDULES_PER_WORKSPACE } from "../../storage/schedules.ts";
import { admit, freeCaller } from "../admission.ts";
import { jsonAnswer } from "../answer.ts";
import { handler, type RouteDeps } from "./deps.ts";

export function registerAccountRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { gw } = deps;
  app.get(
    "/v1/account",
    handler(deps, async (req, requestId) => {
      admit(deps, req, requestId, { operationId: "getAccount", countsFailures: false });
      const { key, account } = await freeCaller(deps, req, requestId);
      const ws = (await gw.accounts.workspace(key.workspace_id))!;
      const view = await gw.ledger.view(account.id, key);
      const freeCallsLeft = await gw.ledger.freeCallsLeft(account);
      const schedulesCount = await gw.schedules.count(ws.id);
      const status = key.status === "suspended" ? "suspended" : "active";
      return jsonAnswer({
        request_id: requestId,
        schema_version: "v1",
        account: {
          id: account.id,
          name: account.name,
          plan: account.plan,
          status: account.status,
          free_calls_left: freeCallsLeft,
        },
        workspace: {
          id: ws.id,
          name: ws.name,
          schedules_count: schedulesCount,
          schedules_limit: SCHEDULES_PER_WORKSPACE,
        },
        key: {
          id: key.id,
          prefix: key.prefix,
          name: key.name,
          permissions: JSON.parse(key.permissions) as string[],
          status,
          daily_limit_credits: key.daily_limit,
          created_at: key.created_at,
          expires_at: key.expires_at,
        },
        billing: creditBilling(view, 0),
      });
    }),
  );
}
