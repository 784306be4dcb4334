// A label image from any annotation format becomes the segmentation's ROIs by the engine's rules,
// measured by the engine's own code (schema/roi-measure.ts), so an imported object and a predicted
// one are described and exported alike:
//   1. labels renumbered in raster order of each object's first pixel (the ROI order, schema/roi.ts);
//   2. each object keeps its largest 8-connected piece (an ROI is one outline; as the engine does);
//   3. holes are filled where they are background: the ROI artifact stores one outer outline per
//      object, so a hole would come back filled from any export anyway. An object lying inside
//      another's hole keeps its pixels: it starts later in raster order, so it also wins them when
//      the outlines are drawn again (exports, training labels). Enclosed pixels of an earlier
//      object (possible only through a diagonal gap) go to the enclosing one, as drawing does.
// The result renders back (schema/roi-raster.ts) to exactly the labels measured here.

import type { Roi } from "../../schema/roi.ts";
import { labelBoxes, renumberInRasterOrder } from "../../schema/label-image.ts";
import { keepLargestComponents } from "../../schema/label-largest-piece.ts";
import { confluency, measureRois } from "../../schema/roi-measure.ts";
import { AnnotationImportError } from "./errors.ts";
import { MAX_IMPORT_OBJECTS } from "./limits.ts";

export interface ImportedObjects {
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
    throw new AnnotationImportError("too_many_objects", `the file holds ${count.toLocaleString("en-US")} objects; one import may hold at most ${MAX_IMPORT_OBJECTS.toLocaleString("en-US")}`);
  }
  const strayPixels = keepLargestComponents(labels, count, width);
  if (strayPixels > 0) count = renumberInRasterOrder(labels);
  if (fillEnclosed(labels, count, width) && keepLargestComponents(labels, count, width) > 0) count = renumberInRasterOrder(labels);
  return { rois: measureRois(labels, width, height, count), confluency: confluency(labels), labels, strayPixels };
}

/**
 * Gives each object k the pixels it encloses (inside its bounding box, not 4-connected to the box's
 * border through pixels other than k) that are background or belong to an earlier object; later
 * objects keep theirs. The flood follows holes-and-sizes.ts (Cellpose's fill_holes) in the engine.
 * Returns whether an earlier object lost pixels (which may have split it).
 */
function fillEnclosed(labels: Uint32Array, count: number, width: number): boolean {
  const boxes = labelBoxes(labels, width, count);
  let outside = new Uint8Array(0);
  let queue = new Int32Array(0);
  let tookFromOthers = false;
  for (let k = 1; k <= count; k++) {
    const x0 = boxes.minX[k], y0 = boxes.minY[k];
    const w = boxes.maxX[k] - x0 + 1, h = boxes.maxY[k] - y0 + 1;
    if (w < 3 || h < 3) continue; // no room for a hole
    if (outside.length < w * h) {
      outside = new Uint8Array(w * h);
      queue = new Int32Array(w * h);
    }
    outside.fill(0, 0, w * h);
    let head = 0, tail = 0;
    const push = (x: number, y: number) => {
      const j = y * w + x;
      if (outside[j] || labels[(y0 + y) * width + x0 + x] === k) return;
      outside[j] = 1;
      queue[tail++] = j;
    };
    for (let x = 0; x < w; x++) { push(x, 0); push(x, h - 1); }
    for (let y = 1; y < h - 1; y++) { push(0, y); push(w - 1, y); }
    while (head < tail) {
      const j = queue[head++];
      const y = Math.floor(j / w), x = j - y * w;
      if (x > 0) push(x - 1, y);
      if (x < w - 1) push(x + 1, y);
      if (y > 0) push(x, y - 1);
      if (y < h - 1) push(x, y + 1);
    }
    for (let y = 1; y < h - 1; y++) {
      for (let x = 1; x < w - 1; x++) {
        const i = (y0 + y) * width + x0 + x;
        const v = labels[i];
        if (outside[y * w + x] || v >= k) continue;
        if (v !== 0) tookFromOthers = true;
        labels[i] = k;
      }
    }
  }
  return tookFromOthers;
}
