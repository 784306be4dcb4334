// Masks from the end points of the flow dynamics, after Cellpose's dynamics.get_masks_torch:
// a histogram of end points; seeds at histogram bins that are the maximum of their 5x5
// neighbourhood and hold more than 10 end points; each seed grows for 5 steps of 3x3 dilation
// inside an 11x11 window, keeping bins with more than 2 end points; where grown seeds overlap the
// one with more end points wins; every pixel takes the label of the bin its trajectory ended in.
// Cellpose pads the histogram by 20 bins; end points are clamped inside the image, so the padding
// only ever holds zeros and is treated as such here instead of being allocated.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.

const SEED_MIN_COUNT = 10;
const GROW_MIN_COUNT = 2;
const WINDOW_RADIUS = 5;
const GROW_STEPS = 5;

/**
 * Returns the label image (0 = none, 1..K by seed strength order, not yet raster-ordered) of the
 * foreground pixels `foreground`, whose trajectories ended at `ends`. The histogram's memory
 * becomes the label image, so no second full-size array is needed; `ends` is overwritten.
 */
export function masksFromEndPoints(ends: Int32Array, foreground: Int32Array, width: number, height: number): Uint32Array {
  const plane = width * height;
  const histogram = new Int32Array(plane);
  for (let n = 0; n < ends.length; n++) histogram[ends[n]!]!++;

  // Seeds: bins above the count threshold that equal their 5x5 maximum. Only occupied bins can
  // qualify, so scan the end points' bins rather than the whole image.
  const seeds: number[] = [];
  const checked = new Set<number>();
  for (let n = 0; n < ends.length; n++) {
    const bin = ends[n]!;
    const count = histogram[bin]!;
    if (count <= SEED_MIN_COUNT || checked.has(bin)) continue;
    checked.add(bin);
    const y = Math.floor(bin / width),
      x = bin - y * width;
    let isMax = true;
    for (let yy = Math.max(0, y - 2); yy <= Math.min(height - 1, y + 2) && isMax; yy++) {
      for (let xx = Math.max(0, x - 2); xx <= Math.min(width - 1, x + 2); xx++) {
        if (histogram[yy * width + xx]! > count) {
          isMax = false;
          break;
        }
      }
    }
    if (isMax) seeds.push(bin);
  }
  if (seeds.length === 0) return new Uint32Array(histogram.buffer).fill(0);
  // Weakest first, so stronger seeds overwrite (Cellpose: argsort ascending, then scatter amax).
  seeds.sort((a, b) => histogram[a]! - histogram[b]! || a - b);

  const side = 2 * WINDOW_RADIUS + 1;
  const grown = grownSeedPixels(seeds, histogram, width, height, side);
  // The histogram is no longer needed: reuse its memory as the bin -> label map.
  const binLabel = histogram;
  binLabel.fill(0);
  for (let k = 0; k < seeds.length; k++) {
    for (const bin of grown[k]!) if (binLabel[bin]! < k + 1) binLabel[bin] = k + 1;
  }
  // Each pixel's label goes where its end point was (`ends` is used up), then onto the image, whose
  // memory is the bin map's: no third array of the foreground's length.
  for (let n = 0; n < ends.length; n++) ends[n] = binLabel[ends[n]!]!;
  const labels = new Uint32Array(histogram.buffer).fill(0);
  for (let n = 0; n < ends.length; n++) labels[foreground[n]!] = ends[n]!;
  return labels;
}

function grownSeedPixels(seeds: number[], histogram: Int32Array, width: number, height: number, side: number): Int32Array[] {
  const windowCount = new Int32Array(side * side);
  let mask = new Uint8Array(side * side);
  let next = new Uint8Array(side * side);
  const result: Int32Array[] = [];
  for (const seed of seeds) {
    const sy = Math.floor(seed / width),
      sx = seed - sy * width;
    for (let wy = 0; wy < side; wy++) {
      for (let wx = 0; wx < side; wx++) {
        const y = sy + wy - WINDOW_RADIUS,
          x = sx + wx - WINDOW_RADIUS;
        windowCount[wy * side + wx] = y >= 0 && x >= 0 && y < height && x < width ? histogram[y * width + x]! : 0;
      }
    }
    mask.fill(0);
    mask[WINDOW_RADIUS * side + WINDOW_RADIUS] = 1;
    for (let step = 0; step < GROW_STEPS; step++) {
      for (let wy = 0; wy < side; wy++) {
        for (let wx = 0; wx < side; wx++) {
          let any = 0;
          for (let dy = -1; dy <= 1 && !any; dy++) {
            const yy = wy + dy;
            if (yy < 0 || yy >= side) continue;
            for (let dx = -1; dx <= 1; dx++) {
              const xx = wx + dx;
              if (xx >= 0 && xx < side && mask[yy * side + xx]) {
                any = 1;
                break;
              }
            }
          }
          next[wy * side + wx] = any && windowCount[wy * side + wx]! > GROW_MIN_COUNT ? 1 : 0;
        }
      }
      const swap = mask;
      mask = next;
      next = swap;
    }
    const bins: number[] = [];
    for (let wy = 0; wy < side; wy++) {
      for (let wx = 0; wx < side; wx++) {
        if (!mask[wy * side + wx]) continue;
        bins.push((sy + wy - WINDOW_RADIUS) * width + sx + wx - WINDOW_RADIUS);
      }
    }
    result.push(Int32Array.from(bins));
  }
  return result;
}
