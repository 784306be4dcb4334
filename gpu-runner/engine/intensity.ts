// Per-cell intensity statistics from the image's original pixel values (the decoder's, before any
// normalisation), for every channel: mean, median, standard deviation, min, max and sum
// (INTENSITY_STATS, schema/roi.ts), as scikit-image's regionprops gives them for the same labels
// and intensity image (intensity_mean, _min, _max; np.median, np.std with ddof 0 and np.sum over
// the region's pixels). Sums and means are exact for integer images (float64 holds every partial
// sum of up to 2^37 16-bit values exactly); a cell with a NaN pixel has NaN everywhere, as numpy's
// reductions propagate it.
//
// Memory: one Uint32Array of the foreground pixels' indices grouped by label (a counting sort) and
// one Float64Array as large as the largest cell; each cell's values are copied there per channel.
// The median is found by selection (C. A. R. Hoare, "Algorithm 65: FIND", CACM 4(7), 1961), not by
// sorting, so the cost stays linear in the pixels.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import type { DecodedImage } from "../../common/decode/index.ts";
import { INTENSITY_STATS, type Roi } from "../../schema/roi.ts";
import { ScanPolygon } from "../../common/geometry/roi-raster.ts";

const STATS = INTENSITY_STATS.length;

/**
 * Statistics of labels 1..count over `image` (planar [C, H, W], the labels' size): one Float64Array
 * of C × INTENSITY_STATS per label, label k's at [k - 1].
 */
export function measureIntensity(image: DecodedImage, labels: Uint32Array, count: number): Float64Array[] {
  const plane = image.width * image.height;
  if (labels.length !== plane) throw new Error(`labels of ${labels.length} pixels for an image of ${plane}`);
  // Counting sort of the foreground pixels by label.
  const start = new Uint32Array(count + 2);
  for (let i = 0; i < plane; i++) {
    const k = labels[i]!;
    if (k !== 0) start[k + 1]!++;
  }
  for (let k = 1; k <= count + 1; k++) start[k]! += start[k - 1]!;
  const fill = start.slice(0, count + 1);
  const pixels = new Uint32Array(start[count + 1]!);
  let largest = 0;
  for (let i = 0; i < plane; i++) {
    const k = labels[i]!;
    if (k === 0) continue;
    if (k > count) throw new Error(`label ${k} exceeds the count ${count}`);
    pixels[fill[k]!++] = i;
  }
  for (let k = 1; k <= count; k++) largest = Math.max(largest, start[k + 1]! - start[k]!);
  const values = new Float64Array(largest);
  const out: Float64Array[] = [];
  for (let k = 1; k <= count; k++) out.push(pixelStatistics(image, pixels.subarray(start[k]!, start[k + 1]!), values));
  return out;
}

/**
 * Statistics of each ROI's own pixels (those whose centre its outline holds: the filling rule of
 * common/geometry/roi-raster.ts), one Float64Array per ROI in order: what an imported segmentation, which
 * has outlines but no label image, is measured with. ROIs that overlap would each keep all their
 * pixels, as their area_px counts them. Memory: one image row and one cell's pixels.
 */
export function measureOutlineIntensity(image: DecodedImage, rois: readonly Roi[]): Float64Array[] {
  const { width, height } = image;
  const row = new Uint32Array(width);
  let pixels = new Uint32Array(1024);
  let values = new Float64Array(1024);
  const out: Float64Array[] = [];
  for (const roi of rois) {
    const shape = new ScanPolygon([roi.polygon]);
    const left = Math.max(0, roi.bbox_x),
      right = Math.min(width, roi.bbox_x + roi.bbox_w);
    let n = 0;
    for (let y = Math.max(0, roi.bbox_y); y < Math.min(height, roi.bbox_y + roi.bbox_h); y++) {
      row.fill(0, left, right);
      shape.fillRow(y, row, width, 1);
      if (n + (right - left) > pixels.length) {
        const grown = new Uint32Array(Math.max(2 * pixels.length, n + right - left));
        grown.set(pixels.subarray(0, n));
        pixels = grown;
      }
      for (let x = left; x < right; x++) if (row[x] === 1) pixels[n++] = y * width + x;
    }
    if (n > values.length) values = new Float64Array(Math.max(2 * values.length, n));
    out.push(pixelStatistics(image, pixels.subarray(0, n), values));
  }
  return out;
}

