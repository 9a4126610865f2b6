/**
 * `batch_stats`: the current numbers of many posts at once. Waves: `details` (one call per target, duplicates
 * kept), `comments` (when `include` has `comments`: the most liked comments of each post found), `aggregate`.
 * Items: one `item` row per target found, in request order (metrics when `include` has `metrics`), then the
 * comments. `format` (json, csv, ndjson) is echoed: it chooses how the finished answer is served, not what it holds.
 */
import type { BatchStatsRequest, ContentItem, Item } from "@sdgw/types";
import { refuseCommentsWithout, validateBatchStatsBody } from "@sdgw/validators";
import { engagementOf, tagged } from "./analysis.ts";
import type { ResolvedLink } from "./links.ts";
import { applied, defineTool, isRefusal, platformsOffering, resolveLinks } from "./params.ts";
import type { CallOutcome } from "./runner.ts";

/** What `include` offers on `batch_stats`. Default: `metrics`. */
export const BATCH_STATS_INCLUDE = ["metrics", "comments"] as const;

const COMMENTS_PER_TARGET = 10;

interface Setup {
  targets: ResolvedLink[];
  include: Array<(typeof BATCH_STATS_INCLUDE)[number]>;
}

/** The `batch_stats` tool. */
export const batchStats = defineTool<BatchStatsRequest, Setup>({
  tool: "batch_stats",
  validate: validateBatchStatsBody,
  prepare(req, ctx) {
    const include = req.include ?? ["metrics"];
    const targets = resolveLinks(req.targets, "post", "targets", ctx, ["detail"]);
    if (isRefusal(targets)) return targets;
    const noComments = include.includes("comments")
      ? refuseCommentsWithout(targets, (op) => platformsOffering(ctx, op))
      : null;
    if (noComments) return noComments;
    return {
      setup: { targets, include },
      applied: applied({
        targets: [...req.targets],
        include,
        format: req.format ?? "json",
        confirm: req.confirm ?? true,
        max_cost_credits: req.max_cost_credits,
      }),
      warnings: [],
      waves: [
        { name: "details", calls: targets.length },
        { name: "comments", calls: include.includes("comments") ? targets.length : 0 },
      ],
    };
  },
  async execute(s, runner) {
    const details = await runner.wave(
      "details",
      () => runner.all(s.targets, (t) => runner.call(t.platform, "detail", { id: t.id }, t.link, "targets")),
      [],
    );
    const rows = s.targets.flatMap((t, i) => {
      const out = details[i]!;
      const item = out.ok ? out.items.find((it): it is ContentItem => it.kind === "item") : undefined;
      return item ? [{ target: t, item }] : [];
    });
    const comments = await runner.wave(
      "comments",
      () =>
        runner.all(rows, (r) =>
          runner.call(
            r.target.platform,
            "comments",
            { id: r.target.id, limit: COMMENTS_PER_TARGET, sort: "most_liked" },
            r.target.link,
            "targets",
          ),
        ),
      [] as CallOutcome[],
    );
    const withMetrics = s.include.includes("metrics");
    const items: Item[] = rows.map(({ target, item }) => {
      const { metrics: _metrics, ...rest } = item;
      const row: ContentItem = withMetrics ? item : rest;
      return tagged(row, target.platform, {
        target: target.link,
        ...(withMetrics ? { engagement: engagementOf(item) } : {}),
      });
    });
    comments.forEach((out, i) => {
      if (!out.ok) return;
      const { target } = rows[i]!;
      for (const c of out.items) if (c.kind === "item") items.push(tagged(c, target.platform, { target: target.link }));
    });
    return items;
  },
});
