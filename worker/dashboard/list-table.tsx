// A listing as every dashboard page shows one: a header row, then a row per item, or, where the
// page's script may add rows later, a row saying there are none yet (`empty`).
import type { Child } from "hono/jsx";

export function ListTable<Item>(props: {
  id?: string;
  compact?: boolean;
  headings: readonly string[];
  items: readonly Item[];
  row: (item: Item) => Child;
  /** The row shown while there are no items; none where the page shows its own message instead. */
  empty?: string;
}) {
  return (
    <table class={props.compact ? "list compact" : "list"} id={props.id}>
      <thead>
        <tr>
          {props.headings.map((heading) => (
            <th>{heading}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.empty !== undefined && props.items.length === 0 && (
          <tr class="empty-row">
            <td colspan={props.headings.length}>{props.empty}</td>
          </tr>
        )}
        {props.items.map(props.row)}
      </tbody>
    </table>
  );
}
