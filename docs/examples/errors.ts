// docs/guides/errors-and-retries.md — type-checked by `pnpm typecheck`.
import { createClient, fanoutEntries, isSdgwError, SdgwTransportError } from "@sdgw/client";

export async function errors(apiKey: string): Promise<void> {
  const sdgw = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey, maxRetries: 3, maxCostCredits: 20 });
  try {
    const answer = await sdgw.search({ platforms: ["zhihu", "weibo"], query: "大模型" });
    // Failures on the platform's side come inside the 200 answer, per platform: never thrown, never charged.
    for (const [platform, entry] of fanoutEntries(answer)) {
      if (entry.status === "timeout") console.log(`${platform}: no result in time; unknown whether it ran; not retried`);
      if (entry.status === "error") console.log(`${platform}: ${entry.error.code} ${entry.error.message}`);
    }
  } catch (e) {
    if (!isSdgwError(e)) {
      if (e instanceof SdgwTransportError) console.log("no answer from the gateway; nothing is known to have run");
      throw e;
    }
    switch (e.code) {
      case "max_cost_exceeded":
        console.log(`the quote is ${e.quote_credits} credits; raise max_cost_credits or leave it out`);
        break;
      case "daily_limit_reached":
        console.log(`limit of the ${e.reason}; restarts at ${e.resets_at}`);
        break;
      case "invalid_params":
        console.log(`fix ${e.fix.param}: ${e.message}`);
        break;
      case "unauthorized":
        if (e.reason === "key_in_query") console.log("that key was sent in a URL: revoke it and create a new one");
        break;
      default:
        console.log(e.code, e.status, e.request_id);
    }
  }
}
