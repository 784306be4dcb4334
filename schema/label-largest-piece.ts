// Keeps each mask's largest 8-connected piece. Cellpose's masks may occasionally consist of
// separate pieces (pixels whose trajectories end in the same seed without touching); an ROI is one
// outline, so stray pieces are dropped to keep "polygon area = pixel count" true for every mask.
// (A deliberate addition to Cellpose's pipeline; it changes nothing on connected masks.)
// Works mask by mask inside its bounding box, so memory follows the largest mask, not the image.
import { labelBoxes } from "./label-image.ts";

/** Works in place on labels 1..count; returns the number of pixels removed. */
export function keepLargestComponents(labels: Uint32Array, count: number, width: number): number {
  const boxes = labelBoxes(labels, width, count);
  let piece = new Int32Array(0);
  let stack = new Int32Array(0);
  let removed = 0;
  for (let k = 1; k <= count; k++) {
    if (boxes.area[k] === 0) continue;
    const x0 = boxes.minX[k]!,
      y0 = boxes.minY[k]!;
    const w = boxes.maxX[k]! - x0 + 1,
      h = boxes.maxY[k]! - y0 + 1;
    if (piece.length < w * h) {
      piece = new Int32Array(w * h);
      stack = new Int32Array(w * h);
    }
    piece.fill(-1, 0, w * h);
    const sizes: number[] = [];
    for (let start = 0; start < w * h; start++) {
      const sy = Math.floor(start / w),
        sx = start - sy * w;
      if (piece[start] !== -1 || labels[(y0 + sy) * width + x0 + sx] !== k) continue;
      const id = sizes.length;
      let size = 0,
        top = 0;
      stack[top++] = start;
      piece[start] = id;
      while (top > 0) {
        const j = stack[--top]!;
        size++;
        const y = Math.floor(j / w),
          x = j - y * w;
        for (let dy = -1; dy <= 1; dy++) {
          const yy = y + dy;
          if (yy < 0 || yy >= h) continue;
          for (let dx = -1; dx <= 1; dx++) {
            const xx = x + dx;
            if (xx < 0 || xx >= w) continue;
            const n = yy * w + xx;
            if (piece[n] === -1 && labels[(y0 + yy) * width + x0 + xx] === k) {
              piece[n] = id;
              stack[top++] = n;
            }
          }
        }
      }
      sizes.push(size);
    }
    if (sizes.length === 1) continue;
    let largest = 0;
    for (let id = 1; id < sizes.length; id++) if (sizes[id]! > sizes[largest]!) largest = id;
    for (let j = 0; j < w * h; j++) {
      if (piece[j] === -1 || piece[j] === largest) continue;
      labels[(y0 + Math.floor(j / w)) * width + x0 + (j % w)] = 0;
      removed++;
    }
  }
  return removed;
}
