// Mask clean-up, after Cellpose's utils.fill_holes_and_remove_small_masks: masks smaller than
// min_size pixels are removed, then each mask's holes (background regions inside its bounding box
// not 4-connected to the box border, as scipy's binary_fill_holes) are filled with its label.
import { forEachEnclosedPixel } from "../../../common/geometry/label-holes.ts";
import { labelBoxes } from "../../../common/geometry/label-image.ts";

/** Works in place on labels numbered 1..count; returns how many masks were removed as too small. */
export function fillHolesAndRemoveSmall(labels: Uint32Array, count: number, width: number, minSize: number): number {
  if (count === 0) return 0;
  const boxes = labelBoxes(labels, width, count);
  let removed = 0;
  if (minSize > 0) {
    const small = new Uint8Array(count + 1);
    for (let k = 1; k <= count; k++) {
      if (boxes.area[k]! > 0 && boxes.area[k]! < minSize) {
        small[k] = 1;
        removed++;
      }
    }
    if (removed > 0) for (let i = 0; i < labels.length; i++) if (small[labels[i]!]) labels[i] = 0;
    for (let k = 1; k <= count; k++) if (small[k]) boxes.area[k] = 0;
  }
  forEachEnclosedPixel(labels, width, count, boxes, (i, k) => (labels[i] = k));
  return removed;
}
