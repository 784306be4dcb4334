// Turns an uploaded annotation file into a segmentation's ROIs for an image of width x height.
// The format is recognised by content, never by file name:
//   PNG or TIFF           -> label image (label-image-file.ts)
//   "Iout"                -> one ImageJ ROI; "PK" -> ZIP of ImageJ ROIs (imagej-roi-files.ts)
//   JSON object or array  -> GeoJSON (geojson-file.ts)
// Outline formats are filled with the engine's rule (outlines.ts); every format then goes through
// the same label-image-to-ROIs step (objects.ts). Errors are AnnotationImportErrors only.

import type { Roi } from "../../schema/roi.ts";
import { AnnotationImportError } from "./errors.ts";
import { collectGeoJson, looksLikeJson } from "./geojson-file.ts";
import { isImageJRoi } from "./imagej-roi-decoder.ts";
import { collectImageJRoi, collectImageJRoiArchive } from "./imagej-roi-files.ts";
import { labelsFromImageFile } from "./label-image-file.ts";
import { MAX_IMPORT_DIFFUSION_WORK, MAX_IMPORT_FILE_BYTES, MAX_IMPORT_PIXELS } from "./limits.ts";
import { diffusionWork } from "../../schema/work-limits.ts";
import { objectsFromLabels } from "./objects.ts";
import { OutlineCollector } from "./outlines.ts";
import { isZip } from "./zip-entries.ts";

export { AnnotationImportError, importErrorStatus } from "./errors.ts";

type AnnotationFormat = "label-image" | "imagej-roi" | "imagej-roi-zip" | "geojson";

interface ImportedAnnotation {
  format: AnnotationFormat;
  /** In the engine's raster order, measured by the engine's code. */
  rois: Roi[];
  confluency: number;
  /** The label image the ROIs render back to (labels 1..rois.length). */
  labels: Uint32Array;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47];
const TIFF_SIGNATURES = [
  [0x49, 0x49, 0x2a, 0x00],
  [0x4d, 0x4d, 0x00, 0x2a],
  [0x49, 0x49, 0x2b, 0x00],
  [0x4d, 0x4d, 0x00, 0x2b],
];
const JPEG_SIGNATURE = [0xff, 0xd8, 0xff];

function startsWith(bytes: Uint8Array, signature: readonly number[]): boolean {
  return signature.every((b, i) => bytes[i] === b);
}

function detectAnnotationFormat(bytes: Uint8Array): AnnotationFormat {
  if (bytes.length === 0) throw new AnnotationImportError("unreadable", "the file is empty");
  if (startsWith(bytes, PNG_SIGNATURE) || TIFF_SIGNATURES.some((s) => startsWith(bytes, s)) || startsWith(bytes, JPEG_SIGNATURE)) return "label-image";
  if (isImageJRoi(bytes)) return "imagej-roi";
  if (isZip(bytes)) return "imagej-roi-zip";
  if (looksLikeJson(bytes)) return "geojson";
  throw new AnnotationImportError(
    "unsupported_type",
    "not an annotation file: expected a label image (PNG or TIFF), an ImageJ ROI (.roi) or ROI archive (.zip), or GeoJSON",
  );
}

export function importAnnotation(bytes: Uint8Array, width: number, height: number): ImportedAnnotation {
  if (bytes.length > MAX_IMPORT_FILE_BYTES) {
    throw new AnnotationImportError(
      "limit_exceeded",
      `the file has ${bytes.length.toLocaleString("en-US")} bytes; an annotation may have at most ${MAX_IMPORT_FILE_BYTES.toLocaleString("en-US")}`,
    );
  }
  if (width * height > MAX_IMPORT_PIXELS) {
    throw new AnnotationImportError(
      "limit_exceeded",
      `annotations can be imported for images of up to ${MAX_IMPORT_PIXELS.toLocaleString("en-US")} pixels; this one is ${width}x${height}`,
    );
  }
  const format = detectAnnotationFormat(bytes);
  if (format === "label-image") {
    const file = labelsFromImageFile(bytes, width, height);
    const objects = objectsFromLabels(file.labels, width, height);
    // One value in separate pieces is a binary mask: importing it as one object would lose every
    // cell but the largest, so it is refused with what to do instead.
    if (file.distinctLabels === 1 && objects.strayPixels > 0) {
      throw new AnnotationImportError(
        "invalid_content",
        "the label image is a binary mask (one value over separate pieces); a label image gives each object its own value (in Fiji: Analyze Particles with Show: Count Masks)",
      );
    }
    return withinPreparationWork({ format, rois: objects.rois, confluency: objects.confluency, labels: objects.labels });
  }
  const collector = new OutlineCollector(width, height);
  if (format === "imagej-roi") collectImageJRoi(bytes, collector);
  else if (format === "imagej-roi-zip") collectImageJRoiArchive(bytes, collector);
  else collectGeoJson(bytes, collector);
  const objects = objectsFromLabels(collector.labels, width, height);
  return withinPreparationWork({ format, rois: objects.rois, confluency: objects.confluency, labels: objects.labels });
}

/** Refuses objects whose flow targets would cost a training more than MAX_IMPORT_DIFFUSION_WORK, before anything is stored. */
function withinPreparationWork(imported: ImportedAnnotation): ImportedAnnotation {
  const work = diffusionWork(imported.rois);
  if (work > MAX_IMPORT_DIFFUSION_WORK) {
    let largest = imported.rois[0]!;
    for (const roi of imported.rois) if (roi.bbox_w + roi.bbox_h > largest.bbox_w + largest.bbox_h) largest = roi;
    throw new AnnotationImportError(
      "limit_exceeded",
      `training on these objects would take ${work.toExponential(1)} pixel-steps of heat diffusion to make their flows, past the limit of ${MAX_IMPORT_DIFFUSION_WORK.toExponential(0)} ` +
        `(each object costs its area times twice its box's width and height; the largest, ${largest.bbox_w}x${largest.bbox_h} px, is likely not one cell)`,
    );
  }
  return imported;
}
