/** The routes without a key, at the rate of the network address: capabilities, find, and the spec itself. */
import type { FastifyInstance } from "fastify";
import type { Platform } from "@sdgw/types";
import { addressRate, admit } from "../admission.ts";
import { JSON_TYPE, jsonAnswer } from "../answer.ts";
import { openApi } from "../openapi.ts";
import { handler, type RouteDeps } from "./deps.ts";

export function registerCatalogRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { gw } = deps;
  app.get(
    "/v1/capabilities",
    handler(deps, async (req, requestId) => {
      await addressRate(deps, req, requestId);
      return jsonAnswer({
        request_id: requestId,
        schema_version: "v1",
        platforms: gw.catalog.platforms,
        operations: gw.catalog.operations,
        tools: gw.catalog.tools,
      });
    }),
  );

  app.post(
    "/v1/find",
    handler(deps, async (req, requestId) => {
      const { body } = admit(deps, req, requestId, { operationId: "findOperation", body: true, countsFailures: false });
      await addressRate(deps, req, requestId);
      const platform = typeof body["platform"] === "string" ? { platform: body["platform"] as Platform } : {};
      const matches = gw.finder.find(String(body["query"]), {
        ...platform,
        limit: typeof body["limit"] === "number" ? body["limit"] : 20,
      });
      return jsonAnswer({ request_id: requestId, schema_version: "v1", query: body["query"], matches });
    }),
  );

  app.get(
    "/openapi.json",
    handler(deps, async (req, requestId) => {
      await addressRate(deps, req, requestId, true);
      return { status: 200, headers: { "content-type": JSON_TYPE }, body: openApi() };
    }),
  );
}
