// Small shared operations on label images (0 = background, 1..N = objects, flat row-major).
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.

/**
 * Renumbers labels 1..K in raster order of each object's first pixel, the order ROIs use
 * (schema/roi.ts), and returns K. Works in place.
 */
export function renumberInRasterOrder(labels: Uint32Array): number {
  let max = 0;
  for (let i = 0; i < labels.length; i++) if (labels[i]! > max) max = labels[i]!;
  if (max === 0) return 0;
  let count = 0;
  if (max <= labels.length + 65_536) {
    const map = new Uint32Array(max + 1);
    for (let i = 0; i < labels.length; i++) {
      const v = labels[i]!;
      if (v === 0) continue;
      if (map[v] === 0) map[v] = ++count;
      labels[i] = map[v]!;
    }
  } else {
    // Sparse ids (e.g. hashes): a Map instead of a table as large as the biggest id.
    const map = new Map<number, number>();
    for (let i = 0; i < labels.length; i++) {
      const v = labels[i]!;
      if (v === 0) continue;
      let k = map.get(v);
      if (k === undefined) map.set(v, (k = ++count));
      labels[i] = k;
    }
  }
  return count;
}

/** Per-object bounding boxes and pixel counts of labels 1..count, as flat arrays indexed by label. */
export interface LabelBoxes {
  count: number;
  minX: Int32Array;
  minY: Int32Array;
  maxX: Int32Array;
  maxY: Int32Array;
  area: Float64Array;
}

export function labelBoxes(labels: Uint32Array, width: number, count: number): LabelBoxes {
  const minX = new Int32Array(count + 1).fill(2 ** 31 - 1);
  const minY = new Int32Array(count + 1).fill(2 ** 31 - 1);
  const maxX = new Int32Array(count + 1).fill(-1);
  const maxY = new Int32Array(count + 1).fill(-1);
  const area = new Float64Array(count + 1);
  const height = labels.length / width;
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++, i++) {
      const k = labels[i]!;
      if (k === 0) continue;
      area[k]!++;
      if (x < minX[k]!) minX[k] = x;
      if (x > maxX[k]!) maxX[k] = x;
      if (y < minY[k]!) minY[k] = y;
      maxY[k] = y;
    }
  }
  return { count, minX, minY, maxX, maxY, area };
}
