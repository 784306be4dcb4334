// The four exports of a segmentation, saved as <dir>/<file>. Each is streamed to a temporary file
// and renamed when complete, so a file on disk is always a whole export. The label mask is
// masks.png (16-bit labels) up to 65,535 cells and masks.tif (32-bit) above, where the service
// refuses masks.png.
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { PNG_MAX_LABEL } from "../schema/label-png-limit.ts";
import type { Http } from "./http.ts";

export const EXPORT_FILES = {
  csv: "measurements.csv",
  geojson: "rois.geojson",
  zip: "rois.zip",
  masks: "masks.png",
} as const;

export type ExportFormat = keyof typeof EXPORT_FILES;

export const isExportFormat = (name: string): name is ExportFormat => Object.hasOwn(EXPORT_FILES, name);

/** The most cells masks.png can label (16 bits). */

/** The export's file name (the service's and on disk) for a segmentation of `cellCount` cells. */
export function exportFile(format: ExportFormat, cellCount: number): string {
  return format === "masks" && cellCount > PNG_MAX_LABEL ? "masks.tif" : EXPORT_FILES[format];
}

/** The exports that take `columns` (schema/measurements.ts): the CSV's columns, the GeoJSON's feature properties. */
const COLUMN_FORMATS: readonly ExportFormat[] = ["csv", "geojson"];

/** What exports are asked for beyond their names. */
export interface ExportChoice {
  /** The measurement columns and groups of measurements.csv and rois.geojson; empty: the service's default. */
  columns: readonly string[];
  /** rois.geojson as QuPath cell objects (the cell's outline, its nucleus as nucleusGeometry) instead of detections. */
  cellObjects?: boolean;
}

/** The query parameters one export is asked with. */
function exportQuery(format: ExportFormat, choice: ExportChoice): string[] {
  const query = COLUMN_FORMATS.includes(format) ? choice.columns.map((c) => `columns=${encodeURIComponent(c)}`) : [];
  if (format === "geojson" && choice.cellObjects) query.push("objects=cell");
  return query;
}

/**
 * What the resume state records for an export on disk: `true`, or for an export saved with
 * `--columns` or `--cell-objects` what it was asked with (so a rerun asking otherwise fetches it again).
 */
export function exportMark(format: ExportFormat, choice: ExportChoice): true | string {
  const columns = COLUMN_FORMATS.includes(format) ? choice.columns.join(",") : "";
  const objects = format === "geojson" && choice.cellObjects ? "objects=cell" : "";
  return columns === "" && objects === "" ? true : [columns, objects].filter(Boolean).join(";");
}

export async function downloadExport(
  http: Http,
  segmentationId: string,
  file: string,
  dir: string,
  choice: ExportChoice,
  format: ExportFormat,
): Promise<string> {
  const target = join(dir, file);
  const partial = `${target}.part`;
  const params = exportQuery(format, choice);
  const query = params.length ? `?${params.join("&")}` : "";
  try {
    const response = await http.request("GET", `/export/${segmentationId}/${file}${query}`);
    await pipeline(Readable.fromWeb(response.body as import("node:stream/web").ReadableStream), createWriteStream(partial));
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  return target;
}
