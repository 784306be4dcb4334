// Listings answer a page at a time ({items, next_cursor}); this follows the cursors to the end.
import type { Http } from "./http.ts";

export async function* everyItem<Item>(http: Http, path: string, query: Record<string, string | undefined> = {}): AsyncGenerator<Item> {
  let cursor: string | undefined;
  do {
    const page = await http.json<{ items: Item[]; next_cursor: string | null }>("GET", path, { query: { ...query, limit: 200, cursor } });
    yield* page.items;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}
