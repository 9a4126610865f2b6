/** `GET /v1/results/{handle}`: a run's answer by its handle (free; a wrong handle counts a failure of the key sent). */
import type { FastifyInstance } from "fastify";
import { admit, freeCaller } from "../admission.ts";
import { handler, type RouteDeps } from "./deps.ts";

export function registerResultRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<{ Params: { handle: string } }>(
    "/v1/results/:handle",
    handler(deps, async (req, requestId) => {
      const handle = (req.params as { handle: string }).handle;
      const { query } = admit(deps, req, requestId, { operationId: "getResult", path: { handle } });
      const caller = await freeCaller(deps, req, requestId);
      const format = query["format"] as "json" | "csv" | "ndjson" | undefined;
      return deps.gw.runs.read({ handle, key: caller.key, format, requestId, alsoOf: caller.readsResultsOf });
    }),
  );
}
