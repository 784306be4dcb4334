// The four exports of a segmentation, saved as <dir>/<file>. Each is streamed to a temporary file
// and renamed when complete, so a file on disk is always a whole export.
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

export async function downloadExport(http: Http, segmentationId: string, format: ExportFormat, dir: string): Promise<string> {
  const target = join(dir, EXPORT_FILES[format]);
  const partial = `${target}.part`;
  try {
    const response = await http.request("GET", `/export/${segmentationId}/${EXPORT_FILES[format]}`);
    await pipeline(Readable.fromWeb(response.body as import("node:stream/web").ReadableStream), createWriteStream(partial));
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  return target;
}
