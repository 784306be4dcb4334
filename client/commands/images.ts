// `images`: every image of the organization, newest first, all pages followed.
import { parseArgs } from "node:util";
import type { ImageRecord, SegmentationRecord } from "../../schema/api-records.ts";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connect, UsageError } from "../connection.ts";
import { formatBytes, formatPixelSize, table } from "../format.ts";
import type { Http } from "../http.ts";
import { everyItem } from "../pages.ts";

const STATUSES = ["pending", "processing", "ready", "failed"];

export const IMAGES_HELP = `npm run client -- images [--status ready|pending|processing|failed] [--json]

Lists your organization's images, newest first (every page), each with the cell count of its most
recent segmentation (the one \`train\` learns from) and how many it has.
  --status S   only images whose upload_status is S
  --json       print the records as JSON, one per line

${CONNECTION_HELP}`;

/** Each image's segmentations, from one listing of the organization's (newest first): the latest's cell count and how many. */
async function segmentationCounts(http: Http): Promise<Map<string, { cells: number; count: number }>> {
  const byImage = new Map<string, { cells: number; count: number }>();
  for await (const s of everyItem<SegmentationRecord>(http, "/segmentations")) {
    const seen = byImage.get(s.image_id);
    if (seen) seen.count++;
    else byImage.set(s.image_id, { cells: s.cell_count, count: 1 });
  }
  return byImage;
}

export async function imagesCommand(args: string[], out: NodeJS.WritableStream, injected?: Http): Promise<number> {
  const { values } = parseArgs({ args, options: { ...CONNECTION_OPTIONS, status: { type: "string" }, json: { type: "boolean" } } });
  if (values.help) {
    out.write(`${IMAGES_HELP}\n`);
    return 0;
  }
  if (values.status !== undefined && !STATUSES.includes(values.status)) throw new UsageError(`--status must be one of ${STATUSES.join(", ")}`);
  const http = injected ?? connect(values);
  const images = everyItem<ImageRecord>(http, "/images", { upload_status: values.status });
  if (values.json) {
    for await (const image of images) out.write(`${JSON.stringify(image)}\n`);
    return 0;
  }
  const rows: string[][] = [];
  const segmentations = await segmentationCounts(http);
  for await (const i of images) {
    const segmented = segmentations.get(i.id);
    const size = i.width && i.height ? `${i.width}x${i.height}` : "";
    rows.push([
      i.id,
      i.name,
      i.upload_status,
      i.size === null ? "" : formatBytes(i.size),
      size,
      i.upload_status === "ready" ? formatPixelSize(i) : "",
      segmented ? String(segmented.cells) : "",
      segmented ? String(segmented.count) : "0",
      i.created_at.replace("T", " ").slice(0, 19),
      i.upload_error ?? "",
    ]);
  }
  out.write(
    `${table(["id", "name", "status", "bytes", "pixels", "pixel size", "cells", "segmentations", "created", "error"], rows)}\n${rows.length} image${rows.length === 1 ? "" : "s"}\n`,
  );
  return 0;
}
