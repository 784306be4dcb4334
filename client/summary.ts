// The table `segment` ends with: one row per image, what became of it.
import { join } from "node:path";
import { formatSeconds, table } from "./format.ts";
import type { ImageOutcome } from "./segment-run.ts";

export function summaryTable(outcomes: ImageOutcome[], out: string): string {
  const rows = outcomes.map((o) => [
    o.input.name,
    o.ok ? (o.alreadyDone ? "done (earlier run)" : "done") : o.interrupted ? "interrupted" : "FAILED",
    o.cellCount === null ? "" : String(o.cellCount),
    o.alreadyDone ? "" : formatSeconds(o.ms),
    o.ok ? join(out, o.input.folder) : o.interrupted ? "" : (o.error ?? ""),
  ]);
  const failed = outcomes.filter((o) => !o.ok && !o.interrupted).length;
  const stopped = outcomes.filter((o) => o.interrupted).length;
  const done = outcomes.length - failed - stopped;
  const totals = `${done} of ${outcomes.length} image${outcomes.length === 1 ? "" : "s"} segmented${failed ? `, ${failed} failed` : ""}${stopped ? `, ${stopped} interrupted` : ""}`;
  return `${table(["image", "result", "cells", "elapsed", "exports / reason"], rows)}\n${totals}`;
}
