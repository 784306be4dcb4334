// The one way listings page: newest first, id breaking ties, `limit + 1` rows read to know whether
// another page follows, and an opaque cursor naming the last item shown (schema/api.ts).
import { and, desc, eq, lt, or, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { encodeCursor, type PagePosition } from "../../schema/api.ts";

interface Ordered {
  createdAt: SQLiteColumn;
  id: SQLiteColumn;
}

/** Rows after `position` in newest-first order; no condition on the first page. */
export function after(table: Ordered, position: PagePosition | undefined): SQL | undefined {
  if (!position) return undefined;
  return or(lt(table.createdAt, position.createdAt), and(eq(table.createdAt, position.createdAt), lt(table.id, position.id)));
}

export const newestFirst = (table: Ordered) => [desc(table.createdAt), desc(table.id)];

/** Cuts the `limit + 1` rows read into the page shown and the cursor of the next one. */
export function toPage<Row extends PagePosition, Item>(rows: Row[], limit: number, view: (row: Row) => Item) {
  const shown = rows.slice(0, limit);
  return { items: shown.map(view), next_cursor: rows.length > limit ? encodeCursor(shown.at(-1)!) : null };
}

export interface PageRequest {
  limit: number;
  cursor?: PagePosition;
}
