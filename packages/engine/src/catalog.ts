/**
 * The catalog: every operation of every platform (from the providers) with its route, price and parameters, and
 * the seven tools. `GET /v1/capabilities` lists it and `POST /v1/find` ranks it.
 */
import type { OperationInfo, Platform, ToolInfo, ToolName } from "@sdgw/types";
import { PLATFORMS, TOOL_NAMES } from "@sdgw/types";
import { OPERATIONS } from "@sdgw/validators";
import type { OperationSpec, PlatformProvider, ProviderSource, RouteOperation } from "./providers/port.ts";
import { ROUTE_OPERATIONS } from "./providers/port.ts";

/** The typed route of each route operation and the operationId of its body. */
export const ROUTES: Record<RouteOperation, { route: string; operationId: keyof typeof OPERATIONS }> = {
  search: { route: "/v1/search", operationId: "searchPost" },
  trending: { route: "/v1/trending", operationId: "trending" },
  detail: { route: "/v1/detail", operationId: "detail" },
  comments: { route: "/v1/comments", operationId: "comments" },
  user_profile: { route: "/v1/user_profile", operationId: "userProfile" },
  user_posts: { route: "/v1/user_posts", operationId: "userPosts" },
};

/** Whether an op name is one of the six with a typed route. */
export function isRouteOperation(name: string): name is RouteOperation {
  return (ROUTE_OPERATIONS as readonly string[]).includes(name);
}

/** Parameters of an operation as `/v1/call/{op}` takes them (no `platform`: the op names it). */
export function paramsOf(spec: OperationSpec): string[] {
  if (isRouteOperation(spec.name)) {
    const body = OPERATIONS[ROUTES[spec.name].operationId].body;
    return Object.keys(body?.params ?? {}).filter((p) => p !== "platform" && p !== "platforms");
  }
  return [...(spec.params ?? []).map((p) => p.name), "max_cost_credits"];
}

/** The seven tools, in English and Chinese. */
export const TOOL_DESCRIPTIONS: Record<ToolName, string> = {
  brand_buzz: "Share of voice, volume over time and top posts of a brand · 品牌声量",
  comment_insights: "What commenters say about posts: keywords, sentiment, top comments · 评论洞察",
  account_watch: "Followers and best posts of accounts over a range, optionally on a schedule · 账号监控",
  find_creators: "Creators who post about a topic, by followers · 寻找达人",
  creator_card: "One card per creator with metrics and recent posts · 达人名片",
  batch_stats: "Metrics of many posts at once, as JSON, CSV or NDJSON · 批量数据",
  viral_finder: "Posts that spread fastest on a topic · 爆款发现",
};

/** The contract's `operationId` of each tool's route (`POST /v1/tools/{tool}`). */
export const TOOL_OPERATION_IDS: Readonly<Record<ToolName, keyof typeof OPERATIONS>> = {
  brand_buzz: "brandBuzz",
  comment_insights: "commentInsights",
  account_watch: "accountWatch",
  find_creators: "findCreators",
  creator_card: "creatorCard",
  batch_stats: "batchStats",
  viral_finder: "viralFinder",
};

/** Where a platform's data comes from, as `GET /v1/capabilities` lists it (D114). */
export interface PlatformSourceInfo {
  platform: Platform;
  source: ProviderSource;
}

/** The catalog built from the providers. */
export class Catalog {
  readonly operations: OperationInfo[];
  readonly tools: ToolInfo[];
  /** Each platform and where its data comes from: `live`, `simulated` or `plugged` (D114). */
  readonly platforms: PlatformSourceInfo[];
  private readonly byOp = new Map<string, { provider: PlatformProvider; spec: OperationSpec }>();

  readonly providers: Readonly<Record<Platform, PlatformProvider>>;

  constructor(providers: Readonly<Record<Platform, PlatformProvider>>) {
    this.providers = providers;
    this.platforms = PLATFORMS.map((platform) => ({ platform, source: providers[platform].source ?? "simulated" }));
    this.operations = [];
    for (const platform of PLATFORMS) {
      const provider = providers[platform];
      for (const spec of provider.operations) {
        const op = `${platform}.${spec.name}`;
        this.byOp.set(op, { provider, spec });
        this.operations.push({
          op,
          platform,
          name: spec.name,
          route: isRouteOperation(spec.name) ? ROUTES[spec.name].route : `/v1/call/${op}`,
          description: spec.description,
          charged: true,
          price_credits: spec.price,
          pricing: spec.pricing,
          params: paramsOf(spec),
        });
      }
    }
    this.tools = TOOL_NAMES.map((tool) => ({
      tool,
      description: TOOL_DESCRIPTIONS[tool],
      params: Object.keys(OPERATIONS[TOOL_OPERATION_IDS[tool]].body?.params ?? {}),
    }));
  }

  /** The provider and spec of `<platform>.<name>`, if the catalog has it. */
  lookup(op: string): { provider: PlatformProvider; spec: OperationSpec } | undefined {
    return this.byOp.get(op);
  }

  /** The platforms that offer an operation name. */
  platformsOffering(name: string): Platform[] {
    return PLATFORMS.filter((p) => this.providers[p].operations.some((o) => o.name === name));
  }
}
