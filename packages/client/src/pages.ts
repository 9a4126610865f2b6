import type { Item, Page } from "@sdgw/types";

/** An answer that may have a next page. */
interface Paged {
  items: Item[];
  page?: Page;
}

/**
 * Every page of a paged call, following `page.cursor` while `has_more` is true.
 *
 * ```ts
 * for await (const page of pages(client.search, { platform: "reddit", query: "typescript" })) render(page.items);
 * ```
 * Failures inside an answer (`status` `error`, `timeout`, …) end the walk with that answer as the last page.
 */
export async function* pages<P extends { cursor?: string }, A>(fetchPage: (params: P) => Promise<A>, params: P): AsyncGenerator<A> {
  let next: P | undefined = params;
  while (next) {
    const answer: A = await fetchPage(next);
    yield answer;
    const page = (answer as Paged).page;
    next = page?.has_more ? { ...params, cursor: page.cursor } : undefined;
  }
}

/** Every item of every page of a paged call (see {@link pages}). */
export async function* items<P extends { cursor?: string }, A>(fetchPage: (params: P) => Promise<A>, params: P): AsyncGenerator<Item> {
  for await (const answer of pages(fetchPage, params)) yield* (answer as Paged).items ?? [];
}
