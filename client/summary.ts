// The table `segment` ends with: one row per image, what became of it. The image id is there
// because `import` and `train` take it; the time is each image's own (its upload, prediction and
// exports), never a running total.
import { join } from "node:path";
import { formatSeconds, table } from "./format.ts";
import { blocksSummary } from "./predict.ts";
import type { ImageOutcome } from "./segment-run.ts";

// Exported for its test only (test/client/segment-cli.test.ts).
export const SUMMARY_COLUMNS = ["image", "image id", "result", "cells", "time", "output folder / reason"] as const;

/** After the folder: a whole slide's blocks (how many, how many glass), and any note. */
function notes(o: ImageOutcome): string {
  const said = [o.blocks && blocksSummary(o.blocks), o.note].filter(Boolean);
  return said.length ? ` (${said.join("; ")})` : "";
}

export function summaryTable(outcomes: ImageOutcome[], out: string): string {
  const rows = outcomes.map((o) => [
    o.input.name,
    o.imageId ?? "",
    o.ok ? (o.alreadyDone ? "done (earlier run)" : "done") : o.interrupted ? "interrupted" : "FAILED",
    o.cellCount === null ? "" : String(o.cellCount),
    o.alreadyDone ? "" : formatSeconds(o.ms),
    o.ok ? join(out, o.input.folder) + notes(o) : o.interrupted ? "" : (o.error ?? ""),
  ]);
  const failed = outcomes.filter((o) => !o.ok && !o.interrupted).length;
  const stopped = outcomes.filter((o) => o.interrupted).length;
  const done = outcomes.length - failed - stopped;
  const totals = `${done} of ${outcomes.length} image${outcomes.length === 1 ? "" : "s"} segmented${failed ? `, ${failed} failed` : ""}${stopped ? `, ${stopped} interrupted` : ""}`;
  const legend = "time: the image's own upload, prediction and exports, not its wait for its turn";
  return `${table([...SUMMARY_COLUMNS], rows)}\n${totals}\n${legend}`;
}
