import type { Item, Page } from "@sdgw/types";

/** An answer that may have a next page. */
interface Paged {
  items: Item[];
  page?: Page;
}

/** Options of one walk: those of each page's call (`signal`, `onProgress`, `maxRetries`, `timeout`, …). */
type PageOptions = { idempotencyKey?: string | undefined };

/**
 * Every page of a paged call, following `page.cursor` while `has_more` is true. `opts` are passed to every
 * page's call; an `idempotencyKey` is the first page's, and page n (n ≥ 2) gets `<key>.p<n>`, so walking again
 * with the same key replays the same pages without charging them twice (D69). Failures inside an answer (`status`
 * `error`, `timeout`, …) end the walk with that answer as the last page.
 *
 * @example
 * ```ts
 * for await (const page of pages(client.search, { platform: "reddit", query: "typescript" }, { maxRetries: 5 })) render(page.items);
 * ```
 * @category Paging
 */
export async function* pages<P extends { cursor?: string | undefined }, A, O extends PageOptions = PageOptions>(
  fetchPage: (params: P, opts?: O) => Promise<A>,
  params: P,
  opts?: O,
): AsyncGenerator<A> {
  let next: P | undefined = params;
  for (let n = 1; next; n++) {
    const key = opts?.idempotencyKey;
    const answer: A = await fetchPage(
      next,
      opts && ({ ...opts, ...(key && n > 1 ? { idempotencyKey: `${key}.p${n}` } : {}) } as O),
    );
    yield answer;
    const page = (answer as Paged).page;
    next = page?.has_more ? { ...params, cursor: page.cursor } : undefined;
  }
}

/**
 * Every item of every page of a paged call (see {@link pages}; `opts` as there). Breaking out of the loop stops the
 * walk: no further page is asked for.
 *
 * @example
 * ```ts
 * for await (const item of items(sdgw.search, { platform: "reddit", query: "typescript" })) if (item.kind === "item") console.log(item.title);
 * ```
 * @category Paging
 */
export async function* items<P extends { cursor?: string | undefined }, A, O extends PageOptions = PageOptions>(
  fetchPage: (params: P, opts?: O) => Promise<A>,
  params: P,
  opts?: O,
): AsyncGenerator<Item> {
  for await (const answer of pages(fetchPage, params, opts)) yield* (answer as Paged).items ?? [];
}
