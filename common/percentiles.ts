// numpy-style percentiles of one channel, shared by the engine's normalisation
// (gpu-runner/engine/normalize.ts) and the contrast stretch of pictures (common/stretch.ts): an
// exact histogram for 8/16-bit integer data, quickselect otherwise.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.

/** numpy-style percentiles (linear interpolation) of one channel; NaNs are not expected. */
export function percentiles(values: Float32Array, ps: number[]): number[] {
  if (values.length === 0) throw new Error("percentiles of an empty array");
  const ranks = ps.map((p) => (p / 100) * (values.length - 1));
  const histogram = integerHistogram(values);
  return ranks.map((rank) => {
    const lo = Math.floor(rank);
    const fraction = rank - lo;
    const a = histogram ? histogramOrderStatistic(histogram, lo) : selectOrderStatistic(values, lo);
    if (fraction === 0) return a;
    const b = histogram ? histogramOrderStatistic(histogram, lo + 1) : selectOrderStatistic(values, lo + 1);
    return a + fraction * (b - a);
  });
}

/** Counts per value when every value is an integer in 0..65535 (8/16-bit images), else undefined. */
function integerHistogram(values: Float32Array): Float64Array | undefined {
  const counts = new Float64Array(65_536);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!(v >= 0 && v <= 65_535) || v !== Math.floor(v)) return undefined;
    counts[v]!++;
  }
  return counts;
}

function histogramOrderStatistic(counts: Float64Array, k: number): number {
  let seen = 0;
  for (let v = 0; v < counts.length; v++) {
    seen += counts[v]!;
    if (seen > k) return v;
  }
  return counts.length - 1;
}

/** k-th smallest value (0-based) by quickselect on a copy: O(n) expected, for float data. */
function selectOrderStatistic(values: Float32Array, k: number): number {
  const a = values.slice();
  let left = 0,
    right = a.length - 1;
  while (left < right) {
    const pivot = a[(left + right) >>> 1]!;
    let i = left,
      j = right;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else return a[k]!;
  }
  return a[k]!;
}
