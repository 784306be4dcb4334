// A label image from any annotation format becomes the segmentation's ROIs by the engine's rules,
// measured by the engine's own code (common/geometry/roi-measure.ts), so an imported object and a predicted
// one are described and exported alike:
//   1. labels renumbered in raster order of each object's first pixel (the ROI order, schema/roi.ts);
//   2. each object keeps its largest 8-connected piece (an ROI is one outline; as the engine does);
//   3. holes are kept: an object's outline leaves out what it encloses (background, or objects
//      inside it) by a keyhole seam (common/geometry/roi-measure.ts), so exports and training labels draw
//      the hole again. Enclosed pixels of an earlier object (possible only through a diagonal gap)
//      go to the enclosing one, as drawing its outer outline did before holes were kept.
// The result renders back (common/geometry/roi-raster.ts) to exactly the labels measured here.

import type { Roi } from "../../schema/roi.ts";
import { forEachEnclosedPixel } from "../../common/geometry/label-holes.ts";
import { labelBoxes, renumberInRasterOrder } from "../../common/geometry/label-image.ts";
import { keepLargestComponents } from "../../common/geometry/label-largest-piece.ts";
import { confluency, measureRois } from "../../common/geometry/roi-measure.ts";
import { AnnotationImportError } from "./errors.ts";
import { MAX_IMPORT_BOX_PIXELS, MAX_IMPORT_OBJECTS } from "./limits.ts";

interface ImportedObjects {
  rois: Roi[];
  confluency: number;
  /** The final label image (labels 1..rois.length), what the ROIs render back to. */
  labels: Uint32Array;
  /** Pixels dropped because they were not in their object's largest piece. */
  strayPixels: number;
}

/** Works in place on `labels` (any non-zero values, at most MAX_IMPORT_OBJECTS distinct ones). */
export function objectsFromLabels(labels: Uint32Array, width: number, height: number): ImportedObjects {
  let count = renumberInRasterOrder(labels);
  if (count === 0) throw new AnnotationImportError("no_objects", `no object lies inside the ${width}x${height} image`);
  if (count > MAX_IMPORT_OBJECTS) {
    throw new AnnotationImportError(
      "too_many_objects",
      `the file holds ${count.toLocaleString("en-US")} objects; one import may hold at most ${MAX_IMPORT_OBJECTS.toLocaleString("en-US")}`,
    );
  }
  checkBoxPixels(labels, width, height, count);
  const strayPixels = keepLargestComponents(labels, count, width);
  if (strayPixels > 0) count = renumberInRasterOrder(labels);
  if (fillEnclosed(labels, count, width) && keepLargestComponents(labels, count, width) > 0) count = renumberInRasterOrder(labels);
  return { rois: measureRois(labels, width, height, count, { holes: true }), confluency: confluency(labels), labels, strayPixels };
}

/**
 * The passes below visit each object's bounding box; their sum, counting overlaps, is held to
 * MAX_IMPORT_BOX_PIXELS before any of them runs (one pass over the labels to find the boxes).
 * Boxes only shrink in the passes, so one check covers them all.
 */
function checkBoxPixels(labels: Uint32Array, width: number, height: number, count: number): void {
  const boxes = labelBoxes(labels, width, count);
  let total = 0;
  for (let k = 1; k <= count; k++) {
    if (boxes.area[k] === 0) continue;
    total += (boxes.maxX[k]! - boxes.minX[k]! + 1) * (boxes.maxY[k]! - boxes.minY[k]! + 1);
  }
  if (total > MAX_IMPORT_BOX_PIXELS) {
    throw new AnnotationImportError(
      "limit_exceeded",
      `the objects' bounding boxes cover ${total.toLocaleString("en-US")} pixels, counting overlaps; one import may cover at most ${MAX_IMPORT_BOX_PIXELS.toLocaleString("en-US")} (${Math.floor(MAX_IMPORT_BOX_PIXELS / (width * height)).toLocaleString("en-US")} times this ${width}x${height} image): objects spread over much of the image, such as one label used on pixels far apart, are not cells`,
    );
  }
}

/**
 * Gives each object k the pixels of earlier objects it encloses (inside its bounding box, not
 * 4-connected to the box's border through pixels other than k: common/geometry/label-holes.ts); background
 * it encloses stays a hole, later objects keep theirs. Returns whether an earlier object lost
 * pixels (which may have split it).
 */
function fillEnclosed(labels: Uint32Array, count: number, width: number): boolean {
  let tookFromOthers = false;
  forEachEnclosedPixel(labels, width, count, labelBoxes(labels, width, count), (i, k) => {
    const v = labels[i]!;
    if (v === 0 || v > k) return;
    tookFromOthers = true;
    labels[i] = k;
  });
  return tookFromOthers;
}
