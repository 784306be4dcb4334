// Cells around nuclei: each nucleus grown by a distance into the background, never into another
// nucleus or another's growth, as QuPath's cell expansion and scikit-image's
// skimage.segmentation.expand_labels do: a background pixel within the distance of a nucleus goes
// to the nearest nucleus (Euclidean distance between pixel centres; at equal distances to two
// nuclei either may take it, as in expand_labels). The cytoplasm is the cell less its nucleus.
//
// The nearest nucleus pixel of every pixel comes from a Euclidean distance transform with feature
// tracking, separable in two passes (P. F. Felzenszwalb and D. P. Huttenlocher, "Distance
// Transforms of Sampled Functions", Theory of Computing 8, 2012): along each column the offset to
// the nearest nucleus row, then along each row the lower envelope of the parabolas those offsets
// make. Distances are in the units of a pixel of sx × sy (µm for an expansion in µm, oblong pixels
// included), and a column offset longer than the distance is never needed, so it is kept as an
// Int16 capped there: 2 bytes a pixel besides the labels.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import type { DecodedImage } from "../../common/decode/index.ts";
import { keepLargestComponents } from "../../common/geometry/label-largest-piece.ts";
import { measureRois } from "../../common/geometry/roi-measure.ts";
import type { Roi, RoiCell } from "../../schema/roi.ts";
import { InputError } from "./faults.ts";
import { measureIntensity } from "./intensity.ts";

/** No nucleus within reach along the column. */
const FAR = 0x7fff;

// Exported for its test only (test/engine/cell-expansion.test.ts).
/**
 * Labels 1..count grown by `distance` (in units of a pixel of sx × sy): every pixel whose nearest
 * nucleus pixel lies within it gets that nucleus's label; nucleus pixels keep theirs.
 */
export function expandLabels(labels: Uint32Array, width: number, height: number, distance: number, sx = 1, sy = 1): Uint32Array {
  const reach = Math.floor(distance / sy);
  if (reach >= FAR) throw new InputError(`a cell expansion of ${distance} reaches ${reach} rows, more than ${FAR - 1}`);
  // Pass 1, columns: the signed row offset to the nearest nucleus pixel, if within `reach`.
  const offset = new Int16Array(width * height).fill(FAR);
  for (let x = 0; x < width; x++) {
    let last = -Infinity;
    for (let y = 0; y < height; y++) {
      if (labels[y * width + x] !== 0) last = y;
      if (y - last <= reach) offset[y * width + x] = last - y;
    }
    let next = Infinity;
    for (let y = height - 1; y >= 0; y--) {
      if (labels[y * width + x] !== 0) next = y;
      const i = y * width + x;
      if (next - y <= reach && (offset[i] === FAR || next - y < -offset[i]!)) offset[i] = next - y;
    }
  }
  // Pass 2, rows: the lower envelope of parabolas sx²(p − q)² + (sy·offset(q))² over the columns q
  // that have a nucleus pixel within reach; each pixel takes its envelope's site.
  const out = new Uint32Array(width * height);
  const limit = distance * distance;
  const site = new Int32Array(width);
  const boundary = new Float64Array(width + 1);
  const f = new Float64Array(width);
  const sx2 = sx * sx;
  for (let y = 0; y < height; y++) {
    const row = y * width;
    let k = -1;
    for (let q = 0; q < width; q++) {
      const o = offset[row + q]!;
      if (o === FAR) continue;
      f[q] = (o * sy) ** 2;
      if (k < 0) {
        k = 0;
        site[0] = q;
        boundary[0] = -Infinity;
        boundary[1] = Infinity;
        continue;
      }
      // Where q's parabola meets the last one kept; while that lies left of where the last one
      // began, the last one is lowest nowhere and goes (boundary[0] is −∞, so the first stays).
      const lift = f[q]! + sx2 * q * q;
      let r = site[k]!;
      let s = (lift - (f[r]! + sx2 * r * r)) / (2 * sx2 * (q - r));
      while (s <= boundary[k]!) {
        r = site[--k]!;
        s = (lift - (f[r]! + sx2 * r * r)) / (2 * sx2 * (q - r));
      }
      k++;
      site[k] = q;
      boundary[k] = s;
      boundary[k + 1] = Infinity;
    }
    if (k < 0) continue;
    let j = 0;
    for (let p = 0; p < width; p++) {
      while (boundary[j + 1]! < p) j++;
      const q = site[j]!;
      const d2 = sx2 * (p - q) ** 2 + f[q]!;
      if (d2 <= limit) out[row + p] = labels[(y + offset[row + q]!) * width + q]!;
    }
  }
  return out;
}

/**
 * Gives each nucleus (labels index + 1) its cell: the outline of its grown region (its largest
 * piece, which holds the nucleus), the region's measurements and, from the image's original pixels,
 * the cytoplasm's intensities (the cell's pixels that are not the nucleus's; NaN where there are none).
 */
export function attachCells(rois: readonly Roi[], image: DecodedImage, labels: Uint32Array, distance: number, sx = 1, sy = 1): void {
  const { width, height } = image;
  const cells = expandLabels(labels, width, height, distance, sx, sy);
  keepLargestComponents(cells, rois.length, width);
  const outlines = measureRois(cells, width, height, rois.length, { holes: true });
  const cytoplasm = cells;
  for (let i = 0; i < cytoplasm.length; i++) if (labels[i] !== 0) cytoplasm[i] = 0;
  const intensities = measureIntensity(image, cytoplasm, rois.length);
  for (const roi of rois) {
    const outline = outlines[roi.index]!;
    const cell: RoiCell = {
      polygon: outline.polygon,
      area_px: outline.area_px,
      perimeter_px: outline.perimeter_px,
      centroid_x: outline.centroid_x,
      centroid_y: outline.centroid_y,
      bbox_x: outline.bbox_x,
      bbox_y: outline.bbox_y,
      bbox_w: outline.bbox_w,
      bbox_h: outline.bbox_h,
      cytoplasmIntensity: intensities[roi.index],
    };
    roi.cell = cell;
  }
}
