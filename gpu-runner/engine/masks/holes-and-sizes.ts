// Mask clean-up, after Cellpose's utils.fill_holes_and_remove_small_masks: masks smaller than
// min_size pixels are removed, then each mask's holes (background regions inside its bounding box
// not 4-connected to the box border, as scipy's binary_fill_holes) are filled with its label.
import { labelBoxes } from "../../../schema/label-image.ts";

/** Works in place on labels numbered 1..count; returns how many masks were removed as too small. */
export function fillHolesAndRemoveSmall(labels: Uint32Array, count: number, width: number, minSize: number): number {
  if (count === 0) return 0;
  const boxes = labelBoxes(labels, width, count);
  let removed = 0;
  if (minSize > 0) {
    const small = new Uint8Array(count + 1);
    for (let k = 1; k <= count; k++) {
      if (boxes.area[k]! > 0 && boxes.area[k]! < minSize) { small[k] = 1; removed++; }
    }
    if (removed > 0) for (let i = 0; i < labels.length; i++) if (small[labels[i]!]) labels[i] = 0;
    for (let k = 1; k <= count; k++) if (small[k]) boxes.area[k] = 0;
  }
  let queue = new Int32Array(0);
  let outside = new Uint8Array(0);
  for (let k = 1; k <= count; k++) {
    if (boxes.area[k] === 0) continue;
    const x0 = boxes.minX[k]!, y0 = boxes.minY[k]!;
    const w = boxes.maxX[k]! - x0 + 1, h = boxes.maxY[k]! - y0 + 1;
    if (w < 3 || h < 3) continue; // no room for a hole
    if (outside.length < w * h) { outside = new Uint8Array(w * h); queue = new Int32Array(w * h); }
    outside.fill(0, 0, w * h);
    // Flood the non-mask pixels reachable from the box border; the rest of the non-mask pixels are holes.
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
      const j = queue[head++]!;
      const y = Math.floor(j / w), x = j - y * w;
      if (x > 0) push(x - 1, y);
      if (x < w - 1) push(x + 1, y);
      if (y > 0) push(x, y - 1);
      if (y < h - 1) push(x, y + 1);
    }
    for (let y = 1; y < h - 1; y++) {
      for (let x = 1; x < w - 1; x++) {
        const i = (y0 + y) * width + x0 + x;
        if (!outside[y * w + x] && labels[i] !== k) labels[i] = k;
      }
    }
  }
  return removed;
}
