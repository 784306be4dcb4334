// `segmentation <id>`: one segmentation's state, its measurements' included (an import's
// intensities are measured by a runner after the import: `measuring`, then `measured` or `failed`).
import { parseArgs } from "node:util";
import type { SegmentationRecord } from "../../schema/api-records.ts";
import { describePixelSize } from "../../schema/image-formats/calibration.ts";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connect, UsageError } from "../connection.ts";
import type { Http } from "../http.ts";

export const SEGMENTATION_HELP = `npm run client -- segmentation <segmentation-id> [--json]

Shows one segmentation: its image, where it came from (a model, or an import), its cell count (for
a whole slide segmented block by block, its blocks and how many were glass), and whether its cells'
intensities are measured (an import's are measured from the image by a runner, typically seconds
after the import: "measuring", then "measured", or "failed" with the reason).
  --json       print the record as JSON

${CONNECTION_HELP}`;

/** What each measurement state means to the person reading it. */
const MEASUREMENTS: Record<SegmentationRecord["measurements"]["status"], string> = {
  measured: "measured (the intensity columns are in its exports)",
  measuring: "measuring: a runner is measuring its cells' intensities in the image (ask again in a few seconds)",
  failed: "failed",
  not_measured: "not measured (imported before imports were measured; geometry and shape columns only)",
};

/**
 * A whole slide segmented block by block: how many blocks, how many of them glass (the runner's
 * merge records both among the timings); "" for an image segmented in one pass.
 */
function blocksOf(s: SegmentationRecord): string {
  const { blocks, glass_blocks: glass } = s.timings ?? {};
  if (typeof blocks !== "number") return "";
  if (typeof glass !== "number") return String(blocks);
  return `${blocks}, ${glass === 0 ? "none" : glass} of them glass${glass ? " (no signal: the network skipped them)" : ""}`;
}

function describeSegmentation(s: SegmentationRecord): string {
  const made = s.source === "import" ? "imported" : `${s.model_name ?? s.model_id} ${s.model_version ?? ""}`.trim();
  const measurements = MEASUREMENTS[s.measurements.status] + (s.measurements.detail ? `: ${s.measurements.detail}` : "");
  const rows: [string, string][] = [
    ["segmentation", s.id],
    ["image", `${s.image_name} (${s.image_id}), ${s.width}x${s.height}`],
    ["made by", made],
    ["cells", `${s.cell_count}, confluency ${(100 * s.confluency).toFixed(1)}%`],
    ["blocks", blocksOf(s)],
    ["diameter", s.diameter === null ? "" : `${Math.round(s.diameter * 10) / 10} px${s.diameter_basis ? ` (${s.diameter_basis.reason})` : ""}`],
    ["modality", s.modality ? `${s.modality.modality} (${s.modality.source})` : ""],
    ["pixel size", s.pixel_size ? describePixelSize(s.pixel_size.x_um, s.pixel_size.y_um, s.pixel_size.source) : "none (µm columns empty)"],
    ["measurements", measurements],
    ["created", s.created_at.replace("T", " ").slice(0, 19)],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  return rows
    .filter(([, value]) => value !== "")
    .map(([name, value]) => `${name.padEnd(width)}  ${value}`)
    .join("\n");
}

export async function segmentationCommand(args: string[], out: NodeJS.WritableStream, http?: Http): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { ...CONNECTION_OPTIONS, json: { type: "boolean" } }, allowPositionals: true });
  if (values.help) {
    out.write(`${SEGMENTATION_HELP}\n`);
    return 0;
  }
  const [id, ...extra] = positionals;
  if (!id) throw new UsageError("Name the segmentation: segmentation <segmentation-id> (the segment table and import print it)");
  if (extra.length) throw new UsageError(`One segmentation at a time; not also ${extra.join(", ")}`);
  const record = await (http ?? connect(values)).json<SegmentationRecord>("GET", `/segmentation/${encodeURIComponent(id)}`);
  out.write(values.json ? `${JSON.stringify(record)}\n` : `${describeSegmentation(record)}\n`);
  return 0;
}
