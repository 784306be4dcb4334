// Minimum-cost assignment of a dense rows × cols cost matrix (the Hungarian method with
// potentials, Kuhn 1955 / Munkres 1957, in its O(n^2 m) shortest-augmenting-path form).
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.

/** Returns, for each row, the column assigned to it (-1 when rows outnumber columns). */
export function minimumCostAssignment(cost: Float64Array, rows: number, cols: number): Int32Array {
  const transpose = rows > cols;
  const n = transpose ? cols : rows; // the algorithm needs n <= m
  const m = transpose ? rows : cols;
  const at = (i: number, j: number) => (transpose ? cost[j * cols + i]! : cost[i * cols + j]!);
  const u = new Float64Array(n + 1);
  const v = new Float64Array(m + 1);
  const owner = new Int32Array(m + 1); // owner[j] = row (1-based) assigned to column j
  const way = new Int32Array(m + 1);
  for (let i = 1; i <= n; i++) {
    owner[0] = i;
    let j0 = 0;
    const minv = new Float64Array(m + 1).fill(Infinity);
    const used = new Uint8Array(m + 1);
    do {
      used[j0] = 1;
      const i0 = owner[j0]!;
      let delta = Infinity,
        j1 = 0;
      for (let j = 1; j <= m; j++) {
        if (used[j]) continue;
        const reduced = at(i0 - 1, j - 1) - u[i0]! - v[j]!;
        if (reduced < minv[j]!) {
          minv[j] = reduced;
          way[j] = j0;
        }
        if (minv[j]! < delta) {
          delta = minv[j]!;
          j1 = j;
        }
      }
      for (let j = 0; j <= m; j++) {
        if (used[j]) {
          u[owner[j]!]! += delta;
          v[j]! -= delta;
        } else minv[j]! -= delta;
      }
      j0 = j1;
    } while (owner[j0] !== 0);
    do {
      const j1 = way[j0]!;
      owner[j0] = owner[j1]!;
      j0 = j1;
    } while (j0 !== 0);
  }
  const result = new Int32Array(rows).fill(-1);
  for (let j = 1; j <= m; j++) {
    if (owner[j] === 0) continue;
    if (transpose) result[j - 1] = owner[j]! - 1;
    else result[owner[j]! - 1] = j - 1;
  }
  return result;
}
