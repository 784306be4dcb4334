// The pixels an object encloses: inside its bounding box and not 4-connected to the box's border
// through pixels of other labels (scipy's binary_fill_holes per mask, as Cellpose's
// utils.fill_holes_and_remove_small_masks uses it). The engine's mask clean-up fills them with the
// object; annotation import lets an object claim what it encloses of earlier objects too.
import type { LabelBoxes } from "./label-image.ts";

/**
 * For objects 1..count (boxes from labelBoxes; an object of area 0 is skipped), in order, calls
 * `enclosed(i, k)` for every pixel i that object k encloses and that is not already k. The callback
 * may relabel the pixel; later objects see the change.
 */
export function forEachEnclosedPixel(labels: Uint32Array, width: number, count: number, boxes: LabelBoxes, enclosed: (i: number, k: number) => void): void {
  let queue = new Int32Array(0);
  let outside = new Uint8Array(0);
  for (let k = 1; k <= count; k++) {
    if (boxes.area[k] === 0) continue;
    const x0 = boxes.minX[k]!,
      y0 = boxes.minY[k]!;
    const w = boxes.maxX[k]! - x0 + 1,
      h = boxes.maxY[k]! - y0 + 1;
    if (w < 3 || h < 3) continue; // no room for a hole
    if (outside.length < w * h) {
      outside = new Uint8Array(w * h);
      queue = new Int32Array(w * h);
    }
    outside.fill(0, 0, w * h);
    // Flood the pixels of other labels reachable from the box border; what is left encloses.
    let head = 0,
      tail = 0;
    const push = (x: number, y: number) => {
      const j = y * w + x;
      if (outside[j] || labels[(y0 + y) * width + x0 + x] === k) return;
      outside[j] = 1;
      queue[tail++] = j;
    };
    for (let x = 0; x < w; x++) {
      push(x, 0);
      push(x, h - 1);
    }
    for (let y = 1; y < h - 1; y++) {
      push(0, y);
      push(w - 1, y);
    }
    while (head < tail) {
      const j = queue[head++]!;
      const y = Math.floor(j / w),
        x = j - y * w;
      if (x > 0) push(x - 1, y);
      if (x < w - 1) push(x + 1, y);
      if (y > 0) push(x, y - 1);
      if (y < h - 1) push(x, y + 1);
    }
    for (let y = 1; y < h - 1; y++) {
      for (let x = 1; x < w - 1; x++) {
        const i = (y0 + y) * width + x0 + x;
        if (!outside[y * w + x] && labels[i] !== k) enclosed(i, k);
      }
    }
  }
}