/** INTENSITY_STATS per channel of the image's values at `pixels` (plane indices); `scratch` holds at least their count. */
function pixelStatistics(image: DecodedImage, pixels: Uint32Array, scratch: Float64Array): Float64Array {
  const plane = image.width * image.height;
  const n = pixels.length;
  const values = scratch.subarray(0, n);
  const stats = new Float64Array(image.channels * STATS);
  for (let c = 0; c < image.channels; c++) {
    const offset = c * plane;
    for (let j = 0; j < n; j++) values[j] = image.data[offset + pixels[j]!]!;
    statistics(values, stats, c * STATS);
  }
  return stats;
}

/** Gives each ROI (labels index + 1 in `labels`) its intensities. */
/**
 * The image's channels as they are measured: a channel whose every pixel equals an earlier
 * channel's is that channel again (a gray image stored as RGB is one channel, not three identical
 * sets of columns), so it is left out. `kept` lists the channels left, in the file's order; `image`
 * holds them (the same object when none is left out). Cost: one comparison pass per channel pair,
 * stopping at the first pixel that differs.
 */
export function distinctChannels(image: DecodedImage): { image: DecodedImage; kept: number[] } {
  const plane = image.width * image.height;
  const kept: number[] = [];
  for (let c = 0; c < image.channels; c++) {
    const channel = image.data.subarray(c * plane, (c + 1) * plane);
    const repeats = kept.some((k) => {
      const earlier = image.data.subarray(k * plane, (k + 1) * plane);
      for (let i = 0; i < plane; i++) if (channel[i] !== earlier[i] && !(Number.isNaN(channel[i]!) && Number.isNaN(earlier[i]!))) return false;
      return true;
    });
    if (!repeats) kept.push(c);
  }
  if (kept.length === image.channels) return { image, kept };
  const data = new Float32Array(kept.length * plane);
  for (const [k, c] of kept.entries()) data.set(image.data.subarray(c * plane, (c + 1) * plane), k * plane);
  return { image: { ...image, channels: kept.length, data }, kept };
}

export function attachIntensity(rois: readonly Roi[], image: DecodedImage, labels: Uint32Array): void {
  const measured = measureIntensity(image, labels, rois.length);
  for (const roi of rois) roi.intensity = measured[roi.index];
}

/** INTENSITY_STATS of `values` into out[at ..]; reorders `values` (the median's selection). */
function statistics(values: Float64Array, out: Float64Array, at: number): void {
  const n = values.length;
  if (n === 0) {
    out.fill(Number.NaN, at, at + STATS);
    return;
  }
  let sum = 0,
    min = Number.POSITIVE_INFINITY,
    max = Number.NEGATIVE_INFINITY,
    nan = false;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    if (Number.isNaN(v)) nan = true;
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (nan) {
    out.fill(Number.NaN, at, at + STATS);
    return;
  }
  const mean = sum / n;
  // Two passes, as numpy's var: the squared deviations from the mean, not sum-of-squares minus square-of-sum.
  let squares = 0;
  for (let i = 0; i < n; i++) squares += (values[i]! - mean) ** 2;
  const half = n >> 1;
  const upper = select(values, half);
  // An even count: the mean of the two middle values; the lower one is the largest left of `half`.
  let median = upper;
  if (n % 2 === 0) {
    let lower = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < half; i++) if (values[i]! > lower) lower = values[i]!;
    median = (lower + upper) / 2;
  }
  out[at] = mean;
  out[at + 1] = median;
  out[at + 2] = Math.sqrt(squares / n);
  out[at + 3] = min;
  out[at + 4] = max;
  out[at + 5] = sum;
}

/**
 * The k-th smallest of `values` (0-based) by Hoare's selection: partition around a middle pivot
 * and keep the side holding k. Leaves values[0 .. k) <= values[k] <= values(k .. n).
 */
function select(values: Float64Array, k: number): number {
  let left = 0,
    right = values.length - 1;
  while (left < right) {
    const pivot = values[(left + right) >> 1]!;
    let i = left,
      j = right;
    while (i <= j) {
      while (values[i]! < pivot) i++;
      while (values[j]! > pivot) j--;
      if (i <= j) {
        const t = values[i]!;
        values[i] = values[j]!;
        values[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else break;
  }
  return values[k]!;
}
