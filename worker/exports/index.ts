// The exports the route offers, one entry per format. Each takes the ROI artifact's R2 body, the
// segmentation's export context, the query options and a way to read the artifact again (only
// masks.tif, which renders twice, uses it), validates the options before reading anything, reads
// the artifact header, and returns a streaming body with its media type and file name. The route
// maps thrown errors with `exportErrorStatus`.

import { readRoiArtifact } from "../../common/roi-artifact/reader.ts";
import type { RoiArtifactContents, RoiArtifactHeader } from "../../schema/roi-artifact.ts";
import { RoiArtifactError } from "../../schema/roi-artifact.ts";
import { measurementColumns, selectMeasurementColumns, UnknownMeasurementColumnsError } from "../../common/measurement-columns.ts";
import type { ExportContext } from "../../schema/measurements.ts";
import { ImageJRoiLimitError } from "./imagej-roi.ts";
import { labelPng, MasksPngLimitError } from "./label-png.ts";
import { labelTiff } from "./label-tiff.ts";
import { measurementsCsv } from "./measurements-csv.ts";
import { roisGeoJson } from "./rois-geojson.ts";
import { roisZip } from "./rois-zip.ts";

import type { Segmentation } from "../services/segmentations.ts";

export interface ExportOptions {
  /** measurements.csv and rois.geojson: the `columns` query values (columns and groups), in order. */
  columns?: readonly string[];
  /** rois.geojson: "cell" writes QuPath cell objects (needs a segmentation with cells); "detection", the default, the nuclei. */
  objects?: "detection" | "cell";
}

// Exported for its test only (test/worker/exports/cells.test.ts).
/** rois.geojson?objects=cell of a segmentation made without a cell expansion: 422. */
export class NoCellsError extends Error {
  constructor(segmentationId: string) {
    super(
      `Segmentation ${segmentationId} has no cells: predict with params.cell_expansion_um or cell_expansion_px to grow cells around the nuclei, or leave objects out for the nuclei`,
    );
    this.name = "NoCellsError";
  }
}

// Exported for its test only (test/worker/exports/helpers/run-export.ts).
export interface ExportFile {
  body: ReadableStream<Uint8Array>;
  contentType: string;
  fileName: string;
}

export type ExportFormatName = "measurements.csv" | "rois.geojson" | "rois.zip" | "masks.png" | "masks.tif";

/** Opens the same ROI artifact again, from its start. */
type ArtifactReread = () => Promise<ReadableStream<Uint8Array>>;

type ExportFunction = (artifact: ReadableStream<Uint8Array>, context: ExportContext, options: ExportOptions, reread: ArtifactReread) => Promise<ExportFile>;

/** What every export says about the segmentation it comes from. */
export function exportContext(segmentation: Segmentation): ExportContext {
  return {
    segmentationId: segmentation.id,
    segmentationSource: segmentation.source,
    modelName: segmentation.modelName,
    imageName: segmentation.imageName,
    imageWidth: segmentation.width,
    imageHeight: segmentation.height,
    confluency: segmentation.confluency,
    pixelSize: segmentation.pixelSizeXUm !== null && segmentation.pixelSizeYUm !== null ? { x: segmentation.pixelSizeXUm, y: segmentation.pixelSizeYUm } : null,
  };
}

/** The image name without its extension, reduced to characters every file system accepts. */
function baseName(context: ExportContext): string {
  const stem = context.imageName.replace(/\.[^./\\]*$/, "");
  const safe = stem.replace(/[\u0000-\u001f\u007f/\\:*?"<>|]+/g, "_").trim();
  return safe === "" ? context.segmentationId : safe;
}

/** Reads the header, cancelling the body if it is not a valid artifact. */
async function open(artifact: ReadableStream<Uint8Array>): Promise<RoiArtifactContents> {
  return readRoiArtifact(artifact);
}

/** The context with what the artifact's header adds: the channels its ROIs carry intensities of. */
export function withHeader(context: ExportContext, header: RoiArtifactHeader): ExportContext {
  return { ...context, ...(header.channelNames?.length && { channels: header.channelNames }), ...(header.cells && { cells: true }) };
}

/**
 * Reads the header and chooses the columns `options` ask for among the segmentation's (its
 * intensity columns are named by the header's channels); an unknown name cancels the read and
 * throws UnknownMeasurementColumnsError before any ROI is read.
 */
async function withColumns(artifact: ReadableStream<Uint8Array>, context: ExportContext, options: ExportOptions) {
  const contents = await open(artifact);
  const full = withHeader(context, contents.header);
  try {
    return { contents, full, columns: selectMeasurementColumns(options.columns, measurementColumns(full)) };
  } catch (e) {
    await contents.cancel();
    throw e;
  }
}

export const EXPORTS: Readonly<Record<ExportFormatName, ExportFunction>> = {
  "measurements.csv": async (artifact, context, options) => {
    const { contents, columns, full } = await withColumns(artifact, context, options);
    return {
      body: measurementsCsv(contents, full, columns),
      contentType: "text/csv; charset=utf-8; header=present",
      fileName: `${baseName(context)}-measurements.csv`,
    };
  },
  "rois.geojson": async (artifact, context, options) => {
    const { contents, columns, full } = await withColumns(artifact, context, options);
    const cells = options.objects === "cell";
    if (cells && !full.cells) {
      await contents.cancel();
      throw new NoCellsError(context.segmentationId);
    }
    return {
      body: roisGeoJson(contents, full, columns, { cells }),
      contentType: "application/geo+json",
      fileName: `${baseName(context)}-rois.geojson`,
    };
  },
  "rois.zip": async (artifact, context) => {
    const contents = await open(artifact);
    try {
      return { body: roisZip(contents, context), contentType: "application/zip", fileName: `${baseName(context)}-rois.zip` };
    } catch (e) {
      await contents.rois.return?.(undefined);
      throw e;
    }
  },
  // 16-bit labels: a segmentation of more than 65,535 ROIs is refused (422) and pointed to masks.tif.
  "masks.png": async (artifact, context) => {
    const contents = await open(artifact);
    try {
      return { body: labelPng(contents), contentType: "image/png", fileName: `${baseName(context)}-masks.png` };
    } catch (e) {
      await contents.rois.return?.(undefined);
      throw e;
    }
  },
  "masks.tif": async (artifact, context, _options, reread) => {
    const contents = await open(artifact);
    const { roiCount } = contents.header;
    const description = `Labels of segmentation ${context.segmentationId}: 0 is background, k is ROI k (roi_index); ${roiCount} ROIs`;
    try {
      return {
        body: labelTiff(contents, async () => open(await reread()), description),
        contentType: "image/tiff",
        fileName: `${baseName(context)}-masks.tif`,
      };
    } catch (e) {
      await contents.rois.return?.(undefined);
      throw e;
    }
  },
};

/** Content-Disposition for a download: an ASCII fallback name plus the exact UTF-8 name (RFC 6266). */
export function contentDisposition(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName)}`;
}

/**
 * The HTTP status for an error thrown by an export entry before streaming starts: 400 for unknown
 * columns, 422 for a segmentation the format cannot represent, 500 for a broken artifact; null for
 * anything else (let the app's error handler decide). Errors after the first byte abort the stream.
 */
export function exportErrorStatus(error: unknown): 400 | 422 | 500 | null {
  if (error instanceof UnknownMeasurementColumnsError) return 400;
  if (error instanceof ImageJRoiLimitError || error instanceof MasksPngLimitError || error instanceof NoCellsError || error instanceof RangeError) return 422;
  if (error instanceof RoiArtifactError) return 500;
  return null;
}
