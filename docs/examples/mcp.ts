// docs/guides/mcp.md — type-checked by `pnpm typecheck`; the guide shows the #regions verbatim.
// #region mcp-client
import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { collectMore, isSdgwError } from "@sdgw/client";
import type { ErrorStructure, ToolQuoteAnswer } from "@sdgw/types";

export async function mcpTour(apiKey: string): Promise<void> {
  const mcp = new Client({ name: "my-agent", version: "1.0.0" });
  // The keys of the HTTP API: X-API-Key, or Authorization: Bearer. Without one, /mcp answers HTTP 401.
  const transport = new StreamableHTTPClientTransport(new URL("http://127.0.0.1:8787/mcp"), { requestInit: { headers: { "X-API-Key": apiKey } } });
  await mcp.connect(transport);

  const { tools } = await mcp.listTools();
  console.log(tools.map((t) => t.name)); // 16: the 13 charging tools, then find, capabilities, account

  // One charging call (10 platforms, up to 20 rows each), then every `more.handle` passed back until an answer
  // has no `more`: reading on is free. Fanout rows come flat, each with its `platform`.
  const rows = await collectMore(mcp, "search", { platforms: "all", query: "露营", count: 20, idempotency_key: "camping-all-1" });
  console.log(rows.length);

  // A call that failed at the gateway is a result with isError and the error structure; nothing was charged.
  const gone = await mcp.callTool({ name: "search", arguments: { handle: "h_not_mine" } });
  if (gone.isError) console.log((gone.structuredContent as ErrorStructure).code); // not_found

  // Bad arguments never reach the gateway: the call rejects with InvalidParams (-32602).
  try {
    await mcp.callTool({ name: "search", arguments: { platform: "weibo" } });
  } catch (e) {
    if (e instanceof ProtocolError) console.log(e.code, e.message); // -32602 Invalid arguments for search: …
    else throw e;
  }
  await mcp.close();
}
// #endregion

// #region mcp-tool-run
export async function brandBuzzOverMcp(mcp: Client): Promise<unknown[]> {
  const args = { query: "瑞幸咖啡", platforms: ["weibo", "douyin", "xiaohongshu"], window: "7d" };

  // confirm: false answers the plan and the price; nothing runs, nothing is charged.
  const quoted = await mcp.callTool({ name: "brand_buzz", arguments: { ...args, confirm: false } });
  const { quote } = quoted.structuredContent as ToolQuoteAnswer;
  console.log(quote.mode, quote.quote_credits, quote.calls_planned);

  // Run it with the quote as a ceiling. A background run answers `running` and a handle at once; collectMore
  // reads that handle after retry_after_seconds until the run has ended, then walks `more`.
  try {
    return await collectMore(mcp, "brand_buzz", { ...args, max_cost_credits: quote.quote_credits, idempotency_key: "buzz-luckin-7d" });
  } catch (e) {
    if (isSdgwError(e, "max_cost_exceeded")) console.log(`the quote rose to ${e.quote_credits}; nothing ran`);
    throw e;
  }
}
// #endregion
