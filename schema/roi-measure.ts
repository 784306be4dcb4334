// ROIs and measurements from a raster-ordered label image (labels 1..count, see schema/roi.ts):
// shared by the engine (model segmentations) and the worker (imported annotations), so both measure alike:
// an outline along pixel edges, ImageJ's traced perimeter, pixel-centre centroid and bounding box.
import type { Roi } from "./roi.ts";

export function measureRois(labels: Uint32Array, width: number, height: number, count: number): Roi[] {
  const area = new Float64Array(count + 1);
  const sumX = new Float64Array(count + 1);
  const sumY = new Float64Array(count + 1);
  const minX = new Int32Array(count + 1).fill(width);
  const maxX = new Int32Array(count + 1).fill(-1);
  const minY = new Int32Array(count + 1).fill(height);
  const maxY = new Int32Array(count + 1).fill(-1);
  const first = new Int32Array(count + 1).fill(-1);
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++, i++) {
      const k = labels[i]!;
      if (k === 0) continue;
      if (k > count) throw new Error(`label ${k} exceeds the mask count ${count}`);
      if (first[k] === -1) first[k] = i;
      area[k]!++;
      sumX[k]! += x;
      sumY[k]! += y;
      if (x < minX[k]!) minX[k] = x;
      if (x > maxX[k]!) maxX[k] = x;
      if (y < minY[k]!) minY[k] = y;
      maxY[k] = y;
    }
  }
  const rois: Roi[] = [];
  for (let k = 1; k <= count; k++) {
    if (area[k] === 0) throw new Error(`label ${k} is empty: labels must be numbered 1..count without gaps`);
    const polygon = traceOutline(labels, width, height, k, first[k]!);
    rois.push({
      index: k - 1,
      polygon,
      area_px: area[k]!,
      perimeter_px: tracedPerimeter(polygon),
      centroid_x: sumX[k]! / area[k]! + 0.5,
      centroid_y: sumY[k]! / area[k]! + 0.5,
      bbox_x: minX[k]!,
      bbox_y: minY[k]!,
      bbox_w: maxX[k]! - minX[k]! + 1,
      bbox_h: maxY[k]! - minY[k]! + 1,
    });
  }
  return rois;
}

/** Foreground fraction of the image. */
export function confluency(labels: Uint32Array): number {
  let foreground = 0;
  for (let i = 0; i < labels.length; i++) if (labels[i] !== 0) foreground++;
  return labels.length === 0 ? 0 : foreground / labels.length;
}

/**
 * Traces the outer boundary of mask k along pixel edges, starting at the top-left corner of its
 * first pixel and heading right, with the mask on the right-hand side (y down). At each corner the
 * walk turns left if the pixel ahead-left is in the mask (so diagonal neighbours are joined: masks
 * are 8-connected, background 4-connected), goes straight if only the pixel ahead-right is, and
 * turns right otherwise. Vertices are emitted only where the direction changes. The first pixel
 * is topmost-leftmost, so its top-left corner is on the boundary and visited exactly once.
 */
export function traceOutline(labels: Uint32Array, width: number, height: number, k: number, firstPixel: number): Int32Array {
  const inside = (x: number, y: number) => x >= 0 && y >= 0 && x < width && y < height && labels[y * width + x] === k;
  const startY = Math.floor(firstPixel / width);
  const startX = firstPixel - startY * width;
  // The start corner always is a vertex: the walk arrives heading up the first pixel's left edge.
  const vertices: number[] = [startX, startY];
  let cx = startX + 1, cy = startY;
  let dx = 1, dy = 0; // heading east along the top edge of the first pixel
  while (cx !== startX || cy !== startY) {
    // Left of heading (dx, dy) with y pointing down is (dy, -dx); right is (-dy, dx).
    const aheadLeftX = cx + (dx + dy > 0 ? 0 : -1);
    const aheadLeftY = cy + (dy - dx > 0 ? 0 : -1);
    const aheadRightX = cx + (dx - dy > 0 ? 0 : -1);
    const aheadRightY = cy + (dy + dx > 0 ? 0 : -1);
    let ndx: number, ndy: number;
    if (inside(aheadLeftX, aheadLeftY)) { ndx = dy; ndy = -dx; }
    else if (inside(aheadRightX, aheadRightY)) { ndx = dx; ndy = dy; }
    else { ndx = -dy; ndy = dx; }
    if (ndx !== dx || ndy !== dy) vertices.push(cx, cy);
    dx = ndx; dy = ndy;
    cx += dx; cy += dy;
  }
  return Int32Array.from(vertices);
}

/** ImageJ's PolygonRoi.getTracedPerimeter: edge length minus (2 - √2) per non-adjacent corner. */
export function tracedPerimeter(polygon: Int32Array): number {
  const n = polygon.length / 2;
  if (n < 4) return 0;
  let sumdx = 0, sumdy = 0, corners = 0;
  let dx1 = polygon[0]! - polygon[2 * (n - 1)]!;
  let dy1 = polygon[1]! - polygon[2 * (n - 1) + 1]!;
  let side1 = Math.abs(dx1) + Math.abs(dy1);
  let corner = false;
  for (let i = 0; i < n; i++) {
    const next = (i + 1) % n;
    const dx2 = polygon[2 * next]! - polygon[2 * i]!;
    const dy2 = polygon[2 * next + 1]! - polygon[2 * i + 1]!;
    sumdx += Math.abs(dx1);
    sumdy += Math.abs(dy1);
    const side2 = Math.abs(dx2) + Math.abs(dy2);
    if (side1 > 1 || !corner) { corner = true; corners++; } else corner = false;
    dx1 = dx2; dy1 = dy2; side1 = side2;
  }
  return sumdx + sumdy - corners * (2 - Math.SQRT2);
}
