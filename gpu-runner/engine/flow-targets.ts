// Cellpose's flow targets: for each mask, heat diffuses from a centre pixel for n iterations
// (T <- mean of T over the 3x3 neighbourhood restricted to the mask, plus 1 at the centre each
// step); the flow is the normalised central-difference gradient of T. After Cellpose's
// dynamics.masks_to_flows_gpu / center_of_mass / get_centers (Stringer et al. 2021, current
// version): centre = the mask pixel at the rounded mean position, or the mask pixel nearest to it;
// n = 2 × max over masks of (bbox height + bbox width + 2), shared by all masks of the image.
import { labelBoxes, renumberInRasterOrder } from "./labels.ts";

/** Network flow outputs are this multiple of these unit flows (Cellpose trains on 5 × flows). */
export const FLOW_SCALE = 5;

/**
 * Flow targets of a label image: planar [2, H, W] = (dY, dX), unit length inside masks (0 where the
 * gradient vanishes, as in single-pixel masks) and 0 on background. Label values need not be
 * consecutive.
 */
export function flowsFromLabels(labels: Uint32Array, width: number, height: number): Float32Array {
  if (labels.length !== width * height) throw new Error(`labels hold ${labels.length} values, expected ${width}x${height}`);
  const flows = new Float32Array(2 * width * height);
  const compact = labels.slice();
  const count = renumberInRasterOrder(compact);
  if (count === 0) return flows;
  const boxes = labelBoxes(compact, width, count);
  let iterations = 0;
  for (let k = 1; k <= count; k++) {
    iterations = Math.max(iterations, 2 * (boxes.maxY[k]! - boxes.minY[k]! + 1 + boxes.maxX[k]! - boxes.minX[k]! + 1 + 2));
  }
  const plane = width * height;
  for (let k = 1; k <= count; k++) {
    const x0 = boxes.minX[k]!, y0 = boxes.minY[k]!;
    const w = boxes.maxX[k]! - x0 + 1, h = boxes.maxY[k]! - y0 + 1;
    const { dy, dx } = diffuseMask(compact, width, k, x0, y0, w, h, iterations);
    // Write back the unit vectors, mask pixels only.
    const stride = w + 2;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const i = (y0 + y) * width + x0 + x;
        if (compact[i] !== k) continue;
        const j = (y + 1) * stride + x + 1;
        const norm = 1e-60 + Math.sqrt(dy[j]! * dy[j]! + dx[j]! * dx[j]!);
        flows[i] = dy[j]! / norm;
        flows[plane + i] = dx[j]! / norm;
      }
    }
  }
  return flows;
}

/**
 * Runs the diffusion for mask k inside its bounding box (padded by one pixel of zeros) and returns
 * the unnormalised gradients on that padded grid. Pixels outside the mask hold T = 0 throughout,
 * so a plain 3x3 box sum equals Cellpose's sum over same-mask neighbours.
 */
export function diffuseMask(labels: Uint32Array, width: number, k: number, x0: number, y0: number, w: number, h: number, iterations: number): { dy: Float64Array; dx: Float64Array } {
  const stride = w + 2;
  const size = stride * (h + 2);
  const inside = new Uint8Array(size);
  let sumX = 0, sumY = 0, n = 0;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      if (labels[(y0 + y) * width + x0 + x] === k) {
        inside[(y + 1) * stride + x + 1] = 1;
        sumX += x; sumY += y; n++;
      }
    }
  }
  const centre = centrePixel(inside, stride, w, h, sumX / n, sumY / n);

  let t = new Float64Array(size);
  let next = new Float64Array(size);
  const rowSums = new Float64Array(size);
  for (let step = 0; step < iterations; step++) {
    t[centre]! += 1;
    for (let r = 0; r < h + 2; r++) {
      const base = r * stride;
      for (let x = 1; x <= w; x++) rowSums[base + x] = t[base + x - 1]! + t[base + x]! + t[base + x + 1]!;
    }
    for (let y = 1; y <= h; y++) {
      const base = y * stride;
      for (let x = 1; x <= w; x++) {
        const j = base + x;
        next[j] = inside[j] ? (rowSums[j - stride]! + rowSums[j]! + rowSums[j + stride]!) / 9 : 0;
      }
    }
    const swap = t; t = next; next = swap;
  }
  const dy = new Float64Array(size);
  const dx = new Float64Array(size);
  for (let y = 1; y <= h; y++) {
    for (let x = 1; x <= w; x++) {
      const j = y * stride + x;
      if (!inside[j]) continue;
      dy[j] = t[j + stride]! - t[j - stride]!;
      dx[j] = t[j + 1]! - t[j - 1]!;
    }
  }
  return { dy, dx };
}

/** Cellpose's center_of_mass: the pixel at the rounded mean if inside, else the nearest inside pixel (first in raster order). */
function centrePixel(inside: Uint8Array, stride: number, w: number, h: number, meanX: number, meanY: number): number {
  const cx = roundHalfEven(meanX), cy = roundHalfEven(meanY);
  if (inside[(cy + 1) * stride + cx + 1]) return (cy + 1) * stride + cx + 1;
  let best = -1, bestDistance = Infinity;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const j = (y + 1) * stride + x + 1;
      if (!inside[j]) continue;
      const d = (x - cx) * (x - cx) + (y - cy) * (y - cy);
      if (d < bestDistance) { bestDistance = d; best = j; }
    }
  }
  return best;
}

/** numpy's round: halves go to the even neighbour. */
function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
