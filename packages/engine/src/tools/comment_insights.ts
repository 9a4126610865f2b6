/**
 * `comment_insights`: what commenters say under posts. Waves: `comments` (one call per target, most liked
 * first), `aggregate`. Items: keywords of the comments (counts), their sentiment (shares), the most liked comments.
 */
import type { CommentInsightsRequest, ContentItem, Item, Platform } from "@sdgw/types";
import { validateCommentInsightsBody } from "@sdgw/validators";
import type { ResolvedLink } from "./links.ts";
import { applied, defineTool, isRefusal, resolveLinks } from "./params.ts";
import { rankBy, tagged } from "./analysis.ts";
import { keywordDistribution, sentimentDistribution, sentimentOf } from "./text.ts";

const TOP_COMMENTS = 10;
const TOP_KEYWORDS = 20;

interface Setup {
  targets: ResolvedLink[];
  limit: number;
}

/** The `comment_insights` tool. */
export const commentInsights = defineTool<CommentInsightsRequest, Setup>({
  tool: "comment_insights",
  validate: validateCommentInsightsBody,
  prepare(req, ctx) {
    const targets = resolveLinks(req.targets, "post", "targets", ctx, ["comments"]);
    if (isRefusal(targets)) return targets;
    const limit = req.limit ?? 20;
    return {
      setup: { targets, limit },
      applied: applied({
        targets: [...req.targets],
        limit,
        confirm: req.confirm ?? true,
        max_cost_credits: req.max_cost_credits,
      }),
      warnings: [],
      waves: [{ name: "comments", calls: targets.length }],
    };
  },
  async execute(s, runner) {
    const outs = await runner.wave(
      "comments",
      () =>
        runner.all(s.targets, (t) =>
          runner.call(t.platform, "comments", { id: t.id, limit: s.limit, sort: "most_liked" }, t.link, "targets"),
        ),
      [],
    );
    const seen = new Set<string>();
    const comments: Array<{ platform: Platform; target: string; item: ContentItem }> = [];
    outs.forEach((out, i) => {
      if (!out.ok) return;
      const t = s.targets[i]!;
      for (const c of out.items) {
        if (c.kind !== "item" || seen.has(`${t.platform}|${c.id}`)) continue;
        seen.add(`${t.platform}|${c.id}`);
        comments.push({ platform: t.platform, target: t.link, item: c });
      }
    });
    const texts = comments.flatMap((c) => (c.item.text ? [c.item.text] : []));
    const items: Item[] = [];
    const keywords = keywordDistribution(texts, { top: TOP_KEYWORDS });
    if (keywords)
      items.push({ ...keywords, platform_extra: { ...keywords.platform_extra, comments_read: comments.length } });
    const sentiment = sentimentDistribution(texts, "comments");
    if (sentiment) items.push(sentiment);
    const liked = rankBy(
      comments,
      (c) => c.item.metrics?.likes ?? 0,
      (c) => `${c.platform}|${c.item.id}`,
    ).slice(0, TOP_COMMENTS);
    items.push(
      ...liked.map((c) =>
        tagged(c.item, c.platform, {
          target: c.target,
          ...(c.item.text ? { sentiment: sentimentOf(c.item.text) } : {}),
        }),
      ),
    );
    return items;
  },
});
