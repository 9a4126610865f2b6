// docs/guides/polling-and-handles.md — type-checked by `pnpm typecheck`.
import { createClient, isSdgwError, SdgwPollTimeoutError } from "@sdgw/client";

export async function polling(apiKey: string): Promise<void> {
  const sdgw = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey, maxWaitMs: 120_000 });
  const controller = new AbortController();

  // A call that answers 202 is polled until it ends; progress arrives with each running answer.
  const buzz = await sdgw.tools.brandBuzz(
    { query: "瑞幸咖啡", platforms: ["weibo", "douyin", "xiaohongshu"], window: "7d" },
    { signal: controller.signal, onProgress: (running) => console.log(`${running.waves.done}/${running.waves.planned} waves`, running.steps) },
  );
  if ("status" in buzz && buzz.status === "ok") console.log(buzz.items.length, buzz.charge.charged_credits);

  // Or take the handle and come back later: reading a result is free, for 24 hours after the run ends.
  const started = await sdgw.search({ platforms: "all", query: "双十一" }, { wait: false });
  if (started.status === "running") {
    const csv = await sdgw.results.get(started.handle, { format: "csv" });
    console.log(typeof csv === "string" ? csv.split("\n")[0] : `still running: ${csv.status}`);
  }

  // A deadline gives the handle back instead of losing the run.
  try {
    await sdgw.search({ platform: "weibo", query: "热搜" }, { maxWaitMs: 5_000 });
  } catch (e) {
    if (e instanceof SdgwPollTimeoutError) console.log(`read it later: ${e.handle}`);
    else if (isSdgwError(e, "handle_expired")) console.log("kept 24 hours only; send the call again");
    else throw e;
  }
}
