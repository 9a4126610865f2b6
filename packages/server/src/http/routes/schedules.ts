/** `GET /v1/schedules` and `DELETE /v1/schedules/{schedule_id}`: the workspace's schedules (D52), free. */
import type { FastifyInstance } from "fastify";
import { REFUSALS } from "@sdgw/engine";
import { SCHEDULES_PER_WORKSPACE } from "../../storage/schedules.ts";
import { admit, freeCaller } from "../admission.ts";
import { jsonAnswer } from "../answer.ts";
import { handler, type RouteDeps } from "./deps.ts";

export function registerScheduleRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { gw, errors } = deps;
  app.get(
    "/v1/schedules",
    handler(deps, async (req, requestId) => {
      admit(deps, req, requestId, { operationId: "listSchedules", countsFailures: false });
      const { key } = await freeCaller(deps, req, requestId);
      return jsonAnswer({
        request_id: requestId,
        schema_version: "v1",
        schedules: await gw.schedules.list(key.workspace_id),
        limit: SCHEDULES_PER_WORKSPACE,
      });
    }),
  );

  app.delete<{ Params: { schedule_id: string } }>(
    "/v1/schedules/:schedule_id",
    handler(deps, async (req, requestId) => {
      const id = (req.params as { schedule_id: string }).schedule_id;
      admit(deps, req, requestId, { operationId: "deleteSchedule", path: { schedule_id: id }, countsFailures: false });
      const { key } = await freeCaller(deps, req, requestId);
      if (await gw.schedules.remove(key.workspace_id, id))
        return jsonAnswer({ request_id: requestId, schema_version: "v1", deleted: true, schedule_id: id });
      return errors.fail("not_found", requestId, REFUSALS.noSuchSchedule(id), null);
    }),
  );
}
