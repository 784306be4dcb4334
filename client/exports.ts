// The four exports of a segmentation, saved as <dir>/<file>. Each is streamed to a temporary file
// and renamed when complete, so a file on disk is always a whole export. The label mask is
// masks.png (16-bit labels) up to 65,535 cells and masks.tif (32-bit) above, where the service
// refuses masks.png.
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
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
export const PNG_MAX_CELLS = 65_535;

/** The export's file name (the service's and on disk) for a segmentation of `cellCount` cells. */
export function exportFile(format: ExportFormat, cellCount: number): string {
  return format === "masks" && cellCount > PNG_MAX_CELLS ? "masks.tif" : EXPORT_FILES[format];
}

/** The exports that take `columns` (schema/measurements.ts): the CSV's columns, the GeoJSON's feature properties. */
export const COLUMN_FORMATS: readonly ExportFormat[] = ["csv", "geojson"];

/**
 * What the resume state records for an export on disk: `true`, or for an export saved with
 * `--columns` the columns it was asked with (so other columns fetch it again).
 */
export function exportMark(format: ExportFormat, columns: readonly string[]): true | string {
  return columns.length === 0 || !COLUMN_FORMATS.includes(format) ? true : columns.join(",");
}

/** `columns`: the measurement columns and groups to ask for (measurements.csv and rois.geojson only). */
export async function downloadExport(http: Http, segmentationId: string, file: string, dir: string, columns: readonly string[] = []): Promise<string> {
  const target = join(dir, file);
  const partial = `${target}.part`;
  const query = columns.length ? `?${columns.map((c) => `columns=${encodeURIComponent(c)}`).join("&")}` : "";
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
