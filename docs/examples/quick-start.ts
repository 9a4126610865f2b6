// docs/guides/quick-start.md — type-checked by `pnpm typecheck`; the guide shows the #region verbatim.
// #region quick-start
import { createClient, fanoutEntries, isSdgwError } from "@sdgw/client";

export async function quickStart(apiKey: string): Promise<void> {
  const sdgw = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey });

  const notes = await sdgw.search({ platform: "xiaohongshu", query: "露营装备", count: 5 });
  if (notes.status === "ok") for (const item of notes.items) if (item.kind === "item") console.log(item.title, item.metrics?.likes);

  const everywhere = await sdgw.search({ platforms: ["x", "reddit", "youtube"], query: "typescript 7" });
  for (const [platform, entry] of fanoutEntries(everywhere)) console.log(platform, entry.status, entry.items.length);

  try {
    await sdgw.detail({ platform: "bilibili", url: "https://www.bilibili.com/video/BV1xK4y1a7Zq" });
  } catch (e) {
    if (isSdgwError(e)) console.log(e.code, e.request_id, e.fix);
    else throw e;
  }
}
// #endregion
