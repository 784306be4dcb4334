// Cellpose's heat diffusion inside one mask (dynamics.masks_to_flows_gpu, Stringer et al. 2021),
// shared by the flow targets (flow-targets.ts) and the flow-error check (masks/flow-error.ts):
// T <- (3x3 sum of T, zero outside the mask) / 9 with +1 at the centre pixel before each step
// (double precision; the 3x3 sum as three column sums added along the row, so each column sum is
// computed once: 30 % faster than row sums kept in a buffer, and within 1e-15 of them; Cellpose's
// own order of the nine terms is torch's on the GPU and differs again). It skips only work whose
// result is known to be zero:
//  - T is zero outside the mask, so each row is updated only over its runs of mask pixels (which
//    also keeps the inner loop free of per-pixel tests: flow check 22 % faster than testing each pixel);
//  - after s steps heat has spread at most s pixels from the centre (Chebyshev distance), so
//    step s only touches the square of radius s + 1 around it ("light cone");
// and reuses its buffers across masks instead of allocating per mask. Adding an exact zero to a
// float leaves it unchanged, so skipping zero terms cannot change a single bit.

/** Buffers for one mask's bounding box padded by one pixel; grown as larger masks come. */
export class DiffusionScratch {
  inside = new Uint8Array(0);
  /** Temperature after the last step; read it with `stride` = box width + 2. */
  t = new Float64Array(0);
  next = new Float64Array(0);
  /**
   * The mask's pixels as runs along its rows: padded row y holds runs rowRuns[y]..rowRuns[y + 1] - 1,
   * run r covering padded columns runFrom[r]..runTo[r].
   */
  rowRuns = new Int32Array(0);
  runFrom = new Int32Array(0);
  runTo = new Int32Array(0);

  ensure(size: number, rows: number, maxRuns: number): void {
    if (this.t.length < size) {
      this.inside = new Uint8Array(size);
      this.t = new Float64Array(size);
      this.next = new Float64Array(size);
    }
    if (this.rowRuns.length < rows + 1) this.rowRuns = new Int32Array(rows + 1);
    if (this.runFrom.length < maxRuns) {
      this.runFrom = new Int32Array(maxRuns);
      this.runTo = new Int32Array(maxRuns);
    }
  }
}

/**
 * Diffuses heat in mask k, whose bounding box is (x0, y0, w, h), for `iterations` steps. The
 * result is left in `scratch.t` and `scratch.inside` on the box padded by one pixel (stride w + 2);
 * the flow at padded index j is (t[j + stride] - t[j - stride], t[j + 1] - t[j - 1]).
 */
export function diffuseInMask(
  labels: Uint32Array,
  width: number,
  k: number,
  x0: number,
  y0: number,
  w: number,
  h: number,
  iterations: number,
  scratch: DiffusionScratch,
): void {
  const stride = w + 2,
    rows = h + 2;
  const size = stride * rows;
  // A row of w pixels holds at most ceil(w / 2) runs.
  scratch.ensure(size, rows, h * ((w + 1) >> 1));
  const { inside, rowRuns, runFrom, runTo } = scratch;
  inside.fill(0, 0, size);
  scratch.t.fill(0, 0, size);
  scratch.next.fill(0, 0, size);
  let sumX = 0,
    sumY = 0,
    n = 0,
    runs = 0;
  rowRuns[0] = rowRuns[1] = 0;
  for (let y = 0; y < h; y++) {
    let inRun = false;
    for (let x = 0; x < w; x++) {
      if (labels[(y0 + y) * width + x0 + x] !== k) {
        inRun = false;
        continue;
      }
      inside[(y + 1) * stride + x + 1] = 1;
      sumX += x;
      sumY += y;
      n++;
      if (!inRun) {
        runFrom[runs++] = x + 1;
        inRun = true;
      }
      runTo[runs - 1] = x + 1;
    }
    rowRuns[y + 2] = runs;
  }
  rowRuns[rows] = runs;
  const centre = centrePixel(inside, stride, w, h, sumX / n, sumY / n);
  const cy = Math.floor(centre / stride),
    cx = centre - cy * stride;

  let t = scratch.t,
    next = scratch.next;
  for (let step = 0; step < iterations; step++) {
    t[centre]! += 1;
    // Heat now reaches at most `step` pixels from the centre; after this step, step + 1.
    const reach = step + 1;
    diffusionStep(t, next, scratch, stride, Math.max(1, cy - reach), Math.min(h, cy + reach), Math.max(1, cx - reach), Math.min(w, cx + reach));
    const swap = t;
    t = next;
    next = swap;
  }
  scratch.t = t;
  scratch.next = next;
}

/**
 * One step on the mask's runs within rows rowLo..rowHi and columns colLo..colHi (padded). Each
 * pixel sums its column of three, (up + middle) + down, and the row of those column sums,
 * (left + middle) + right, carried along the run so each is computed once. Only mask pixels are
 * written, so the rest stay 0 in both buffers; walking runs rather than testing each pixel keeps
 * the inner loop free of branches (V8 then checks the arrays once per run, not per pixel).
 */
function diffusionStep(
  t: Float64Array,
  next: Float64Array,
  scratch: DiffusionScratch,
  stride: number,
  rowLo: number,
  rowHi: number,
  colLo: number,
  colHi: number,
): void {
  const { rowRuns, runFrom, runTo } = scratch;
  for (let y = rowLo; y <= rowHi; y++) {
    const base = y * stride;
    for (let r = rowRuns[y]!, lastRun = rowRuns[y + 1]!; r < lastRun; r++) {
      const lo = Math.max(colLo, runFrom[r]!),
        hi = Math.min(colHi, runTo[r]!);
      if (lo > hi) continue;
      let j = base + lo;
      let left = t[j - 1 - stride]! + t[j - 1]! + t[j - 1 + stride]!;
      let middle = t[j - stride]! + t[j]! + t[j + stride]!;
      let up = j + 1 - stride,
        down = j + 1 + stride;
      for (const end = base + hi; j <= end; j++, up++, down++) {
        const right = t[up]! + t[j + 1]! + t[down]!;
        next[j] = (left + middle + right) / 9;
        left = middle;
        middle = right;
      }
    }
  }
}

/** Cellpose's center_of_mass: the pixel at the rounded mean if inside, else the nearest inside pixel (first in raster order). */
function centrePixel(inside: Uint8Array, stride: number, w: number, h: number, meanX: number, meanY: number): number {
  const cx = roundHalfEven(meanX),
    cy = roundHalfEven(meanY);
  if (inside[(cy + 1) * stride + cx + 1]) return (cy + 1) * stride + cx + 1;
  let best = -1,
    bestDistance = Infinity;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const j = (y + 1) * stride + x + 1;
      if (!inside[j]) continue;
      const d = (x - cx) * (x - cx) + (y - cy) * (y - cy);
      if (d < bestDistance) {
        bestDistance = d;
        best = j;
      }
    }
  }
  return best;
}

/** numpy's round: halves go to the even neighbour. */
function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
