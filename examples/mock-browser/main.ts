/**
 * A frontend team's page against the mock: msw/browser's service worker answers the gateway's routes inside the
 * page (no server), and the page uses @sdgw/client exactly as it would against the real gateway.
 *
 * 1. A search the mock runs in the background (its query contains "slow"): 202 → polled → rendered, with progress.
 * 2. A call forced to fail with `invalid_params` through the `x-sdgw-scenario` header: the error and its `fix`.
 */
import { createClient, isSdgwError } from "@sdgw/client";
import { createMock } from "@sdgw/mock";
import { setupWorker } from "msw/browser";

const $ = (id: string) => document.getElementById(id)!;

async function main(): Promise<void> {
  const mock = createMock({ polls: 2, retryAfter: 1 });
  await setupWorker(...mock.handlers).start({ quiet: true, onUnhandledFrame: "bypass" });

  const sdgw = createClient({ baseUrl: location.origin, apiKey: "sdgw_test_key" });
  let polls = 0;
  const answer = await sdgw.search(
    { platform: "xiaohongshu", query: "slow 露营装备" },
    {
      onProgress: (running) => {
        polls++;
        $("search-status").textContent = `running (handle ${running.handle}), read ${polls}×…`;
      },
    },
  );
  $("search-status").textContent =
    `${answer.status}: ${answer.items.length} items after ${polls} progress reports; cost ${answer.billing.cost} credit(s), balance ${answer.billing.balance}`;
  for (const item of answer.items) {
    const li = document.createElement("li");
    const title =
      item.kind === "item"
        ? (item.title ?? item.text ?? item.id)
        : item.kind === "profile_card"
          ? item.name
          : item.kind;
    const likes = item.kind === "item" ? item.metrics?.likes : undefined;
    li.innerHTML = `<span class="title"></span> <small></small>`;
    li.querySelector(".title")!.textContent = title;
    li.querySelector("small")!.textContent = likes === undefined ? "" : `♥ ${likes}`;
    $("search-items").append(li);
  }

  const forced = createClient({
    baseUrl: location.origin,
    apiKey: "sdgw_test_key",
    headers: { "x-sdgw-scenario": "invalid_params" },
  });
  try {
    await forced.search({ platform: "weibo", query: "双十一" });
    $("error-code").textContent = "no error?";
  } catch (e) {
    if (!isSdgwError(e)) throw e;
    $("error-code").textContent = `${e.status} ${e.code}`;
    $("error-message").textContent = e.message;
    $("error-fix").textContent = `fix: ${JSON.stringify(e.fix)}`;
  }
  document.body.dataset["done"] = "yes";
}

main().catch((e: unknown) => {
  document.body.dataset["done"] = "failed";
  $("search-status").textContent = `failed: ${String(e)}`;
});
